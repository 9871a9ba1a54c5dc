"""Peg insertion as a gymnasium environment (Act-FIGNet paper §IV-A.c).

A tool of one of four shapes (triangle, square, hexagon, circle) starts near a matching slot with 5 mm
nominal clearance (or a circle above a square slot, the unseen pairing) and must be inserted until its
tip is within 2 mm of the slot bottom. The true dynamics are the MuJoCo world (with the F/T noise and
bias of its :class:`~contactkit.physics.WorldParams`); any other :class:`~contactkit.model.ContactModel`
may drive the environment instead.

- Observation ``(19,)`` float32 (float64 with ``observation_dtype``): tool state ``[pos (3) m, quat (4),
  lin_vel (3) m/s, ang_vel (3) rad/s]`` in the world frame, then the F/T reading ``(6,)`` [N, N·m] in the sensor
  frame. Its bounds are finite (:meth:`PegEnvConfig.observation_bounds`): a value beyond them saturates there, as a
  real sensor's reading does, and ``info["saturated"]`` says so.
- Action ``(6,)`` float32 in ``[−1, 1]``: a pose-target displacement for the impedance controller, scaled by
  :class:`~contactkit.control.mpc.ActionScale` (position [m], rotation vector [rad], world frame).
- Reward: eq 9 (:func:`contactkit.tasks.reward.insertion_reward`). The episode terminates on success and
  is truncated after ``max_steps`` control steps. ``info`` holds ``success``, ``halfway``, ``distance``
  [m], ``rotation_error`` [rad], ``step`` and ``saturated``.
- ``render_mode="rgb_array"``: :meth:`PegInsertionEnv.render` draws the tool and the slot off-screen
  (:class:`contactkit.mujoco.render.SceneRenderer`).

Registered with gymnasium as ``contactkit/PegInsertion-v0`` on ``import contactkit``:
``gymnasium.make("contactkit/PegInsertion-v0", render_mode="rgb_array", scene="my_scene.json")``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import gymnasium as gym
import numpy as np

from contactkit.control.mpc import ROT_FRACTION, ActionScale
from contactkit.errors import InvalidInputError
from contactkit.model import ActionMode, ContactModel, World
from contactkit.mujoco.world import MujocoWorld
from contactkit.physics import WorldParams, load_world
from contactkit.rotations import quat_mul, rotvec_to_quat
from contactkit.scene import Scene, load_scene
from contactkit.state import STATE_DIM, BodyState
from contactkit.tasks.reward import (
    InsertionGoal,
    insertion_reward,
    is_halfway,
    is_success,
    position_error,
    rotation_error,
)
from contactkit.tasks.scenes import peg_in_hole

__all__ = [
    "INSERTION_CLEARANCE_M",
    "INSERTION_PAIRINGS",
    "OBS_DIM",
    "ObservationBounds",
    "PegEnvConfig",
    "PegInsertionEnv",
    "split_observation",
]

INSERTION_CLEARANCE_M = 5e-3
"""Nominal radial clearance of the insertion slots [m] (Act-FIGNet paper §IV-A.c)."""
INSERTION_PAIRINGS = {
    "triangle": ("triangle", None),
    "square": ("square", None),
    "hexagon": ("hexagon", None),
    "circle": ("circle", None),
    "circle-in-square": ("circle", "square"),
}
"""Task name → (tool shape, slot shape or None for the matching slot): Fig. 4's five columns."""
OBS_DIM = STATE_DIM + 6
"""Observation length: 13 tool-state values and 6 F/T values."""
QUAT_SLICE = slice(3, 7)
"""Where the quaternion sits in the observation (bounded by ±1 itself: never counted as saturated)."""
RENDER_DISTANCE_PER_SIZE = 2.0
"""The render camera's distance from the slot's axis, in (tool height + slot depth): both in view."""


