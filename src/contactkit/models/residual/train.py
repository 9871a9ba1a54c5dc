"""Training the residual over a physics backbone: one-step fit with input noise, then a multi-step rollout loss.

1. **Transitions** (:mod:`contactkit.models.residual.transitions`): every logged transition with the backbone's
   prediction from the recorded state and a tared reading, plus a copy whose input history carries noise scaled
   to the backbone's own one-step error (GNS's input noise, Sanchez-Gonzalez et al. 2020; FIGNet).
2. **One-step fit**: each ensemble member regresses the normalised correction on its own bootstrap batches (Adam).
3. **Rollout loss**: segments of ``rollout_steps`` steps are rolled out open loop through the backbone (stepped from
   the model's own predictions, no gradient through the physics) and the ensemble mean's correction (with gradient
   through the correction and through the history it reads); a Huber loss on the normalised state and reading
   errors at every step is added to the members' one-step losses. This is the multi-step loss of learned
   simulators (e.g. Allen et al. 2022's FIGNet is trained one-step with noise; Lutter et al. and "data as
   demonstrator", Venkatraman et al. 2015, train on the model's own rollout states) with a non-differentiable
   physics step.
4. **Gate calibration**: the :data:`~contactkit.models.residual.network.GATE_QUANTILE` quantile of the members'
   disagreement on the validation transitions (:class:`~contactkit.models.residual.network.ResidualNet`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import torch

from contactkit.models.residual.features import FEATURE_DIM, TARGET_DIM, TARGET_GROUPS, features, targets
from contactkit.models.residual.network import GATE_QUANTILE, NetConfig, ResidualNet
from contactkit.models.residual.rollout_loss import rollout_loss
from contactkit.models.residual.transitions import LoggedEpisode, Transitions, build_transitions

__all__ = ["ResidualTrainConfig", "TrainRecord", "encode", "train_residual"]


@dataclass(frozen=True)
class ResidualTrainConfig:
    """Budget and hyperparameters of :func:`train_residual`.

    Attributes:
        hidden, layers, members: ensemble sizes (2 × 128, 5 members).
        one_step_iters: Adam iterations of the one-step fit; batch: rows per member per iteration.
        rollout_iters: iterations with the rollout loss; rollout_batch: segments per iteration;
        rollout_steps: steps per segment; rollout_weight: weight of the rollout loss.
        lr: Adam learning rate; weight_decay: AdamW decay.
        noise_fraction: input-noise σ as a fraction of the backbone's RMS one-step error per quantity.
        seed: torch and numpy seed.
    """

    hidden: int = 128
    layers: int = 2
    members: int = 5
    one_step_iters: int = 4000
    batch: int = 256
    rollout_iters: int = 400
    rollout_batch: int = 64
    rollout_steps: int = 8
    rollout_weight: float = 1.0
    lr: float = 1e-3
    weight_decay: float = 1e-4
    noise_fraction: float = 1.0
    seed: int = 0


@dataclass(frozen=True)
class TrainRecord:
    """What training measured (JSON-ready through :meth:`as_dict`): losses, noise scales, gate, seconds."""

    config: dict
    noise: list[float]
    rows: int
    val_rows: int
    one_step_loss: list[float]
    rollout_loss: list[float]
    val: dict
    u_cal: float
    wall_s: float

    def as_dict(self) -> dict:
        """A JSON-compatible dictionary."""
        return asdict(self)


def encode(rows: Transitions) -> tuple[torch.Tensor, torch.Tensor]:
    """Features ``(N, FEATURE_DIM)`` and targets ``(N, TARGET_DIM)`` (float64) of transition rows."""
    t = lambda a: torch.as_tensor(a, dtype=torch.float64)  # noqa: E731
    x = features(t(rows.history), t(rows.command), t(rows.prev_command), t(rows.backbone), t(rows.backbone_wrench),
                 t(rows.ref_pos), t(rows.ref_quat))
    y = targets(t(rows.history[:, -1]), t(rows.backbone), t(rows.backbone_wrench), t(rows.truth), t(rows.reading))
    return x, y


def _noise_scales(rows: Transitions, fraction: float) -> np.ndarray:
    """Input-noise σ ``(4,)``: ``fraction`` × the backbone's RMS one-step error of position [m], rotation [rad],
    linear and angular velocity, per component (measured on the clean rows)."""
    _, y = encode(rows)
    rms = lambda g: float(y[:, TARGET_GROUPS[g]].pow(2).mean().sqrt())  # noqa: E731
    return fraction * np.array([rms("pos"), rms("rot"), rms("lin_vel"), rms("ang_vel")])


def _one_step_loss(net: ResidualNet, x: torch.Tensor, y: torch.Tensor, batch: int, gen: torch.Generator):
    """Mean over members of the MSE on each member's own bootstrap batch (normalised targets)."""
    e = net.config.members
    idx = torch.randint(0, len(x), (e, batch), generator=gen)
    pred = net.members_normalised(x[idx])
    target = (y[idx] - net.out_mean) / net.out_std
    return (pred - target).pow(2).mean()


