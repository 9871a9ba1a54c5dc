"""Experiment ``pushing`` (issue 18 part 8): JSON shape and finiteness, infeasible goals reported as failures,
the committed residual actor and its model card."""

import hashlib
import json
import re

import numpy as np
import pytest

from contactkit.control.icr import ProfileKind
from contactkit.eval import exp_pushing
from contactkit.eval.exp_pushing import PushingConfig, feasible_goal, resolve_checkpoint, run, trial_goals
from contactkit.pushing.env import GOAL_DISTANCE, GOAL_ROTATION
from contactkit.pushing.scene import ObjectKind, PushScene

ISSUE_KEYS = ("object", "profile", "trials", "pd_translation_err_pct", "rl_translation_err_pct", "pd_angle_err_pct",
              "rl_angle_err_pct", "pd_force_err_N_sim", "rl_force_err_N_sim", "pd_force_err_N_real",
              "rl_force_err_N_real", "pd_torque_err_Nm_real", "rl_torque_err_Nm_real",
              "rl_translation_err_pct_real", "rl_angle_err_pct_real", "pd_translation_err_pct_real",
              "pd_angle_err_pct_real")
"""Issues 18 and 32's keys per case (the numbers from index 3 on); ``rl_lost``/``pd_lost`` are counts."""
SHORT = PushingConfig(trials=1, duration=2.0)
"""2 s episodes (seed 0: every case's goal feasible): every code path of the full run at a tenth of its cost."""


@pytest.fixture(scope="module")
def short_result(tmp_path_factory):
    plots = tmp_path_factory.mktemp("plots")
    return run(quick=True, seed=0, plots=plots, config=SHORT), plots


def test_short_run_has_every_key_finite(short_result):
    """All six object × profile cases with the issue's keys, finite numbers, JSON without NaN, figures written."""
    result, plots = short_result
    cases = {(c["object"], c["profile"]) for c in result["cases"]}
    assert cases == {(o.value, p.value) for o in ObjectKind for p in ProfileKind}
    for case in result["cases"]:
        assert set(ISSUE_KEYS) <= set(case)
        assert case["trials"] == 1 and case["infeasible"] == 0
        for key in ISSUE_KEYS[3:]:
            assert case[key] is not None and np.isfinite(case[key]) and case[key] >= 0, (case["object"], key)
        assert isinstance(case["rl_lost"], int) and isinstance(case["pd_lost"], int)
        assert case["pd_lost"] == case["lost"]["pd_real"] and case["rl_lost"] == case["lost"]["rl_real"]
    assert set(result["bar"]) >= {"rl_le_pd_every_case", "rl_sum_le_half_pd", "rl_lost_le_pd_lost_every_case",
                                  "rl_force_le_1p1_pd_every_case"}
    assert set(result["training"]) == {"episodes", "steps", "wall_s"}
    assert all(isinstance(v, int | float) and v > 0 for v in result["training"].values())
    json.dumps(result, allow_nan=False)
    assert {p.split("/")[-1] for p in result["figures"]} >= {"fig6_tracking.png", "fig8_force_torque.png"}
    assert all((plots / p.split("/")[-1]).stat().st_size > 0 for p in result["figures"])


def test_trial_goals_within_stated_ranges():
    """Goals lie in the stated distance and rotation ranges; another seed gives other goals."""
    start = np.array(PushScene.for_object(ObjectKind.CUBE).object_pose)
    goals = trial_goals(0, ObjectKind.CUBE, ProfileKind.CHIRP, 20)
    dist = np.hypot(*(goals[:, :2] - start[:2]).T)
    rot = np.abs(goals[:, 2] - start[2])
    assert (dist >= GOAL_DISTANCE[0] - 1e-12).all() and (dist <= GOAL_DISTANCE[1] + 1e-12).all()
    assert (rot >= GOAL_ROTATION[0]).all() and (rot <= GOAL_ROTATION[1]).all()
    assert not np.allclose(goals, trial_goals(1, ObjectKind.CUBE, ProfileKind.CHIRP, 20))


