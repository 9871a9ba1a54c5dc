"""MuJoCo reference world: Scene → MJCF, stepping under wrench or impedance control, F/T sensing."""

from contactkit.mujoco.mjcf import SENSOR_SITE, TOOL_BODY, scene_to_mjcf, tool_geom_name
from contactkit.mujoco.model import MujocoContactModel
from contactkit.mujoco.world import MujocoWorld, StepResult

__all__ = [
    "SENSOR_SITE",
    "TOOL_BODY",
    "MujocoContactModel", "MujocoWorld",
    "StepResult",
    "scene_to_mjcf",
    "tool_geom_name",
]
