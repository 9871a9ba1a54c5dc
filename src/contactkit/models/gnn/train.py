"""Training of Act-FIGNet / FIGNet+ (paper §III-D): loss 8, noise and rotation augmentation, resumable loop.

* Samples: each data window (``history`` (h, 13), ``action`` (6), ``wrench`` (6), ``next_state`` (13)) is
  turned into world-frame vertex positions; labels are the next tool vertex positions and the F/T reading
  (expressed in the world frame about the tool centre of mass, see :mod:`.kinematics`); with
  ``GraphConfig.previous_command`` the window's ``prev_command`` (``prev_action``) enters the graph too. Whether
  the readings were tared (:func:`contactkit.data.training.training_data`) is the windows' ``labels`` record,
  kept in every checkpoint's ``train_state["labels"]``.
* Augmentation: a random rotation of the whole world (SO(3) by default, as in the paper; gravity is part
  of the net external wrench, so it rotates too) and Gaussian noise on the input vertex positions; the
  acceleration target is taken relative to the noisy positions, so the prediction still lands on the
  true next position.
* Loss (eq. 8): ``λ_pos L_pos + λ_f L_f + λ_τ L_τ`` with ``λ_pos = 1``, ``λ_f = λ_τ = 0.1``; each term is a
  mean squared error of normalised quantities. ``L_pos`` is taken on the normalised accelerations, which
  equals the position MSE up to the constant normalisation scale (``p̂ − p = â − a``).
* Learning rate ``lr_final + (lr_init − lr_final)·0.1^(step / lr_decay_steps)`` (exponential decay).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

import numpy as np
import torch

from contactkit.errors import CheckpointError, InvalidInputError
from contactkit.models.gnn.batches import BatchSource, Windows, step_generator
from contactkit.models.gnn.checkpoint import (
    check_device,
    load_checkpoint,
    restore_model,
    restore_optimizer,
    rng_state_to_json,
    save_checkpoint,
)
from contactkit.models.gnn.graph import GraphConfig
from contactkit.models.gnn.kinematics import StepSpec
from contactkit.models.gnn.model import EncodeProcessDecode, ModelConfig
from contactkit.models.gnn.samples import Batch, RotationAugmentation, make_batch
from contactkit.scene import Scene

LAST_CHECKPOINT = "last.safetensors"
BEST_CHECKPOINT = "best.safetensors"


@dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters of :func:`train`; :meth:`preset` gives ``"small"`` (2 CPUs, < 30 min) and ``"paper"``.

    Attributes:
        model: architecture and graph settings.
        batch_size: windows per optimisation step.
        num_steps: optimisation steps in total.
        lr_init, lr_final: learning-rate start and floor; lr_decay_steps: steps per tenfold decay.
        noise_std: std of the Gaussian noise on input vertex and centre positions [m].
        rotation: rotation augmentation mode.
        loss_position, loss_force, loss_torque: λ_pos, λ_f, λ_τ of eq. 8.
        norm_accumulation_steps: steps during which normalisation statistics are accumulated.
        val_every, checkpoint_every, log_every: periods in steps; val_max_windows caps a validation pass.
        seed: seeds the generators of initialisation, sampling and augmentation.
    """

    model: ModelConfig = field(default_factory=ModelConfig)
    batch_size: int = 32
    num_steps: int = 10_000
    lr_init: float = 1e-3
    lr_final: float = 1e-6
    lr_decay_steps: int = 5_000
    noise_std: float = 1e-4
    rotation: RotationAugmentation = RotationAugmentation.SO3
    loss_position: float = 1.0
    loss_force: float = 0.1
    loss_torque: float = 0.1
    norm_accumulation_steps: int = 500
    val_every: int = 500
    checkpoint_every: int = 500
    log_every: int = 50
    val_max_windows: int = 512
    seed: int = 0

    def __post_init__(self):
        object.__setattr__(self, "rotation", RotationAugmentation(self.rotation))
        for name in ("batch_size", "num_steps", "lr_decay_steps", "val_every", "checkpoint_every", "log_every",
                     "val_max_windows"):
            if not (isinstance(getattr(self, name), int) and getattr(self, name) >= 1):
                raise InvalidInputError(f"TrainConfig.{name} must be an integer >= 1, got {getattr(self, name)!r}")
        for name in ("lr_init", "lr_final", "noise_std", "loss_position", "loss_force", "loss_torque"):
            v = getattr(self, name)
            if not (np.isfinite(v) and v >= 0):
                raise InvalidInputError(f"TrainConfig.{name} must be finite and >= 0, got {v!r}")

    @staticmethod
    def preset(name: str, **overrides) -> TrainConfig:
        """Named presets; ``overrides`` replace fields of the preset.

        ``"small"``: latent 64, 5 message-passing steps, batch 16, 3000 steps: about 0.3 s per step on
        2 CPU threads for a hexagonal peg in its slot (coarse meshes), i.e. about 15 min.
        ``"paper"``: Table II sizes (10 steps, 128 wide), 120k steps of batch 256 (§IV-B.a).
        """
        if name == "small":
            model = ModelConfig(GraphConfig(), latent_dim=64, hidden_dim=64, mlp_layers=2, message_passing_steps=5)
            base = TrainConfig(model, batch_size=16, num_steps=3_000, lr_init=1e-3, lr_final=1e-5,
                               lr_decay_steps=1_500, norm_accumulation_steps=200, val_every=250,
                               checkpoint_every=250, val_max_windows=256)
        elif name == "paper":
            base = TrainConfig(ModelConfig(), batch_size=256, num_steps=120_000, lr_init=1e-3, lr_final=1e-6,
                               lr_decay_steps=40_000, norm_accumulation_steps=1_000, val_every=2_000,
                               checkpoint_every=2_000, val_max_windows=4_096)
        else:
            raise InvalidInputError(f"unknown training preset {name!r}; choose 'small' or 'paper'")
        return replace(base, **overrides)

    def to_dict(self) -> dict:
        """JSON-compatible form."""
        d = asdict(self)
        d["model"] = self.model.to_dict()
        d["rotation"] = self.rotation.value
        return d

    @staticmethod
    def from_dict(d: dict) -> TrainConfig:
        """Inverse of :meth:`to_dict`; unknown keys raise InvalidInputError."""
        names = {f.name for f in fields(TrainConfig)}
        if not isinstance(d, dict) or set(d) - names:
            raise InvalidInputError(f"training config has unknown keys {sorted(set(d) - names)}")
        return TrainConfig(**{**d, "model": ModelConfig.from_dict(d["model"]), "rotation": d["rotation"]})


