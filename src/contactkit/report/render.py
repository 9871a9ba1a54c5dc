"""Rendered rollouts: MuJoCo's off-screen renderer draws an episode's tool and environment meshes, the F/T reading
as arrows and the contact points, frame by frame; a model's prediction of the same episode is drawn beside it.

The OpenGL context is contactkit's one off-screen setup (:func:`contactkit.mujoco.render.gl_context`, re-exported
here with :class:`RenderError`): ``MUJOCO_GL`` when set, else EGL, falling back to OSMesa; neither: a
:class:`RenderError` saying what each gave. Videos: GIF (Pillow), MP4 (only where an ``ffmpeg`` executable is on
PATH or the optional extra ``[video]`` provides one; nothing is downloaded) or a folder of PNG frames.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import mujoco
import numpy as np

from contactkit.errors import InvalidInputError
from contactkit.files import write_atomic
from contactkit.mujoco.mjcf import scene_to_mjcf
from contactkit.mujoco.render import OffscreenCanvas, RenderError, gl_context
from contactkit.physics import load_world
from contactkit.rotations import quat_to_mat
from contactkit.scene import Scene

if TYPE_CHECKING:  # report and data are one layer: an Episode is taken, never imported
    from contactkit.data.schema import Episode

__all__ = ["CONTACT_RGBA", "FORCE_RGBA", "HISTORY", "MAX_GEOMS", "TORQUE_RGBA", "VIDEO_SUFFIXES", "ContactProbe",
           "EpisodeRenderer", "RenderConfig", "RenderError", "check_video_path", "episode_frames", "ffmpeg_executable",
           "gl_context", "predicted_episode", "render_gif", "write_video"]

FORCE_RGBA = (0.9, 0.1, 0.1, 1.0)
TORQUE_RGBA = (0.1, 0.3, 0.95, 1.0)
CONTACT_RGBA = (0.1, 0.8, 0.2, 1.0)
MAX_GEOMS = 2000
"""Geoms an MjvScene holds: the scene's meshes plus the overlay (arrows, contact points)."""
VIDEO_SUFFIXES = (".gif", ".mp4")
"""Video files :func:`write_video` writes; any other path without a suffix is a folder of PNG frames."""


@dataclass(frozen=True)
class RenderConfig:
    """How an episode is drawn.

    Attributes:
        width, height: pixels of one panel (measured; the prediction's panel is as large, to its right).
        stride: every ``stride``-th state of the episode is a frame; the video plays in real time.
        force_m_per_N: arrow length per newton of the F/T reading's force [m/N].
        torque_m_per_Nm: arrow length per newton-metre of its torque [m/(N·m)].
        arrow_max_m: longest arrow drawn [m] (longer readings are clipped to it; the label gives the value).
        contact_radius_m: radius of the sphere drawn at each MuJoCo contact point [m].
        distance_scale: camera distance as a multiple of the scene's size (tool length plus its start height).
        azimuth_deg, elevation_deg: camera direction (MuJoCo's free camera, degrees).
    """

    width: int = 360
    height: int = 270
    stride: int = 2
    force_m_per_N: float = 0.01
    torque_m_per_Nm: float = 0.5
    arrow_max_m: float = 0.06
    contact_radius_m: float = 0.0015
    distance_scale: float = 3.0
    azimuth_deg: float = 135.0
    elevation_deg: float = -22.0

    def __post_init__(self) -> None:
        for name in ("width", "height", "stride"):
            value = getattr(self, name)
            if not (isinstance(value, int) and value >= 1):
                raise InvalidInputError(f"RenderConfig.{name} must be a positive integer, got {value!r}")
        if self.width % 2 or self.height % 2:
            raise InvalidInputError(f"RenderConfig width and height must be even (video encoders need it), got "
                                    f"{self.width} x {self.height}")


