"""The previous command of a learned contact model's step: remembered per batch element, primed, or assumed held.

A model that reads the previous command as well as the current one (a command latency makes it observable: the
residual over physics, Act-FIGNet / FIGNet+ with ``GraphConfig.previous_command``) is still called through
``ContactModel.step(history, action)``, which carries no previous command. :class:`CommandMemory` supplies it, per
batch position:

1. :meth:`CommandMemory.prime` given: its command, for every element (once: the next call consumes it). The caller
   knows the true previous command (a replayed log segment, :mod:`contactkit.eval.predict_eval`).
2. Else, where the history ends bit for bit at the state the model returned at that position in its last call (an
   open-loop rollout, an iCEM population, a particle set continuing), the command of that call.
3. Else the current command itself (a command held since the step before: the best guess for a fresh history).
"""

from __future__ import annotations

import numpy as np

from contactkit.errors import InvalidInputError
from contactkit.state import STATE_DIM

__all__ = ["CommandMemory"]


class CommandMemory:
    """The last call's returned states and commands, and a primed previous command (module docstring)."""

    def __init__(self) -> None:
        self._returned = np.zeros((0, STATE_DIM))
        self._commands = np.zeros((0, 6))
        self._primed: np.ndarray | None = None

    def prime(self, previous_command: np.ndarray) -> None:
        """The command ``(*B, 6)`` that acted in the step ending at the next call's history (used once).

        Raises:
            InvalidInputError: not finite, or not 6 per element.
        """
        prev = np.asarray(previous_command, dtype=np.float64)
        if prev.shape[-1:] != (6,) or not np.all(np.isfinite(prev)):
            raise InvalidInputError(f"a primed previous command must be finite with shape (*B, 6), got {prev.shape}")
        self._primed = prev.reshape(-1, 6).copy()

    def recall(self, last: np.ndarray, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
        """The previous command of each element of a call whose histories end at ``last`` ``(b, 13)`` (flat states,
        world frame) under commands ``action`` ``(b, 6)``; consumes a primed command.

        Returns:
            ``(previous (b, 6), continued (b,), primed)``: the previous commands (rule 1, 2 or 3 of the module
            docstring); which elements continue the last call (their history ends at the state it returned there);
            whether a primed command of this batch size was used.
        """
        prev = np.array(action, dtype=np.float64).reshape(-1, 6)
        last = np.asarray(last, dtype=np.float64).reshape(-1, STATE_DIM)
        continued = np.zeros(len(prev), dtype=bool)
        if self._returned.shape == last.shape:
            continued = np.all(self._returned == last, axis=-1)
            prev[continued] = self._commands[continued]
        primed = self._primed is not None and self._primed.shape == prev.shape
        if primed:
            prev = self._primed.copy()
        self._primed = None
        return prev, continued, primed

    def remember(self, returned: np.ndarray, action: np.ndarray) -> None:
        """Keep the states ``(b, 13)`` a call returned and its commands ``(b, 6)`` for the next call."""
        self._returned = np.array(returned, dtype=np.float64).reshape(-1, STATE_DIM)
        self._commands = np.array(action, dtype=np.float64).reshape(-1, 6)
