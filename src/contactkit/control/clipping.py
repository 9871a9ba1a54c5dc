"""Command limits reported when they bind, never clipped silently: a tally of :attr:`StepResult.clipped`.

A world step names the controller limits that bound during it (:attr:`contactkit.model.StepResult.clipped`:
``max_pos_step``, ``max_rot_step`` for a pose target pulled in, ``max_force``, ``max_torque`` for a saturated
wrench). Code that runs many steps (``run_episode`` of a collection, a replay of logged commands) counts them with a
:class:`ClipTally` and warns once with the fraction of clipped commands per limit (:class:`CommandsClipped`), so a
scene whose limits are not the cell's is visible in what it produced.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

from contactkit.gains import LIMIT_FIELDS


class CommandsClipped(UserWarning):
    """Some commands of a run were clipped by the scene controller's limits (the message says which and how often)."""


@dataclass
class ClipTally:
    """Counts of control steps, and of those in which each controller limit bound.

    Attributes:
        steps: steps added.
        counts: steps in which each limit of :data:`~contactkit.gains.LIMIT_FIELDS` bound.
    """

    steps: int = 0
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(LIMIT_FIELDS, 0))

    def add(self, clipped: frozenset[str]) -> None:
        """Count one step whose result named the limits ``clipped`` (:attr:`StepResult.clipped`)."""
        self.steps += 1
        for name in clipped:
            self.counts[name] += 1

    def merge(self, other: ClipTally) -> None:
        """Add the steps and counts of ``other`` (another episode, another worker)."""
        self.steps += other.steps
        for name, n in other.counts.items():
            self.counts[name] += n

    def fractions(self) -> dict[str, float]:
        """Fraction of the steps in which each limit bound (0 for none), by limit name."""
        return {name: n / self.steps if self.steps else 0.0 for name, n in self.counts.items()}

    def message(self, what: str) -> str | None:
        """One line naming the limits that bound in ``what`` (e.g. ``"episode 3"``) and how often, or None."""
        hit = [f"{name} in {n} of {self.steps} ({100.0 * n / self.steps:.1f} %)"
               for name, n in self.counts.items() if n]
        if not hit:
            return None
        return (f"{what}: the scene's controller clipped commands: {'; '.join(hit)} of the steps (raise "
                "scene.controller's limits if your cell's are larger)")

    def warn(self, what: str, stacklevel: int = 2) -> None:
        """Warn (:class:`CommandsClipped`) with :meth:`message` when any limit bound; silent otherwise."""
        text = self.message(what)
        if text is not None:
            warnings.warn(CommandsClipped(text), stacklevel=stacklevel + 1)
