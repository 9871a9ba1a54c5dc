"""Model-predictive control with iCEM over any :class:`~contactkit.model.ContactModel` (Act-FIGNet paper App. C).

Every ``replan_every`` control steps the agent optimises a sequence of ``horizon`` normalised pose-delta
actions with :func:`contactkit.control.icem.optimize`; the objective rolls the *model* out open loop from
the tool's recent observed states (:func:`contactkit.model.rollout`) and sums a per-step reward (eq 9 of
act-fignet for peg insertion) over the horizon. The agent then executes the first ``replan_every``
actions of the plan and shifts the sampling distribution (iCEM's memory) by as many steps. The models
are deterministic, so one particle per candidate is used (Table IV). The agent never knows which model
it holds: MuJoCo, the contactkit engine and Act-FIGNet plug in alike.

The core is the pure function :func:`mpc_step` on a frozen :class:`MPCState`; :class:`MPCAgent` keeps
that state between calls for an episode loop.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from contactkit.control.icem import ICEMConfig, ICEMInfo, ICEMState, initial_state, optimize, shift
from contactkit.errors import InvalidInputError
from contactkit.model import ActionMode, ContactModel, rollout_with_status
from contactkit.scene import ImpedanceGains
from contactkit.state import BodyState

__all__ = [
    "ROT_FRACTION",
    "ActionScale",
    "MPCAgent",
    "MPCConfig",
    "MPCState",
    "StepReward",
    "make_objective",
    "mpc_reset",
    "mpc_step",
]

ROT_FRACTION = 0.1
"""Default rotation range per action as a fraction of the controller's largest per-axis rotation step:
rotations stay small (the peg only needs to stay upright), positions get the full range."""

StepReward = Callable[[BodyState], np.ndarray]
"""``reward(states with batch (N, T)) -> (N, T)`` per-step rewards of predicted states; higher is better."""


@dataclass(frozen=True)
class ActionScale:
    """Map between normalised actions ``a ∈ [−1, 1]⁶`` and pose-target displacements.

    ``delta = (pos · a[:3], rot · a[3:])``: position [m] and rotation vector [rad], world frame
    (:data:`contactkit.control.impedance.ActionMode.POSE_DELTA`).

    Attributes:
        pos: displacement per unit action along each axis [m].
        rot: rotation per unit action about each axis [rad].
    """

    pos: float
    rot: float

    def __post_init__(self) -> None:
        for name in ("pos", "rot"):
            value = float(getattr(self, name))
            if not (math.isfinite(value) and value > 0.0):
                raise InvalidInputError(f"ActionScale.{name} must be positive and finite, got {value}")
            object.__setattr__(self, name, value)

    @staticmethod
    def from_gains(gains: ImpedanceGains, rot_fraction: float = ROT_FRACTION) -> ActionScale:
        """Scale that keeps every action in the box inside the controller's norm limits.

        ``pos = max_pos_step / √3`` and ``rot = rot_fraction · max_rot_step / √3``: the corner of the unit
        box maps to exactly ``max_pos_step`` (resp. ``rot_fraction · max_rot_step``), so the impedance
        controller's clipping (:func:`~contactkit.control.impedance.pose_target`) never changes an action.
        """
        if not 0.0 < rot_fraction <= 1.0:
            raise InvalidInputError(f"rot_fraction must lie in (0, 1], got {rot_fraction}")
        return ActionScale(gains.max_pos_step / math.sqrt(3.0), rot_fraction * gains.max_rot_step / math.sqrt(3.0))

    def to_pose_delta(self, action: np.ndarray) -> np.ndarray:
        """``(*B, 6)`` pose deltas [m, rad] of normalised actions ``(*B, 6)`` (not clipped)."""
        action = np.asarray(action, dtype=np.float64)
        if action.shape[-1:] != (6,):
            raise InvalidInputError(f"actions must have shape (*B, 6), got {action.shape}")
        return action * np.array([self.pos] * 3 + [self.rot] * 3)

    def to_normalized(self, delta: np.ndarray) -> np.ndarray:
        """Inverse of :meth:`to_pose_delta`: ``(*B, 6)`` normalised actions of pose deltas [m, rad]."""
        delta = np.asarray(delta, dtype=np.float64)
        if delta.shape[-1:] != (6,):
            raise InvalidInputError(f"pose deltas must have shape (*B, 6), got {delta.shape}")
        return delta / np.array([self.pos] * 3 + [self.rot] * 3)


@dataclass(frozen=True, eq=False)
class MPCConfig:
    """Static settings of the MPC agent.

    Attributes:
        icem: optimiser settings over normalised actions (bounds ``[−1, 1]⁶``); ``horizon``,
            ``population``, ``iterations`` and ``replan_every`` are the knobs of Table IV.
        scale: normalised action → pose delta.
    """

    icem: ICEMConfig
    scale: ActionScale

    def __post_init__(self) -> None:
        if self.icem.action_dim != 6:
            raise InvalidInputError(f"MPCConfig plans 6-D pose deltas, icem has {self.icem.action_dim} dims")
        if np.any(self.icem.lower < -1.0) or np.any(self.icem.upper > 1.0):
            raise InvalidInputError("MPCConfig.icem bounds must lie inside the normalised box [-1, 1]")

    @staticmethod
    def table_iv(scale: ActionScale, **icem_overrides) -> MPCConfig:
        """Act-FIGNet paper Table IV: horizon 50, population 20, 5 iterations, replan every 5 frames.

        The mean starts at the zero action (hold the pose); ``icem_overrides`` replace any
        :class:`ICEMConfig` field (e.g. a smaller budget for a quick run).
        """
        fields = {"horizon": 50, "population": 20, "iterations": 5, "replan_every": 5,
                  "init_mean": np.zeros(6), **icem_overrides}
        return MPCConfig(ICEMConfig(lower=-np.ones(6), upper=np.ones(6), **fields), scale)


@dataclass(frozen=True, eq=False)
class MPCState:
    """What the agent carries between control steps.

    Attributes:
        icem: sampling distribution and kept elites.
        plan: ``(horizon, 6)`` normalised actions of the last replan (None before the first).
        step: control steps executed since :func:`mpc_reset`.
        history: the last ``model.history`` observed tool states, batch ``(H,)``, oldest first.
    """

    icem: ICEMState
    plan: np.ndarray | None
    step: int
    history: BodyState


def _window(model: ContactModel, state: BodyState) -> BodyState:
    """``(H,)`` history of a tool that has been at ``state`` for ``model.history`` steps."""
    h = int(model.history)
    return BodyState(*(np.repeat(np.asarray(a, dtype=np.float64)[None], h, axis=0)
                       for a in (state.pos, state.quat, state.lin_vel, state.ang_vel)))


def _push(history: BodyState, state: BodyState) -> BodyState:
    """Drop the oldest state of an ``(H,)`` window and append ``state``."""
    return BodyState(*(np.concatenate([old[1:], np.asarray(new, dtype=np.float64)[None]])
                       for old, new in zip((history.pos, history.quat, history.lin_vel, history.ang_vel),
                                           (state.pos, state.quat, state.lin_vel, state.ang_vel), strict=True)))


def make_objective(model: ContactModel, reward: StepReward, scale: ActionScale, history: BodyState):
    """iCEM objective: summed reward of the model's open-loop rollout from ``history``.

    Args:
        model: any ContactModel in ``POSE_DELTA`` mode.
        reward: per-step reward of predicted states.
        scale: normalised → physical actions.
        history: ``(H,)`` observed states, oldest first.

    Returns:
        ``objective(actions (N, T, 6)) -> (N,)``: ``Σ_t reward(s_t)``; ``-inf`` (infeasible: the worst cost, dropped
        by iCEM) where the rollout left the finite numbers or the model flagged the element as diverged
        (:func:`~contactkit.model.rollout_with_status`: one diverged candidate no longer fails the population).
    """
    def objective(actions: np.ndarray) -> np.ndarray:
        n = actions.shape[0]
        batch = BodyState(*(np.broadcast_to(a, (n, *a.shape)) for a in
                            (history.pos, history.quat, history.lin_vel, history.ang_vel)))
        states, _, diverged = rollout_with_status(model, batch, scale.to_pose_delta(actions))
        total = np.sum(reward(states), axis=-1)
        return np.where(np.isfinite(total) & ~diverged, total, -np.inf)

    return objective


def mpc_reset(model: ContactModel, config: MPCConfig, state: BodyState) -> MPCState:
    """Start of an episode: fresh iCEM distribution, no plan, history filled with ``state`` (at rest).

    Raises:
        InvalidInputError: when the model does not take pose-delta actions.
    """
    if ActionMode(model.action_mode) is not ActionMode.POSE_DELTA:
        raise InvalidInputError(
            f"MPC plans pose-delta actions; the model takes {ActionMode(model.action_mode).value!r}"
        )
    state = state.validated("MPC state")
    if state.batch_shape != ():
        raise InvalidInputError(f"MPC controls one tool; got a state of batch shape {state.batch_shape}")
    return MPCState(initial_state(config.icem), None, 0, _window(model, state))


def mpc_step(
    model: ContactModel,
    config: MPCConfig,
    reward: StepReward,
    mpc: MPCState,
    observed: BodyState | None,
    rng: np.random.Generator,
) -> tuple[np.ndarray, MPCState, ICEMInfo | None, float]:
    """One control step of the receding-horizon loop (iCEM MPC, Act-FIGNet paper App. C, Table IV).

    Args:
        model: the model planned with (``POSE_DELTA`` actions, ``control_dt`` per step).
        config: settings.
        reward: per-step reward of predicted states ``(N, T) -> (N, T)``.
        mpc: state from :func:`mpc_reset` or the previous call.
        observed: the tool state now (world frame), or None on the first call after :func:`mpc_reset`
            (whose state is already in the history).
        rng: source of the iCEM samples.

    Returns:
        ``(action, new_state, info, replan_s)``: the normalised action ``(6,)`` in ``[−1, 1]`` to execute;
        the new MPC state; iCEM diagnostics and the wall-clock seconds of the optimisation when this step
        replanned (else None and 0.0).
    """
    history = mpc.history if observed is None else _push(mpc.history, observed.validated("observed state"))
    k = mpc.step % config.icem.replan_every
    info, seconds = None, 0.0
    icem_state, plan = mpc.icem, mpc.plan
    if k == 0 or plan is None:
        if plan is not None:
            icem_state = shift(icem_state, config.icem.replan_every, config.icem)
        objective = make_objective(model, reward, config.scale, history)
        started = time.perf_counter()
        plan, icem_state, info = optimize(objective, icem_state, config.icem, rng)
        seconds = time.perf_counter() - started
        k = 0
    return plan[k].copy(), MPCState(icem_state, plan, mpc.step + 1, history), info, seconds


class MPCAgent:
    """An episode loop's handle on :func:`mpc_step`: same agent for every model, only ``model`` changes.

    Args:
        model: the ContactModel planned with (``POSE_DELTA`` actions).
        config: MPC settings (:meth:`MPCConfig.table_iv` for the paper's).
        reward: per-step reward of predicted states (the task's, e.g.
            :func:`contactkit.tasks.reward.goal_reward` for the peg-in-hole task's eq 9).
        rng: source of randomness of the planner.
    """

    def __init__(self, model: ContactModel, config: MPCConfig, reward: StepReward, rng: np.random.Generator):
        self.model, self.config, self.reward, self.rng = model, config, reward, rng
        self._state: MPCState | None = None
        self.replan_seconds: list[float] = []
        self.last_info: ICEMInfo | None = None

    def reset(self, state: BodyState) -> None:
        """Begin an episode at tool ``state`` (world frame); replan times are kept across episodes."""
        self._state = mpc_reset(self.model, self.config, state)
        self._first = True

    def act(self, state: BodyState) -> np.ndarray:
        """Normalised action ``(6,)`` for the observed tool ``state`` (replans every ``replan_every`` calls)."""
        if self._state is None:
            raise InvalidInputError("call MPCAgent.reset(state) before act()")
        observed = None if self._first else state
        self._first = False
        action, self._state, info, seconds = mpc_step(
            self.model, self.config, self.reward, self._state, observed, self.rng
        )
        if info is not None:
            self.last_info = info
            self.replan_seconds.append(seconds)
        return action

    @property
    def state(self) -> MPCState | None:
        """The current :class:`MPCState` (None before :meth:`reset`)."""
        return self._state