class ContactProbe:
    """MuJoCo's contact points of a scene with the tool at a given pose (collision only, no dynamics, no OpenGL).

    Args:
        scene: the scene (its MJCF is :func:`contactkit.mujoco.mjcf.scene_to_mjcf` under the nominal world).
    """

    def __init__(self, scene: Scene):
        self.model = mujoco.MjModel.from_xml_string(scene_to_mjcf(scene, load_world("nominal")))
        self.data = mujoco.MjData(self.model)

    def points(self, pos: np.ndarray, quat: np.ndarray) -> np.ndarray:
        """``(K, 3)`` contact points [m, world] with the tool frame at ``pos`` ``(3,)``, ``quat`` ``(4,)``
        (w, x, y, z; normalised here)."""
        self.data.qpos[0:3], self.data.qpos[3:7] = pos, quat / np.linalg.norm(quat)
        mujoco.mj_fwdPosition(self.model, self.data)
        return np.array([self.data.contact[i].pos for i in range(self.data.ncon)]).reshape(-1, 3)


class EpisodeRenderer:
    """Draws a scene's meshes with the tool at given poses, off-screen.

    Args:
        scene: the scene (statics and tool meshes come from :func:`contactkit.mujoco.mjcf.scene_to_mjcf`).
        config: sizes, arrows and camera.
    """

    def __init__(self, scene: Scene, config: RenderConfig = RenderConfig()):
        self.scene, self.config = scene, config
        self._probe = ContactProbe(scene)
        self.model, self.data = self._probe.model, self._probe.data
        self.model.vis.headlight.ambient[:] = 0.35
        self.model.vis.headlight.diffuse[:] = 0.6
        self._canvas = OffscreenCanvas(self.model, config.width, config.height)
        self.backend = self._canvas.backend
        self._scene = mujoco.MjvScene(self.model, maxgeom=MAX_GEOMS)
        self._option = mujoco.MjvOption()
        self._option.sitegroup[:] = 0  # the controller's target sites are no part of the scene
        self._camera = mujoco.MjvCamera()
        self._camera.type = mujoco.mjtCamera.mjCAMERA_FREE
        start, goal = np.asarray(scene.tool.init_pos), np.asarray(scene.target_pos)
        size = np.ptp(np.concatenate([p.vertices for p in scene.tool.part.pieces]), axis=0).max()
        self._camera.lookat[:] = 0.5 * (start + goal)
        self._camera.distance = config.distance_scale * (size + np.linalg.norm(start - goal))
        self._camera.azimuth, self._camera.elevation = config.azimuth_deg, config.elevation_deg

    def contacts(self, pos: np.ndarray, quat: np.ndarray) -> np.ndarray:
        """``(K, 3)`` MuJoCo's contact points [m, world] with the tool at ``pos``, ``quat`` (:class:`ContactProbe`);
        also poses the tool for the next :meth:`frame`."""
        return self._probe.points(pos, quat)

    def frame(self, pos: np.ndarray, quat: np.ndarray, wrench: np.ndarray | None, label: str = "") -> np.ndarray:
        """One image ``(height, width, 3)`` uint8 RGB.

        Args:
            pos, quat: the tool frame's pose ``(3,)`` [m], ``(4,)`` (w, x, y, z), world frame.
            wrench: ``(6,)`` F/T reading [N, N·m] in the sensor frame (about its origin), drawn as a red force and
                a blue torque arrow from the sensor origin; None: no arrows.
            label: text written in the top-left corner.
        """
        points = self.contacts(pos, quat)
        mujoco.mjv_updateScene(self.model, self.data, self._option, None, self._camera,
                               mujoco.mjtCatBit.mjCAT_ALL, self._scene)
        for p in points:
            self._add(mujoco.mjtGeom.mjGEOM_SPHERE, CONTACT_RGBA, p, size=self.config.contact_radius_m)
        if wrench is not None:
            rot = quat_to_mat(quat / np.linalg.norm(quat)) @ quat_to_mat(np.asarray(self.scene.tool.sensor_quat))
            origin = pos + quat_to_mat(quat / np.linalg.norm(quat)) @ np.asarray(self.scene.tool.sensor_pos)
            for vec, scale, rgba in ((wrench[:3], self.config.force_m_per_N, FORCE_RGBA),
                                     (wrench[3:], self.config.torque_m_per_Nm, TORQUE_RGBA)):
                self._arrow(origin, rot @ np.asarray(vec) * scale, rgba)
        return self._canvas.read(self._scene, label)

    def _arrow(self, origin: np.ndarray, vec: np.ndarray, rgba) -> None:
        length = float(np.linalg.norm(vec))
        if length < 1e-4:
            return
        vec = vec * min(1.0, self.config.arrow_max_m / length)
        geom = self._add(mujoco.mjtGeom.mjGEOM_ARROW, rgba, origin, size=0.0)
        mujoco.mjv_connector(geom, mujoco.mjtGeom.mjGEOM_ARROW, 0.002, origin, origin + vec)

    def _add(self, kind, rgba, pos, size: float):
        if self._scene.ngeom >= self._scene.maxgeom:
            return mujoco.MjvGeom()  # drawn nowhere: the scene is full
        geom = self._scene.geoms[self._scene.ngeom]
        mujoco.mjv_initGeom(geom, kind, np.full(3, size), np.asarray(pos, dtype=np.float64), np.eye(3).ravel(),
                            np.asarray(rgba, dtype=np.float32))
        self._scene.ngeom += 1
        return geom

    def close(self) -> None:
        """Free the OpenGL resources (idempotent)."""
        self._canvas.close()

    def __enter__(self) -> EpisodeRenderer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def episode_frames(scene: Scene, episode: Episode, config: RenderConfig = RenderConfig(),
                   predicted: Episode | None = None, title: str = "", predicted_title: str = "predicted") -> np.ndarray:
    """Frames of an episode: ``(F, height, width, 3)`` uint8, or ``(F, height, 2 width, 3)`` with ``predicted``
    (same time stamps, at least as many states) drawn in a right-hand panel.

    Frame ``j`` shows state ``k = j * stride`` and the F/T reading of the step that ended there (``wrench[k-1]``;
    none at ``k = 0``), labelled with the time [s] and the force's norm [N].
    """
    if predicted is not None and predicted.pos.shape[0] < episode.pos.shape[0]:
        raise InvalidInputError(f"predicted episode has {predicted.pos.shape[0]} states, the episode "
                                f"{episode.pos.shape[0]}")
    frames = []
    with EpisodeRenderer(scene, config) as renderer:
        for k in range(0, episode.pos.shape[0], config.stride):
            panels = []
            for ep, name in ((episode, title or "measured"), (predicted, predicted_title)):
                if ep is None:
                    continue
                wrench = ep.wrench[k - 1] if k > 0 else None
                force = f"  |F| {np.linalg.norm(wrench[:3]):.1f} N" if wrench is not None else ""
                panels.append(renderer.frame(ep.pos[k], ep.quat[k], wrench, f"{name}  t {episode.time[k]:.2f} s"
                                             f"{force}"))
            frames.append(np.concatenate(panels, axis=1))
    return np.stack(frames)