@dataclass(frozen=True)
class TrainProgress:
    """What :func:`train` reports to its progress callback.

    Attributes: step (done so far), num_steps, lr, train_loss (mean loss 8 over the last ``log_every``
    steps), val (validation metrics when this report follows a validation, else None), elapsed_s.
    """

    step: int
    num_steps: int
    lr: float
    train_loss: float
    val: dict | None
    elapsed_s: float


@dataclass(frozen=True)
class TrainResult:
    """Outcome of :func:`train`: checkpoint paths, final step, per-step losses, validation history, and whether
    the time budget stopped it before ``num_steps``."""

    last_checkpoint: Path
    best_checkpoint: Path | None
    step: int
    losses: tuple[float, ...]
    val_history: tuple[tuple[int, dict], ...]
    out_of_time: bool = False


def label_record(windows) -> dict:
    """What a checkpoint's ``train_state["labels"]`` says of the training labels: the windows' ``labels`` record
    (:func:`contactkit.data.training.training_data`: whether the F/T labels were tared, the offsets' summary), or
    ``{"tared": "unknown"}`` for windows that carry none."""
    labels = getattr(windows, "labels", None)
    return dict(labels) if isinstance(labels, dict) else {"tared": "unknown"}


def learning_rate(config: TrainConfig, step: int) -> float:
    """Exponentially decaying learning rate at ``step``."""
    return config.lr_final + (config.lr_init - config.lr_final) * 0.1 ** (step / config.lr_decay_steps)


def loss_terms(model: EncodeProcessDecode, batch: Batch, config: TrainConfig) -> dict[str, torch.Tensor]:
    """Loss 8 and its terms (scalars) on a batch; targets are normalised with the model's statistics."""
    accel, wrench = model(batch.graph)
    t_accel = model.norm["accel"](batch.accel)
    t_wrench = model.norm["wrench"](batch.wrench)
    pos = torch.mean((accel - t_accel) ** 2)
    force = torch.mean((wrench[:, :3] - t_wrench[:, :3]) ** 2)
    torque = torch.mean((wrench[:, 3:] - t_wrench[:, 3:]) ** 2)
    total = config.loss_position * pos + config.loss_force * force + config.loss_torque * torque
    return {"loss": total, "pos": pos, "force": force, "torque": torque}


