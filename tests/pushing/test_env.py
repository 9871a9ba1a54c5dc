"""The residual-RL pushing environment (pushing paper §II-C, eq 17, §III-A domain randomisation)."""

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from contactkit.control.icr import ProfileKind
from contactkit.errors import InvalidInputError
from contactkit.pushing import controller as ctl
from contactkit.pushing.env import (
    DR_BOUNDS,
    DR_PHYSICS,
    GOAL_DISTANCE,
    GOAL_ROTATION,
    PushingResidualEnv,
    RewardKind,
    eq17_reward,
    pose_reward,
    sample_domain,
)
from contactkit.pushing.mismatch import NOMINAL_ARMATURE
from contactkit.pushing.observation import BASE_DIM, HISTORY_DIM, HISTORY_FIELDS, HISTORY_LEN, HISTORY_STRIDE
from contactkit.pushing.scene import ObjectKind, PushScene


def test_check_env_passes():
    check_env(PushingResidualEnv(episode_steps=20), skip_render_check=True)


def test_eq17_closed_form():
    """Hand-made state: −Σ_i [w1|ΔF_n| + w2|ΔF_t| + w3|Δτ|]."""
    force = np.array([[1.0, 0.2], [0.5, -0.1]])
    des = np.array([[1.5, 0.0], [0.5, 0.1]])
    tau, tau_des = np.array([0.01, -0.02]), np.array([0.0, 0.01])
    expected = -(1.0 * (0.5 + 0.0) + 2.0 * (0.2 + 0.2) + 10.0 * (0.01 + 0.03))
    assert eq17_reward(force, des, tau, tau_des, (1.0, 2.0, 10.0)) == pytest.approx(expected, abs=1e-15)
    assert eq17_reward(des, des, tau, tau, (1.0, 2.0, 10.0)) == 0.0
    with pytest.raises(InvalidInputError):
        eq17_reward(force, des[:1], tau, tau_des)


@pytest.mark.parametrize("kind", list(RewardKind))
def test_env_reward_is_eq17_of_the_models_forces(kind):
    """The step reward is eq 17 of the model's own contact forces against the plan's desired ones, plus (default)
    the pose term of the object's deviation after the step; the ablation is eq 17 alone."""
    env = PushingResidualEnv(episode_steps=30, reward=kind)
    env.reset(seed=3)
    pose_terms = []
    for k in range(30):
        _, reward, term, trunc, info = env.step(np.zeros(3, dtype=np.float32))
        des = np.stack([env.plan.f_n[k], env.plan.f_t[k]], -1)
        pose = pose_reward(ctl.deviation(env.plan, k, env.world.state.obj_pose))
        pose_terms.append(pose)
        expected = eq17_reward(info["contact_force"], des, info["contact_torque"], env.plan.tau_z[k])
        assert reward == pytest.approx(expected + (pose if kind is RewardKind.EQ17_POSE else 0.0), abs=1e-12)
    assert trunc and not term and set(info["errors"]) == {"normal_N", "tangential_N", "torque_Nm"}
    assert min(pose_terms) < 0.0  # the term is not vacuous on this episode


def test_pose_reward_closed_form_and_losing_never_pays():
    """−(w_p |d| + w_θ |dθ|), capped; with the pose term on, the per-step cost of losing the object exceeds the
    worst per-step cost of continuing (eq 17 of no contact ≤ 2.47, pose ≤ the cap)."""
    from contactkit.pushing.env import FAILURE_PENALTY_PER_STEP, POSE_COST_CAP

    assert pose_reward([0.003, -0.004, 0.1], (100.0, 20.0)) == pytest.approx(-(0.5 + 2.0), abs=1e-15)
    assert pose_reward(np.zeros(3)) == 0.0
    assert pose_reward([0.04, 0.03, 1.0]) == -POSE_COST_CAP
    env = PushingResidualEnv(episode_steps=10)
    assert env.penalty_per_step == FAILURE_PENALTY_PER_STEP + POSE_COST_CAP > 2.47 + POSE_COST_CAP
    assert PushingResidualEnv(episode_steps=10, reward=RewardKind.EQ17).penalty_per_step == FAILURE_PENALTY_PER_STEP


