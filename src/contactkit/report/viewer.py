"""An interactive 3-D page of a rollout: one self-contained HTML file, no library and nothing fetched.

The page draws the scene's meshes with a small canvas-2D renderer of its own (flat-shaded triangles, depth-sorted;
the scenes have a few hundred triangles), the tool at the pose of the chosen time step, the F/T reading as arrows
(force red, torque blue, from the sensor origin), MuJoCo's contact points (green) and, when given, a model's
prediction as a translucent blue tool with its own force arrow. A slider scrubs through time, a button plays it in
real time, dragging orbits the camera and the wheel zooms. Why not rerun, meshcat or viser: see docs/report.md
(measured install sizes: hundreds of MB, against none for this page).
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from contactkit.errors import InvalidInputError
from contactkit.files import write_atomic
from contactkit.report.render import ContactProbe, RenderConfig
from contactkit.report.viewer_js import VIEWER_JS
from contactkit.rotations import quat_to_mat
from contactkit.scene import Scene

if TYPE_CHECKING:  # report and data are one layer: an Episode is taken, never imported
    from contactkit.data.schema import Episode

DECIMALS = 6
"""Decimals of the metres, quaternions and newtons written into the page (micrometre resolution)."""
STYLE = ("body{font-family:sans-serif;max-width:1000px;margin:1em auto;padding:0 1em}"
         "canvas{width:100%;height:auto;border:1px solid #ccc;background:#20232a;touch-action:none}"
         "#controls{display:flex;flex-wrap:wrap;gap:0.6em;align-items:center;margin:0.5em 0}"
         "#t{flex:1 1 16em;min-width:8em}#label{font-family:monospace;overflow-wrap:anywhere}"
         "p.note{color:#555;font-size:90%}")


MAX_EDGE_FRACTION = 0.1
"""Longest edge of a drawn environment triangle, as a fraction of the camera's distance (see :func:`subdivide`)."""
DEFAULT = RenderConfig()
"""Arrow scales and camera of the page (those of the rendered videos)."""


def _r(a) -> list:
    return np.round(np.asarray(a, dtype=np.float64), DECIMALS).tolist()


def subdivide(vertices: np.ndarray, faces: np.ndarray, max_edge: float) -> tuple[np.ndarray, np.ndarray]:
    """Split triangles at the midpoint of their longest edge until no edge is longer than ``max_edge`` [m], so
    that the page's far-to-near painting sorts a large floor correctly against small parts.

    Args:
        vertices: ``(V, 3)`` [m]; faces: ``(F, 3)`` vertex indices.

    Returns:
        ``(vertices (V', 3), faces (F', 3))``, the same surface (split edges may leave hairline T-junctions).
    """
    verts, todo, done = [tuple(v) for v in np.asarray(vertices, dtype=np.float64)], list(map(tuple, faces)), []
    while todo:
        a, b, c = todo.pop()
        p = [np.asarray(verts[i]) for i in (a, b, c)]
        edges = [np.linalg.norm(p[(i + 1) % 3] - p[i]) for i in range(3)]
        i = int(np.argmax(edges))
        if edges[i] <= max_edge:
            done.append((a, b, c))
            continue
        tri = (a, b, c)
        u, v, w = tri[i], tri[(i + 1) % 3], tri[(i + 2) % 3]
        verts.append(tuple(0.5 * (np.asarray(verts[u]) + np.asarray(verts[v]))))
        m = len(verts) - 1
        todo += [(u, m, w), (m, v, w)]
    return np.asarray(verts), np.asarray(done, dtype=np.int64).reshape(-1, 3)


def _meshes(scene: Scene, max_edge: float) -> dict:
    """The statics' pieces in the world frame (subdivided to ``max_edge``) and the tool's pieces in the tool frame
    (vertices [m], faces)."""
    statics = []
    for body in scene.statics:
        rot = quat_to_mat(np.asarray(body.quat, dtype=np.float64))
        for piece in body.part.pieces:
            v, f = subdivide(piece.vertices @ rot.T + body.pos, piece.faces, max_edge)
            statics.append({"v": _r(v), "f": f.tolist()})
    tool = [{"v": _r(p.vertices), "f": np.asarray(p.faces).tolist()} for p in scene.tool.part.pieces]
    return {"statics": statics, "tool": tool}