@torch.no_grad()
def validate(model: EncodeProcessDecode, data: Windows, config: TrainConfig, device) -> dict:
    """Loss terms and one-step errors on the first ``val_max_windows`` windows (no noise, no rotation).

    Returns: ``loss``, ``pos``, ``force``, ``torque`` (loss 8 and its normalised MSE terms), ``pos_rmse``
    (tool vertices at ``t+1`` [m]), ``force_err`` [N] and ``torque_err`` [N·m] (mean norm of the wrench
    error, torque about the tool centre of mass).
    """
    model.eval()
    n = min(len(data), config.val_max_windows)
    sums = {"loss": 0.0, "pos": 0.0, "force": 0.0, "torque": 0.0, "force_err": 0.0, "torque_err": 0.0}
    sq_pos, n_vert = 0.0, 0
    for start in range(0, n, config.batch_size):
        items = []
        for i in range(start, min(n, start + config.batch_size)):
            arrays, (inputs, targets) = data.get(i)
            items.append((arrays, inputs, targets, None))
        batch = make_batch(items, config.model.graph).to(device)
        for k, v in loss_terms(model, batch, config).items():
            sums[k] += float(v) * len(items)
        accel, wrench = model.predict(batch.graph)
        sq_pos += float(((accel - batch.accel) ** 2).sum())
        n_vert += accel.shape[0]
        sums["force_err"] += float((wrench[:, :3] - batch.wrench[:, :3]).norm(dim=-1).sum())
        sums["torque_err"] += float((wrench[:, 3:] - batch.wrench[:, 3:]).norm(dim=-1).sum())
    model.train()
    out = {k: v / max(n, 1) for k, v in sums.items()}
    out["pos_rmse"] = float(np.sqrt(sq_pos / max(n_vert, 1)))
    return out


def _resume(path: Path, config: TrainConfig, device):
    """Model, optimizer and progress restored from ``path`` (config must match but for num_steps); a checkpoint
    saved without optimizer state (a weights-only export) continues with fresh Adam moments."""
    ckpt = load_checkpoint(path, expected_config=config.model)
    saved = ckpt.train_state.get("config")
    if saved is None:
        raise CheckpointError(f"checkpoint {str(path)!r} holds no training state to resume from")
    try:  # a run saved before a setting existed reads it at its default (ModelConfig.from_dict)
        saved = TrainConfig.from_dict(saved).to_dict()
    except (InvalidInputError, KeyError, TypeError, ValueError):
        pass
    mine = {k: v for k, v in config.to_dict().items() if k != "num_steps"}
    theirs = {k: v for k, v in saved.items() if k != "num_steps"}
    if mine != theirs:
        keys = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
        raise CheckpointError(f"checkpoint {str(path)!r} was trained with other settings: {keys} differ")
    model = restore_model(ckpt, device)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr_init, foreach=True)
    if ckpt.optimizer_state is not None:  # a weights-only export continues with fresh Adam moments
        restore_optimizer(ckpt, optimizer)
    state = ckpt.train_state
    try:
        history = [(int(s), dict(v)) for s, v in state.get("val_history", [])]
    except (TypeError, ValueError):
        raise CheckpointError(f"checkpoint {str(path)!r}: its validation history is malformed") from None
    return model, optimizer, int(state["step"]), state.get("best_val"), history


def check_out_dir(out_dir: str | Path) -> Path:
    """Make sure ``out_dir`` can hold checkpoints before any work starts: create it (and its parents).

    Raises:
        InvalidInputError: ``out_dir`` names an existing file, or the folder cannot be created.
    """
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise InvalidInputError(f"training output '{out_dir}' is an existing file, not a folder; checkpoints "
                                "go into a folder: choose another path")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidInputError(f"training output folder '{out_dir}' cannot be created ({exc.strerror or exc})"
                                ) from None
    return out_dir


