"""Data-parallel training of Act-FIGNet / FIGNet+ with PyTorch DDP (``torch.distributed``; gloo on CPU).

``W`` processes (ranks) train one model. At optimisation step ``k`` each rank builds its shard of the serial run's
batch (:func:`shard_batch`: the same windows, rotations and noise as :func:`~.batches.sample_batch`, whose random
draws it replays in order, keeping items ``rank·B/W .. (rank+1)·B/W - 1`` of the global batch of ``B =
config.batch_size``); :class:`~torch.nn.parallel.DistributedDataParallel` averages the ranks' gradients. Loss 8 is
a mean over the batch, so the averaged gradient is the serial run's gradient whenever every sample has the same
number of tool vertices (one scene, or scenes of equal meshes); with meshes of different sizes the position term is
weighted per shard instead of per vertex (close to, not equal to, the serial step). The normalisers' sums
(:class:`~.normalize.RunningNormalizer`) are summed over the ranks while they accumulate, so every rank keeps the
serial statistics. Rank 0 alone validates and writes the checkpoints (atomically, as :func:`~.train.train`).

Launch: ``torchrun --nproc-per-node 2 -m contactkit train ...`` (the command sees torchrun's ``WORLD_SIZE``), or
:func:`spawn_training` for ``W`` local processes (``contactkit train --ddp W``).
"""

from __future__ import annotations

import os
import socket
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from contactkit.errors import InvalidInputError
from contactkit.models.gnn.batches import Windows, step_generator
from contactkit.models.gnn.checkpoint import check_device, rng_state_to_json, save_checkpoint
from contactkit.models.gnn.kinematics import StepSpec
from contactkit.models.gnn.normalize import RunningNormalizer
from contactkit.models.gnn.samples import Batch, add_position_noise, make_batch, random_rotation, rotate_sample
from contactkit.models.gnn.train import (
    BEST_CHECKPOINT,
    LAST_CHECKPOINT,
    TrainConfig,
    TrainProgress,
    TrainResult,
    _start,
    check_out_dir,
    label_record,
    learning_rate,
    validate,
)
from contactkit.scene import Scene

LOCAL_HOST = "127.0.0.1"
"""Rendezvous address of :func:`spawn_training`'s local process group."""


def launched_by_torchrun() -> bool:
    """Whether this process is one of several ranks started by ``torchrun`` (``WORLD_SIZE`` > 1 in the env)."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def init_process_group(device: str = "cpu") -> None:
    """Join the process group described by torchrun's environment (gloo on CPU, nccl on CUDA); no-op if joined."""
    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if str(device).startswith("cuda") else "gloo")


def shard_batch(data: Windows, config: TrainConfig, step: int, rank: int, world: int) -> Batch:
    """Rank ``rank``'s ``batch_size / world`` consecutive samples of the serial batch of ``step``
    (:func:`~.batches.sample_batch`): every sample's window, rotation and noise are drawn from
    ``step_generator(seed, step)`` in the serial order, and only this rank's are built into graphs."""
    if config.batch_size % world:
        raise InvalidInputError(f"data-parallel training: batch_size {config.batch_size} is not a multiple of "
                                f"the {world} processes")
    share = config.batch_size // world
    rng = step_generator(config.seed, step)
    drawn = []
    for i in rng.integers(0, len(data), config.batch_size):
        arrays, (inputs, targets) = data.get(i)
        drawn.append((arrays, inputs, targets, random_rotation(rng, config.rotation.value)))
    mine = []
    for j, (arrays, inputs, targets, rot) in enumerate(drawn):  # make_batch's order: rotate, then noise
        if rot is not None:
            inputs, targets = rotate_sample(inputs, targets, rot)
        if config.noise_std > 0:
            inputs = add_position_noise(inputs, config.noise_std, rng)
        if rank * share <= j < (rank + 1) * share:
            mine.append((arrays, inputs, targets, None))
    return make_batch(mine, config.model.graph)


def _sum_normalizers(model: torch.nn.Module, before: list[torch.Tensor]) -> None:
    """Replace each normaliser's local increment since ``before`` by the sum of every rank's increment."""
    buffers = [b for m in model.modules() if isinstance(m, RunningNormalizer) for b in (m.count, m.total, m.total_sq)]
    for buffer, old in zip(buffers, before, strict=True):
        delta = buffer - old
        dist.all_reduce(delta)
        buffer.copy_(old + delta)


def _normalizer_buffers(model: torch.nn.Module) -> list[torch.Tensor]:
    return [b.clone() for m in model.modules() if isinstance(m, RunningNormalizer)
            for b in (m.count, m.total, m.total_sq)]


