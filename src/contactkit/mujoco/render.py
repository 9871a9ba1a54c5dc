"""Off-screen RGB images of a scene (EGL or OSMesa on a machine without a display): the one off-screen OpenGL
setup of contactkit, used by the gym environment's ``render()`` (:class:`SceneRenderer`) and by the rendered rollouts
(:class:`contactkit.report.render.EpisodeRenderer`).

The OpenGL context is made here (:func:`gl_context`), not by ``mujoco.Renderer`` (which fixes its backend when mujoco
is first imported): ``MUJOCO_GL`` when set, else EGL, falling back to OSMesa; neither: a :class:`RenderError` saying
what each gave. ``import contactkit`` sets ``MUJOCO_GL`` to ``egl`` (else ``osmesa``) when it is unset and there is
no display (:func:`contactkit.default_gl_backend`).
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass

import mujoco
import numpy as np

from contactkit.errors import ContactkitError, InvalidInputError
from contactkit.mujoco.world import MujocoWorld
from contactkit.state import BodyState

GL_BACKENDS = ("egl", "osmesa")
"""Off-screen OpenGL backends tried in this order when ``MUJOCO_GL`` is not set."""
SCENE_MAX_GEOMS = 10_000
"""Geoms the :class:`SceneRenderer`'s scene holds (``mujoco.Renderer``'s default)."""
MAX_IMAGE_SIDE = 4096
"""Largest image width or height [pixels] a renderer accepts."""
HEADLIGHT_AMBIENT = 0.4
HEADLIGHT_DIFFUSE = 0.6
"""The camera's headlight (the scenes have no lights of their own): MuJoCo's 0.1 / 0.4 leaves the parts dark."""


class RenderError(ContactkitError):
    """No off-screen OpenGL context could be made, or a video cannot be encoded here."""


def gl_context(width: int, height: int):
    """A current off-screen OpenGL context of at least ``width`` x ``height`` pixels, and its backend's name.

    Raises:
        RenderError: no backend worked (``MUJOCO_GL`` if set, else EGL then OSMesa), naming what each raised.
    """
    chosen = os.environ.get("MUJOCO_GL", "").strip().lower()
    errors = []
    for name in [chosen] if chosen else GL_BACKENDS:
        try:
            context = importlib.import_module(f"mujoco.{name}").GLContext(width, height)
            context.make_current()
            return context, name
        except Exception as exc:  # each backend raises its own ImportError, RuntimeError, OSError or GL errors
            errors.append(f"{name}: {type(exc).__name__}: {exc}")
    raise RenderError("no off-screen OpenGL context (MuJoCo rendering needs EGL or OSMesa: set MUJOCO_GL=egl or "
                      "osmesa, or install libegl1 / libosmesa6): " + "; ".join(errors))


class OffscreenCanvas:
    """An off-screen OpenGL context (:func:`gl_context`) with MuJoCo's render context of ``model``: draws a
    ``mujoco.MjvScene`` into an RGB image.

    Args:
        model: the model drawn; its offscreen buffer is enlarged to ``width`` x ``height`` where smaller.
        width, height: image size [pixels].

    Raises:
        RenderError: no OpenGL context could be made.
    """

    def __init__(self, model: mujoco.MjModel, width: int, height: int):
        model.vis.global_.offwidth = max(model.vis.global_.offwidth, width)
        model.vis.global_.offheight = max(model.vis.global_.offheight, height)
        self.width, self.height = width, height
        self._context, self.backend = gl_context(width, height)
        self._mjr = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_100)
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self._mjr)
        self.viewport = mujoco.MjrRect(0, 0, width, height)

    def read(self, scene: mujoco.MjvScene, label: str = "") -> np.ndarray:
        """``scene`` drawn, with ``label`` in the top-left corner: ``(height, width, 3)`` uint8 RGB."""
        self._context.make_current()
        mujoco.mjr_render(self.viewport, scene, self._mjr)
        if label:
            mujoco.mjr_overlay(mujoco.mjtFontScale.mjFONTSCALE_100, mujoco.mjtGridPos.mjGRID_TOPLEFT,
                               self.viewport, label, "", self._mjr)
        rgb = np.empty((self.height, self.width, 3), dtype=np.uint8)
        mujoco.mjr_readPixels(rgb, None, self.viewport, self._mjr)
        return np.flipud(rgb)

    def close(self) -> None:
        """Free the OpenGL resources (idempotent)."""
        if self._context is not None:
            self._mjr.free()
            self._context.free()
            self._context = None


def pose_tool(world: MujocoWorld, data: mujoco.MjData, state: BodyState) -> None:
    """Place the tool of ``world``'s model at an unbatched ``state`` (world frame) in ``data`` (positions only).

    Without compliance the tool's free joint takes the pose; with the flange–tool compliance
    (``WorldParams.compliance_*``) the flange's free joint takes it and the compliance joints are undeflected, so
    the tool body (the flange's child at zero deflection) is drawn at ``state``.
    """
    data.qpos[:] = world.model.qpos0
    data.qpos[0:3] = state.pos
    data.qpos[3:7] = state.quat / np.linalg.norm(state.quat)
    mujoco.mj_kinematics(world.model, data)


@dataclass(frozen=True)
class CameraView:
    """A free camera looking at a point.

    Attributes:
        lookat: ``(3,)`` point the camera looks at [m, world].
        distance: from the camera to ``lookat`` [m].
        azimuth: about the world z axis [deg].
        elevation: above the horizontal, negative looks down [deg].
    """

    lookat: tuple[float, float, float] = (0.0, 0.0, 0.0)
    distance: float = 0.3
    azimuth: float = 135.0
    elevation: float = -30.0

    def __post_init__(self) -> None:
        values = np.asarray([*self.lookat, self.distance, self.azimuth, self.elevation], dtype=np.float64)
        if len(self.lookat) != 3 or not np.all(np.isfinite(values)) or self.distance <= 0.0:
            raise InvalidInputError(f"CameraView needs a finite (3,) lookat and distance > 0, got {self}")


class SceneRenderer:
    """Draws the tool of a :class:`~contactkit.mujoco.MujocoWorld` at a given state, off-screen.

    Args:
        world: the world whose model is drawn; its ``data`` is not touched (the renderer keeps its own).
        width, height: image size [pixels], at most :data:`MAX_IMAGE_SIDE` (the model's offscreen buffer is
            enlarged to fit).
        view: the camera.

    Raises:
        InvalidInputError: a bad size.
        RenderError: no OpenGL context could be made (the message names ``MUJOCO_GL``).
    """

    def __init__(self, world: MujocoWorld, width: int = 480, height: int = 360, view: CameraView | None = None):
        for name, side in (("width", width), ("height", height)):
            if not (isinstance(side, int) and 1 <= side <= MAX_IMAGE_SIDE):
                raise InvalidInputError(f"render {name} must be an integer in 1..{MAX_IMAGE_SIDE}, got {side!r}")
        self.world = world
        self.view = view or CameraView()
        model = world.model
        model.vis.headlight.ambient[:] = HEADLIGHT_AMBIENT
        model.vis.headlight.diffuse[:] = HEADLIGHT_DIFFUSE
        self._data = mujoco.MjData(model)
        self._canvas = OffscreenCanvas(model, width, height)
        self._scene = mujoco.MjvScene(model, maxgeom=SCENE_MAX_GEOMS)
        self._option = mujoco.MjvOption()
        self._camera = mujoco.MjvCamera()
        self._camera.type = mujoco.mjtCamera.mjCAMERA_FREE
        self._camera.lookat[:] = self.view.lookat
        self._camera.distance = self.view.distance
        self._camera.azimuth = self.view.azimuth
        self._camera.elevation = self.view.elevation

    def render(self, state: BodyState) -> np.ndarray:
        """The image ``(height, width, 3)`` uint8 RGB of the tool at an unbatched ``state`` (world frame)."""
        state.validated("SceneRenderer.render")
        pose_tool(self.world, self._data, state)
        mujoco.mjv_updateScene(self.world.model, self._data, self._option, None, self._camera,
                               mujoco.mjtCatBit.mjCAT_ALL, self._scene)
        return self._canvas.read(self._scene)

    def close(self) -> None:
        """Free the OpenGL context (idempotent)."""
        self._canvas.close()