def test_infeasible_goal_is_a_reported_failure(monkeypatch):
    """A goal straight sideways of the push direction (needs |F_t| > μ F_n, eq 10) is infeasible for eq 13: the
    trial counts as infeasible, no episode runs, and the case reports None, never NaN."""
    start = np.array(PushScene.for_object(ObjectKind.CUBE).object_pose)
    sideways = start + np.array([0.0, 0.08, 0.0])
    assert not feasible_goal(ObjectKind.CUBE, ProfileKind.CONSTANT, sideways, SHORT.duration)
    monkeypatch.setattr(exp_pushing, "trial_goals", lambda seed, obj, profile, n: np.tile(sideways, (n, 1)))
    ran = []
    monkeypatch.setattr(exp_pushing, "run_trial", lambda job: ran.append(job))
    result = run(quick=True, config=PushingConfig(trials=2, duration=1.0))
    assert not ran
    for case in result["cases"]:
        assert case["trials"] == 2 and case["infeasible"] == 2
        assert all(v == 0 for v in case["completed"].values())
        assert all(case[k] is None for k in ISSUE_KEYS[3:])
    assert result["bar"]["rl_le_pd_every_case"] is None and result["bar"]["rl_sum_le_half_pd"] is None
    json.dumps(result, allow_nan=False)


def test_lost_trial_counts_100_pct_and_is_counted(monkeypatch):
    """A lost trial counts LOST_TRIAL_PCT in the translation and angle means (not dropped), its force error is that
    of the steps it ran, and the case reports it in rl_lost / pd_lost; the bar sees the extra loss."""
    monkeypatch.setattr(exp_pushing, "feasible_goal", lambda *a: True)

    def fake(job):
        controller, world, real_key = job[3], job[4], job[8]
        lost = controller == "rl" and world == "real" and real_key[3] == 0
        return {"failure": "step 5: object lost" if lost else None,
                "errors": dict(translation_pct=3.0, angle_pct=1.0, force_N=0.2 if lost else 0.1, torque_Nm=0.001)}

    monkeypatch.setattr(exp_pushing, "run_trial", fake)
    result = run(quick=True, config=PushingConfig(trials=2, duration=1.0))
    assert exp_pushing.LOST_TRIAL_PCT == 100.0
    for case in result["cases"]:
        assert case["rl_lost"] == 1 and case["pd_lost"] == 0 and case["lost"]["rl_sim"] == 0
        assert case["rl_translation_err_pct_real"] == pytest.approx((100.0 + 3.0) / 2)
        assert case["rl_angle_err_pct_real"] == pytest.approx((100.0 + 1.0) / 2)
        assert case["pd_translation_err_pct_real"] == pytest.approx(3.0) == case["rl_translation_err_pct_sim"]
        assert case["rl_force_err_N_real"] == pytest.approx(0.15)
    bar = result["bar"]
    assert bar["rl_lost_le_pd_lost_every_case"] is False and bar["rl_le_pd_every_case"] is False
    assert bar["rl_sum_pct_real"] == pytest.approx(6 * (51.5 + 50.5)) and bar["pd_sum_pct_real"] == pytest.approx(24)


def test_real_trials_draw_one_seeded_world_per_goal(monkeypatch):
    """PD and RL meet the same "real" draw on a goal; goals and seeds differ in their draws."""
    jobs = []
    monkeypatch.setattr(exp_pushing, "feasible_goal", lambda *a: True)
    monkeypatch.setattr(exp_pushing, "run_trial", lambda job: jobs.append(job) or
                        {"failure": None, "errors": dict(translation_pct=1.0, angle_pct=1.0, force_N=0.1,
                                                         torque_Nm=0.001)})
    run(quick=True, config=PushingConfig(trials=2, duration=1.0))
    keys = {(j[0], j[1], j[8][3]): set() for j in jobs}
    for j in jobs:
        keys[(j[0], j[1], j[8][3])].add(j[8])
    assert all(len(v) == 1 for v in keys.values())  # one draw key per goal, shared by PD/RL and both worlds
    assert len({next(iter(v)) for v in keys.values()}) == len(keys) == 12


def test_committed_actor_matches_its_card():
    """The committed actor loads with the untrusting reader, its sha256 is the model card's, and the card's
    training facts are the ones the experiment reports."""
    from contactkit.pushing.residual import load_residual

    path = resolve_checkpoint(None)
    card_text = (path.parent / "README.md").read_text()
    digest = re.search(r"sha256 `([0-9a-f]{64})`", card_text).group(1)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
    policy = load_residual(path)
    training = policy.card["training"]
    assert f"{training['steps']} environment steps" in card_text
    assert f"{training['episodes']} episodes" in card_text
    curve = json.loads((path.parent / "training_curve.json").read_text())
    assert len(curve["returns"]) == len(curve["errors"]) == training["episodes"]
    out = policy(np.zeros((4, policy.weights[0].shape[1])))
    assert out.shape == (4, 3) and np.all(np.abs(out) <= 1)


def test_workers_and_checkpoint_do_not_narrow_config_does():
    assert exp_pushing.narrowing({"workers": 2, "checkpoint": "a.safetensors"}) == []
    assert exp_pushing.narrowing({"config": SHORT}) != []
