"""Residual policy π_θ of the pushing paper (§II-C, §III-A): DDPG training and a pickle-free deployable actor.

Training (:func:`train_residual`): stable-baselines3's DDPG on :class:`PushingResidualEnv` (hybrid model, domain
randomisation, both objects, all three profiles), Ornstein–Uhlenbeck exploration noise added to the actor output
(§III-A), actor and critic fully connected ReLU MLPs (:data:`HIDDEN`; the paper gives no sizes — CHOSEN), replay
buffer with soft target updates. The returned actor is plain arrays; sb3's own ``.zip`` save (a pickle) is
never written.

Deployment (:class:`ResidualPolicy`): ``a = tanh(W2 relu(W1 relu(W0 o + b0) + b1) + b2)`` in numpy, loaded
from one safetensors file (:func:`save_residual` / :func:`load_residual`) whose metadata holds a JSON card
(format, shapes, activation, action scales, observation definition, training facts); the same card is also
written beside it as ``<name>.json``. Loading never unpickles and refuses malformed files with
:class:`~contactkit.errors.CheckpointError`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import safetensors.numpy

from contactkit.errors import CheckpointError, InvalidInputError
from contactkit.files import read_safetensors, write_atomic
from contactkit.pushing import controller as ctl
from contactkit.pushing.env import DISCOUNT, EPISODE_STEPS, PushingResidualEnv, RewardKind
from contactkit.pushing.observation import HISTORY_DIM

FORMAT = "contactkit.pushing.residual"
FORMAT_VERSION = "1"
HIDDEN = (64, 64)
"""Hidden layer widths of actor and critic (CHOSEN; the paper only says fully connected ReLU layers)."""
OU_SIGMA = 0.2
"""Ornstein–Uhlenbeck noise scale (in action units, [−1, 1])."""
OU_THETA = 0.15
"""Ornstein–Uhlenbeck mean reversion per control step (θ and σ of DDPG's authors, Lillicrap et al. 2016, whose
process is stepped with dt = 1 per environment step: correlated over about 1/θ ≈ 7 steps, stationary std
σ/√(2θ − θ²) ≈ 0.38). It was stepped with the control period, dt = 0.01 s, until this change: a process
correlated over 670 steps (6.7 s), i.e. a nearly constant residual for a third of each episode that the
reference offset integrates into centimetres of drift."""
OU_DT = 1.0
"""Time step of the noise process, in control steps (:data:`OU_THETA`)."""
CRITIC_WARMUP_UPDATES = 5000
"""Gradient updates during which only the critic learns (residual policy learning, Silver et al. 2018: with a
zero-initialised output the actor is the PD controller until the critic has seen it; 5000 updates at one update
per 4 steps = 20,000 environment steps, 10 episodes)."""
MAX_FILE_BYTES = 4 * 2**20
"""Largest accepted actor file [bytes] (a 64-64 actor is about 22 kB)."""


@dataclass(frozen=True)
class ResidualPolicy:
    """A deployable actor: ``weights`` = ``(W0, b0, …, W_L, b_L)`` float64 (``W_i`` ``(out, in)``), ``card`` dict.

    Call with an observation ``(obs_dim,)`` or a batch ``(B, obs_dim)``; returns actions in [−1, 1] ``(3,)`` /
    ``(B, 3)`` (ReLU hidden layers, tanh output, as sb3's DDPG actor). ``obs_dim`` is ``OBS_DIM`` (15, the former
    observation) or :data:`~contactkit.pushing.observation.HISTORY_DIM` (43, with history); the card's
    ``action_scale`` says how an action becomes a velocity (:meth:`action_scale`).
    """

    weights: tuple[np.ndarray, ...]
    card: dict

    def __post_init__(self) -> None:
        w = self.weights
        if len(w) < 2 or len(w) % 2:
            raise InvalidInputError(f"actor needs (W, b) pairs, got {len(w)} arrays")
        for i in range(0, len(w), 2):
            W, b = np.asarray(w[i]), np.asarray(w[i + 1])
            if W.ndim != 2 or b.shape != (W.shape[0],) or not (np.isfinite(W).all() and np.isfinite(b).all()):
                raise InvalidInputError(f"actor layer {i // 2}: need finite W (out, in) and b (out,), got "
                                        f"{W.shape}, {b.shape}")
            if i and W.shape[1] != np.asarray(w[i - 2]).shape[0]:
                raise InvalidInputError(f"actor layer {i // 2} input {W.shape[1]} != previous output")
        if np.asarray(w[0]).shape[1] not in (ctl.OBS_DIM, HISTORY_DIM) or np.asarray(w[-1]).shape[0] != 3:
            raise InvalidInputError(f"actor must map {ctl.OBS_DIM} or {HISTORY_DIM} observations to 3 actions, got "
                                    f"{np.asarray(w[0]).shape[1]} -> {np.asarray(w[-1]).shape[0]}")

    @property
    def obs_dim(self) -> int:
        """Length of the observation the actor reads (15 or 43)."""
        return int(np.asarray(self.weights[0]).shape[1])

    def action_scale(self, plan) -> tuple[float, float]:
        """``(linear [m/s], yaw rate [rad/s])`` of action ±1 on ``plan``: relative to the plan's speeds when the
        card says ``action_scale: relative``, else the card's absolute scales (the former actors')."""
        if self.card.get("action_scale") == "relative":
            return ctl.relative_action_scale(plan, float(self.card["action_speed_fraction"]))
        return (float(self.card.get("action_lin_scale_mps", ctl.ACTION_LIN_SCALE)),
                float(self.card.get("action_ang_scale_radps", ctl.ACTION_ANG_SCALE)))

    def __call__(self, obs) -> np.ndarray:
        x = np.asarray(obs, dtype=np.float64)
        if x.shape[-1:] != (self.obs_dim,) or not np.isfinite(x).all():
            raise InvalidInputError(f"observation must be finite (..., {self.obs_dim}), got shape {x.shape}")
        n = len(self.weights) // 2
        for i in range(n):
            x = x @ np.asarray(self.weights[2 * i]).T + self.weights[2 * i + 1]
            x = np.maximum(x, 0.0) if i < n - 1 else np.tanh(x)
        return x


@dataclass(frozen=True)
class TrainResult:
    """What :func:`train_residual` produced: the actor, per-episode returns and mean absolute force errors
    (``(E, 3)``: normal [N], tangential [N], torque [N m]; Fig. 5), episodes, steps, wall time [s], and the
    snapshots ``(episodes done, actor)`` of :attr:`TrainOptions.snapshot_every`."""

    policy: ResidualPolicy
    returns: np.ndarray
    errors: np.ndarray
    episodes: int
    steps: int
    wall_s: float
    snapshots: tuple = ()


def _actor_arrays(model) -> tuple[np.ndarray, ...]:
    import torch

    out = []
    for layer in model.actor.mu:
        if isinstance(layer, torch.nn.Linear):
            out += [layer.weight.detach().cpu().double().numpy().copy(), layer.bias.detach().cpu().double().numpy()]
    return tuple(out)


def _zero_output(model) -> None:
    """Zero the actor's (and its target's) output layer, so that π_θ ≡ 0 and the first episodes are the PD of eq 15
    plus exploration noise (residual policy learning; the paper does not say how it initialises)."""
    import torch

    last = [m for m in model.actor.mu if isinstance(m, torch.nn.Linear)][-1]
    with torch.no_grad():
        last.weight.zero_()
        last.bias.zero_()
    model.actor_target.load_state_dict(model.actor.state_dict())


def _ddpg_class():
    """sb3's DDPG whose actor learning rate stays 0 for its first ``actor_frozen_updates`` gradient updates (the
    critic and both target networks update as usual) and is ``actor_lr`` after (None: the critic's, as sb3)."""
    from stable_baselines3 import DDPG

    class ResidualDDPG(DDPG):
        actor_frozen_updates = 0
        actor_lr: float | None = None

        def _update_learning_rate(self, optimizers) -> None:
            super()._update_learning_rate(optimizers)
            lr = 0.0 if self._n_updates < self.actor_frozen_updates else self.actor_lr
            if lr is not None:
                for group in self.actor.optimizer.param_groups:
                    group["lr"] = lr

    return ResidualDDPG


def _card(training: dict, history: bool = False, relative_action: bool = False) -> dict:
    """The actor's JSON card: format, network, action scales, activation thresholds, observation, training."""
    card = {"format": FORMAT, "format_version": FORMAT_VERSION, "obs_dim": HISTORY_DIM if history else ctl.OBS_DIM,
            "action_dim": 3, "hidden": list(HIDDEN), "activation": "relu", "output": "tanh",
            "action_lin_scale_mps": ctl.ACTION_LIN_SCALE, "action_ang_scale_radps": ctl.ACTION_ANG_SCALE,
            "deviation_pos_tol_m": ctl.DEVIATION_POS_TOL, "deviation_ang_tol_rad": ctl.DEVIATION_ANG_TOL,
            "observation": "controller.observe: lambda(4)/FORCE_SCALE, F_des(4)/FORCE_SCALE, EE twist (n, t, wz), "
                           "pose deviation (n, t, theta), progress"
                           + ("; then pushing.observation's history: (lambda (4), deviation (3)) at lags 10, 20, "
                              "30, 40 steps" if history else ""), "training": training}
    if relative_action:
        card.update(action_scale="relative", action_speed_fraction=ctl.ACTION_SPEED_FRACTION)
        del card["action_lin_scale_mps"], card["action_ang_scale_radps"]
    return card


@dataclass(frozen=True)
class TrainOptions:
    """What the environment and the sampling of :func:`train_residual` are (issue 32 part 3).

    Attributes:
        history: observation with history (:mod:`contactkit.pushing.observation`). reward: :class:`~contactkit.
            pushing.env.RewardKind` (eq 17 + pose, or eq 17 alone: the ablation). relative_action: action scale
            relative to the plan's speeds. envs: environments stepped in parallel (subprocesses when > 1; each DDPG
            update step then follows ``envs`` transitions, keeping updates per transition). snapshot_every: keep a
            copy of the actor every this many episodes (None: none) for the choice on validation draws
            (:mod:`contactkit.pushing.validation`).
    """

    history: bool = True
    reward: RewardKind = RewardKind.EQ17_POSE
    relative_action: bool = True
    envs: int = 1
    snapshot_every: int | None = None

    def __post_init__(self) -> None:
        if int(self.envs) < 1 or (self.snapshot_every is not None and int(self.snapshot_every) < 1):
            raise InvalidInputError(f"envs must be >= 1 and snapshot_every >= 1 or None, got {self.envs!r}, "
                                    f"{self.snapshot_every!r}")


def _make_env(episode_steps: int, options: TrainOptions, seed: int):
    """The (vectorised) training environment with sb3's episode monitor."""
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    kwargs = dict(episode_steps=episode_steps, history=options.history, reward=options.reward,
                  relative_action=options.relative_action)
    vec = SubprocVecEnv if options.envs > 1 else DummyVecEnv
    return make_vec_env(PushingResidualEnv, n_envs=int(options.envs), seed=int(seed), env_kwargs=kwargs,
                        vec_env_cls=vec)


def train_residual(steps: int, seed: int, progress: Callable[[int, int, float], None] | None = None,
                   episode_steps: int = EPISODE_STEPS, learning_starts: int = 1000, batch_size: int = 128,
                   learning_rate: float = 1e-3, train_freq: int = 1, gradient_steps: int = 1,
                   wall_limit_s: float | None = None, zero_init: bool = True,
                   critic_warmup: int = CRITIC_WARMUP_UPDATES, actor_learning_rate: float | None = None,
                   options: TrainOptions = TrainOptions()) -> TrainResult:
    """Train π_θ with DDPG + OU noise in the randomised hybrid model (§II-C, §III-A).

    Args:
        steps: environment steps (transitions, over all environments). seed: seeds the environment draws, the
            network init and the noise (through sb3's seeding; no global state is changed other than what sb3
            itself seeds).
        progress: called ``(done_steps, steps, last_episode_return)`` at each episode end, or None.
        episode_steps: steps per episode (2000 = 20 s, §IV-A). learning_starts, batch_size, learning_rate: DDPG.
        train_freq, gradient_steps: ``gradient_steps × options.envs`` updates every ``train_freq`` steps of the
            environments (measured, loaded 2-core box, 2000-step episodes, one environment: 1/1 → 126 steps/s,
            4/1 → 249 steps/s, the environment alone 533 steps/s).
        wall_limit_s: stop at the first episode end after this many seconds [s] (None: run all ``steps``); the
            result then records the steps actually done.
        zero_init: start from π_θ ≡ 0 (zeroed output layer: the PD of eq 15 alone). critic_warmup: gradient updates
            before the actor's first change (:data:`CRITIC_WARMUP_UPDATES`; 0: from the first update).
        actor_learning_rate: the actor's Adam step (None: ``learning_rate``, sb3's single rate; DDPG's authors,
            Lillicrap et al. 2016, used 1e-4 for the actor and 1e-3 for the critic).
        options: observation, reward, action scale, parallel environments, snapshots (:class:`TrainOptions`).

    Returns:
        :class:`TrainResult` (nothing written to disk; save with :func:`save_residual`).
    """
    import torch
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.logger import Logger
    from stable_baselines3.common.noise import OrnsteinUhlenbeckActionNoise

    if int(steps) < 1:
        raise InvalidInputError(f"steps must be >= 1, got {steps!r}")
    if actor_learning_rate is not None and not (np.isfinite(actor_learning_rate) and actor_learning_rate > 0):
        raise InvalidInputError(f"actor_learning_rate must be > 0 or None, got {actor_learning_rate!r}")
    if int(critic_warmup) < 0:
        raise InvalidInputError(f"critic_warmup must be >= 0 updates, got {critic_warmup!r}")
    if wall_limit_s is not None and not (np.isfinite(wall_limit_s) and wall_limit_s > 0):
        raise InvalidInputError(f"wall_limit_s must be > 0 seconds or None, got {wall_limit_s!r}")
    torch.set_num_threads(1)
    env = _make_env(episode_steps, options, seed)
    noise = OrnsteinUhlenbeckActionNoise(np.zeros(3), OU_SIGMA * np.ones(3), theta=OU_THETA, dt=OU_DT)
    model = _ddpg_class()("MlpPolicy", env, learning_rate=learning_rate, buffer_size=max(steps, 1000),
                 learning_starts=min(learning_starts, max(steps // 2, 1)), batch_size=batch_size, tau=0.005,
                 gamma=DISCOUNT, action_noise=noise, seed=int(seed), device="cpu", train_freq=(int(train_freq), "step"),
                 gradient_steps=int(gradient_steps) * int(options.envs),
                 policy_kwargs=dict(net_arch=list(HIDDEN), activation_fn=torch.nn.ReLU), verbose=0)
    model.actor_frozen_updates, model.actor_lr = int(critic_warmup), actor_learning_rate
    if zero_init:
        _zero_output(model)
    returns, errors, snapshots = [], [], []

    class _Curve(BaseCallback):
        def _on_step(self) -> bool:
            for info in self.locals["infos"]:
                if "episode" in info:
                    returns.append(float(info["episode"]["r"]))
                    e = info.get("errors", {})
                    errors.append([e.get(k, np.nan) for k in ("normal_N", "tangential_N", "torque_Nm")])
                    if options.snapshot_every and len(returns) % int(options.snapshot_every) == 0:
                        snapshots.append((len(returns), _actor_arrays(model)))
                    if progress is not None:
                        progress(self.num_timesteps, int(steps), returns[-1])
                    if wall_limit_s is not None and time.perf_counter() - t0 > wall_limit_s:
                        return False
            return True

    t0 = time.perf_counter()
    model.set_logger(Logger(folder=None, output_formats=[]))  # sb3's default makes a folder in the temp dir per run
    model.learn(total_timesteps=int(steps), callback=_Curve())
    wall = time.perf_counter() - t0
    done = int(model.num_timesteps)
    training = dict(algorithm="DDPG (stable-baselines3) + OU noise", steps=done, seed=int(seed),
                    episodes=len(returns), episode_steps=int(episode_steps), wall_s=wall, ou_sigma=OU_SIGMA,
                    ou_theta=OU_THETA, ou_dt_steps=OU_DT, gamma=DISCOUNT, learning_rate=learning_rate,
                    batch_size=batch_size, train_freq=int(train_freq), gradient_steps=int(gradient_steps),
                    steps_asked=int(steps), kp=ctl.KP, kv=ctl.KV, wall_limit_s=wall_limit_s,
                    stopped_by_wall_limit=done < int(steps), zero_init=bool(zero_init),
                    critic_warmup_updates=int(critic_warmup),
                    actor_learning_rate=learning_rate if actor_learning_rate is None else actor_learning_rate,
                    reward=options.reward.value, envs=int(options.envs), dr="env.DR_BOUNDS + env.DR_PHYSICS")
    env.close()
    card = _card(training, options.history, options.relative_action)
    policy = ResidualPolicy(_actor_arrays(model), card)
    probe = np.random.default_rng(int(seed)).uniform(-3.0, 3.0, (8, policy.obs_dim))
    with torch.no_grad():
        ref = model.actor(torch.as_tensor(probe, dtype=torch.float32)).double().numpy()
    if not np.allclose(policy(probe), ref, atol=1e-5):
        raise RuntimeError("exported actor does not reproduce sb3's actor (layer layout changed?)")
    snaps = tuple((n, ResidualPolicy(w, {**card, "training": {**training, "snapshot_episode": n}}))
                  for n, w in snapshots)
    return TrainResult(policy, np.array(returns), np.array(errors, dtype=np.float64).reshape(-1, 3), len(returns),
                       done, wall, snaps)


def save_residual(policy: ResidualPolicy, path: str | Path) -> Path:
    """Write ``policy`` to ``path`` (``.safetensors``, atomic) and its card to ``path`` with suffix ``.json``."""
    path = Path(path)
    tensors = {f"{'W' if i % 2 == 0 else 'b'}{i // 2}": np.ascontiguousarray(w, dtype=np.float64)
               for i, w in enumerate(policy.weights)}
    card = dict(policy.card, format=FORMAT, format_version=FORMAT_VERSION)
    payload = safetensors.numpy.save(tensors, metadata={"format": FORMAT, "format_version": FORMAT_VERSION,
                                                        "card": json.dumps(card)})
    write_atomic(path.with_suffix(".json"), json.dumps(card, indent=2, sort_keys=True) + "\n")
    return write_atomic(path, payload)


def _fail(path: Path, problem: str) -> CheckpointError:
    return CheckpointError(f"residual actor {str(path)!r}: {problem}")


def _check_header(path: Path, header: dict) -> dict:
    """The residual-actor metadata of a checked safetensors ``header``."""
    meta = header.get("__metadata__") or {}
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("format_version") != FORMAT_VERSION:
        raise _fail(path, f"not a residual actor of format {FORMAT!r} v{FORMAT_VERSION} (metadata {meta!r})")
    return meta


def load_residual(path: str | Path) -> ResidualPolicy:
    """Read an actor written by :func:`save_residual` (never unpickles).

    Raises:
        CheckpointError: missing, too large, not safetensors, truncated, another format or version, missing or
            misshapen layers, non-finite weights.
    """
    path = Path(path)
    data, header = read_safetensors(path, MAX_FILE_BYTES, lambda problem: _fail(path, problem))
    meta = _check_header(path, header)
    try:
        tensors = safetensors.numpy.load(data)
        card = json.loads(meta["card"])
    except Exception as exc:  # the header was checked; what is left is corrupt data or card
        raise _fail(path, f"corrupt tensors or card ({exc})") from None
    n = len(tensors) // 2
    names = [f"{k}{i}" for i in range(n) for k in ("W", "b")]
    if sorted(names) != sorted(tensors) or n < 1:
        raise _fail(path, f"expected layers W0, b0, …; found {sorted(tensors)}")
    try:
        return ResidualPolicy(tuple(np.asarray(tensors[k], dtype=np.float64) for k in names), card)
    except InvalidInputError as exc:
        raise _fail(path, str(exc)) from None
