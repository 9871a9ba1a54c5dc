"""Off-screen RGB images of a scene through ``mujoco.Renderer`` (EGL or OSMesa on a machine without a display).

MuJoCo picks its OpenGL backend from ``MUJOCO_GL`` when it is first imported; ``import contactkit`` sets it to
``egl`` (else ``osmesa``) when it is unset and there is no display (:func:`contactkit.default_gl_backend`), so
import contactkit before anything that imports mujoco, or set ``MUJOCO_GL`` yourself.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import mujoco
import numpy as np

from contactkit.errors import ContactkitError, InvalidInputError
from contactkit.mujoco.world import MujocoWorld
from contactkit.state import BodyState

MAX_IMAGE_SIDE = 4096
"""Largest image width or height [pixels] a renderer accepts."""
HEADLIGHT_AMBIENT = 0.4
HEADLIGHT_DIFFUSE = 0.6
"""The camera's headlight (the scenes have no lights of their own): MuJoCo's 0.1 / 0.4 leaves the parts dark."""


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
        ContactkitError: no OpenGL context could be made (the message names ``MUJOCO_GL``).
    """

    def __init__(self, world: MujocoWorld, width: int = 480, height: int = 360, view: CameraView | None = None):
        for name, side in (("width", width), ("height", height)):
            if not (isinstance(side, int) and 1 <= side <= MAX_IMAGE_SIDE):
                raise InvalidInputError(f"render {name} must be an integer in 1..{MAX_IMAGE_SIDE}, got {side!r}")
        self.world = world
        self.view = view or CameraView()
        model = world.model
        model.vis.global_.offwidth = max(model.vis.global_.offwidth, width)
        model.vis.global_.offheight = max(model.vis.global_.offheight, height)
        model.vis.headlight.ambient[:] = HEADLIGHT_AMBIENT
        model.vis.headlight.diffuse[:] = HEADLIGHT_DIFFUSE
        self._data = mujoco.MjData(model)
        try:
            self._renderer = mujoco.Renderer(model, height, width)
        except Exception as exc:  # the GL backends raise ImportError, RuntimeError, AttributeError or their own
            raise ContactkitError(
                f"cannot render off-screen with MUJOCO_GL={os.environ.get('MUJOCO_GL', '(unset)')!r}: "
                f"{type(exc).__name__}: {exc}; set MUJOCO_GL=egl or osmesa before importing mujoco") from exc
        self._camera = mujoco.MjvCamera()
        self._camera.type = mujoco.mjtCamera.mjCAMERA_FREE
        self._camera.lookat[:] = self.view.lookat
        self._camera.distance = self.view.distance
        self._camera.azimuth = self.view.azimuth
        self._camera.elevation = self.view.elevation

    def render(self, state: BodyState) -> np.ndarray:
        """The image ``(height, width, 3)`` uint8 RGB of the tool at an unbatched ``state`` (world frame)."""
        state.validated("SceneRenderer.render")
        d = self._data
        d.qpos[0:3] = state.pos
        d.qpos[3:7] = state.quat / np.linalg.norm(state.quat)
        mujoco.mj_kinematics(self.world.model, d)
        self._renderer.update_scene(d, camera=self._camera)
        return self._renderer.render()

    def close(self) -> None:
        """Free the OpenGL context (idempotent)."""
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