def _wrap(model: torch.nn.Module) -> torch.nn.parallel.DistributedDataParallel:
    """The model under DDP: parameters a batch leaves unused (edge sets without contacts) allowed; buffers not
    broadcast (the normalisers are summed by :func:`_sum_normalizers`; torch's suggested replacement,
    ``forward_sync_buffers=False``, still syncs them at start, which the identical seeded start makes harmless but
    the deprecation warning asks to keep ``broadcast_buffers`` until ``init_sync_buffers`` exists)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*broadcast_buffers.*", category=FutureWarning)
        return torch.nn.parallel.DistributedDataParallel(model, broadcast_buffers=False, find_unused_parameters=True)


def _optimise(ddp, model, optimizer, batch: Batch, config: TrainConfig, done: int, lr: float) -> float:
    """One DDP Adam step on loss 8 of this rank's shard; returns the loss averaged over the ranks."""
    for group in optimizer.param_groups:
        group["lr"] = lr
    if done < config.norm_accumulation_steps:
        before = _normalizer_buffers(model)
        model.update_normalizers(batch.graph, batch.accel, batch.wrench)
        _sum_normalizers(model, before)
    accel, wrench = ddp(batch.graph)
    t_accel, t_wrench = model.norm["accel"](batch.accel), model.norm["wrench"](batch.wrench)
    loss = (config.loss_position * torch.mean((accel - t_accel) ** 2)
            + config.loss_force * torch.mean((wrench[:, :3] - t_wrench[:, :3]) ** 2)
            + config.loss_torque * torch.mean((wrench[:, 3:] - t_wrench[:, 3:]) ** 2))
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    total = loss.detach().clone()
    dist.all_reduce(total)
    return total.item() / dist.get_world_size()


def train_distributed(
    config: TrainConfig, train_windows, val_windows, out_dir: str | Path, device: str = "cpu",
    progress_cb: Callable[[TrainProgress], None] | None = None, *, scene: Scene | Sequence[Scene],
    step: StepSpec, resume: bool = True, time_budget_s: float | None = None,
) -> TrainResult:
    """:func:`~.train.train` as one rank of a joined process group (module docstring): same arguments (no batch
    workers), the same checkpoints, written by rank 0, which alone validates and reports to ``progress_cb``.
    ``TrainResult.losses`` are the global batches' losses (mean over the ranks) on every rank."""
    if not dist.is_initialized():
        raise InvalidInputError("data-parallel training needs a process group: launch with torchrun or "
                                "spawn_training")
    rank, world = dist.get_rank(), dist.get_world_size()
    out_dir, lead = check_out_dir(out_dir), dist.get_rank() == 0
    check_device(device)
    mode, previous = config.model.graph.action_mode, config.model.graph.previous_command
    data, val = (Windows(w, scene, step, mode, previous) for w in (train_windows, val_windows))
    if len(data) == 0:
        raise InvalidInputError("train: the training set is empty")
    last_path, best_path = out_dir / LAST_CHECKPOINT, out_dir / BEST_CHECKPOINT
    model, optimizer, done, best, val_history = _start(config, last_path if resume else None, device)
    ddp = _wrap(model)
    losses, window, out_of_time, t0 = [], [], False, time.perf_counter()

    def save(path: Path) -> None:
        state = {"step": done, "best_val": best, "config": config.to_dict(),
                 "rng": rng_state_to_json(step_generator(config.seed, done)),
                 "val_history": [[s, v] for s, v in val_history], "labels": label_record(train_windows)}
        save_checkpoint(path, model, step, optimizer, state)

    while done < config.num_steps and not out_of_time:
        lr = learning_rate(config, done)
        losses.append(_optimise(ddp, model, optimizer, shard_batch(data, config, done, rank, world).to(device),
                                config, done, lr))
        window.append(losses[-1])
        done += 1
        stop = torch.tensor(float(time_budget_s is not None and time.perf_counter() - t0 >= time_budget_s))
        dist.broadcast(stop, src=0)  # rank 0's clock decides, so every rank stops after the same step
        out_of_time = bool(stop.item())
        final = done == config.num_steps or out_of_time
        report = None
        if lead and (done % config.val_every == 0 or final) and len(val) > 0:
            report = validate(model, val, config, device)
            val_history.append((done, report))
            if best is None or report["loss"] < best:
                best = report["loss"]
                save(best_path)
        if lead and (done % config.checkpoint_every == 0 or final):
            save(last_path)
        if lead and progress_cb is not None and (report is not None or done % config.log_every == 0):
            progress_cb(TrainProgress(done, config.num_steps, lr, float(np.mean(window)), report,
                                      time.perf_counter() - t0))
            window = []
    if lead and not last_path.exists():
        save(last_path)
    dist.barrier()  # the checkpoints are written before any rank returns
    return TrainResult(last_path, best_path if best_path.exists() else None, done, tuple(losses),
                       tuple(val_history), out_of_time)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((LOCAL_HOST, 0))
        return s.getsockname()[1]


def _spawned(rank: int, world: int, port: int, queue, args: tuple, kwargs: dict) -> None:
    """One rank of :func:`spawn_training`: join the local gloo group, train, rank 0 hands back its result."""
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://{LOCAL_HOST}:{port}", rank=rank, world_size=world)
    try:
        result = train_distributed(*args, **kwargs)
        if rank == 0:
            queue.put(result)
    finally:
        dist.destroy_process_group()


def spawn_training(processes: int, *args, **kwargs) -> TrainResult:
    """Run :func:`train_distributed` in ``processes`` spawned local processes of one torch thread each (gloo on
    127.0.0.1); same arguments; returns rank 0's result. The windows are pickled to every process."""
    if isinstance(processes, bool) or not isinstance(processes, int) or processes < 1:
        raise InvalidInputError(f"--ddp must be a number of processes >= 1, got {processes!r}")
    context = mp.get_context("spawn")
    queue = context.SimpleQueue()
    mp.spawn(_spawned, args=(processes, _free_port(), queue, args, kwargs), nprocs=processes, join=True)
    return queue.get()
