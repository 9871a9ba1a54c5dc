"""Choosing a residual actor without the test trials: validation episodes in the randomised MODEL world.

Training runs (:func:`contactkit.pushing.residual.train_residual`) differ by seed and settings, and DDPG's last
actor is not always its best. Which one to ship is decided here, the way :mod:`contactkit.pushing.gains` chose
the PD gains:

1. draws: :func:`contactkit.pushing.gains.search_draws` from ``np.random.default_rng(VALIDATION_SEED)`` — the
   training distribution (both objects, all three profiles, goals of :func:`~contactkit.pushing.env.sample_goal`,
   domain randomisation of :data:`~contactkit.pushing.env.DR_BOUNDS` and :data:`~contactkit.pushing.env.DR_PHYSICS`),
   a stream that neither the gain search, the experiment's trials nor the "real" draws use;
2. each candidate (and the PD alone, ``None``) runs Algorithm 1 on every draw in the hybrid MLCP model of the
   randomised scene, planning with the nominal scene;
3. per candidate: the mean translation and angle errors [%] (Table III definitions), the mean planar force
   [N] and torque [N m] errors (Table IV definitions, the quantities eq 17 rewards), failures, and
   ``score_pct`` = mean over draws of ``(translation + angle) / 2`` with a failed draw at
   :data:`~contactkit.pushing.gains.FAILED_TRIAL_PCT`, the gain search's score
   (:func:`~contactkit.pushing.gains.run_draws` runs both).

The "real" world and the experiment's trials play no part.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contactkit.pushing.env import DomainSample
from contactkit.pushing.gains import run_draws, search_draws

VALIDATION_SEED = 1817
"""Seed of the validation draws (not :data:`~contactkit.pushing.gains.GAIN_SEARCH_SEED`, not the trials' stream)."""
DRAWS_PER_CASE = 2
"""Validation episodes per object × profile (12 in all)."""


@dataclass(frozen=True)
class PolicyScore:
    """One candidate over the validation draws: ``score_pct`` (module doc), mean translation / angle errors [%],
    planar force [N] and torque [N m] errors over completed draws (NaN when none completed), failures."""

    score_pct: float
    translation_pct: float
    angle_pct: float
    force_N: float
    torque_Nm: float
    failures: int


def validation_draws(per_case: int = DRAWS_PER_CASE, seed: int = VALIDATION_SEED) -> list[DomainSample]:
    """The validation episodes (module doc step 1)."""
    return search_draws(np.random.default_rng(seed), per_case)


def score_policy(policy, draws: list[DomainSample], duration: float = 20.0, dt: float = 0.01) -> PolicyScore:
    """Run ``policy`` (a residual actor ``obs (15,) or (43,) -> action (3,)``, or None for the PD alone) on ``draws``
    in the hybrid model of each randomised scene for ``duration`` [s] at ``dt`` [s] and score it (module doc step 3)."""
    scores, done, failures = run_draws(draws, policy, duration=duration, dt=dt)
    keys = ("translation_pct", "angle_pct", "force_N", "torque_Nm")
    means = [float(np.mean([e[k] for e in done])) if done else float("nan") for k in keys]
    return PolicyScore(float(np.mean(scores)), *means, failures)
