"""Choosing a residual actor on validation draws in the model world (pushing.validation)."""

import numpy as np

from contactkit.control.icr import ProfileKind
from contactkit.pushing import controller as ctl
from contactkit.pushing import gains, validation
from contactkit.pushing.env import DomainSample
from contactkit.pushing.residual import ResidualPolicy
from contactkit.pushing.scene import ObjectKind


def _zero_actor() -> ResidualPolicy:
    rng = np.random.default_rng(0)
    w = (rng.normal(size=(8, ctl.OBS_DIM)), rng.normal(size=8), np.zeros((3, 8)), np.zeros(3))
    return ResidualPolicy(w, {})


def test_validation_draws_are_their_own_stream():
    draws = validation.validation_draws()
    assert len(draws) == 2 * len(ObjectKind) * len(ProfileKind)
    assert draws != gains.search_draws(np.random.default_rng(gains.GAIN_SEARCH_SEED))
    assert draws == validation.validation_draws()


def test_zero_residual_scores_exactly_as_the_pd_alone():
    """An actor whose output layer is zero is the PD of eq 15 (the zero-initialised start of training)."""
    draw = DomainSample(ObjectKind.WEDGE, ProfileKind.TRAPEZOIDAL, (0.03, 0.0, -0.1), 0.33, 0.035, 0.3, 0.25)
    pd = validation.score_policy(None, [draw], duration=0.5)
    zero = validation.score_policy(_zero_actor(), [draw], duration=0.5)
    assert pd == zero and pd.failures == 0 and np.isfinite(pd.force_N)


def test_a_failed_draw_scores_the_penalty_and_a_pushing_actor_differs():
    far = DomainSample(ObjectKind.CUBE, ProfileKind.CONSTANT, (2.0, 0.0, 0.2), 0.3, 0.03, 0.35, 0.3)
    bad = validation.score_policy(None, [far], duration=0.3)
    assert bad.failures == 1 and bad.score_pct == gains.FAILED_TRIAL_PCT and np.isnan(bad.force_N)
    near = DomainSample(ObjectKind.CUBE, ProfileKind.CONSTANT, (0.02, 0.0, 0.05), 0.3, 0.03, 0.35, 0.3)
    push = ResidualPolicy(_zero_actor().weights[:3] + (np.array([3.0, 0.0, 0.0]),), {})  # always push along e_n
    a, b = validation.score_policy(None, [near], duration=0.5), validation.score_policy(push, [near], duration=0.5)
    assert a != b