def test_history_observation_has_the_stated_shape_and_lags():
    """Observation = base (15) + H rows of (λ (4), deviation (3)) at lags s, 2s, … (zeros before the start)."""
    env = PushingResidualEnv(episode_steps=60)
    obs, _ = env.reset(seed=2)
    assert obs.shape == (HISTORY_DIM,) == env.observation_space.shape and HISTORY_DIM == 15 + 7 * HISTORY_LEN
    assert np.all(obs[BASE_DIM:] == 0.0)
    bases = [obs[:BASE_DIM]]
    for _ in range(2 * HISTORY_STRIDE + 1):
        obs, *_ = env.step(np.zeros(3, dtype=np.float32))
        bases.append(obs[:BASE_DIM])
    k = len(bases) - 1
    rows = obs[BASE_DIM:].reshape(HISTORY_LEN, len(HISTORY_FIELDS))
    for j in range(HISTORY_LEN):
        lag = (j + 1) * HISTORY_STRIDE
        expected = bases[k - lag][list(HISTORY_FIELDS)] if k - lag >= 0 else np.zeros(len(HISTORY_FIELDS))
        np.testing.assert_array_equal(rows[j], expected)
    assert np.abs(rows[:2]).max() > 0  # the first two lags lie inside the episode and carry forces


def _rollout(env, seed, action, n):
    obs, _ = env.reset(seed=seed)
    out, active = [obs], []
    for _ in range(n):
        obs, _, _, _, info = env.step(np.asarray(action, dtype=np.float32))
        out.append(obs)
        active.append(info["active"])
    return np.array(out), np.array(active)


def test_residual_inactive_below_threshold():
    """Below the deviation threshold the action has no effect; with a zero threshold it does. (The default 1 mm is
    passed within a few steps by the soft default PD's lag, so a 10 mm / 0.1 rad threshold is used here.)"""
    n = 15
    env = PushingResidualEnv(episode_steps=50, deviation_pos_tol=0.01, deviation_ang_tol=0.1)
    a, act_a = _rollout(env, 5, [1, 1, 1], n)
    b, act_b = _rollout(env, 5, [-1, -1, -1], n)
    quiet = int(np.argmax(act_a | act_b)) if (act_a | act_b).any() else n  # steps before any activation
    assert quiet >= 5
    np.testing.assert_array_equal(a[:quiet + 1], b[:quiet + 1])
    hot = PushingResidualEnv(episode_steps=50, deviation_pos_tol=0.0, deviation_ang_tol=0.0)
    c, act_c = _rollout(hot, 5, [1, 1, 1], n)
    d, _ = _rollout(hot, 5, [-1, -1, -1], n)
    assert act_c[1:].all()
    assert np.abs(c[quiet] - d[quiet]).max() > 0.1


def test_domain_randomisation_bounds_and_coverage():
    """200 draws stay within the stated bounds and cover both objects and all three profiles."""
    rng = np.random.default_rng(0)
    draws = [sample_domain(rng) for _ in range(200)]
    for s in draws:
        nominal = PushScene.for_object(s.object_kind)
        lo, hi = DR_BOUNDS["object_mass_scale"]
        assert lo * nominal.object_mass <= s.object_mass <= hi * nominal.object_mass
        lo, hi = DR_BOUNDS["pusher_mass_scale"]
        assert lo * nominal.pusher_mass <= s.pusher_mass <= hi * nominal.pusher_mass
        assert DR_BOUNDS["mu_contact"][0] <= s.mu_contact <= DR_BOUNDS["mu_contact"][1]
        assert DR_BOUNDS["mu_ground"][0] <= s.mu_ground <= DR_BOUNDS["mu_ground"][1]
        assert GOAL_DISTANCE[0] <= np.hypot(*s.goal_offset[:2]) <= GOAL_DISTANCE[1]
        assert GOAL_ROTATION[0] <= abs(s.goal_offset[2]) <= GOAL_ROTATION[1]
    assert {s.object_kind for s in draws} == set(ObjectKind)
    assert {s.profile for s in draws} == set(ProfileKind)
    assert len({s.mu_ground for s in draws}) == 200
    assert min(s.goal_offset[2] for s in draws) < 0 < max(s.goal_offset[2] for s in draws)


