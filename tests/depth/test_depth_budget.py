"""The settings of a depth network's training scaled to ``--steps`` or fitted to ``--budget`` (issue 34, part 5):
one factor scales steps, samples and refinement together; explicit settings are kept; a budget is met."""

import pytest

from contactkit.depth import TrainConfig
from contactkit.depth.budget import (
    MIN_SAMPLES,
    CostModel,
    expected_seconds,
    fit_budget,
    scaled_config,
    steps_config,
)
from contactkit.errors import InvalidInputError

PRESET = TrainConfig(samples=200_000, steps=15_000, batch=8192, refine_steps=1200, refine_power=6)
COST = CostModel(distance=2.4e-5, adam_row=1.5e-6, forward_row=2.5e-7, refine_row=3.9e-6)
"""Unit costs measured on one loaded core (the paper hole: 22.8 min for the full preset, as its card's 23.6)."""


def test_fifty_steps_of_the_hole_preset_scale_samples_and_refinement_with_them():
    cfg = steps_config(PRESET, 50)
    assert (cfg.steps, cfg.samples, cfg.refine_steps) == (50, MIN_SAMPLES, 4)  # 1200 * 50 / 15000 = 4
    assert expected_seconds(cfg, COST) < 0.01 * expected_seconds(PRESET, COST)
    half = steps_config(PRESET, 7500)
    assert (half.samples, half.refine_steps) == (100_000, 600)


def test_explicit_settings_full_steps_and_warm_starts_are_kept():
    cfg = steps_config(PRESET, 50, keep={"samples", "refine_steps"})
    assert (cfg.steps, cfg.samples, cfg.refine_steps) == (50, PRESET.samples, PRESET.refine_steps)
    assert steps_config(PRESET, 15_000) == PRESET
    more = steps_config(PRESET, 30_000)  # more steps than the preset: only the steps change
    assert (more.steps, more.samples, more.refine_steps) == (30_000, PRESET.samples, PRESET.refine_steps)
    warm = steps_config(PRESET, 0)  # a warm start's refinement only
    assert (warm.steps, warm.samples, warm.refine_steps) == (0, PRESET.samples, PRESET.refine_steps)
    with pytest.raises(InvalidInputError, match="scale factor"):
        scaled_config(PRESET, 0.0)


@pytest.mark.parametrize("budget", [5.0, 60.0, 300.0])
def test_a_budget_is_met_by_the_largest_scaling_that_fits(budget):
    cfg = fit_budget(PRESET, COST, budget, eval_points=55_000)
    assert expected_seconds(cfg, COST, 55_000) <= budget
    assert cfg.steps < PRESET.steps and cfg.batch == PRESET.batch and cfg.refine_power == PRESET.refine_power
    bigger = scaled_config(PRESET, min(1.0, 1.05 * cfg.steps / PRESET.steps))
    assert expected_seconds(bigger, COST, 55_000) > budget  # 5 % more would not fit: the largest


def test_a_budget_the_full_run_fits_keeps_it_and_impossible_ones_are_refused():
    assert fit_budget(PRESET, COST, 1e6) == PRESET
    with pytest.raises(InvalidInputError, match="below the smallest run"):
        fit_budget(PRESET, COST, 1e-3, eval_points=55_000)
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(InvalidInputError, match="--budget"):
            fit_budget(PRESET, COST, bad)
