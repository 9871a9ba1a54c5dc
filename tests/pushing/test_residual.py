"""Residual policy: DDPG smoke training and the pickle-free safetensors actor (pushing paper §II-C)."""

import json

import numpy as np
import pytest
import safetensors.numpy

from contactkit.errors import CheckpointError, InvalidInputError
from contactkit.pushing import controller as ctl
from contactkit.pushing.observation import HISTORY_DIM
from contactkit.pushing.residual import FORMAT, ResidualPolicy, load_residual, save_residual


def _policy(rng, obs_dim=ctl.OBS_DIM, hidden=(8, 8)):
    dims = (obs_dim, *hidden, 3)
    weights = []
    for i, o in zip(dims[:-1], dims[1:], strict=True):
        weights += [rng.normal(size=(o, i)), rng.normal(size=o)]
    return ResidualPolicy(tuple(weights), {"note": "test"})


def test_forward_is_relu_mlp_with_tanh():
    """Closed form of a one-hidden-layer actor; outputs within [−1, 1]; batch and single agree."""
    rng = np.random.default_rng(0)
    w0, b0, w1, b1 = rng.normal(size=(4, ctl.OBS_DIM)), rng.normal(size=4), rng.normal(size=(3, 4)), rng.normal(size=3)
    pol = ResidualPolicy((w0, b0, w1, b1), {})
    obs = rng.normal(size=(6, ctl.OBS_DIM))
    np.testing.assert_allclose(pol(obs), np.tanh(np.maximum(obs @ w0.T + b0, 0) @ w1.T + b1), atol=1e-14)
    np.testing.assert_allclose(pol(obs[2]), pol(obs)[2], atol=1e-14)
    assert np.abs(pol(100 * obs)).max() <= 1.0
    with pytest.raises(InvalidInputError):
        pol(np.zeros(ctl.OBS_DIM + 1))
    with pytest.raises(InvalidInputError):
        ResidualPolicy((w0, b0, w1[:, :3], b1), {})


def test_safetensors_round_trip(tmp_path):
    pol = _policy(np.random.default_rng(1))
    path = save_residual(pol, tmp_path / "actor.safetensors")
    back = load_residual(path)
    obs = np.random.default_rng(2).normal(size=(5, ctl.OBS_DIM))
    np.testing.assert_array_equal(back(obs), pol(obs))
    card = json.loads((tmp_path / "actor.json").read_text())
    assert card["format"] == FORMAT and back.card == card and card["note"] == "test"


def test_bad_files_refused(tmp_path):
    pol = _policy(np.random.default_rng(3))
    good = save_residual(pol, tmp_path / "good.safetensors").read_bytes()
    cases = {
        "missing": None,
        "garbage": b"\x00\x01not a safetensors file at all",
        "truncated": good[: len(good) - 40],
        "other_format": safetensors.numpy.save({"W0": np.zeros((3, ctl.OBS_DIM))}, metadata={"format": "x"}),
    }
    nan = list(pol.weights)
    nan[0] = nan[0].copy()
    nan[0][0, 0] = np.nan
    tensors = {f"{'W' if i % 2 == 0 else 'b'}{i // 2}": w for i, w in enumerate(nan)}
    meta = {"format": FORMAT, "format_version": "1", "card": "{}"}
    cases["nan_weights"] = safetensors.numpy.save(tensors, metadata=meta)
    wrong = _policy(np.random.default_rng(4)).weights
    tensors = {f"{'W' if i % 2 == 0 else 'b'}{i // 2}": w for i, w in enumerate(wrong)}
    tensors["W0"] = tensors["W0"][:, :-1].copy()
    cases["wrong_obs_dim"] = safetensors.numpy.save(tensors, metadata=meta)
    del tensors["b2"]
    cases["missing_layer"] = safetensors.numpy.save(tensors, metadata=meta)
    for name, data in cases.items():
        path = tmp_path / f"{name}.safetensors"
        if data is not None:
            path.write_bytes(data)
        with pytest.raises(CheckpointError):
            load_residual(path)


def test_ddpg_smoke_training(tmp_path):
    """A few hundred DDPG steps (OU noise, ReLU MLPs) on 50-step episodes: six episode returns, a finite actor
    that matches sb3's (checked inside train_residual), saved and reloaded, and usable by the episode runner."""
    pytest.importorskip("stable_baselines3")
    from contactkit.control.icr import AngularProfile
    from contactkit.pushing.hybrid import HybridPushWorld
    from contactkit.pushing.residual import train_residual
    from contactkit.pushing.scene import ObjectKind, PushScene

    seen = []
    result = train_residual(300, seed=0, progress=lambda *a: seen.append(a), episode_steps=50, learning_starts=100,
                            critic_warmup=0)
    probe = np.random.default_rng(1).uniform(-3.0, 3.0, (16, HISTORY_DIM))
    assert np.abs(result.policy(probe)).max() > 1e-6  # 200 actor updates moved it off the zero residual
    assert result.episodes == 6 == len(result.returns) == len(seen) and result.errors.shape == (6, 3)
    assert np.isfinite(result.returns).all() and (result.returns < 0).all()  # eq 17 is a penalty
    assert result.policy.card["training"]["steps"] == 300
    assert result.policy.obs_dim == HISTORY_DIM and result.policy.card["action_scale"] == "relative"
    pol = load_residual(save_residual(result.policy, tmp_path / "a.safetensors"))
    scene = PushScene.for_object(ObjectKind.WEDGE)
    start = np.array(scene.object_pose)
    log = ctl.run_episode(HybridPushWorld(scene), scene, start, start + np.array([0.02, 0.0, 0.05]), AngularProfile(),
                          0.3, 0.01, policy=pol, deviation_tols=(0.0, 0.0))
    assert log.failure is None and np.isfinite(log.joint_torque).all() and log.active[1:].all()


