"""Smoke run of the pf-tracking experiment with a tiny budget: output keys, value ranges, plots."""

from __future__ import annotations

import json

import numpy as np
import pytest

from contactkit.errors import InvalidInputError
from contactkit.eval import exp_pf_tracking
from contactkit.eval.exp_pf_tracking import TrackingBudget


def test_tiny_run_reports_three_configurations(tmp_path, monkeypatch):
    budget = TrackingBudget(episodes=1, steps=20, calibration_episodes=1)
    result = exp_pf_tracking.run(quick=True, seed=0, plots=tmp_path, budget=budget)
    json.dumps(result)
    assert set(result["models"]) == {"mujoco-nominal", "engine"}
    assert result["quoted_model"] == "engine"  # MODEL_PREFERENCE: the engine before MuJoCo with nominal parameters
    configs = result["models"]["engine"]["configurations"]
    assert set(configs) == {"motion-only", "pf-known-init", "pf-perturbed-init"}
    for scores in configs.values():
        assert scores["final_pos_err_mm"] >= 0.0 and 0.0 <= scores["converged_fraction"] <= 1.0
        assert scores["final_pos_err_mm_p10"] <= scores["final_pos_err_mm"] <= scores["final_pos_err_mm_max"]
        assert scores["episodes"] == 1 and len(scores["per_episode"]) == 1
    calibration = result["models"]["engine"]["calibration"]
    assert len(calibration["process_std"]) == 12 and len(calibration["measurement_std"]) == 6
    assert calibration["n_samples"] == 20
    # the target world's F/T noise (0.25-0.3 N) is part of what the calibration measures
    assert all(std >= 0.1 for std in calibration["measurement_std"][:3])
    assert result["perturbed_final_pos_err_mm"] == configs["pf-perturbed-init"]["final_pos_err_mm"]
    assert result["perturbed_final_pos_err_mm_max"] == configs["pf-perturbed-init"]["final_pos_err_mm_max"]
    assert set(result["final_pos_err_mm"]) == set(configs)
    for name in ("engine", "mujoco-nominal"):
        series = result["series"][name]["pf-perturbed-init"]
        assert len(series["pos_err_mm"]) == 21
        assert series["pos_err_mm"][0] > 1.0  # the perturbed start is millimetres off
        assert result["series"][name]["motion-only"]["pos_err_mm"][0] == 0.0
    assert 0 <= result["first_contact_step"] <= 20
    assert {m["model"] for m in result["missing"]} == {"act-fignet"} and result["checkpoint"] is None
    assert len(result["plots"]) == 4 and all((tmp_path / p.split("/")[-1]).is_file() for p in result["plots"])


def test_recorded_episode_inserts_the_peg():
    from contactkit.physics import load_world
    from contactkit.tasks.scenes import peg_in_hole

    scene = peg_in_hole("hexagon", 1e-3)
    episode, applied, tare = exp_pf_tracking.record_episode(scene, load_world("target-parametric"), 40,
                                                            np.random.default_rng(0))
    assert tare is None
    assert episode.n_steps == 40 and applied.shape == (40, 6)
    assert episode.states.pos[-1, 2] < scene.meta["slot_top_z"] - 0.5 * scene.meta["depth"]


def test_models_restrict_the_trackers_and_unknown_ones_are_refused(tmp_path):
    budget = TrackingBudget(episodes=1, steps=8, calibration_episodes=1)
    result = exp_pf_tracking.run(quick=True, seed=0, budget=budget, models=("ground-truth",))
    assert set(result["models"]) == {"mujoco-nominal"} and result["quoted_model"] == "mujoco-nominal"
    assert {m["model"] for m in result["missing"]} == {"act-fignet", "engine"}
    with pytest.raises(InvalidInputError, match="unknown models"):
        exp_pf_tracking.run(quick=True, seed=0, budget=budget, models=("mujoco",))
