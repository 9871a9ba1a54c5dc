"""Training-sample placement and the L-BFGS refinement of :mod:`contactkit.depth.training`: the profile
sampling is uniform in r on a face ⊥ the axis (closed form), the end sampling stays within its span, the
refinement never raises the training loss (strong-Wolfe sufficient decrease) and bad settings are refused."""

import dataclasses

import numpy as np
import pytest
import torch

from contactkit.depth import TrainConfig, default_setup, make_frame, train_depth_net
from contactkit.depth.network import mlp
from contactkit.depth.training import _loss, _scaled_inputs, profile_samples, refine, training_samples
from contactkit.errors import InvalidInputError
from contactkit.geometry import bolt, paper_hole


def _floor(hole, points, normals):
    """The samples on the hole's floor (z = 0, normal +z, inside the bore), and their radius."""
    on = (np.abs(points[:, 2]) < 1e-9) & (normals[:, 2] > 0.5)
    r = np.hypot(points[on, 0], points[on, 1])
    return r[r < hole.meta["hole_apothem"]]


def test_profile_samples_are_uniform_in_r_on_the_floor():
    hole = paper_hole()
    frame = make_frame("cylindrical")
    a = hole.meta["hole_apothem"]
    r_min = 1e-3
    r = _floor(hole, *profile_samples(hole, frame, 40_000, np.random.default_rng(0), r_min=r_min))
    assert len(r) > 2000

    def share_below(x):  # density ∝ min(r, r_min): uniform in r above r_min (area-weighted it is ∝ r)
        return (r_min / 2 + x - r_min) / (r_min / 2 + a - r_min)

    for x in (a / 4, a / 2):
        assert abs(np.mean(r < x) - share_below(x)) < 0.02, (x, np.mean(r < x), share_below(x))
    assert share_below(a / 4) > 3 * (a / 4) ** 2 / a**2  # area-weighted: (1/4)² of the floor


def test_end_samples_stay_near_the_axial_ends():
    part = bolt()
    frame = make_frame("helical", pitch=part.meta["p"], handedness=part.meta["handedness"])
    span = 4e-3
    p, _ = profile_samples(part, frame, 5000, np.random.default_rng(1), end_span=span)
    z = p[:, 2]
    assert len(p) == 5000 and np.all((z < span) | (z > part.meta["length"] - span))
    setup = default_setup(part, frame, r_range=(0.019, 0.026), z_range=(0.0, 0.063))
    x, _ = training_samples(part, setup, 20_000, 0.85, np.random.default_rng(2), 0.2, 0.0, 0.5, span)
    x0, _ = training_samples(part, setup, 20_000, 0.85, np.random.default_rng(2), 0.2)
    ends = lambda q: np.mean((q[:, 2] < span) | (q[:, 2] > part.meta["length"] - span))  # noqa: E731
    assert ends(x) > 1.5 * ends(x0)


def test_refinement_never_raises_the_training_loss(cube):
    setup = default_setup(cube, make_frame("cartesian"))
    cfg = TrainConfig(samples=3000, steps=200, batch=512, seed=4, fit_band=1e-3)
    net = train_depth_net(cube, setup, cfg)
    points, target = training_samples(cube, setup, cfg.samples, cfg.surface_fraction, np.random.default_rng(4),
                                      cfg.edge_fraction)
    x, y = torch.as_tensor(_scaled_inputs(setup, points)), torch.as_tensor(target)
    params = [torch.as_tensor(w) for w in net.weights]
    before = float(_loss(mlp(params, x, setup.depth_scale), y, cfg.fit_band))
    refined, after = refine(params, x, y, setup.depth_scale, dataclasses.replace(cfg, refine_steps=30))
    with torch.no_grad():
        recomputed = float(_loss(mlp(refined, x, setup.depth_scale), y, cfg.fit_band))
    assert after == pytest.approx(recomputed, rel=1e-9)
    assert after < 0.9 * before, (before, after)


def test_refined_training_is_reproducible_and_float64(cube):
    setup = default_setup(cube, make_frame("cartesian"))
    cfg = TrainConfig(samples=2000, steps=20, batch=256, seed=3, refine_steps=5, refine_power=4)
    a, b = train_depth_net(cube, setup, cfg), train_depth_net(cube, setup, cfg)
    for wa, wb in zip(a.weights, b.weights, strict=True):
        assert wa.dtype == np.float64
        np.testing.assert_array_equal(wa, wb)
    assert a.meta["refine_steps"] == 5 and a.meta["refine_power"] == 4


@pytest.mark.parametrize("bad", [{"refine_power": 1}, {"refine_steps": -1}, {"end_fraction": 1.5},
                                 {"end_span": -1e-3}, {"axial_r_min": -1e-3}])
def test_bad_refinement_and_sampling_settings_are_refused_by_name(bad):
    name = next(iter(bad))
    with pytest.raises(InvalidInputError, match=name):
        TrainConfig(**bad)