def render_gif(scene: Scene, episode: Episode, out: Path, name: str, log: Callable[[str], None],
               stem: str = "rollout", config: RenderConfig = RenderConfig()) -> str | None:
    """``out/STEM_NAME.gif`` of an episode (:func:`episode_frames`, titled ``name``, real time); returns its file name,
    or None, with the reason passed to ``log``, where this machine has no off-screen OpenGL (a page then shows the
    rollout's plots only)."""
    try:
        frames = episode_frames(scene, episode, config, title=name)
    except RenderError as exc:
        log(f"rendered rollout of {name} skipped: {exc}")
        return None
    video = f"{stem}_{name}.gif"
    write_video(frames, out / video, fps=1.0 / (float(episode.time[1] - episode.time[0]) * config.stride))
    return video


def write_video(frames: np.ndarray, out: str | Path, fps: float) -> Path:
    """Write ``frames`` ``(F, H, W, 3)`` uint8 to ``out``: ``.gif`` (Pillow), ``.mp4`` (H.264 through an ``ffmpeg``
    on PATH) or, for a path without a suffix, a folder of ``frame_00000.png`` files. Returns ``out``.

    Raises:
        InvalidInputError: another suffix. RenderError: ``.mp4`` with no ``ffmpeg`` on PATH, or ffmpeg failed.
    """
    from PIL import Image

    out = check_video_path(out)
    suffix = out.suffix.lower()
    out.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".gif":
        images = [Image.fromarray(f) for f in frames]
        buffer = io.BytesIO()
        images[0].save(buffer, format="GIF", save_all=True, append_images=images[1:], loop=0,
                       duration=max(20, round(1000.0 / fps)))
        return write_atomic(out, buffer.getvalue())
    if suffix == ".mp4":
        return _write_mp4(frames, out, fps)
    out.mkdir(exist_ok=True)
    for i, f in enumerate(frames):
        buffer = io.BytesIO()
        Image.fromarray(f).save(buffer, format="PNG")
        write_atomic(out / f"frame_{i:05d}.png", buffer.getvalue())
    return out


