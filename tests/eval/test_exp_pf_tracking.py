"""Smoke run of the pf-tracking experiment with a tiny budget: output keys, value ranges, plots."""

from __future__ import annotations

import json

import numpy as np

from contactkit.eval import exp_mpc_insertion, exp_pf_tracking
from contactkit.eval.exp_pf_tracking import TrackingBudget


def test_tiny_run_reports_three_configurations(tmp_path, monkeypatch):
    monkeypatch.setattr(exp_mpc_insertion, "ACT_FIGNET_CHECKPOINT", tmp_path / "absent.safetensors")
    result = exp_pf_tracking.run(quick=True, seed=0, plots=tmp_path, budget=TrackingBudget(episodes=1, steps=20))
    json.dumps(result)
    assert result["quoted_model"] == "mujoco-nominal"
    configs = result["models"]["mujoco-nominal"]["configurations"]
    assert set(configs) == {"motion-only", "pf-known-init", "pf-perturbed-init"}
    for scores in configs.values():
        assert scores["final_pos_err_mm"] >= 0.0 and 0.0 <= scores["converged_fraction"] <= 1.0
    assert result["perturbed_final_pos_err_mm"] == configs["pf-perturbed-init"]["final_pos_err_mm"]
    series = result["series"]["mujoco-nominal"]["pf-perturbed-init"]
    assert len(series["pos_err_mm"]) == 21
    assert series["pos_err_mm"][0] > 1.0  # the perturbed start is millimetres off
    assert result["series"]["mujoco-nominal"]["motion-only"]["pos_err_mm"][0] == 0.0
    assert 0 <= result["first_contact_step"] <= 20
    assert {m["model"] for m in result["missing"]} == {"act-fignet", "engine"}
    assert len(result["plots"]) == 2 and all((tmp_path / p.split("/")[-1]).is_file() for p in result["plots"])


def test_recorded_episode_inserts_the_peg():
    from contactkit.physics import load_world
    from contactkit.tasks.scenes import peg_in_hole

    scene = peg_in_hole("hexagon", 1e-3)
    episode, applied = exp_pf_tracking.record_episode(scene, load_world("target"), 40, np.random.default_rng(0))
    assert episode.n_steps == 40 and applied.shape == (40, 6)
    assert episode.states.pos[-1, 2] < scene.meta["slot_top_z"] - 0.5 * scene.meta["depth"]
