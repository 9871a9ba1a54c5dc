"""contactkit: contact models, F/T sensing, estimation and control for contact-rich manipulation.

The most used pieces are re-exported here; subpackages hold the rest (geometry, collision, mujoco,
engine, models, estimation, control, tasks, data, eval, report).

Importing contactkit registers its gymnasium environments (:data:`GYM_ENVIRONMENTS`, e.g.
``gymnasium.make("contactkit/PegInsertion-v0")``) by entry-point string, so no environment module is imported
until one is made, and on Linux without a display it sets ``MUJOCO_GL`` for off-screen rendering when unset
(:func:`default_gl_backend`).
"""

from __future__ import annotations

import os as _os
import sys as _sys
from collections.abc import Callable, Mapping


def default_gl_backend(environ: Mapping[str, str], platform: str,
                       find_library: Callable[[str], str | None]) -> str | None:
    """The ``MUJOCO_GL`` value to set before MuJoCo is imported: None when ``MUJOCO_GL`` is already set, off Linux,
    or with a display (``DISPLAY`` / ``WAYLAND_DISPLAY``); else ``"egl"`` where ``find_library`` finds ``EGL`` and
    an OpenGL library (``OpenGL`` or ``GL``: PyOpenGL's EGL platform loads one), else ``"osmesa"`` where it finds
    ``OSMesa``, else None (rendering is then unavailable). Only a backend whose libraries exist is named: with
    ``MUJOCO_GL`` naming a missing one, ``import mujoco`` itself fails."""
    if "MUJOCO_GL" in environ or not platform.startswith("linux"):
        return None
    if environ.get("DISPLAY") or environ.get("WAYLAND_DISPLAY"):
        return None
    if find_library("EGL") and (find_library("OpenGL") or find_library("GL")):
        return "egl"
    if find_library("OSMesa"):
        return "osmesa"
    return None


def _choose_gl_backend() -> None:
    """Set ``MUJOCO_GL`` (:func:`default_gl_backend`) unless MuJoCo is imported already (it read it then)."""
    if "mujoco" in _sys.modules:
        return
    import ctypes.util

    backend = default_gl_backend(_os.environ, _sys.platform, ctypes.util.find_library)
    if backend is not None:
        _os.environ["MUJOCO_GL"] = backend


_choose_gl_backend()

from contactkit.errors import (  # noqa: E402  (MUJOCO_GL first)
    CheckpointError,
    ContactkitError,
    DatasetError,
    GeometryError,
    InvalidInputError,
)
from contactkit.model import ActionMode, ContactModel, rollout  # noqa: E402
from contactkit.physics import WorldParams, load_world  # noqa: E402
from contactkit.scene import ImpedanceGains, Scene, StaticBody, Tool  # noqa: E402
from contactkit.state import BodyState, stack_states  # noqa: E402

__version__ = "0.1.0"

GYM_ENVIRONMENTS = {
    "contactkit/PegInsertion-v0": "contactkit.tasks.peg_env:PegInsertionEnv",
}
"""gymnasium id → entry point of every environment ``import contactkit`` registers."""


def _register_gym_environments() -> None:
    """Register :data:`GYM_ENVIRONMENTS` with gymnasium (once: a reload does not re-register)."""
    from gymnasium.envs.registration import register, registry

    for env_id, entry_point in GYM_ENVIRONMENTS.items():
        if env_id not in registry:
            register(id=env_id, entry_point=entry_point, disable_env_checker=False)


_register_gym_environments()

__all__ = [
    "GYM_ENVIRONMENTS", "ActionMode", "BodyState", "CheckpointError", "ContactModel", "ContactkitError", "DatasetError",
    "GeometryError", "ImpedanceGains", "InvalidInputError", "Scene", "StaticBody", "Tool", "WorldParams",
    "default_gl_backend", "load_world", "rollout", "stack_states",
]
