"""Gradient checks of the step against central differences for every kind of θ (tool pose, tool shape, environment
pose, environment shape) in sticking, sliding, separating and impacting contact; bar: relative error ≤ 1e-4."""

import numpy as np
import pytest
import torch

from contactkit.engine.diff.features import contact_features, world_tool_vertices
from contactkit.engine.diff.gradcheck import Configuration, check_step
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
