"""The shared vocabulary of every simulator, learned model and consumer (docs/architecture.md).

* :class:`ActionMode`: what a 6-D action means (a wrench, a pose-target displacement, or an absolute pose target).
* :class:`StepResult` and :class:`World`: a simulated (or logged) cell — ``reset``, ``step(action) ->
  StepResult``, its ``scene`` and ``params``. :class:`contactkit.mujoco.MujocoWorld` and
  :class:`contactkit.engine.EngineWorld` are Worlds; ``run_episode``, the datasets and the gym
  environments take any World.
* :class:`ContactModel`: ``step(history, action) -> (next_state, wrench)``: given the tool's recent states
  and an action, predict the next state and the F/T reading during the step. Estimators and planners hold
  a ``ContactModel`` and never know whether it is MuJoCo, the contactkit engine, or a learned graph network.

This module is the lowest layer of contactkit: it imports only :mod:`contactkit.state` and
:mod:`contactkit.errors` (and, for type annotations only, the scene and world parameters).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from contactkit.errors import InvalidInputError, SimulationDiverged
from contactkit.state import BodyState

if TYPE_CHECKING:
    from contactkit.physics import WorldParams
    from contactkit.scene import Scene


class ActionMode(str, Enum):
    """What a 6-D action means."""

    WRENCH = "wrench"
    """A wrench (force [N], torque [N·m]) in the world frame about the tool origin, added to gravity compensation."""
    POSE_DELTA = "pose-delta"
    """A displacement of the impedance target from the current pose: position [m], rotation vector [rad]."""
    POSE_TARGET = "pose-target"
    """An absolute impedance target, what a robot's Cartesian controller tracks: position [m, world] and the
    rotation vector [rad, world] of the target orientation, both of the tool centre point
    (``ImpedanceGains.tcp_offset``)."""


@dataclass(frozen=True)
class StepResult:
    """What one control step of a :class:`World` produced.

    Attributes:
        state: tool state after the step (world frame).
        wrench: ``(6,)`` F/T reading, sensor frame [N, N·m], mean over the control period, noise and bias added.
        applied: ``(6,)`` mean wrench the controller applied, world frame, about the tool origin [N, N·m],
            gravity compensation included.
        clipped: the controller's limits that bound during the step, by their ``ImpedanceGains`` names
            (``max_pos_step``, ``max_rot_step``: the pose target was clipped; ``max_force``, ``max_torque``: the
            wrench was, in some physics sub-step); empty when the command was tracked as given
            (:class:`contactkit.control.clipping.ClipTally` counts them over an episode).
    """

    state: BodyState
    wrench: np.ndarray
    applied: np.ndarray
    clipped: frozenset[str] = frozenset()


@runtime_checkable
class World(Protocol):
    """A simulated (or logged) cell holding one tool: what ``run_episode`` and the gym environments take.

    Attributes:
        scene: the static description (:class:`contactkit.scene.Scene`).
        params: the physics parameters (:class:`contactkit.physics.WorldParams`); ``params.control_dt`` is the
            duration of one :meth:`step` [s].
    """

    scene: Scene
    params: WorldParams

    def reset(self, state: BodyState | None = None) -> BodyState:
        """Reset to the unbatched ``state`` (default: the scene's initial pose at rest), world frame; return it."""
        ...

    def step(self, command: np.ndarray, mode: ActionMode) -> StepResult:
        """Advance one control step under the ``(6,)`` action ``command`` read in ``mode``."""
        ...


@runtime_checkable
class ContactModel(Protocol):
    """A contact model of one tool in a static scene.

    Attributes:
        action_mode: what an action means (:class:`ActionMode`): a world wrench about the tool origin
            [N, N·m] or a pose-target displacement [m, rad] for the scene's impedance controller.
        history: number of past states ``H`` the model reads (1 for a simulator, 3 for Act-FIGNet).
        control_dt: duration of one step [s]; data stepped with the model must share it
            (:func:`check_control_period`).

    Per-element status (optional, backward compatible): a batched model may also have
    ``step_with_status(history, action) -> (next_state (*B,), wrench (*B, 6), diverged (*B,) bool)``, which steps
    every element it can and flags the ones that diverged instead of raising for the whole batch: a flagged element
    keeps its input state (the last of its history) and its reading is NaN. :func:`step_with_status` calls it where
    a model has it (:class:`contactkit.mujoco.MujocoContactModel`), else ``step`` — whose
    :class:`~contactkit.errors.SimulationDiverged` for the batch then makes it step the elements one at a time to
    find the diverged ones. Planners give a flagged rollout the worst cost, filters a flagged particle weight 0.
    """

    action_mode: ActionMode
    history: int
    control_dt: float

    def step(self, history: BodyState, action: np.ndarray) -> tuple[BodyState, np.ndarray]:
        """Advance one control step.

        Args:
            history: states with shape ``(*B, H)`` (time axis last among the batch axes, oldest first),
                world frame.
            action: ``(*B, 6)`` actions in ``action_mode``.

        Returns:
            ``(next_state (*B,), wrench (*B, 6))``: the state after the step and the F/T reading during
            it (sensor frame, N and N·m, torque about the sensor origin).
        """
        ...


def rollout(model: ContactModel, history: BodyState, actions: np.ndarray) -> tuple[BodyState, np.ndarray]:
    """Roll ``model`` open loop over ``actions`` ``(*B, T, 6)`` from ``history`` ``(*B, H)``.

    Returns:
        ``(states (*B, T), wrenches (*B, T, 6))``: the state after each step and the reading during it.
    """
    states, wrenches, _ = _roll(lambda window, action: (*model.step(window, action), None), history,
                                np.asarray(actions, dtype=np.float64))
    return states, wrenches


def _roll(step, history: BodyState, actions: np.ndarray) -> tuple[BodyState, np.ndarray, list]:
    """``step(window, action) -> (state, wrench, status)`` over the ``T`` actions ``(*B, T, 6)`` from ``history``:
    ``(states (*B, T), wrenches (*B, T, 6), [status per step])``."""
    window = history
    states, wrenches, statuses = [], [], []
    for t in range(actions.shape[-2]):
        nxt, wrench, status = step(window, actions[..., t, :])
        states.append(nxt)
        wrenches.append(wrench)
        statuses.append(status)
        window = _push(window, nxt)
    stack = lambda xs: np.stack(xs, axis=-2)  # noqa: E731
    return (BodyState(stack([s.pos for s in states]), stack([s.quat for s in states]),
                      stack([s.lin_vel for s in states]), stack([s.ang_vel for s in states])),
            np.stack(wrenches, axis=-2), statuses)


def _push(window: BodyState, new: BodyState) -> BodyState:
    """Drop the oldest state of a ``(*B, H)`` window and append ``new`` ``(*B,)``."""
    cat = lambda a, b: np.concatenate([a[..., 1:, :], b[..., None, :]], axis=-2)  # noqa: E731
    return BodyState(cat(window.pos, new.pos), cat(window.quat, new.quat), cat(window.lin_vel, new.lin_vel),
                     cat(window.ang_vel, new.ang_vel))


CONTROL_PERIOD_REL_TOL = 1e-9
"""Relative tolerance of two control periods that must be equal (float round-off of ``1 / rate``)."""


def check_control_period(model_dt: float, data_dt: float, data: str, model: str = "the model") -> None:
    """Refuse data whose control period is not the model's: a 20 Hz world stepped on 10 Hz logs predicts each
    logged step from half of it, silently.

    Args:
        model_dt: the model's (or its world's) control period [s]; data_dt: the data's [s];
        data: what the data is, for the message (e.g. a file name); model: what the model is.

    Raises:
        InvalidInputError: one line naming both periods and rates.
    """
    if not abs(float(model_dt) - float(data_dt)) <= CONTROL_PERIOD_REL_TOL * max(abs(model_dt), abs(data_dt)):
        raise InvalidInputError(f"{data}: control period {data_dt:g} s ({1.0 / data_dt:g} Hz), but {model} steps "
                                f"{model_dt:g} s ({1.0 / model_dt:g} Hz): data and model must share the control rate "
                                "(import the log at the model's rate, or give a world of the log's rate)")


def step_with_status(model: ContactModel, history: BodyState,
                     action: np.ndarray) -> tuple[BodyState, np.ndarray, np.ndarray]:
    """``model.step`` with a per-element status (see :class:`ContactModel`).

    Returns:
        ``(next_state (*B,), wrench (*B, 6), diverged (*B,) bool)``; a diverged element keeps its input state and
        reads NaN.

    Raises:
        SimulationDiverged: an unbatched step diverged (there is nothing else to step).
    """
    method = getattr(model, "step_with_status", None)
    if callable(method):
        return method(history, action)
    action = np.asarray(action, dtype=np.float64)
    batch = action.shape[:-1]
    try:
        state, wrench = model.step(history, action)
        return state, wrench, np.zeros(batch, dtype=bool)
    except SimulationDiverged:
        if batch == ():
            raise
    return _step_one_by_one(model, history, action, batch)


def _step_one_by_one(model: ContactModel, history: BodyState, action: np.ndarray, batch: tuple):
    """Each element of the batch stepped alone; those whose step raises :class:`SimulationDiverged` flagged."""
    n = int(np.prod(batch))
    flat_h = BodyState(*(np.asarray(a, dtype=np.float64).reshape(n, *np.shape(a)[len(batch):]) for a in
                         (history.pos, history.quat, history.lin_vel, history.ang_vel)))
    flat_a = action.reshape(n, 6)
    fields = [np.array(a[:, -1]) for a in (flat_h.pos, flat_h.quat, flat_h.lin_vel, flat_h.ang_vel)]
    wrench, diverged = np.full((n, 6), np.nan), np.zeros(n, dtype=bool)
    for i in range(n):
        one = BodyState(*(a[i:i + 1] for a in (flat_h.pos, flat_h.quat, flat_h.lin_vel, flat_h.ang_vel)))
        try:
            nxt, w = model.step(one, flat_a[i:i + 1])
        except SimulationDiverged:
            diverged[i] = True
            continue
        for f, new in zip(fields, (nxt.pos, nxt.quat, nxt.lin_vel, nxt.ang_vel), strict=True):
            f[i] = np.asarray(new).reshape(-1)
        wrench[i] = np.asarray(w).reshape(6)
    state = BodyState(*(f.reshape(*batch, f.shape[-1]) for f in fields))
    return state, wrench.reshape(*batch, 6), diverged.reshape(batch)


def rollout_with_status(model: ContactModel, history: BodyState,
                        actions: np.ndarray) -> tuple[BodyState, np.ndarray, np.ndarray]:
    """:func:`rollout` that steps past diverged elements: ``(states (*B, T), wrenches (*B, T, 6), diverged (*B,))``.

    An element is flagged from the step it diverged at on (:func:`step_with_status`); its later states are not
    trustworthy (its kept state is stepped on) and a planner or filter must drop it.
    """
    actions = np.asarray(actions, dtype=np.float64)
    if actions.ndim < 2 or actions.shape[-1] != 6:
        raise InvalidInputError(f"actions must have shape (*B, T, 6), got {actions.shape}")
    states, wrenches, flags = _roll(lambda window, action: step_with_status(model, window, action), history,
                                    actions)
    diverged = np.zeros(actions.shape[:-2], dtype=bool)
    for bad in flags:
        diverged |= np.asarray(bad, dtype=bool)
    return states, wrenches, diverged