def track(scene: Scene, episode: Episode, probe: ContactProbe, config: RenderConfig = DEFAULT) -> dict:
    """One tool's motion for the page: poses, F/T arrows and contact points at every state.

    Args:
        scene: the episode's scene (sensor placement).
        episode: states ``T + 1`` [m, (w, x, y, z)], readings ``T`` (sensor frame [N, N·m]); state ``k`` shows the
            reading of the step that ended there (none at ``k = 0``).
        probe: computes MuJoCo's contact points at each pose.
        config: arrow scales and the longest arrow [m].

    Returns:
        ``pos`` ``(T+1, 3)``, ``quat`` ``(T+1, 4)``, ``origin`` (sensor origin, world), ``force`` and ``torque``
        (arrow tips, world [m]), ``force_N`` (norm), ``contacts`` (a list of ``(K_k, 3)`` per state).
    """
    n = episode.pos.shape[0]
    wrench = np.concatenate([np.zeros((1, 6)), episode.wrench])[:n]
    quat = episode.quat / np.linalg.norm(episode.quat, axis=1, keepdims=True)
    rot = quat_to_mat(quat)
    origin = episode.pos + rot @ np.asarray(scene.tool.sensor_pos)
    sensor = rot @ quat_to_mat(np.asarray(scene.tool.sensor_quat))

    def arrow(vec: np.ndarray, scale: float) -> np.ndarray:
        world = np.einsum("nij,nj->ni", sensor, vec) * scale
        length = np.linalg.norm(world, axis=1, keepdims=True)
        return origin + world * np.minimum(1.0, config.arrow_max_m / np.maximum(length, 1e-12))

    return {"pos": _r(episode.pos), "quat": _r(quat), "origin": _r(origin),
            "force": _r(arrow(wrench[:, :3], config.force_m_per_N)),
            "torque": _r(arrow(wrench[:, 3:], config.torque_m_per_Nm)),
            "force_N": _r(np.linalg.norm(wrench[:, :3], axis=1)),
            "contacts": [_r(probe.points(p, q)) for p, q in zip(episode.pos, quat, strict=True)]}


def viewer_payload(scene: Scene, episode: Episode, predicted: Episode | None = None, predicted_name: str = "",
                   config: RenderConfig = DEFAULT) -> dict:
    """Everything the page draws, as JSON-ready lists: meshes, the camera (as :class:`~.render.EpisodeRenderer`
    places it), time [s] and the measured track (:func:`track`), and the predicted one when given (same length)."""
    if predicted is not None and predicted.pos.shape != episode.pos.shape:
        raise InvalidInputError(f"predicted episode has {predicted.pos.shape[0]} states, the episode "
                                f"{episode.pos.shape[0]}")
    probe = ContactProbe(scene)
    start, goal = np.asarray(scene.tool.init_pos), np.asarray(scene.target_pos)
    size = np.ptp(np.concatenate([p.vertices for p in scene.tool.part.pieces]), axis=0).max()
    distance = float(config.distance_scale * (size + np.linalg.norm(start - goal)))
    payload = {
        "scene": scene.name, "meshes": _meshes(scene, MAX_EDGE_FRACTION * distance), "time": _r(episode.time),
        "camera": {"lookat": _r(0.5 * (start + goal)), "distance": distance, "azimuth": config.azimuth_deg,
                   "elevation": config.elevation_deg},
        "measured": track(scene, episode, probe, config),
        "predicted": track(scene, predicted, probe, config) if predicted is not None else None,
        "predicted_name": predicted_name,
    }
    return payload


def viewer_html(payload: dict, title: str) -> str:
    """The page's HTML text: the payload as inline JSON (``</`` escaped) and the viewer's script.

    Raises:
        InvalidInputError: the payload holds NaN or infinity (JSON has neither).
    """
    try:
        data = json.dumps(payload, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    except ValueError:
        raise InvalidInputError("the rollout holds NaN or infinite values (a diverged prediction?); the page cannot "
                                "show it") from None
    legend = ("drag: orbit · wheel: zoom · ←/→: step · space: play. Tool orange (measured)"
              + (", blue: predicted" if payload.get("predicted") else "")
              + "; F/T force red, torque blue (from the sensor origin); contact points green.")
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<meta name='viewport' content='width=device-width, initial-scale=1'><style>{STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><canvas id='view' width='960' height='600'></canvas>"
        "<div id='controls'><button id='play'>play</button><input id='t' type='range' min='0' value='0' step='1'>"
        "<label><input id='show-pred' type='checkbox' checked> predicted</label>"
        "<label><input id='show-contacts' type='checkbox' checked> contacts</label>"
        "<label><input id='show-ft' type='checkbox' checked> F/T</label></div>"
        f"<div id='label'></div><p class='note'>{html.escape(legend)}</p>"
        f"<script type='application/json' id='data'>{data}</script><script>{VIEWER_JS}</script></body></html>"
    )


def write_viewer(out: str | Path, scene: Scene, episode: Episode, predicted: Episode | None = None,
                 predicted_name: str = "", title: str = "", config: RenderConfig = DEFAULT) -> Path:
    """Write the interactive page (:func:`viewer_payload`, :func:`viewer_html`) to ``out`` atomically."""
    payload = viewer_payload(scene, episode, predicted, predicted_name, config)
    return write_atomic(Path(out), viewer_html(payload, title or scene.name))
