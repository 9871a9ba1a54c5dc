"""Smoke run of the mpc-insertion experiment with a tiny budget: output keys, value ranges, plots."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from contactkit.errors import ContactkitError, InvalidInputError
from contactkit.eval import exp_mpc_insertion as exp
from contactkit.eval import planning_models
from contactkit.eval.exp_mpc_insertion import InsertionBudget

TINY = InsertionBudget(("square", "circle-in-square"), episodes_per_pairing=1, max_steps=6, horizon=4,
                       population=4, iterations=1, replan_every=3)


def test_tiny_run_reports_every_model_and_the_missing_ones(tmp_path):
    result = exp.run(quick=True, seed=0, plots=tmp_path / "plots", budget=TINY,
                     checkpoint=tmp_path / "absent.safetensors")
    json.dumps(result)  # JSON-ready
    assert set(result["models"]) == {"ground-truth", "engine"}
    for name in ("ground-truth", "engine"):
        summary = result["models"][name]
        assert summary["episodes"] == 2 and set(summary["per_shape"]) == {"square", "circle-in-square"}
        for rates in (summary, *summary["per_shape"].values()):
            assert 0.0 <= rates["success_rate"] <= rates["halfway_rate"] <= 1.0
        assert summary["replan_s"] > 0.0 and summary["replan_s_p90"] >= 0.0
        assert summary["replans"] == sum(-(-e["steps"] // TINY.replan_every) for e in summary["per_episode"])
        assert all(1 <= e["steps"] <= TINY.max_steps for e in summary["per_episode"])
    missing = {m["model"]: m["reason"] for m in result["missing"]}
    assert set(missing) == {"act-fignet"} and "absent.safetensors" in missing["act-fignet"]
    assert set(result["models"]) | set(missing) == set(exp.MODEL_FACTORIES) - exp.OPT_IN_MODELS
    assert result["budget"]["horizon"] == 4
    for path in result["plots"]:
        assert (tmp_path / "plots").joinpath(path.split("/")[-1]).stat().st_size > 1000


def test_quick_and_full_budgets_follow_the_paper_where_they_should():
    assert exp.FULL_BUDGET.episodes_per_pairing == 10 and exp.FULL_BUDGET.max_steps == 150
    assert (exp.FULL_BUDGET.horizon, exp.FULL_BUDGET.population, exp.FULL_BUDGET.iterations,
            exp.FULL_BUDGET.replan_every) == (50, 20, 5, 5)
    assert set(exp.FULL_BUDGET.pairings) == {"triangle", "square", "hexagon", "circle", "circle-in-square"}
    assert exp.QUICK_BUDGET.pairings == exp.FULL_BUDGET.pairings


def test_a_missing_checkpoint_is_reported_with_its_path(tmp_path, monkeypatch):
    from contactkit.tasks.scenes import peg_in_hole

    scene = peg_in_hole("square", 5e-3)
    with pytest.raises(exp.ModelUnavailable, match="absent.safetensors"):
        exp.MODEL_FACTORIES["act-fignet"](scene, None, replace(TINY, checkpoint=str(tmp_path / "absent.safetensors")),
                                          "cpu")
    monkeypatch.chdir(tmp_path)  # a checkpoint at contactkit train's default output is not picked up
    (tmp_path / "runs" / "act-fignet").mkdir(parents=True)
    (tmp_path / "runs" / "act-fignet" / "best.safetensors").write_bytes(b"")
    with pytest.raises(exp.ModelUnavailable, match="no --checkpoint given"):
        exp.MODEL_FACTORIES["act-fignet"](scene, None, replace(TINY, checkpoint=None), "cpu")


def test_an_unusable_checkpoint_is_reported_not_raised(tmp_path):
    bad = tmp_path / "corrupt.safetensors"
    bad.write_bytes(b"not a checkpoint")
    models, missing = exp.build_models(exp_scene(), None, replace(TINY, checkpoint=str(bad)), "cpu")
    reasons = {m["model"]: m["reason"] for m in missing}
    assert "corrupt.safetensors" in reasons["act-fignet"] and "act-fignet" not in models


def test_the_engine_plans_pose_deltas_with_the_table_iv_protocol():
    model = exp.MODEL_FACTORIES["engine"](exp_scene(), None, TINY, "cpu")
    assert model.action_mode.value == "pose-delta" and model.history == 1 and model.control_dt > 0.0


def test_a_budget_can_leave_models_out():
    models, missing = exp.build_models(exp_scene(), None, replace(TINY, models=("ground-truth",)), "cpu")
    assert set(models) == {"ground-truth"}
    assert {m["model"] for m in missing} == {"act-fignet", "engine"}


def exp_scene():
    from contactkit.tasks.scenes import peg_in_hole

    return peg_in_hole("square", 5e-3)


def _appearing_factory(fail_on: set[int]):
    """A factory that raises ModelUnavailable on the calls numbered in ``fail_on`` (0-based), else builds the
    ground truth: a checkpoint that appears, or disappears, while the experiment runs."""
    calls, ground_truth = [], exp.MODEL_FACTORIES["ground-truth"]

    def factory(scene, params, budget, device):
        calls.append(None)
        if len(calls) - 1 in fail_on:
            raise exp.ModelUnavailable("not there on this call")
        return ground_truth(scene, params, budget, device)

    return factory


def test_a_model_that_appears_during_the_run_does_not_join_it(monkeypatch):
    factories = {"ground-truth": exp.MODEL_FACTORIES["ground-truth"], "late": _appearing_factory({0})}
    monkeypatch.setattr(planning_models, "MODEL_FACTORIES", factories)
    records, _, missing = exp.evaluate(TINY, seed=0)
    assert set(records) == {"ground-truth"} and [m["model"] for m in missing] == ["late"]


def test_a_model_that_disappears_during_the_run_is_an_error(monkeypatch):
    monkeypatch.setattr(planning_models, "MODEL_FACTORIES", {"flaky": _appearing_factory({1})})
    with pytest.raises(ContactkitError, match="flaky"):
        exp.evaluate(TINY, seed=0)


def test_unknown_model_name_is_refused_before_any_episode():
    with pytest.raises(InvalidInputError, match="available"):
        exp.run(quick=True, budget=TINY, models=("ground-truth", "no-such-model"))


def test_the_planner_stream_is_not_an_episode_start_stream():
    """Episode seeds are plain integers (``env.reset(seed=...)``); no pairing's planner may draw the same numbers
    as any episode start of the run (``[0, 0]`` and ``0`` are one NumPy stream)."""

    budget = exp.FULL_BUDGET
    for seed in (0, 1):
        starts = {float(np.random.default_rng(exp.episode_seed(seed, p, e)).random())
                  for p in budget.pairings for e in range(budget.episodes_per_pairing)}
        planners = {float(exp.planner_rng(seed, p).random()) for p in budget.pairings}
        assert len(planners) == len(budget.pairings)
        assert not planners & starts


def test_a_run_of_some_pairings_repeats_those_episodes_of_the_whole_run():
    """Starts and planner streams are keyed by the pairing, not its place in the run: ``--pairings`` and
    ``--episodes`` cut the full run down without changing the episodes that remain, and mark it partial."""
    budget = replace(TINY, models=("ground-truth",), episodes_per_pairing=2)
    whole = exp.run(quick=False, budget=budget)
    part = exp.run(quick=False, budget=budget, pairings=("circle-in-square",), episodes=1)
    assert not whole["partial"] and part["partial"]
    in_whole = [e for e in whole["models"]["ground-truth"]["per_episode"] if e["pairing"] == "circle-in-square"]
    assert part["models"]["ground-truth"]["per_episode"] == in_whole[:1]
    assert tuple(part["budget"]["pairings"]) == ("circle-in-square",) and part["budget"]["episodes_per_pairing"] == 1


@pytest.mark.parametrize(("episodes", "pairings", "match"),
                         [(0, None, "episodes"), (None, ("square", "pentagon"), "pentagon"), (None, (), "pairings")])
def test_a_bad_cut_down_is_refused(episodes, pairings, match):
    with pytest.raises(InvalidInputError, match=match):
        exp.run(quick=True, budget=TINY, episodes=episodes, pairings=pairings)
