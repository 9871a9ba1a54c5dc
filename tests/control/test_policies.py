"""Policies of the Act-FIGNet paper, App. E: limits, determinism, geometry of the paths."""

import numpy as np
import pytest

from contactkit.control.policies import CircleConfig, CirclePolicy, RandomSplinePolicy, SplineConfig, make_policy
from contactkit.errors import InvalidInputError
from contactkit.state import BodyState
from contactkit.tasks import peg_in_hole


def _plan(seed, cfg=None):
    scene = peg_in_hole()
    pol = RandomSplinePolicy(cfg or SplineConfig(n_steps=100))
    state = BodyState.at_rest(scene.tool.init_pos)
    pol.reset(scene, state, np.random.default_rng(seed))
    return np.array([pol.act(t, state, np.zeros(6)) for t in range(100)])


def test_spline_is_reproducible_smooth_and_bounded():
    a, b = _plan(3), _plan(3)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, _plan(4))
    lim = np.array([*SplineConfig().pos_limit, *(SplineConfig().rot_limit,) * 3])
    assert np.all(np.abs(a[:, :3]) <= 1.5 * lim[:3] + 1e-12)
    # smooth: second differences far below the knot amplitude
    assert np.max(np.abs(np.diff(a[:, 0], 2))) < 0.5 * lim[0]


def test_workspace_spring_pulls_back():
    scene = peg_in_hole()
    pol = RandomSplinePolicy(SplineConfig(n_steps=10, pos_limit=(1e-9, 1e-9, 1e-9), rot_limit=1e-9))
    outside = BodyState.at_rest(scene.workspace_hi + [0.05, 0.0, 0.0])
    pol.reset(scene, outside, np.random.default_rng(0))
    assert pol.act(0, outside, np.zeros(6))[0] < -0.05


def test_circle_tracks_the_perimeter():
    scene = peg_in_hole("square", 5e-3)
    pol = CirclePolicy(CircleConfig(circles=3.0))
    pol.reset(scene, BodyState.at_rest(scene.tool.init_pos), np.random.default_rng(0))
    assert pol.name.value == "circle-fast"
    assert pol.radius == pytest.approx(scene.meta["hole_apothem"])


def test_unknown_policy_lists_valid_names():
    with pytest.raises(InvalidInputError, match="random-spline"):
        make_policy("zigzag")
