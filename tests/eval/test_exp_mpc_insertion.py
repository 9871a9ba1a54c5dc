"""Smoke run of the mpc-insertion experiment with a tiny budget: output keys, value ranges, plots."""

from __future__ import annotations

import json

import pytest

from contactkit.eval import exp_mpc_insertion as exp
from contactkit.eval.exp_mpc_insertion import InsertionBudget

TINY = InsertionBudget(("square", "circle-in-square"), episodes_per_pairing=1, max_steps=6, horizon=4,
                       population=4, iterations=1, replan_every=3)


def test_tiny_run_reports_every_model_and_the_missing_ones(tmp_path, monkeypatch):
    monkeypatch.setattr(exp, "ACT_FIGNET_CHECKPOINT", tmp_path / "absent.safetensors")
    result = exp.run(quick=True, seed=0, plots=tmp_path / "plots", budget=TINY)
    json.dumps(result)  # JSON-ready
    gt = result["models"]["ground-truth"]
    assert gt["episodes"] == 2 and set(gt["per_shape"]) == {"square", "circle-in-square"}
    for summary in (gt, *gt["per_shape"].values()):
        assert 0.0 <= summary["success_rate"] <= summary["halfway_rate"] <= 1.0
    assert gt["replan_s"] > 0.0 and gt["replan_s_p90"] >= 0.0
    assert gt["replans"] == sum(-(-e["steps"] // TINY.replan_every) for e in gt["per_episode"])
    assert all(1 <= e["steps"] <= TINY.max_steps for e in gt["per_episode"])
    missing = {m["model"]: m["reason"] for m in result["missing"]}
    assert "absent.safetensors" in missing["act-fignet"] and "engine" in missing
    assert set(result["models"]) | set(missing) == set(exp.MODEL_FACTORIES)
    assert result["budget"]["horizon"] == 4
    for path in result["plots"]:
        assert (tmp_path / "plots").joinpath(path.split("/")[-1]).stat().st_size > 1000


def test_quick_and_full_budgets_follow_the_paper_where_they_should():
    assert exp.FULL_BUDGET.episodes_per_pairing == 10 and exp.FULL_BUDGET.max_steps == 150
    assert (exp.FULL_BUDGET.horizon, exp.FULL_BUDGET.population, exp.FULL_BUDGET.iterations,
            exp.FULL_BUDGET.replan_every) == (50, 20, 5, 5)
    assert set(exp.FULL_BUDGET.pairings) == {"triangle", "square", "hexagon", "circle", "circle-in-square"}
    assert exp.QUICK_BUDGET.pairings == exp.FULL_BUDGET.pairings


@pytest.mark.parametrize("name", ["act-fignet", "engine"])
def test_unavailable_models_raise_with_a_reason(name, tmp_path, monkeypatch):
    monkeypatch.setattr(exp, "ACT_FIGNET_CHECKPOINT", tmp_path / "absent.safetensors")
    from contactkit.tasks.scenes import peg_in_hole

    with pytest.raises(exp.ModelUnavailable):
        exp.MODEL_FACTORIES[name](peg_in_hole("square", 5e-3), None, TINY, "cpu")