def check_video_path(out: str | Path) -> Path:
    """``out`` as a Path if :func:`write_video` can write it here (checked before any rendering).

    Raises:
        InvalidInputError: a suffix other than ``.gif`` or ``.mp4``. RenderError: ``.mp4`` and no ``ffmpeg`` on PATH.
    """
    out = Path(out)
    suffix = out.suffix.lower()
    if suffix and suffix not in VIDEO_SUFFIXES:
        raise InvalidInputError(f"video '{out}': {out.suffix!r} is not a video this writes; use .gif, .mp4 (with "
                                "ffmpeg on PATH) or a path without a suffix for a folder of PNG frames")
    if suffix == ".mp4" and ffmpeg_executable() is None:
        raise RenderError(f"cannot write '{out}': MP4 needs an ffmpeg executable (none on PATH, and the optional "
                          "extra contactkit[video] = imageio-ffmpeg is not installed; or apt install ffmpeg); write a "
                          ".gif or a folder of PNG frames instead")
    return out


def ffmpeg_executable() -> str | None:
    """An ffmpeg executable: the one on PATH, else imageio-ffmpeg's bundled binary (optional extra ``[video]``, a
    68 MB wheel holding a 173 MB binary; installed by pip, never downloaded at run time), else None."""
    found = shutil.which("ffmpeg")
    if found is not None:
        return found
    try:
        import imageio_ffmpeg
    except ImportError:
        return None
    try:
        return imageio_ffmpeg.get_ffmpeg_exe()
    except RuntimeError:  # the package is there but its binary is not
        return None


def _write_mp4(frames: np.ndarray, out: Path, fps: float) -> Path:
    ffmpeg = ffmpeg_executable()
    _, height, width, _ = frames.shape
    partial = out.with_name(out.name + ".partial.mp4")
    run = subprocess.run([ffmpeg, "-y", "-loglevel", "error", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s",
                          f"{width}x{height}", "-r", f"{fps:g}", "-i", "-", "-pix_fmt", "yuv420p", str(partial)],
                         input=np.ascontiguousarray(frames).tobytes(), capture_output=True)
    if run.returncode != 0:
        partial.unlink(missing_ok=True)
        raise RenderError(f"ffmpeg could not write '{out}': {run.stderr.decode(errors='replace')[-500:]}")
    os.replace(partial, out)
    return out


HISTORY = 3
"""States a learned model takes as history (the Act-FIGNet paper's displacement history): its rollout starts at
state ``HISTORY - 1``, and the prediction's panel shows the recording until then."""


def predicted_episode(episode: Episode, model, action_mode) -> Episode:
    """A contact model's open-loop prediction of ``episode`` from its first :data:`HISTORY` states, driven by the
    recorded commands (pose deltas or targets) or applied wrenches (per ``action_mode``), as an Episode of the same
    length (states before the rollout's start and the first readings are the recording's).

    Args:
        episode: the recording (``T + 1`` states, ``T`` readings).
        model: a :class:`contactkit.model.ContactModel` of the episode's scene.
        action_mode: :class:`contactkit.model.ActionMode` of the model's inputs.
    """
    import dataclasses

    from contactkit.model import ActionMode, rollout
    from contactkit.state import BodyState

    t0 = HISTORY - 1
    if episode.n_steps <= t0:
        raise InvalidInputError(f"an episode of {episode.n_steps} steps is too short to predict (needs > {t0})")
    states = episode.states().as_array()
    inputs = episode.action if ActionMode(action_mode) is ActionMode.WRENCH else episode.command
    pred, wrench = rollout(model, BodyState.from_array(states[None, :t0 + 1]), inputs[None, t0:])
    full = np.concatenate([states[:t0 + 1], pred.as_array()[0]])
    return dataclasses.replace(episode, pos=full[:, 0:3], quat=full[:, 3:7], lin_vel=full[:, 7:10],
                               ang_vel=full[:, 10:13], wrench=np.concatenate([episode.wrench[:t0], wrench[0]]))
