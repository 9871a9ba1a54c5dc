"""The replan benchmark on a tiny agent: every buildable model timed, the ratio to MuJoCo planning, missing models."""

import numpy as np
import pytest

from contactkit.control.mpc import MPCAgent, MPCConfig
from contactkit.eval import bench_replan
from contactkit.eval.exp_mpc_insertion import InsertionBudget, build_models
from contactkit.eval.planning_models import RESIDUAL_CHECKPOINT
from contactkit.physics import WorldParams
from contactkit.tasks.peg_env import PegEnvConfig, PegInsertionEnv
from contactkit.tasks.reward import goal_reward

TINY = InsertionBudget(("square", "circle-in-square"), episodes_per_pairing=1, max_steps=10, horizon=4,
                       population=6, iterations=2, replan_every=2)


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    missing = tmp_path_factory.mktemp("ckpt") / "none.safetensors"
    return bench_replan.run(quick=True, seed=0, checkpoint=missing, budget=TINY)


def test_every_buildable_model_is_timed_on_the_same_points(result):
    assert set(result["models"]) == {"ground-truth", "engine", "residual-mujoco"}  # the committed residual too
    assert result["checkpoints"] == [RESIDUAL_CHECKPOINT.as_posix()]  # repository-relative
    n_points = len(result["points"])
    assert {p["pairing"] for p in result["points"]} == {"square", "circle-in-square"}
    for row in result["models"].values():
        assert row["replans"] == n_points == len(row["replan_s_by_point"])
        assert 0.0 < row["replan_s"] <= row["replan_s_p90"] <= max(row["replan_s_by_point"])
        assert row["within_goal"] == (row["replan_s"] <= bench_replan.GOAL_S)
        assert len(row["replan_cpu_s_by_point"]) == n_points and row["replan_cpu_s"] > 0.0
    assert result["models"]["ground-truth"]["vs_ground_truth"] == 1.0
    assert result["pairings"] == ["square", "circle-in-square"]
    assert result["agent"]["horizon"] == 4


def test_a_model_that_cannot_be_built_is_listed_with_its_reason(result):
    (entry,) = result["missing"]
    assert entry["model"] == "act-fignet" and "none.safetensors" in entry["reason"]
    assert result["checkpoint"] is None
    table = bench_replan.markdown(result)
    assert "| ground-truth |" in table and "act-fignet (" in table


@pytest.fixture(scope="module")
def episode():
    """A reference episode of 10 control steps (replans at 0, 2, ..., 8) with the ground-truth agent."""
    env = PegInsertionEnv(PegEnvConfig(pairing="square", max_steps=10), WorldParams())
    models, _ = build_models(env.scene, WorldParams(), InsertionBudget(("square",), 1, 10, models=("ground-truth",)),
                             "cpu")
    config = MPCConfig.table_iv(env.scale, horizon=3, population=4, iterations=1, replan_every=2)
    agent = MPCAgent(models["ground-truth"], config, goal_reward(env.scene), np.random.default_rng(0))
    return env, models["ground-truth"], config, agent


def test_points_spread_from_the_first_replan_to_the_last(episode):
    env, _, _, agent = episode
    points = bench_replan.reference_points(env, agent, 0, 3, "square")
    assert [p.step for p in points] == [0, 4, 8]
    assert len(agent.replan_seconds) == 5  # the whole episode ran: 10 steps, a replan every 2
    assert all(p.states.batch_shape == (p.step + 1,) for p in points)
    assert len(bench_replan.reference_points(env, agent, 0, 20, "square")) == 5  # no point twice


def test_a_history_ends_at_its_step_and_is_padded_with_the_first_state(episode):
    env, _, _, agent = episode
    last = bench_replan.reference_points(env, agent, 0, 2, "square")[-1]
    window = last.history(3)
    np.testing.assert_array_equal(window.pos, last.states.pos[last.step - 2:last.step + 1])
    first = bench_replan.reference_points(env, agent, 0, 2, "square")[0].history(3)
    np.testing.assert_array_equal(first.pos, np.repeat(last.states.pos[:1], 3, axis=0))


def test_one_replan_is_timed_from_a_point(episode):
    env, model, config, agent = episode
    point = bench_replan.reference_points(env, agent, 0, 1, "square")[0]
    timed = bench_replan.time_replan(model, config, env.scene, point, np.random.default_rng(1))
    assert timed.wall_s > 0.0 and timed.cpu_s > 0.0