@dataclass(frozen=True)
class ObservationBounds:
    """The finite observation box: where the readings saturate. Measured under random full-scale actions
    (3 pairings × 4 episodes × 150 steps, default scene) the largest values were 0.28 m/s, 1.7 rad/s, 8.9 N and
    0.43 N·m, and the tool origin reached 0.33 m beyond the workspace; the defaults leave a wide margin.

    Attributes:
        pos_margin: the position box is the scene's workspace grown by this much on every side [m].
        speed: bound of each linear velocity component [m/s].
        ang_speed: bound of each angular velocity component [rad/s].
        force: bound of each F/T force component [N].
        torque: bound of each F/T torque component [N·m].
    """

    pos_margin: float = 0.5
    speed: float = 2.0
    ang_speed: float = 20.0
    force: float = 500.0
    torque: float = 50.0

    def __post_init__(self) -> None:
        for name in ("pos_margin", "speed", "ang_speed", "force", "torque"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and np.isfinite(value) and value > 0.0):
                raise InvalidInputError(f"ObservationBounds.{name} must be a finite number > 0, got {value!r}")

    def box(self, scene: Scene) -> tuple[np.ndarray, np.ndarray]:
        """``(low, high)``, each ``(19,)`` float64, for the observations of ``scene`` (module docstring's order)."""
        half = np.concatenate([np.ones(4), np.full(3, self.speed), np.full(3, self.ang_speed),
                               np.full(3, self.force), np.full(3, self.torque)])
        low = np.concatenate([scene.workspace_lo - self.pos_margin, -half])
        high = np.concatenate([scene.workspace_hi + self.pos_margin, half])
        return low, high


@dataclass(frozen=True)
class PegEnvConfig:
    """Static settings of the insertion environment.

    Attributes:
        pairing: a key of :data:`INSERTION_PAIRINGS`, or None for an environment given its own scene.
        clearance: radial clearance of the slot [m] (with ``pairing``).
        max_steps: control steps before truncation (150 in Act-FIGNet paper §IV-A.c).
        init_xy_radius: the tip starts uniformly within this horizontal radius of the hole axis [m].
        init_gap: ``(lo, hi)`` uniform range of the tip's height above the slot's top face [m].
        init_yaw: the tool starts turned about z by a uniform angle in ``±init_yaw`` [rad].
        rot_fraction: rotation range of an action, see :meth:`ActionScale.from_gains`.
        bounds: the observation box (:class:`ObservationBounds`).
    """

    pairing: str | None = "hexagon"
    clearance: float = INSERTION_CLEARANCE_M
    max_steps: int = 150
    init_xy_radius: float = 0.008
    init_gap: tuple[float, float] = (0.005, 0.02)
    init_yaw: float = 0.1
    rot_fraction: float = ROT_FRACTION
    bounds: ObservationBounds = field(default_factory=ObservationBounds)

    def __post_init__(self) -> None:
        if self.pairing is not None and self.pairing not in INSERTION_PAIRINGS:
            raise InvalidInputError(f"unknown pairing {self.pairing!r}; valid: {sorted(INSERTION_PAIRINGS)} "
                                    "(or None with a scene of your own)")
        if not (isinstance(self.max_steps, int) and self.max_steps >= 1):
            raise InvalidInputError(f"max_steps must be an integer >= 1, got {self.max_steps!r}")
        lo, hi = (float(v) for v in self.init_gap)
        if not 0.0 <= lo <= hi:
            raise InvalidInputError(f"init_gap must be a range 0 <= lo <= hi [m], got {self.init_gap}")
        for name in ("clearance", "init_xy_radius", "init_yaw"):
            value = float(getattr(self, name))
            if not (np.isfinite(value) and value >= 0.0):
                raise InvalidInputError(f"PegEnvConfig.{name} must be finite and >= 0, got {value}")
        if not isinstance(self.bounds, ObservationBounds):
            raise InvalidInputError(f"PegEnvConfig.bounds must be ObservationBounds, got {type(self.bounds).__name__}")

    def scene(self) -> Scene:
        """The peg-in-hole scene of this pairing and clearance."""
        if self.pairing is None:
            raise InvalidInputError("PegEnvConfig(pairing=None) names no scene: give the environment a scene")
        shape, slot = INSERTION_PAIRINGS[self.pairing]
        return peg_in_hole(shape, self.clearance, slot_shape=slot)


def split_observation(obs: np.ndarray) -> tuple[BodyState, np.ndarray]:
    """``(BodyState, wrench (6,))`` of an observation ``(19,)`` (float64; quaternion renormalised)."""
    obs = np.asarray(obs, dtype=np.float64)
    if obs.shape != (OBS_DIM,):
        raise InvalidInputError(f"observation must have shape ({OBS_DIM},), got {obs.shape}")
    state = BodyState.from_array(obs[:STATE_DIM])
    return state.replace(quat=state.quat / np.linalg.norm(state.quat)), obs[STATE_DIM:].copy()