def test_domain_randomisation_of_issue_32_families_within_stated_ranges():
    """Centre-of-mass and tip offsets, damping, armature and friction patches stay within :data:`DR_PHYSICS`; the
    randomised scene carries them; the draws spread over most of each range."""
    rng = np.random.default_rng(1)
    draws = [sample_domain(rng).physics for _ in range(200)]
    com = np.array([d.com_offset for d in draws])
    tip = np.array([d.tip_offset for d in draws])
    arm = np.array([d.armature for d in draws]) / np.array(NOMINAL_ARMATURE)
    damp = np.array([d.damping_scale for d in draws])
    patch = np.concatenate([np.ravel(d.patches.scales) for d in draws])
    assert np.abs(com).max() <= DR_PHYSICS.com_offset_m and np.abs(com).max() > 0.9 * DR_PHYSICS.com_offset_m
    assert np.all(np.abs(tip) <= np.array(DR_PHYSICS.tip_offset_m))
    for values, (lo, hi) in ((arm, DR_PHYSICS.armature_scale), (damp, DR_PHYSICS.damping_scale),
                             (patch, DR_PHYSICS.patch_scale)):
        assert values.min() >= lo and values.max() <= hi and values.max() - values.min() > 0.9 * (hi - lo)
    env = PushingResidualEnv(episode_steps=10)
    _, info = env.reset(seed=5)
    scene = env.world.scene
    assert scene.com_offset == info["sample"].physics.com_offset != (0.0, 0.0)
    assert scene.friction_patches == info["sample"].physics.patches


def test_reset_reproducible_from_seed():
    """Same seed: same draw, observation and world; another seed: another draw."""
    env = PushingResidualEnv(episode_steps=10)
    o1, i1 = env.reset(seed=11)
    w1 = env.world.scene
    o2, i2 = env.reset(seed=11)
    assert i1["sample"] == i2["sample"] and env.world.scene == w1
    np.testing.assert_array_equal(o1, o2)
    _, i3 = env.reset(seed=12)
    assert i3["sample"] != i1["sample"]
    assert o1.shape == (HISTORY_DIM,) and o1.dtype == np.float32
    assert PushingResidualEnv(episode_steps=10, history=False).reset(seed=11)[0].shape == (ctl.OBS_DIM,)


def test_no_randomisation_keeps_table_ii_physics():
    env = PushingResidualEnv(episode_steps=10, randomise=False)
    _, info = env.reset(seed=4)
    nominal = PushScene.for_object(info["sample"].object_kind)
    assert env.world.scene.object_mass == nominal.object_mass and env.world.scene.mu_ground == nominal.mu_ground
    assert env.world.scene.com_offset == (0.0, 0.0) and env.world.scene.friction_patches is None


def test_bad_construction_refused():
    with pytest.raises(InvalidInputError):
        PushingResidualEnv(episode_steps=1)
    with pytest.raises(InvalidInputError):
        PushingResidualEnv(deviation_pos_tol=-1.0)
    with pytest.raises(InvalidInputError):
        PushingResidualEnv().step(np.zeros(3))


def test_failure_penalty_is_the_discounted_per_step_cost():
    """Closed form: c (1 − γⁿ) / (1 − γ); it tends to c / (1 − γ) = 500, always beats the ≤ 2.47 per step that
    pushing with no contact costs over the same discounted horizon, and is 0 with no step left."""
    from contactkit.pushing.env import DISCOUNT, FAILURE_PENALTY_PER_STEP, failure_penalty

    c = FAILURE_PENALTY_PER_STEP
    assert failure_penalty(0) == 0.0 and failure_penalty(1) == pytest.approx(-c)
    assert failure_penalty(3) == pytest.approx(-c * (1 + DISCOUNT + DISCOUNT**2))
    assert failure_penalty(2000) == pytest.approx(-c / (1 - DISCOUNT), rel=1e-8)
    for n in (1, 10, 100, 2000):
        assert failure_penalty(n) < -2.47 * (1 - DISCOUNT**n) / (1 - DISCOUNT)