def train(
    config: TrainConfig,
    train_windows,
    val_windows,
    out_dir: str | Path,
    device: str | torch.device = "cpu",
    progress_cb: Callable[[TrainProgress], None] | None = None,
    *,
    scene: Scene | Sequence[Scene],
    step: StepSpec,
    resume: bool = True,
    workers: int = 0,
    time_budget_s: float | None = None,
) -> TrainResult:
    """Train an Act-FIGNet or FIGNet+ model (paper §III-D) and write checkpoints to ``out_dir``.

    Args:
        config: hyper-parameters (see :meth:`TrainConfig.preset`).
        train_windows, val_windows: indexable datasets of window dicts (``history`` (h, 13), ``action``
            (6), ``command`` (6), ``wrench`` (6), ``next_state`` (13); optional ``scene_index`` when several
            scenes); an ``action_mode`` attribute, when they have one, must suit the model's action mode.
        out_dir: gets ``last.safetensors`` every ``checkpoint_every`` steps and at the end, and
            ``best.safetensors`` at each new best validation loss (created first, see :func:`check_out_dir`).
            Each checkpoint holds the validation history up to its step, so a resumed run's
            ``TrainResult.val_history`` starts with the validations from before the interruption.
        device: torch device of the model.
        progress_cb: called every ``log_every`` steps and after each validation.
        scene: the scene of the windows, or a sequence indexed by ``scene_index``.
        step: control period and gravity of the data (e.g. ``StepSpec.from_world(params)``).
        resume: continue from ``out_dir/last.safetensors`` when it exists (same settings required but for
            ``num_steps``): the batches of step ``k`` come from their own generator (:mod:`.batches`), so a resumed
            run computes what the uninterrupted one would have.
        workers: processes building batches ahead of the optimiser (0: in this process; same batches either way).
        time_budget_s: stop after the first step that ends this many seconds [s] after the start (validating and
            writing ``last.safetensors`` there; ``TrainResult.out_of_time``); None: run ``num_steps``.

    Raises:
        InvalidInputError: ``out_dir`` is a file, ``device`` is not usable here, empty training set, malformed
            windows. CheckpointError: a resume mismatch.
    """
    out_dir = check_out_dir(out_dir)
    check_device(device)
    if time_budget_s is not None and not (np.isfinite(time_budget_s) and time_budget_s > 0):
        raise InvalidInputError(f"train: the time budget must be a positive number of seconds, got {time_budget_s}")
    mode, previous = config.model.graph.action_mode, config.model.graph.previous_command
    data, val = (Windows(w, scene, step, mode, previous) for w in (train_windows, val_windows))
    if len(data) == 0:
        raise InvalidInputError("train: the training set is empty")
    last_path, best_path = out_dir / LAST_CHECKPOINT, out_dir / BEST_CHECKPOINT
    model, optimizer, done, best, val_history = _start(config, last_path if resume else None, device)
    losses, window, out_of_time = [], [], False
    t0 = time.perf_counter()

    def save(path: Path) -> None:
        state = {"step": done, "best_val": best, "config": config.to_dict(),
                 "rng": rng_state_to_json(step_generator(config.seed, done)),
                 "val_history": [[s, v] for s, v in val_history], "labels": label_record(train_windows)}
        save_checkpoint(path, model, step, optimizer, state)

    with BatchSource(data, config, workers) as batches:
        while done < config.num_steps and not out_of_time:
            lr = learning_rate(config, done)
            losses.append(_optimise(model, optimizer, batches.batch(done).to(device), config, done, lr))
            window.append(losses[-1])
            done += 1
            out_of_time = time_budget_s is not None and time.perf_counter() - t0 >= time_budget_s
            final = done == config.num_steps or out_of_time
            report = None
            if (done % config.val_every == 0 or final) and len(val) > 0:
                report = validate(model, val, config, device)
                val_history.append((done, report))
                if best is None or report["loss"] < best:
                    best = report["loss"]
                    save(best_path)
            if done % config.checkpoint_every == 0 or final:
                save(last_path)
            if progress_cb is not None and (report is not None or done % config.log_every == 0):
                progress_cb(TrainProgress(done, config.num_steps, lr, float(np.mean(window)), report,
                                          time.perf_counter() - t0))
                window = []
    if not last_path.exists():
        save(last_path)
    return TrainResult(last_path, best_path if best_path.exists() else None, done, tuple(losses),
                       tuple(val_history), out_of_time)


def _start(config: TrainConfig, resume_from: Path | None, device):
    """Fresh model, optimizer, step 0, no best loss and no validation history from ``config.seed``, or the state
    saved at ``resume_from``."""
    if resume_from is not None and resume_from.exists():
        return _resume(resume_from, config, device)
    model = EncodeProcessDecode(config.model, generator=torch.Generator().manual_seed(config.seed)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr_init, foreach=True)
    return model, optimizer, 0, None, []


def _optimise(model, optimizer, batch: Batch, config: TrainConfig, done: int, lr: float) -> float:
    """One Adam step on loss 8 at learning rate ``lr``; normalisers accumulate during the first steps."""
    for group in optimizer.param_groups:
        group["lr"] = lr
    if done < config.norm_accumulation_steps:
        model.update_normalizers(batch.graph, batch.accel, batch.wrench)
    terms = loss_terms(model, batch, config)
    optimizer.zero_grad(set_to_none=True)
    terms["loss"].backward()
    optimizer.step()
    return terms["loss"].item()