class PegInsertionEnv(gym.Env):
    """Insert a peg into its slot (gymnasium API; ``gymnasium.make("contactkit/PegInsertion-v0", **kwargs)``).

    Args:
        config: task settings (default :class:`PegEnvConfig`, or ``PegEnvConfig(pairing=None)`` when ``scene``
            or ``world`` is given).
        params: physics of the true MuJoCo world: :class:`WorldParams`, a preset name or a world JSON file
            (default :class:`WorldParams`); ignored with ``dynamics``.
        dynamics: a ContactModel in ``POSE_DELTA`` mode to step instead of the MuJoCo world (its F/T is
            used as the reading; no noise is added).
        scene: the task's scene, a :class:`Scene` or a Scene JSON file (:func:`contactkit.scene.load_scene`; any
            peg-in-hole scene, e.g. from ``contactkit scene``); default ``config.scene()``.
        world: any :class:`~contactkit.model.World` (e.g. an :class:`~contactkit.engine.EngineWorld`) to step
            instead of building a MuJoCo world; its ``scene`` is the task's. Excludes ``params``, ``dynamics``
            and ``scene``.
        render_mode: None or ``"rgb_array"`` (:meth:`render`).
        observation_dtype: ``np.float32`` (default, what RL libraries expect) or ``np.float64`` (the planners of
            :mod:`contactkit.eval`, which plan from the observed state).
        render_size: ``(width, height)`` of a rendered image [pixels].
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 20}

    def __init__(self, config: PegEnvConfig | None = None, params: WorldParams | str | Path | None = None,
                 dynamics: ContactModel | None = None, scene: Scene | str | Path | None = None,
                 world: World | None = None, render_mode: str | None = None,
                 observation_dtype: type = np.float32, render_size: tuple[int, int] = (480, 360)):
        if world is not None and (params is not None or dynamics is not None or scene is not None):
            raise InvalidInputError("PegInsertionEnv: give a world, or params/dynamics/scene, not both")
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise InvalidInputError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        if observation_dtype not in (np.float32, np.float64, "float32", "float64"):
            raise InvalidInputError(f"observation_dtype must be float32 or float64, got {observation_dtype!r}")
        if not (len(render_size) == 2 and all(isinstance(n, int) and n >= 1 for n in render_size)):
            raise InvalidInputError(f"render_size must be (width, height) in pixels, got {render_size!r}")
        own_scene = world is not None or scene is not None
        self.config = config or (PegEnvConfig(pairing=None) if own_scene else PegEnvConfig())
        if isinstance(scene, (str, Path)):
            scene = load_scene(scene)
        self.scene = world.scene if world is not None else scene if scene is not None else self.config.scene()
        self.goal = InsertionGoal.from_scene(self.scene)
        self.scale = ActionScale.from_gains(self.scene.controller, self.config.rot_fraction)
        if dynamics is not None and ActionMode(dynamics.action_mode) is not ActionMode.POSE_DELTA:
            raise InvalidInputError(f"the env's dynamics must take pose-delta actions, got {dynamics.action_mode}")
        self.dynamics = dynamics
        if isinstance(params, (str, Path)):
            params = load_world(params)
        # The world's F/T-noise generator is replaced from ``np_random`` at every reset (seeded episodes).
        if world is None and dynamics is None:
            world = MujocoWorld(self.scene, params, rng=np.random.default_rng(0))
        self.world = world
        if world is not None:
            self.metadata = {**self.metadata, "render_fps": 1.0 / world.params.control_dt}
        self.render_mode = render_mode
        self.render_size = tuple(render_size)
        dtype = np.dtype(observation_dtype)
        low, high = (b.astype(dtype) for b in self.config.bounds.box(self.scene))
        self._low, self._high = low.astype(np.float64), high.astype(np.float64)
        self.action_space = gym.spaces.Box(-1.0, 1.0, shape=(6,), dtype=np.float32)
        self.observation_space = gym.spaces.Box(low, high, dtype=dtype)
        self.state: BodyState | None = None
        self._history: BodyState | None = None
        self._t = 0
        self._saturated = False
        self._renderer = None

    def sample_initial_state(self, rng: np.random.Generator) -> BodyState:
        """A tool at rest near the slot: tip within ``init_xy_radius`` of the axis, ``init_gap`` above the top,
        turned by up to ``init_yaw`` about z from the goal orientation."""
        c = self.config
        radius = c.init_xy_radius * np.sqrt(rng.uniform())
        angle = rng.uniform(0.0, 2.0 * np.pi)
        pos = self.goal.target_pos + np.array([radius * np.cos(angle), radius * np.sin(angle), 0.0])
        pos[2] = self.goal.slot_top_z + rng.uniform(*c.init_gap)
        yaw = rng.uniform(-c.init_yaw, c.init_yaw)
        return BodyState.at_rest(pos, quat_mul(rotvec_to_quat(np.array([0.0, 0.0, yaw])), self.goal.target_quat))

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Start an episode; ``options={"state": BodyState}`` fixes the initial state (else sampled)."""
        super().reset(seed=seed)
        state = (options or {}).get("state")
        state = self.sample_initial_state(self.np_random) if state is None else state.validated("initial state")
        if self.world is not None:
            if hasattr(self.world, "rng"):
                self.world.rng = np.random.default_rng(self.np_random.integers(2**63))
            self.state = self.world.reset(state)
        else:
            self.state = state
            h = int(self.dynamics.history)
            self._history = BodyState(*(np.repeat(np.asarray(a, dtype=np.float64)[None], h, axis=0)
                                        for a in (state.pos, state.quat, state.lin_vel, state.ang_vel)))
        self._t = 0
        obs = self._observe(np.zeros(6))
        return obs, self._info()

    def step(self, action):
        """Apply a normalised action ``(6,)`` (clipped to ``[−1, 1]``) for one control step."""
        if self.state is None:
            raise InvalidInputError("call reset() before step()")
        action = np.asarray(action, dtype=np.float64)
        if action.shape != (6,) or not np.all(np.isfinite(action)):
            raise InvalidInputError(f"action must be 6 finite numbers, got {action!r}")
        delta = self.scale.to_pose_delta(np.clip(action, -1.0, 1.0))
        if self.world is not None:
            result = self.world.step(delta, ActionMode.POSE_DELTA)
            self.state, wrench = result.state, result.wrench
        else:
            self.state, wrench = self.dynamics.step(self._history, delta)
            self._history = BodyState(*(np.concatenate([old[1:], new[None]]) for old, new in zip(
                (self._history.pos, self._history.quat, self._history.lin_vel, self._history.ang_vel),
                (self.state.pos, self.state.quat, self.state.lin_vel, self.state.ang_vel), strict=True)))
        self._t += 1
        obs = self._observe(wrench)
        info = self._info()
        reward = float(insertion_reward(self.state.pos, self.state.quat, self.goal))
        truncated = self._t >= self.config.max_steps and not info["success"]
        return obs, reward, bool(info["success"]), truncated, info

    def render(self) -> np.ndarray:
        """The current state drawn off-screen: ``(height, width, 3)`` uint8 RGB, looking down at the slot.

        Raises:
            InvalidInputError: the environment was made without ``render_mode="rgb_array"``, or not reset yet.
            ContactkitError: no OpenGL context (see :mod:`contactkit.mujoco.render`).
        """
        if self.render_mode != "rgb_array":
            raise InvalidInputError("make the environment with render_mode='rgb_array' to render it")
        if self.state is None:
            raise InvalidInputError("call reset() before render()")
        if self._renderer is None:
            from contactkit.mujoco.render import CameraView, SceneRenderer

            viewer = self.world if isinstance(self.world, MujocoWorld) else MujocoWorld(self.scene)
            z = self.scene.tool.part.vertices[:, 2]
            height, depth = float(z.max() - z.min()), float(self.goal.depth)
            middle = float(self.goal.slot_top_z) + 0.5 * (height - depth)  # slot bottom .. tool top at the start
            view = CameraView(lookat=(*(float(v) for v in self.goal.target_pos[:2]), middle),
                              distance=RENDER_DISTANCE_PER_SIZE * (height + depth))
            self._renderer = SceneRenderer(viewer, *self.render_size, view=view)
        return self._renderer.render(self.state)

    def close(self) -> None:
        """Free the renderer's OpenGL context, if one was made."""
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
        super().close()

    def _observe(self, wrench: np.ndarray) -> np.ndarray:
        """The observation of the current state and ``wrench``, saturated at the bounds (``_saturated``)."""
        raw = np.concatenate([self.state.as_array(), np.asarray(wrench, dtype=np.float64)])
        obs = np.clip(raw, self._low, self._high)
        changed = obs != raw
        changed[QUAT_SLICE] = False
        self._saturated = bool(changed.any())
        return obs.astype(self.observation_space.dtype)

    def _info(self) -> dict:
        pos = self.state.pos
        return {
            "success": bool(is_success(pos, self.goal)),
            "halfway": bool(is_halfway(pos, self.goal)),
            "distance": float(position_error(pos, self.goal)),
            "rotation_error": float(rotation_error(self.state.quat, self.goal)),
            "step": self._t,
            "saturated": self._saturated,
        }
