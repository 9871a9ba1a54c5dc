"""World-frame kinematics the graph constructor reads: scene arrays, vertex positions, wrench frames.

Act-FIGNet (paper §III-B, §III-C) sees the tool and the environment as meshes whose vertices move with
their bodies. This module turns a :class:`contactkit.scene.Scene` and tool states into the arrays the
graph is built from (§III-C.1), and converts wrenches between the frames the data use and the frame the
network predicts in:

* the action is the wrench the controller applies to the tool, world frame, torque about the tool origin
  (given, or computed from a pose-delta command by :mod:`.actions`);
  the network is fed the *net non-contact* wrench about the tool centre of mass (action plus weight
  ``m g``), which makes the learning problem invariant to a rotation of the whole world, gravity included;
* the F/T reading is the contact wrench in the sensor frame about the sensor origin; the network predicts
  it in the world frame about the tool centre of mass, so that sensor placement is not learned.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contactkit.errors import InvalidInputError
from contactkit.geometry.validate import check_solid
from contactkit.models.gnn.actions import ImpedanceLaw, impedance_law
from contactkit.physics import WorldParams
from contactkit.rotations import quat_rotate, quat_to_mat
from contactkit.scene import Scene
from contactkit.state import STATE_DIM

STANDARD_GRAVITY = 9.81
"""Magnitude of gravity [m/s²] (MuJoCo's value in ``contactkit.mujoco.mjcf``)."""


@dataclass(frozen=True)
class StepSpec:
    """How the data were sampled, fixed for a trained model.

    Attributes:
        dt: control period between consecutive states [s], > 0.
        gravity: ``(3,)`` gravitational acceleration acting on the tool, world frame [m/s²].
    """

    dt: float
    gravity: tuple[float, float, float] = (0.0, 0.0, -STANDARD_GRAVITY)

    def __post_init__(self):
        if not (np.isfinite(self.dt) and self.dt > 0):
            raise InvalidInputError(f"StepSpec.dt must be a positive time step [s], got {self.dt}")
        g = tuple(float(x) for x in self.gravity)
        if len(g) != 3 or not np.all(np.isfinite(g)):
            raise InvalidInputError(f"StepSpec.gravity must be 3 finite numbers [m/s^2], got {self.gravity}")
        object.__setattr__(self, "dt", float(self.dt))
        object.__setattr__(self, "gravity", g)

    @staticmethod
    def from_world(params: WorldParams) -> StepSpec:
        """Control period and gravity of a simulated world."""
        g = -STANDARD_GRAVITY if params.gravity else 0.0
        return StepSpec(params.control_dt, (0.0, 0.0, g))


@dataclass(frozen=True)
class SceneArrays:
    """Static arrays of a scene, float64; ``S`` static bodies, their meshes concatenated.

    Attributes:
        tool_vertices: ``(Vt, 3)`` tool mesh vertices, tool frame [m].
        tool_faces: ``(Ft, 3)`` outward triangles of the tool mesh.
        tool_center: ``(3,)`` tool centre of mass, tool frame [m] (the object node's position).
        tool_attrs: ``(3,)`` ``k = [m, μ, b]`` of eq. 10: mass [kg], friction, dynamic flag 1.
        sensor_pos: ``(3,)`` F/T sensor origin, tool frame [m].
        sensor_rot: ``(3, 3)`` sensor axes in the tool frame.
        static_vertices: ``(Vs, 3)`` static vertices at their scene poses, world frame [m].
        static_faces: ``(Fs, 3)`` triangles indexing ``static_vertices``.
        static_body: ``(Vs,)`` index of the static body each static vertex belongs to.
        static_centers: ``(S, 3)`` volume centroids of the static bodies, world frame [m].
        static_attrs: ``(S, 3)`` ``[0, μ, 0]`` per static body (static bodies carry no mass).
        step: control period and gravity.
        law: the scene's impedance controller, which turns pose-delta commands into action wrenches
            (:mod:`.actions`).
    """

    tool_vertices: np.ndarray
    tool_faces: np.ndarray
    tool_center: np.ndarray
    tool_attrs: np.ndarray
    sensor_pos: np.ndarray
    sensor_rot: np.ndarray
    static_vertices: np.ndarray
    static_faces: np.ndarray
    static_body: np.ndarray
    static_centers: np.ndarray
    static_attrs: np.ndarray
    step: StepSpec
    law: ImpedanceLaw

    @property
    def num_statics(self) -> int:
        """Number of static bodies ``S``."""
        return int(self.static_centers.shape[0])


@dataclass(frozen=True)
class GraphInputs:
    """Positions and wrench one graph is built from (paper §III-C.1), world frame.

    Attributes:
        tool_positions: ``(h, Vt, 3)`` tool vertices at ``t-h+1 .. t`` (oldest first) [m].
        tool_centers: ``(h, 3)`` tool centre of mass at the same times [m].
        static_positions: ``(Vs, 3)`` static vertices [m].
        static_centers: ``(S, 3)`` static body centroids [m].
        wrench: ``(6,)`` net non-contact wrench on the tool at ``t`` (action plus weight), torque about
            the tool centre of mass [N, N·m].
        prev_wrench: ``(6,)`` the same for the previous step's action (at the pose of ``t``), or None for a
            model without ``GraphConfig.previous_command``.
    """

    tool_positions: np.ndarray
    tool_centers: np.ndarray
    static_positions: np.ndarray
    static_centers: np.ndarray
    wrench: np.ndarray
    prev_wrench: np.ndarray | None = None


@dataclass(frozen=True)
class GraphTargets:
    """Labels of one transition (paper §III-D.a), world frame.

    Attributes:
        next_positions: ``(Vt, 3)`` tool vertices at ``t+1`` [m].
        wrench: ``(6,)`` contact wrench on the tool at ``t``, torque about the tool centre of mass [N, N·m].
    """

    next_positions: np.ndarray
    wrench: np.ndarray


def volume_centroid(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Centroid (3,) of the solid bounded by a closed outward mesh, same frame as ``vertices`` (V, 3)."""
    r = vertices.mean(axis=0)
    a, b, c = vertices[faces[:, 0]] - r, vertices[faces[:, 1]] - r, vertices[faces[:, 2]] - r
    vol = np.einsum("ij,ij->i", a, np.cross(b, c))
    return r + (vol[:, None] * (a + b + c)).sum(axis=0) / (4.0 * vol.sum())


def prepare_scene(scene: Scene, step: StepSpec) -> SceneArrays:
    """Validate the meshes of ``scene`` and gather the static arrays of the graph (paper §III-B.a).

    Raises:
        GeometryError: a tool or static mesh is malformed (names the part).
        InvalidInputError: the scene has no static body.
    """
    if not scene.statics:
        raise InvalidInputError(f"scene {scene.name!r} has no static body: Act-FIGNet needs an environment mesh")
    tool = scene.tool
    tv, tf, _ = check_solid(tool.part.vertices, tool.part.faces, f"tool part {tool.part.name!r}")
    verts, faces, body, centers, attrs = [], [], [], [], []
    offset = 0
    for i, s in enumerate(scene.statics):
        v, f, _ = check_solid(s.part.vertices, s.part.faces, f"static part {s.part.name!r}")
        vw = quat_rotate(s.quat, v) + s.pos
        verts.append(vw)
        faces.append(f + offset)
        body.append(np.full(len(v), i, dtype=np.int64))
        centers.append(volume_centroid(vw, f))
        attrs.append([0.0, s.friction, 0.0])
        offset += len(v)
    return SceneArrays(
        tool_vertices=tv,
        tool_faces=tf,
        tool_center=np.asarray(tool.com, dtype=np.float64),
        tool_attrs=np.array([tool.mass, tool.friction, 1.0]),
        sensor_pos=np.asarray(tool.sensor_pos, dtype=np.float64),
        sensor_rot=quat_to_mat(tool.sensor_quat),
        static_vertices=np.concatenate(verts),
        static_faces=np.concatenate(faces),
        static_body=np.concatenate(body),
        static_centers=np.stack(centers),
        static_attrs=np.asarray(attrs, dtype=np.float64),
        step=step,
        law=impedance_law(scene, step.gravity),
    )


def body_points(pos: np.ndarray, quat: np.ndarray, points: np.ndarray) -> np.ndarray:
    """World positions ``(*T, V, 3)`` [m] of body-frame ``points`` (V, 3) at poses ``pos`` (*T, 3), ``quat`` (*T, 4)."""
    rot = quat_to_mat(quat)
    return np.einsum("...ij,vj->...vi", rot, points) + pos[..., None, :]


def net_external_wrench(arrays: SceneArrays, pos: np.ndarray, quat: np.ndarray, action: np.ndarray) -> np.ndarray:
    """Net non-contact wrench (6,) on the tool, world frame, torque about its centre of mass [N, N·m].

    ``action`` (6,) is the applied wrench, world frame, torque about the tool origin ``pos`` (3,);
    gravity ``m g`` acts at the centre of mass and adds no torque about it:
    ``f = f_a + m g``, ``τ_c = τ_a + (o - c) × f_a``.
    """
    c = pos + quat_rotate(quat, arrays.tool_center)
    f_a, tau_a = action[:3], action[3:]
    f = f_a + arrays.tool_attrs[0] * np.asarray(arrays.step.gravity)
    return np.concatenate([f, tau_a + np.cross(pos - c, f_a)])


def sensor_to_center(arrays: SceneArrays, pos: np.ndarray, quat: np.ndarray, wrench: np.ndarray) -> np.ndarray:
    """Sensor-frame F/T reading (*B, 6) → world frame, torque about the tool centre of mass (*B, 6).

    ``pos`` (*B, 3), ``quat`` (*B, 4): tool pose. ``τ_c = τ_s + (s - c) × f`` with ``s`` the sensor origin.
    """
    rot = quat_to_mat(quat) @ arrays.sensor_rot
    f = np.einsum("...ij,...j->...i", rot, wrench[..., :3])
    tau_s = np.einsum("...ij,...j->...i", rot, wrench[..., 3:])
    lever = quat_rotate(quat, arrays.sensor_pos - arrays.tool_center)
    return np.concatenate([f, tau_s + np.cross(lever, f)], axis=-1)


def center_to_sensor(arrays: SceneArrays, pos: np.ndarray, quat: np.ndarray, wrench: np.ndarray) -> np.ndarray:
    """Inverse of :func:`sensor_to_center`: world wrench about the centre of mass → sensor frame (*B, 6)."""
    rot = quat_to_mat(quat) @ arrays.sensor_rot
    lever = quat_rotate(quat, arrays.sensor_pos - arrays.tool_center)
    f, tau_c = wrench[..., :3], wrench[..., 3:]
    tau_s = tau_c - np.cross(lever, f)
    rt = np.swapaxes(rot, -1, -2)
    return np.concatenate(
        [np.einsum("...ij,...j->...i", rt, f), np.einsum("...ij,...j->...i", rt, tau_s)], axis=-1
    )


def _check_window_array(name: str, x, shape: tuple) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.shape != shape:
        raise InvalidInputError(f"window '{name}' must have shape {shape}, got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise InvalidInputError(f"window '{name}' contains NaN or Inf")
    return a


def graph_inputs(arrays: SceneArrays, history: np.ndarray, action: np.ndarray,
                 prev_action: np.ndarray | None = None) -> GraphInputs:
    """Graph inputs of one window: ``history`` (h, 13) flat tool states (oldest first), ``action`` (6,) and
    optionally the previous step's ``prev_action`` (6,) (applied wrenches, world frame, torque about the tool origin).

    Raises:
        InvalidInputError: wrong shapes, NaN, or non-unit quaternions.
    """
    history = np.asarray(history, dtype=np.float64)
    if history.ndim != 2 or history.shape[1] != STATE_DIM:
        raise InvalidInputError(f"window 'history' must have shape (h, {STATE_DIM}), got {history.shape}")
    history = _check_window_array("history", history, history.shape)
    action = _check_window_array("action", action, (6,))
    if prev_action is not None:
        prev_action = _check_window_array("prev_action", prev_action, (6,))
    pos, quat = history[:, 0:3], history[:, 3:7]
    norms = np.linalg.norm(quat, axis=-1)
    if np.any(np.abs(norms - 1.0) > 1e-4):
        raise InvalidInputError(f"window 'history' quaternions are not unit norm (|q| = {norms.tolist()})")
    quat = quat / norms[:, None]
    return GraphInputs(
        tool_positions=body_points(pos, quat, arrays.tool_vertices),
        tool_centers=pos + quat_rotate(quat, arrays.tool_center),
        static_positions=arrays.static_vertices,
        static_centers=arrays.static_centers,
        wrench=net_external_wrench(arrays, pos[-1], quat[-1], action),
        prev_wrench=None if prev_action is None else net_external_wrench(arrays, pos[-1], quat[-1], prev_action),
    )


def graph_targets(arrays: SceneArrays, history: np.ndarray, wrench: np.ndarray, next_state: np.ndarray) -> GraphTargets:
    """Labels of one window: sensor reading ``wrench`` (6,) at ``t`` and ``next_state`` (13,) at ``t+1``."""
    history = np.asarray(history, dtype=np.float64)
    wrench = _check_window_array("wrench", wrench, (6,))
    nxt = _check_window_array("next_state", next_state, (STATE_DIM,))
    pos_t, quat_t = history[-1, 0:3], history[-1, 3:7] / np.linalg.norm(history[-1, 3:7])
    q_next = nxt[3:7] / np.linalg.norm(nxt[3:7])
    return GraphTargets(
        next_positions=body_points(nxt[0:3], q_next, arrays.tool_vertices),
        wrench=sensor_to_center(arrays, pos_t, quat_t, wrench),
    )