def test_parallel_environments_and_snapshots():
    """Two subprocess environments: transitions counted over both, an actor snapshot every 2 episodes, each a
    deployable actor with the same card layout; the eq-17-only ablation is recorded in the card."""
    pytest.importorskip("stable_baselines3")
    from contactkit.pushing.env import RewardKind
    from contactkit.pushing.residual import TrainOptions, train_residual

    options = TrainOptions(envs=2, snapshot_every=2, reward=RewardKind.EQ17)
    result = train_residual(200, seed=1, episode_steps=50, learning_starts=50, critic_warmup=0, options=options)
    assert result.steps == 200 and result.episodes == 4
    assert [n for n, _ in result.snapshots] == [2, 4]
    for n, snap in result.snapshots:
        assert snap.obs_dim == HISTORY_DIM and snap.card["training"]["snapshot_episode"] == n
    card = result.policy.card["training"]
    assert card["envs"] == 2 and card["reward"] == "eq17"
    with pytest.raises(InvalidInputError):
        TrainOptions(envs=0)


def test_former_actor_keeps_its_observation_and_absolute_scale():
    """A 15-input actor whose card has absolute scales (the committed one's layout) reads the former observation
    and scales its action absolutely; a 43-input one with a relative card scales by the plan."""
    from contactkit.control.icr import AngularProfile
    from contactkit.pushing.scene import ObjectKind, PushScene

    rng = np.random.default_rng(0)
    scene = PushScene.for_object(ObjectKind.CUBE)
    start = np.array(scene.object_pose)
    plan = ctl.plan_push(scene, start, start + np.array([0.08, 0.0, 0.2]), AngularProfile(), 20.0, 0.01)
    old = ResidualPolicy(_policy(rng).weights, {"action_lin_scale_mps": 0.01, "action_ang_scale_radps": 0.1})
    assert old.obs_dim == ctl.OBS_DIM and old.action_scale(plan) == (0.01, 0.1)
    new = ResidualPolicy(_policy(rng, HISTORY_DIM).weights, {"action_scale": "relative", "action_speed_fraction": 0.5})
    lin, ang = new.action_scale(plan)
    assert lin == pytest.approx(0.5 * np.linalg.norm(plan.ee_vel[:, :2], axis=1).mean())
    assert ang == pytest.approx(0.5 * 0.2 / 20.0, rel=0.05)  # constant profile: mean |omega| = |dtheta| / T


def test_zero_residual_until_the_critic_warmup_ends():
    """Residual policy learning: the zero-initialised actor is exactly 0 (the PD alone) as long as only the critic
    learns; a random-initialised actor is not."""
    pytest.importorskip("stable_baselines3")
    from contactkit.pushing.residual import train_residual

    probe = np.random.default_rng(2).uniform(-3.0, 3.0, (16, HISTORY_DIM))
    frozen = train_residual(200, seed=0, episode_steps=50, learning_starts=50, critic_warmup=10_000)
    assert np.array_equal(frozen.policy(probe), np.zeros((16, 3)))
    card = frozen.policy.card["training"]
    assert card["zero_init"] and card["critic_warmup_updates"] == 10_000
    random_init = train_residual(200, seed=0, episode_steps=50, learning_starts=50, critic_warmup=10_000,
                                 zero_init=False)
    assert np.abs(random_init.policy(probe)).max() > 1e-3
    with pytest.raises(InvalidInputError):
        train_residual(10, seed=0, episode_steps=5, critic_warmup=-1)
    with pytest.raises(InvalidInputError):
        train_residual(10, seed=0, episode_steps=5, actor_learning_rate=0.0)


def test_actor_learning_rate_scales_the_actor_step():
    """With a separate actor rate (DDPG's 1e-4 actor / 1e-3 critic), the same seed's actor moves less far from
    the zero residual than with the shared 1e-3, and the card records the rate used."""
    pytest.importorskip("stable_baselines3")
    from contactkit.pushing.residual import train_residual

    probe = np.random.default_rng(3).uniform(-3.0, 3.0, (16, HISTORY_DIM))
    kw = dict(seed=0, episode_steps=50, learning_starts=50, critic_warmup=0)
    shared = train_residual(200, **kw)
    slow = train_residual(200, actor_learning_rate=1e-5, **kw)
    assert 0 < np.abs(slow.policy(probe)).max() < 0.5 * np.abs(shared.policy(probe)).max()
    assert slow.policy.card["training"]["actor_learning_rate"] == 1e-5
    assert shared.policy.card["training"]["actor_learning_rate"] == 1e-3
