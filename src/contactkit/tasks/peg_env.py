"""Peg insertion as a gymnasium environment (Act-FIGNet paper §IV-A.c).

A tool of one of four shapes (triangle, square, hexagon, circle) starts near a matching slot with 5 mm
nominal clearance (or a circle above a square slot, the unseen pairing) and must be inserted until its
tip is within 2 mm of the slot bottom. The true dynamics are the MuJoCo world (with the F/T noise and
bias of its :class:`~contactkit.physics.WorldParams`); any other :class:`~contactkit.model.ContactModel`
may drive the environment instead.

- Observation ``(19,)``: tool state ``[pos (3) m, quat (4), lin_vel (3) m/s, ang_vel (3) rad/s]`` in the
  world frame, then the F/T reading ``(6,)`` [N, N·m] in the sensor frame.
- Action ``(6,)`` in ``[−1, 1]``: a pose-target displacement for the impedance controller, scaled by
  :class:`~contactkit.control.mpc.ActionScale` (position [m], rotation vector [rad], world frame).
- Reward: eq 9 (:func:`contactkit.tasks.reward.insertion_reward`). The episode terminates on success and
  is truncated after ``max_steps`` control steps. ``info`` holds ``success``, ``halfway``, ``distance``
  [m] and ``rotation_error`` [rad].
"""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium as gym
import numpy as np

from contactkit.control.mpc import ROT_FRACTION, ActionScale
from contactkit.errors import InvalidInputError
from contactkit.model import ActionMode, ContactModel, World
from contactkit.mujoco.world import MujocoWorld
from contactkit.physics import WorldParams
from contactkit.rotations import quat_mul, rotvec_to_quat
from contactkit.scene import Scene
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


@dataclass(frozen=True)
class PegEnvConfig:
    """Static settings of the insertion environment.

    Attributes:
        pairing: a key of :data:`INSERTION_PAIRINGS`.
        clearance: radial clearance of the slot [m].
        max_steps: control steps before truncation (150 in Act-FIGNet paper §IV-A.c).
        init_xy_radius: the tip starts uniformly within this horizontal radius of the hole axis [m].
        init_gap: ``(lo, hi)`` uniform range of the tip's height above the slot's top face [m].
        init_yaw: the tool starts turned about z by a uniform angle in ``±init_yaw`` [rad].
        rot_fraction: rotation range of an action, see :meth:`ActionScale.from_gains`.
    """

    pairing: str = "hexagon"
    clearance: float = INSERTION_CLEARANCE_M
    max_steps: int = 150
    init_xy_radius: float = 0.008
    init_gap: tuple[float, float] = (0.005, 0.02)
    init_yaw: float = 0.1
    rot_fraction: float = ROT_FRACTION

    def __post_init__(self) -> None:
        if self.pairing not in INSERTION_PAIRINGS:
            raise InvalidInputError(f"unknown pairing {self.pairing!r}; valid: {sorted(INSERTION_PAIRINGS)}")
        if not (isinstance(self.max_steps, int) and self.max_steps >= 1):
            raise InvalidInputError(f"max_steps must be an integer >= 1, got {self.max_steps!r}")
        lo, hi = (float(v) for v in self.init_gap)
        if not 0.0 <= lo <= hi:
            raise InvalidInputError(f"init_gap must be a range 0 <= lo <= hi [m], got {self.init_gap}")
        for name in ("clearance", "init_xy_radius", "init_yaw"):
            value = float(getattr(self, name))
            if not (np.isfinite(value) and value >= 0.0):
                raise InvalidInputError(f"PegEnvConfig.{name} must be finite and >= 0, got {value}")

    def scene(self) -> Scene:
        """The peg-in-hole scene of this pairing and clearance."""
        shape, slot = INSERTION_PAIRINGS[self.pairing]
        return peg_in_hole(shape, self.clearance, slot_shape=slot)


def split_observation(obs: np.ndarray) -> tuple[BodyState, np.ndarray]:
    """``(BodyState, wrench (6,))`` of an observation ``(19,)`` (quaternion renormalised)."""
    obs = np.asarray(obs, dtype=np.float64)
    if obs.shape != (OBS_DIM,):
        raise InvalidInputError(f"observation must have shape ({OBS_DIM},), got {obs.shape}")
    state = BodyState.from_array(obs[:STATE_DIM])
    return state.replace(quat=state.quat / np.linalg.norm(state.quat)), obs[STATE_DIM:].copy()


class PegInsertionEnv(gym.Env):
    """Insert a peg into its slot (gymnasium API).

    Args:
        config: task settings.
        params: physics of the true MuJoCo world (default :class:`WorldParams`); ignored with ``dynamics``.
        dynamics: a ContactModel in ``POSE_DELTA`` mode to step instead of the MuJoCo world (its F/T is
            used as the reading; no noise is added).
        scene: the scene of ``dynamics``' world; default ``config.scene()``.
        world: any :class:`~contactkit.model.World` (e.g. an :class:`~contactkit.engine.EngineWorld`) to step
            instead of building a MuJoCo world; its ``scene`` is the task's. Excludes ``params`` and ``dynamics``.
    """

    metadata = {"render_modes": []}

    def __init__(self, config: PegEnvConfig | None = None, params: WorldParams | None = None,
                 dynamics: ContactModel | None = None, scene: Scene | None = None, world: World | None = None):
        if world is not None and (params is not None or dynamics is not None or scene is not None):
            raise InvalidInputError("PegInsertionEnv: give a world, or params/dynamics/scene, not both")
        self.config = config or PegEnvConfig()
        self.scene = world.scene if world is not None else scene if scene is not None else self.config.scene()
        self.goal = InsertionGoal.from_scene(self.scene)
        self.scale = ActionScale.from_gains(self.scene.controller, self.config.rot_fraction)
        if dynamics is not None and ActionMode(dynamics.action_mode) is not ActionMode.POSE_DELTA:
            raise InvalidInputError(f"the env's dynamics must take pose-delta actions, got {dynamics.action_mode}")
        self.dynamics = dynamics
        # The world's F/T-noise generator is replaced from ``np_random`` at every reset (seeded episodes).
        if world is None and dynamics is None:
            world = MujocoWorld(self.scene, params, rng=np.random.default_rng(0))
        self.world = world
        self.action_space = gym.spaces.Box(-1.0, 1.0, shape=(6,), dtype=np.float64)
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, shape=(OBS_DIM,), dtype=np.float64)
        self.state: BodyState | None = None
        self._history: BodyState | None = None
        self._t = 0

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
        return self._observe(np.zeros(6)), self._info()

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
        info = self._info()
        reward = float(insertion_reward(self.state.pos, self.state.quat, self.goal))
        truncated = self._t >= self.config.max_steps and not info["success"]
        return self._observe(wrench), reward, bool(info["success"]), truncated, info

    def _observe(self, wrench: np.ndarray) -> np.ndarray:
        return np.concatenate([self.state.as_array(), np.asarray(wrench, dtype=np.float64)])

    def _info(self) -> dict:
        pos = self.state.pos
        return {
            "success": bool(is_success(pos, self.goal)),
            "halfway": bool(is_halfway(pos, self.goal)),
            "distance": float(position_error(pos, self.goal)),
            "rotation_error": float(rotation_error(self.state.quat, self.goal)),
            "step": self._t,
        }