def _validate(net: ResidualNet, x: torch.Tensor, y: torch.Tensor) -> dict:
    """Validation: the normalised one-step MSE of the gated model and of the backbone alone (zero correction),
    and the position and force errors [m, N] before and after the correction."""
    with torch.no_grad():
        corr, gate = net(x)
    err = lambda d, g: float(d[:, TARGET_GROUPS[g]].norm(dim=-1).mean())  # noqa: E731
    return {"mse_norm": float((((corr - y) / net.out_std).pow(2)).mean()),
            "mse_norm_backbone": float((y / net.out_std).pow(2).mean()),
            "pos_err_m": err(y - corr, "pos"), "pos_err_backbone_m": err(y, "pos"),
            "force_err_N": err(y - corr, "force"), "force_err_backbone_N": err(y, "force"),
            "mean_gate": float(gate.mean())}


def train_residual(episodes: Sequence[LoggedEpisode], val_episodes: Sequence[LoggedEpisode],
                   backbones: Callable, config: ResidualTrainConfig = ResidualTrainConfig(),
                   progress: Callable[[str, int, int], None] | None = None) -> tuple[ResidualNet, TrainRecord]:
    """Train an ensemble residual over the backbone that ``backbones(scene)`` returns (see the module docstring).

    Args:
        episodes, val_episodes: training and validation logs (the readings untared: each episode is tared here).
        backbones: ``scene -> ContactModel`` (noise-free physics; the caller caches one per scene).
        config: budget and hyperparameters.
        progress: ``progress(stage, done, total)`` after each unit of work.

    Returns:
        ``(net, record)``: the trained network (CPU, float32, eval mode, gate calibrated) and the training record.
    """
    started = time.perf_counter()
    torch.manual_seed(config.seed)
    gen = torch.Generator().manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    report = progress or (lambda *_: None)
    clean, offsets = build_transitions(episodes, backbones)
    noise = _noise_scales(clean, config.noise_fraction)
    noisy, _ = build_transitions(episodes, backbones, noise, rng, offsets)
    val, _ = build_transitions(val_episodes, backbones)
    x, y = (t.float() for t in encode(Transitions.concat([clean, noisy])))
    vx, vy = (t.float() for t in encode(val))
    net = ResidualNet(NetConfig(FEATURE_DIM, TARGET_DIM, config.hidden, config.layers, config.members))
    net.set_normalisation(x, y)
    opt = torch.optim.AdamW(net.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    total = config.one_step_iters + config.rollout_iters
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, max(1, total))
    one_step, rolled = [], []
    keys = [ep.scene.to_json() for ep in episodes]
    for it in range(total):
        loss = _one_step_loss(net, x, y, config.batch, gen)
        if it >= config.one_step_iters:
            r = rollout_loss(net, episodes, offsets, backbones, config.rollout_batch, config.rollout_steps, rng, keys)
            rolled.append(r.item())
            loss = loss + config.rollout_weight * r
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        one_step.append(loss.item())
        report("train residual", it + 1, total)
    net.eval()
    with torch.no_grad():
        net.u_cal.fill_(float(torch.quantile(net.disagreement(vx), GATE_QUANTILE)))
    record = TrainRecord(asdict(config), noise.tolist(), len(x), len(vx), _every(one_step), _every(rolled),
                         _validate(net, vx, vy), float(net.u_cal), time.perf_counter() - started)
    return net, record


def _every(losses: list[float], points: int = 50) -> list[float]:
    """At most ``points`` evenly spaced values of a loss curve (for the record)."""
    if len(losses) <= points:
        return losses
    return [losses[int(k)] for k in np.linspace(0, len(losses) - 1, points)]
