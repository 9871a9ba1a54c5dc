"""Experiment prediction-accuracy: clean twins of the test sets and the bar on recorded and clean readings
(the full run is the measurement; these check its bookkeeping on tiny data)."""

import dataclasses

import pytest

from contactkit.eval import exp_prediction as exp
from contactkit.eval.predict_eval import load_recorded

TINY = dataclasses.replace(exp.QUICK_BUDGET, train_episodes=1, val_episodes=1, test_episodes=1, episode_steps=12)


def _row(model, pos, force, torque, clean, clean_torque):
    return {"model": model, "policy": exp.TRAIN_POLICY, "rmse_pos_mm": pos, "force_err_N": force,
            "torque_err_Nm": torque, "force_err_clean_N": clean, "torque_err_clean_Nm": clean_torque}


def test_test_sets_get_verified_clean_twins(tmp_path):
    paths, twins = exp._collect_all(tmp_path, TINY, seed=0)
    assert twins == {"test": {"identical": True, "max_state_diff": 0.0, "reason": None}}
    noisy, clean = load_recorded(paths["test"]), load_recorded(paths["test-clean"])
    assert (noisy.episodes[0].wrench != clean.episodes[0].wrench).all()  # noise and bias on every reading
    jobs = exp._eval_jobs(paths, TINY, 0, "cpu", None)
    assert {j.clean for j in jobs} == {paths["test-clean"]}
    assert "train-clean" not in paths and "val-clean" not in paths


def test_bar_on_recorded_and_clean_readings():
    rows = [_row("act-fignet", 10.0, 0.6, 0.02, 0.05, 0.004), _row("fignet-plus", 30.0, 0.7, 0.03, 0.2, 0.01),
            _row("mujoco-nominal", 40.0, 0.56, 0.03, 0.2, 0.02),
            _row("mujoco-nominal-wrench", 1e4, 0.55, 0.02, 0.2, 0.02),
            _row("mujoco-target-oracle", 0.0, 0.5, 0.01, 0.0, 0.0)]
    bar = exp._bar(rows)
    assert bar["pos_ratio_vs_mujoco_nominal"] == pytest.approx(0.25) and bar["pos_ok"]
    assert bar["force_ratio_vs_mujoco_nominal"] == pytest.approx(0.6 / 0.56) and not bar["force_ok"]
    assert bar["force_clean_ratio_vs_mujoco_nominal"] == pytest.approx(0.25) and bar["force_clean_ok"]
    assert bar["force_bar_readings"] == "clean" and bar["force_bar_ok"]  # issue 19: the bar compares clean readings
    assert bar["force_floor_N"] == 0.5 and bar["force_clean_floor_N"] == 0.0
    assert bar["ft_lower_than_fignet_plus"] and bar["ft_clean_lower_than_fignet_plus"]
    no_twin = [dict(r, force_err_clean_N=None, torque_err_clean_Nm=None) for r in rows]
    bar = exp._bar(no_twin)
    assert bar["force_clean_ratio_vs_mujoco_nominal"] is None and bar["force_clean_ok"] is None
    assert bar["force_bar_readings"] == "recorded" and bar["force_bar_ok"] is False
