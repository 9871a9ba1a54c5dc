"""Act-FIGNet at the paper's scale in one command (issue 19 part 3): collect, train under a time budget, evaluate.

On a machine with one GPU and 16 CPU cores, inside 9 minutes::

    python3 scripts/gpu_train_actfignet.py "$OUT"            # defaults: --device cuda --config paper --total-s 510

1. **Data** (Act-FIGNet paper App. V): ``--train-transitions`` (default 100k) control steps of the ``contact-spline``
   policy (random splines with contact-seeking z flips) on the hexagonal peg over its slot (1 mm clearance) in the
   ``--world`` (default ``target``) MuJoCo world, collected in parallel shards, one process per core; a validation set
   and a test set with its noise-free twin (same seeds, no F/T noise or bias) for the clean force error.
2. **Training**: ``contactkit train --config paper`` (Table II: 10 message-passing steps, 128 wide; batch 256, lr
   1e-3 → 1e-6 decaying tenfold every 40k steps) on ``--device``, batches built by ``--batch-workers`` processes,
   stopped by the time left before ``--total-s`` minus the evaluation's reserve, validated and saved there.
   ``--from-checkpoint`` continues an earlier run's ``last.safetensors`` (a checkpoint brought back from a previous
   run's OUT): the runs of several sessions add up to one training.
3. **Evaluation** on the test set: 100-step rollout RMSE and one-step F/T errors (recorded and clean) of the learned
   model and of nominal MuJoCo replaying the same commands (:mod:`contactkit.eval.predict_eval`).

Writes into OUT: ``best.safetensors`` and ``last.safetensors`` (once when they are the same step) without their Adam
state (a paper-size model's full checkpoint is about 0.1 GB, more than a lent machine brings back; ``--from-checkpoint``
continues such a file with fresh Adam moments), split into ``.partNN`` pieces of at most :data:`RETURN_BYTES`;
``metrics.json`` (the settings, world parameters and their sha256, data sizes, timings, training steps, validation
history, evaluation rows, device, torch version, git commit, sha256 of the joined files) and ``log.txt``. The data and
the full checkpoints stay in ``--work`` (default ``/tmp/actfignet-work``). Exit status 0 when the weights, the
evaluation and the metrics were written (1: the evaluation failed; the weights and the training metrics are kept).

The repository's ``src`` must be importable (``PYTHONPATH=src``) with contactkit's dependencies; on the lent GPU
machines, which lack MuJoCo and a few others, carry them as wheels (``scripts/gpu_wheels.sh``). Tested on CPU with tiny
sizes by ``tests/scripts/test_gpu_train_actfignet.py``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import multiprocessing
import os
import platform
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

RETURN_BYTES = 16_500_000
"""Largest file written into OUT (the lent machines bring back files of at most 16 MiB, 64 MiB in all): a larger
weights file is split into ``NAME.partNN`` pieces (``cat NAME.part* > NAME`` joins them)."""

SHARD_SEED = 100_000
"""Seed of training shard ``k`` is ``SHARD_SEED + k``; validation uses ``VAL_SEED``, test ``TEST_SEED``."""
VAL_SEED, TEST_SEED = 2, 3


@dataclass(frozen=True)
class Plan:
    """Settings of one run (the command-line options, see ``--help``)."""

    out: str
    work: str
    device: str
    config: str
    world: str
    shape: str
    clearance: float
    policy: str
    steps_per_episode: int
    train_transitions: int
    val_episodes: int
    test_episodes: int
    workers: int
    batch_workers: int
    total_s: float
    eval_reserve_s: float
    eval_horizon: int
    eval_segments: int
    eval_transitions: int
    max_steps: int | None
    from_checkpoint: str | None
    seed: int
    return_bytes: int


def parse(argv: list[str] | None = None) -> Plan:
    """The plan of the command line ``argv``."""
    cores = os.cpu_count() or 1
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="output folder (checkpoints, metrics.json, log.txt)")
    p.add_argument("--work", default="/tmp/actfignet-work", help="folder for the datasets")
    p.add_argument("--device", default="cuda")
    p.add_argument("--config", default="paper", help="training preset: paper | small")
    p.add_argument("--world", default="target", help="physics preset or JSON file of the data")
    p.add_argument("--shape", default="hexagon")
    p.add_argument("--clearance", type=float, default=1e-3, help="radial clearance [m]")
    p.add_argument("--policy", default="contact-spline")
    p.add_argument("--steps-per-episode", type=int, default=200)
    p.add_argument("--train-transitions", type=int, default=100_000)
    p.add_argument("--val-episodes", type=int, default=20)
    p.add_argument("--test-episodes", type=int, default=20)
    p.add_argument("--workers", type=int, default=cores, help="collection processes")
    p.add_argument("--batch-workers", type=int, default=max(cores - 2, 0), help="batch-building processes")
    p.add_argument("--total-s", type=float, default=510.0, help="wall-clock budget of the whole run [s]")
    p.add_argument("--eval-reserve-s", type=float, default=100.0, help="kept for the evaluation [s]")
    p.add_argument("--eval-horizon", type=int, default=100)
    p.add_argument("--eval-segments", type=int, default=64)
    p.add_argument("--eval-transitions", type=int, default=2000)
    p.add_argument("--max-steps", type=int, default=None, help="optimisation steps (default: the preset's)")
    p.add_argument("--from-checkpoint", default=None, help="continue this checkpoint's training state")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--return-bytes", type=int, default=RETURN_BYTES, help="largest file written into OUT")
    a = p.parse_args(argv)
    return Plan(**{k.replace("-", "_"): v for k, v in vars(a).items()})


class Log:
    """Prints and appends to OUT/log.txt, each line stamped with the seconds since the start."""

    def __init__(self, path: Path):
        self.path, self.t0 = path, time.perf_counter()

    def __call__(self, text: str) -> None:
        line = f"[{time.perf_counter() - self.t0:7.1f} s] {text}"
        print(line, flush=True)
        with self.path.open("a") as f:
            f.write(line + "\n")

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.t0


def _collect_one(job: tuple) -> tuple[str, float]:
    """Worker: one shard ``(path, CollectSpec)``; returns its path and seconds."""
    from contactkit.data.collect import collect

    path, spec = job
    t = time.perf_counter()
    collect(spec, path)
    return path, time.perf_counter() - t


def collect_data(plan: Plan, log: Log) -> dict:
    """Training shards, validation and test sets (and the test set's noise-free twin), collected in parallel."""
    from contactkit.data.collect import CollectSpec
    from contactkit.eval.predictors import noise_free
    from contactkit.physics import load_world

    world = load_world(plan.world)
    work = Path(plan.work)
    work.mkdir(parents=True, exist_ok=True)
    base = CollectSpec(shape=plan.shape, clearance=plan.clearance, policy=plan.policy, steps=plan.steps_per_episode,
                       world=world)
    episodes = math.ceil(plan.train_transitions / plan.steps_per_episode)
    shards = max(1, min(plan.workers, episodes))
    sizes = [episodes // shards + (k < episodes % shards) for k in range(shards)]
    jobs = [(str(work / f"train-{k:02d}.h5"), replace(base, episodes=n, seed=SHARD_SEED + k))
            for k, n in enumerate(sizes)]
    jobs += [(str(work / "val.h5"), replace(base, episodes=plan.val_episodes, seed=VAL_SEED)),
             (str(work / "test.h5"), replace(base, episodes=plan.test_episodes, seed=TEST_SEED)),
             (str(work / "test-clean.h5"), replace(base, episodes=plan.test_episodes, seed=TEST_SEED,
                                                   world=noise_free(world)))]
    for path, _ in jobs:
        Path(path).unlink(missing_ok=True)
    t = time.perf_counter()
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"  # fork: no re-imports
    with multiprocessing.get_context(method).Pool(min(plan.workers, len(jobs))) as pool:
        done = pool.map(_collect_one, jobs, chunksize=1)
    log(f"collected {episodes} training episodes ({episodes * plan.steps_per_episode} transitions) in {shards} "
        f"shards + validation and test sets in {time.perf_counter() - t:.1f} s")
    return {"world": asdict(world), "world_sha256": hashlib.sha256(json.dumps(asdict(world), sort_keys=True)
                                                                   .encode()).hexdigest(),
            "train": [p for p, _ in done[:shards]], "val": str(work / "val.h5"), "test": str(work / "test.h5"),
            "test_clean": str(work / "test-clean.h5"), "train_dir": str(work / "train"), "train_episodes": episodes,
            "train_transitions": episodes * plan.steps_per_episode, "shard_seconds": [round(s, 1) for _, s in done],
            "seconds": round(time.perf_counter() - t, 1)}


def train_model(plan: Plan, data: dict, log: Log) -> dict:
    """``contactkit train`` on the shards for the time left (a subprocess: its own torch threads and CUDA)."""
    budget = plan.total_s - plan.eval_reserve_s - log.elapsed
    if budget <= 1.0:
        raise SystemExit(f"no time left to train ({budget:.0f} s): raise --total-s or collect less")
    cmd = [sys.executable, "-m", "contactkit", "train", "--out", data["train_dir"], "--model", "act-fignet",
           "--config", plan.config, "--device", plan.device, "--seed", str(plan.seed), "--threads", "2",
           "--workers", str(plan.batch_workers), "--time-budget-s", f"{budget:.0f}", "--val", data["val"]]
    cmd += [x for path in data["train"] for x in ("--data", path)]
    if plan.max_steps is not None:
        cmd += ["--steps", str(plan.max_steps)]
    if plan.from_checkpoint:
        cmd += ["--from-checkpoint", plan.from_checkpoint]
    log(f"training for at most {budget:.0f} s: {' '.join(cmd[2:])}")
    t = time.perf_counter()
    run = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
    with Path(log.path).open("a") as f:
        f.write(run.stdout[-20_000:] + run.stderr[-20_000:])
    if run.returncode != 0:
        raise SystemExit(f"contactkit train failed ({run.returncode}): {run.stderr[-2000:] or run.stdout[-2000:]}")
    history = json.loads((Path(data["train_dir"]) / "val_history.json").read_text())
    log(f"trained to step {history[-1]['step'] if history else '?'} in {time.perf_counter() - t:.1f} s")
    return {"command": " ".join(cmd[2:]), "budget_s": round(budget, 1), "seconds": round(time.perf_counter() - t, 1),
            "val_history": history}


def evaluate_model(plan: Plan, data: dict, log: Log) -> list[dict]:
    """Rollout and one-step errors of the best checkpoint and of nominal MuJoCo on the test set (Table I rows)."""
    import numpy as np

    from contactkit.eval.predict_eval import (
        EvalConfig,
        check_clean_twin,
        checkpoint_predictor,
        evaluate_predictors,
        load_recorded,
        mujoco_predictor,
        report_row,
    )
    from contactkit.physics import load_world

    t = time.perf_counter()
    recorded, clean = load_recorded(data["test"]), load_recorded(data["test_clean"])
    check_clean_twin(recorded, clean)
    predictors = [checkpoint_predictor(Path(data["train_dir"]), "act-fignet", plan.device),
                  mujoco_predictor(load_world("nominal"), "mujoco-nominal")]
    cfg = EvalConfig(horizon=plan.eval_horizon, max_segments=plan.eval_segments,
                     max_transitions=plan.eval_transitions)
    reports = evaluate_predictors(predictors, recorded, cfg, np.random.default_rng(plan.seed), clean)
    rows = [report_row(name, recorded.policy, r) for name, r in reports.items()]
    for r in rows:
        log(f"{r['model']}: position RMSE {r['rmse_pos_mm']:.2f} mm, force {r['force_err_N']:.3f} N "
            f"(clean {r['force_err_clean_N']:.3f} N), torque {r['torque_err_Nm']:.4f} N·m")
    log(f"evaluated in {time.perf_counter() - t:.1f} s")
    return rows


def export_weights(train_dir: Path, out: Path, log: Log, limit: int = RETURN_BYTES) -> dict:
    """Copy ``best`` and ``last`` of ``train_dir`` into ``out`` without optimizer state, split into pieces of at most
    ``limit`` bytes; returns per file its size, sha256 (of the whole) and pieces."""
    from contactkit.files import write_atomic
    from contactkit.models.gnn.checkpoint import load_checkpoint, restore_model, save_checkpoint

    result = {}
    for name in ("best.safetensors", "last.safetensors"):
        if not (train_dir / name).exists():
            continue
        ckpt = load_checkpoint(train_dir / name)
        if result and ckpt.train_state.get("step") == result["best.safetensors"]["step"]:
            result[name] = {**result["best.safetensors"], "same_as": "best.safetensors"}
            continue  # the best is the last: brought back once
        tmp = train_dir / f"weights-{name}"
        save_checkpoint(tmp, restore_model(ckpt), ckpt.step_spec, None, ckpt.train_state)
        blob = tmp.read_bytes()
        pieces = [blob[i:i + limit] for i in range(0, len(blob), limit)]
        names = [name] if len(pieces) == 1 else [f"{name}.part{k:02d}" for k in range(len(pieces))]
        for piece_name, piece in zip(names, pieces, strict=True):
            write_atomic(out / piece_name, piece)
        result[name] = {"bytes": len(blob), "sha256": hashlib.sha256(blob).hexdigest(), "files": names,
                        "step": ckpt.train_state.get("step")}
        log(f"{name}: step {result[name]['step']}, {len(blob)} bytes without Adam state -> {', '.join(names)}")
    return result


def _environment(plan: Plan) -> dict:
    import torch

    commit = os.environ.get("GIT_COMMIT") or subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True,
                                                             text=True).stdout.strip() or None
    cuda = plan.device.startswith("cuda") and torch.cuda.is_available()
    return {"torch": torch.__version__, "python": platform.python_version(), "cpus": os.cpu_count(),
            "device": torch.cuda.get_device_name() if cuda else platform.processor() or platform.machine(),
            "git_commit": commit}


def main(argv: list[str] | None = None) -> int:
    """Run the plan of ``argv``; write OUT/metrics.json. Returns the exit status."""
    plan = parse(argv)
    out = Path(plan.out)
    out.mkdir(parents=True, exist_ok=True)
    log = Log(out / "log.txt")
    log(f"plan: {asdict(plan)}")
    metrics: dict = {"plan": asdict(plan)}
    metrics["data"] = collect_data(plan, log)
    metrics["environment"] = _environment(plan)
    metrics["training"] = train_model(plan, metrics["data"], log)
    metrics["checkpoints"] = export_weights(Path(metrics["data"]["train_dir"]), out, log, plan.return_bytes)
    _write_metrics(out, metrics, log)  # the weights and the training are safe before the evaluation runs
    try:
        metrics["evaluation"] = evaluate_model(plan, metrics["data"], log)
    except Exception as exc:  # noqa: BLE001  (the metrics say what failed; the weights are kept)
        metrics["evaluation_error"] = f"{type(exc).__name__}: {exc}"
        log(f"evaluation failed: {metrics['evaluation_error']}")
    _write_metrics(out, metrics, log)
    return 0 if "evaluation" in metrics else 1


def _write_metrics(out: Path, metrics: dict, log: Log) -> None:
    from contactkit.files import write_atomic

    metrics["seconds"] = round(log.elapsed, 1)
    write_atomic(out / "metrics.json", json.dumps(metrics, indent=1, default=str) + "\n")
    log(f"wrote {out / 'metrics.json'} ({metrics['seconds']} s so far)")


if __name__ == "__main__":
    sys.exit(main())
