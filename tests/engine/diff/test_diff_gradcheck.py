"""Gradient checks of the step against central differences for every kind of θ (tool pose, tool shape, environment
pose, environment shape) in sticking, sliding, separating and impacting contact; bar: relative error ≤ 1e-4."""

import numpy as np
import pytest
import torch

from contactkit.engine.diff.features import contact_features, world_tool_vertices
from contactkit.engine.diff.gradcheck import FD_STEPS, Configuration, _sweep, check_step
from contactkit.engine.diff.step import StepConfig, prepare_geometry, world_planes
from contactkit.rotations import rotvec_to_quat

from ._scenes import PILLAR_TOP, pillar, scene, table, tool_box

BAR = 1e-4
"""The issue's bar on the relative error of every gradient block."""

QUAT = rotvec_to_quat(np.array([0.004, 0.03, 0.05]))
THETA = np.array([4e-4, -3e-4, 2e-4, 3e-4])
OFFSET = np.array([0.009, 0.004])
"""The 40 mm tool box is tilted down toward +x and overhangs the 30 mm pillar there, so it rests on the pillar's
+x top edge: edge crossings and a pillar corner carry it, and every kind of θ moves that support."""


def placed(s, gap: float) -> np.ndarray:
    """The tool position at ``OFFSET`` whose closest contact with the pillar has the gap ``gap`` [m]."""
    t = lambda x: torch.as_tensor(np.asarray(x, dtype=float))[None]  # noqa: E731
    pos = np.array([*OFFSET, PILLAR_TOP + 0.03])
    for _ in range(2):
        geo = prepare_geometry(s, StepConfig(margin=0.02), t(pos), t(QUAT), t(THETA))
        tool_w = world_tool_vertices(geo.tool_local, t(pos), t(QUAT))
        _, _, gaps = contact_features(geo.index, tool_w, world_planes(geo.tool_planes, t(pos), t(QUAT)),
                                      geo.env_verts, geo.env_planes)
        pos[2] += gap - gaps[0][torch.as_tensor(geo.index.mask[0])].min().item()
    return pos


def modes(s) -> dict[str, Configuration]:
    touch, lift = placed(s, -1e-4), placed(s, 3e-3)
    zero = np.zeros(3)
    return {
        "sticking": Configuration(touch, QUAT, zero, zero, touch + [5e-4, 0, -4e-3], QUAT, THETA),
        "sliding": Configuration(touch, QUAT, np.array([0.03, 0.01, 0.0]), zero, touch + [0.02, 0.008, -4e-3], QUAT,
                                 THETA),
        "separating": Configuration(lift, QUAT, zero, zero, lift - [0, 0, 1e-4], QUAT, THETA),
        "impact": Configuration(placed(s, 6e-4), QUAT, np.array([0.0, 0.0, -0.03]), zero, touch - [0, 0, 5e-3], QUAT,
                                THETA),
    }


@pytest.fixture(scope="module")
def contact_scene():
    return scene(tool_box(), (table(), pillar()))


@pytest.mark.parametrize("mode", ["sticking", "sliding", "separating", "impact"])
def test_every_gradient_matches_central_differences(contact_scene, mode):
    check = check_step(contact_scene, StepConfig(), modes(contact_scene)[mode])
    assert check.finite()
    assert check.max_rel_err <= BAR, sorted(check.rel_err.items(), key=lambda kv: -kv[1])[:3]
    assert max(check.abs_err.values(), default=0.0) < 1e-6
    analytic, numeric = check.analytic[:6, 18:], check.numeric[:6, 18:]  # the reading against each θ separately
    scale = np.abs(numeric).max(axis=0)
    if mode == "separating":
        assert check.n_contacts == 0 and np.all(scale == 0.0) and np.all(analytic == 0.0)
    else:  # every kind of θ moves the reading, and each one's derivative passes the bar on its own
        assert check.n_contacts >= 2 and np.all(scale > 1e-2), scale
        assert np.all(np.abs(analytic - numeric).max(axis=0) / scale <= BAR)
    if mode == "impact":
        assert 0.0 < check.toi < 1.0
    assert check.switching == ()  # generic configurations: every input has steps that keep the structure


def test_the_step_sweep_avoids_round_off_and_truncation():
    """On ``f = (1e4 + sin x, 1e-3 cos 3000x)``: the first entry is tiny against its value (round-off rules small steps
    out), the second strongly curved (truncation rules large steps out); each entry's chosen step gives its
    derivative to 1e-8 where a fixed 1e-6 step misses the first by over 1e-7."""
    x, steps = 0.3, np.array(FD_STEPS)
    offsets = np.array([1.0, -1.0, 2.0, -2.0])
    probe = x + steps[:, None] * offsets[None]
    values = np.stack([1e4 + np.sin(probe), 1e-3 * np.cos(3000 * probe)], axis=-1)[:, :, None, :]  # (S, 4, 1, 2)
    numeric, chosen, switching = _sweep(values, np.ones((len(steps), 4, 1), dtype=bool), steps)
    exact = np.array([np.cos(x), -3.0 * np.sin(3000 * x)])
    assert np.all(np.abs(numeric[:, 0] - exact) <= 1e-8 * np.abs(exact)) and not switching[0]
    assert chosen[0, 0] > 10 * chosen[1, 0]  # the flat entry takes a larger step than the curved one
    fixed = (1e4 + np.sin(x + 1e-6) - 1e4 - np.sin(x - 1e-6)) / 2e-6
    assert abs(fixed - exact[0]) > 1e-7 * abs(exact[0])


def test_a_switch_at_every_step_is_reported_and_differenced_at_the_smallest_step():
    steps = np.array(FD_STEPS)
    values = np.zeros((len(steps), 4, 2, 1))
    values[:, 0, :, 0] = values[:, 2, :, 0] = 1.0  # a jump at x: +1 on the right of it
    same = np.ones((len(steps), 4, 2), dtype=bool)
    same[:, 0, 1] = False  # input 1's right-hand probes change the structure at every step
    same[:-2, 0, 0] = False  # input 0's only at the larger steps
    numeric, chosen, switching = _sweep(values, same, steps)
    assert list(switching) == [False, True]
    assert chosen[0, 1] == steps[-1] and chosen[0, 0] == steps[-2]
