"""MuJoCo's warnings during a control step: caught, never printed or logged, and turned into an error.

When MuJoCo meets a NaN, Inf or huge (> 1e10) acceleration, position or velocity it resets the simulation to the
model's initial state and goes on; by default it also prints the warning and appends it to ``MUJOCO_LOG.TXT`` in
the working directory. A control step that returned after such a reset would report the initial pose, time ≈ 0
and a zero F/T reading as a normal result. Contact and constraint overflow (``CONTACTFULL``, ``CNSTRFULL``) drop
contacts instead. :func:`captured_warnings` installs a collecting handler for the duration of one rollout
(restoring whatever handler was there before), and :func:`divergence` reads ``MjData.warning`` and the sub-steps'
times afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import mujoco
import numpy as np

UNTRUSTED_WARNINGS = tuple(int(w) for w in (
    mujoco.mjtWarning.mjWARN_BADQACC,
    mujoco.mjtWarning.mjWARN_BADQPOS,
    mujoco.mjtWarning.mjWARN_BADQVEL,
    mujoco.mjtWarning.mjWARN_CONTACTFULL,
    mujoco.mjtWarning.mjWARN_CNSTRFULL,
))
"""MuJoCo warnings after which a step's state cannot be trusted (a reset, or dropped contacts/constraints)."""
TIME_TOL_STEPS = 0.5
"""A sub-step whose time is off ``t0 + (k + 1)·timestep`` by more than this many time steps was reset."""


@contextmanager
def captured_warnings() -> Iterator[list[str]]:
    """Collect MuJoCo's warning messages into the yielded list instead of printing and logging them.

    MuJoCo's warning handler is process-wide: the previous handler (``None``: MuJoCo's default) is restored on
    exit, and a warning raised by another thread in between lands in this list.
    """
    messages: list[str] = []
    previous = mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(messages.append)
    try:
        yield messages
    finally:
        mujoco.set_mju_user_warning(previous)


def clear_warnings(data: mujoco.MjData) -> None:
    """Zero the counters of :data:`UNTRUSTED_WARNINGS` in ``data`` before a step."""
    for kind in UNTRUSTED_WARNINGS:
        data.warning[kind].number = 0


def divergence(data: mujoco.MjData, times: np.ndarray, t0: float, timestep: float, messages: list[str]) -> str | None:
    """Why a rollout's result cannot be trusted, or ``None``.

    Args:
        data: the ``MjData`` the rollout ran in (its warning counters, cleared by :func:`clear_warnings`).
        times: ``(n,)`` simulated time after each sub-step [s]; t0: time before the rollout [s].
        timestep: physics step [s]. messages: what :func:`captured_warnings` collected.

    Returns:
        a one-line description: the warnings (names and MuJoCo's message) and the first sub-step that was reset.
    """
    warned = [k for k in UNTRUSTED_WARNINGS if data.warning[k].number]
    n = len(times)
    if not warned and abs(times[-1] - (t0 + n * timestep)) <= TIME_TOL_STEPS * timestep:  # the common case, fast
        return None
    names = [mujoco.mjtWarning(k).name for k in warned]
    expected = t0 + timestep * np.arange(1, n + 1)
    reset = np.flatnonzero(np.abs(times - expected) > TIME_TOL_STEPS * timestep)
    if not names and not len(reset):
        return None
    what = ", ".join(names) or "a reset without a warning"
    text = "; ".join(dict.fromkeys(m.split(" Time =")[0].strip() for m in messages))
    where = f" (time reset at physics sub-step {int(reset[0]) + 1} of {len(times)})" if len(reset) else ""
    return f"{what}{where}" + (f": {text}" if text else "")
