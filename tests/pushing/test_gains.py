"""The PD gain-search procedure (pushing.gains): training-distribution draws over every case, scoring rules."""

import itertools

import numpy as np

from contactkit.control.icr import ProfileKind
from contactkit.pushing import gains
from contactkit.pushing.env import DR_BOUNDS, DomainSample
from contactkit.pushing.scene import ObjectKind, PushScene


def test_draws_cover_every_case_within_bounds():
    draws = gains.search_draws(np.random.default_rng(0), per_case=2)
    assert [(d.object_kind, d.profile) for d in draws[::2]] == list(itertools.product(ObjectKind, ProfileKind))
    for d in draws:
        nominal = PushScene.for_object(d.object_kind)
        assert DR_BOUNDS["mu_contact"][0] <= d.mu_contact <= DR_BOUNDS["mu_contact"][1]
        assert DR_BOUNDS["mu_ground"][0] <= d.mu_ground <= DR_BOUNDS["mu_ground"][1]
        lo, hi = DR_BOUNDS["object_mass_scale"]
        assert lo * nominal.object_mass <= d.object_mass <= hi * nominal.object_mass
    assert draws != gains.search_draws(np.random.default_rng(1), per_case=2)


def test_failed_trial_scores_the_stated_penalty():
    """A goal 2 m away is out of the arm's reach: the trial fails and scores FAILED_TRIAL_PCT; a reachable short
    push completes with finite errors below it."""
    far = DomainSample(ObjectKind.CUBE, ProfileKind.CONSTANT, (2.0, 0.0, 0.2), 0.3, 0.03, 0.35, 0.3)
    bad = gains.score_gains(400.0, 2.0, [far], duration=0.3)
    assert bad.failures == 1 and bad.score_pct == gains.FAILED_TRIAL_PCT and np.isnan(bad.translation_pct)
    near = DomainSample(ObjectKind.CUBE, ProfileKind.CONSTANT, (0.01, 0.0, 0.03), 0.3, 0.03, 0.35, 0.3)
    good = gains.score_gains(400.0, 2.0, [near], duration=0.3)
    assert good.failures == 0 and np.isfinite(good.score_pct) and good.score_pct < gains.FAILED_TRIAL_PCT
