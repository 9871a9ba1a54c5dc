"""The shared vocabulary of every simulator, learned model and consumer (docs/architecture.md).

* :class:`ActionMode`: what a 6-D action means (a wrench, a pose-target displacement, or an absolute pose target).
* :class:`StepResult` and :class:`World`: a simulated (or logged) cell — ``reset``, ``step(action) ->
  StepResult``, its ``scene`` and ``params``. :class:`contactkit.mujoco.MujocoWorld` and
  :class:`contactkit.engine.EngineWorld` are Worlds; ``run_episode``, the datasets and the gym
  environments take any World.
* :class:`ContactModel`: ``step(history, action) -> (next_state, wrench)``: given the tool's recent states
  and an action, predict the next state and the F/T reading during the step. Estimators and planners hold
  a ``ContactModel`` and never know whether it is MuJoCo, the contactkit engine, or a learned graph network.

This module is the lowest layer of contactkit: it imports only :mod:`contactkit.state` (and, for type
annotations only, the scene and world parameters).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

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
        control_dt: duration of one step [s].
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
    actions = np.asarray(actions, dtype=np.float64)
    window = history
    states, wrenches = [], []
    for t in range(actions.shape[-2]):
        nxt, wrench = model.step(window, actions[..., t, :])
        states.append(nxt)
        wrenches.append(wrench)
        window = _push(window, nxt)
    stack = lambda xs: np.stack(xs, axis=-2)  # noqa: E731
    return (BodyState(stack([s.pos for s in states]), stack([s.quat for s in states]),
                      stack([s.lin_vel for s in states]), stack([s.ang_vel for s in states])),
            np.stack(wrenches, axis=-2))


def _push(window: BodyState, new: BodyState) -> BodyState:
    """Drop the oldest state of a ``(*B, H)`` window and append ``new`` ``(*B,)``."""
    cat = lambda a, b: np.concatenate([a[..., 1:, :], b[..., None, :]], axis=-2)  # noqa: E731
    return BodyState(cat(window.pos, new.pos), cat(window.quat, new.quat), cat(window.lin_vel, new.lin_vel),
                     cat(window.ang_vel, new.ang_vel))
