"""contact-spline: the random spline with contact-seeking z flips (Act-FIGNet paper App. V)."""

import numpy as np
import pytest

from contactkit.control.policies import CONTACT_SPLINE_FLIP, RandomSplinePolicy, SplineConfig, make_policy
from contactkit.errors import InvalidInputError
from contactkit.state import BodyState
from contactkit.tasks import peg_in_hole

SCENE = peg_in_hole("hexagon")
START = BodyState(np.zeros(3), np.array([1.0, 0, 0, 0]), np.zeros(3), np.zeros(3))


def _plan(policy, seed: int) -> np.ndarray:
    policy.reset(SCENE, START, np.random.default_rng(seed))
    return policy._plan


def test_no_flips_draw_nothing_extra():
    """z_flip = 0 is the random-spline policy, draw for draw."""
    assert np.array_equal(_plan(RandomSplinePolicy(SplineConfig(n_steps=80)), 3),
                          _plan(make_policy("random-spline", 80), 3))


def test_flips_push_down_and_keep_the_other_axes():
    cfg = SplineConfig(n_steps=400)
    plain = _plan(RandomSplinePolicy(cfg), 5)
    always = _plan(RandomSplinePolicy(SplineConfig(n_steps=400, z_flip=1.0)), 5)
    lim = cfg.pos_limit[2]
    assert np.all(always[::cfg.knot_every, 2] <= -cfg.down_bias * lim + 1e-12)  # every knot pushes down
    assert np.array_equal(always[:, [0, 1, 3, 4, 5]], plain[:, [0, 1, 3, 4, 5]])
    assert always[:, 2].mean() < plain[:, 2].mean() - 0.2 * lim
    contact = make_policy("contact-spline", 400)
    assert contact.params()["name"] == "contact-spline" and contact.params()["z_flip"] == CONTACT_SPLINE_FLIP
    z = np.concatenate([_plan(contact, s)[:, 2] for s in range(20)])
    z_plain = np.concatenate([_plan(make_policy("random-spline", 400), s)[:, 2] for s in range(20)])
    assert z_plain.mean() - 0.35 * lim < z.mean() < z_plain.mean() - 0.15 * lim  # half the knots flipped: −lim/4


def test_flip_probability_is_checked():
    with pytest.raises(InvalidInputError, match="z_flip"):
        SplineConfig(z_flip=1.5)
