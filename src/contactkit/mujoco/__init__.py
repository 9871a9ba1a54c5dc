"""MuJoCo reference world: Scene → MJCF, stepping under wrench or impedance control, F/T sensing."""

from contactkit.mujoco.mjcf import SENSOR_SITE, TOOL_BODY, scene_to_mjcf, tool_geom_name
from contactkit.mujoco.model import MujocoContactModel
from contactkit.mujoco.oracle import WorldOracle
from contactkit.mujoco.render import CameraView, OffscreenCanvas, RenderError, SceneRenderer, gl_context, pose_tool
from contactkit.mujoco.world import MujocoWorld, StepResult, WorldSnapshot

__all__ = [
    "SENSOR_SITE",
    "TOOL_BODY",
    "CameraView",
    "MujocoContactModel", "MujocoWorld",
    "OffscreenCanvas",
    "RenderError",
    "SceneRenderer",
    "StepResult",
    "WorldOracle",
    "WorldSnapshot",
    "gl_context",
    "pose_tool",
    "scene_to_mjcf",
    "tool_geom_name",
]
