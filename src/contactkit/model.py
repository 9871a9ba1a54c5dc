"""The one question every simulator and learned model answers (DESIGN.md "Interfaces").

``step(history, action) -> (next_state, wrench)``: given the tool's recent states and an action, predict
the next state and the F/T reading during the step. Estimators and planners hold a ``ContactModel`` and
never know whether it is MuJoCo, the contactkit engine, or a learned graph network.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from contactkit.control.impedance import ActionMode
from contactkit.state import BodyState


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
