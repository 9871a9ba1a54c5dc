"""The training and evaluation jobs of ``prediction-accuracy``, ``workers`` at a time (:mod:`contactkit.eval.workers`).

Training jobs: Act-FIGNet and FIGNet+ (``small`` preset, yaw augmentation, tared F/T labels, the previous command
among the action features), a residual over each backbone
(:mod:`contactkit.eval.prediction_models`), and the MuJoCo world calibrated to the training logs. Each model is
evaluated on every test set as soon as it is trained, while the others still train; the MuJoCo and engine rows that
need no training are evaluated meanwhile. Every row carries its test set's name (``set``).
"""

from __future__ import annotations

import dataclasses
import time
from concurrent.futures import as_completed
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from contactkit.errors import ContactkitError
from contactkit.eval import progress
from contactkit.eval.predict_eval import (
    ActionSource,
    EvalConfig,
    Predictor,
    checkpoint_predictor,
    evaluate_predictors,
    load_recorded,
    mujoco_predictor,
    report_row,
)
from contactkit.eval.prediction_models import CalibrateJob, ResidualJob, run_calibrate_job, run_residual_job
from contactkit.eval.predictors import residual_predictor, stateful_predictor
from contactkit.eval.workers import worker_pool
from contactkit.eval.worlds import WorldPair, without_unmodelled_effects
from contactkit.model import ActionMode
from contactkit.physics import load_world

__all__ = ["CURVE_EVERY", "MUJOCO_ROWS", "train_and_evaluate"]

CURVE_EVERY = 10
"""Fig. 9 curves are stored at T = 1 and every ``CURVE_EVERY`` steps."""
MUJOCO_ROWS = (("mujoco-nominal", "model", "command"), ("mujoco-nominal-wrench", "model", "applied"),
               ("mujoco-target-oracle", "truth", "command"))
"""MuJoCo rows: name, which world of the run (``model_world`` or ``world``), which recorded input it replays."""
LR_DECAY_FRACTION = 0.5
"""The graph networks' learning rate falls tenfold every this fraction of their steps (the ``small`` preset's 1500 of
3000), so a longer run does not spend its steps at the final rate."""
BACKBONE_ROWS = ("mujoco-nominal", "engine-nominal")
"""The rows of the physics alone that the held-out sets compare the residuals with."""
ROW_ORDER = ("residual-mujoco", "residual-engine", "mujoco-calibrated", "mujoco-calibrated-full", "act-fignet",
             "fignet-plus", "mujoco-nominal", "engine-nominal", "mujoco-nominal-wrench", "mujoco-target-oracle")


@dataclass(frozen=True)
class _TrainJob:
    name: str
    variant: str
    message_passing_steps: int
    steps: int
    seed: int
    train: str
    val: str
    out: str
    device: str


@dataclass(frozen=True)
class _EvalJob:
    model: str
    kind: str  # "checkpoint" | "mujoco" | "residual" | "engine"
    source: str  # checkpoint path, or world preset / file
    action_source: str
    set_name: str
    data: str
    config: EvalConfig
    seed: int
    device: str
    clean: str | None = None  # verified clean twin of ``data``


def _train_gnn(job: _TrainJob) -> dict:
    """Train one graph network (a worker process); returns its name, checkpoint and timing.

    A run resumes from the model's ``last.safetensors`` in the work folder (same settings, fewer steps):
    ``resumed_from_step`` says from which step, and ``train_s`` counts this invocation only.
    """
    from contactkit.data.training import training_data
    from contactkit.models.gnn import ModelVariant, RotationAugmentation, TrainConfig, load_checkpoint, train

    started = time.perf_counter()
    last = Path(job.out) / "last.safetensors"
    resumed_from = int(load_checkpoint(last).train_state.get("step", 0)) if last.exists() else 0
    data, val = training_data(job.train, tare=True), training_data(job.val, tare=True)
    config = TrainConfig.preset("small", seed=job.seed, rotation=RotationAugmentation.YAW)
    graph = dataclasses.replace(config.model.graph, variant=ModelVariant(job.variant), previous_command=True)
    model = dataclasses.replace(config.model, message_passing_steps=job.message_passing_steps, graph=graph)
    config = dataclasses.replace(config, model=model, num_steps=job.steps,
                                 lr_decay_steps=max(1, round(job.steps * LR_DECAY_FRACTION)))
    result = train(config, data.windows, val.windows, job.out, job.device, scene=data.scenes, step=data.step)
    best = result.val_history[-1][1] if result.val_history else {}
    return {"name": job.name, "kind": "checkpoint", "checkpoint": str(result.best_checkpoint or result.last_checkpoint),
            "steps": result.step, "resumed_from_step": resumed_from, "train_s": time.perf_counter() - started,
            "final_val": {k: best.get(k) for k in ("pos_rmse", "force_err", "torque_err")}}


def _run(job) -> dict:
    """Run a training job of any kind (a worker process)."""
    if isinstance(job, ResidualJob):
        return run_residual_job(job)
    if isinstance(job, CalibrateJob):
        return run_calibrate_job(job)
    return _train_gnn(job)


def _engine_predictor(name: str) -> Predictor:
    """The contactkit engine in the nominal world replaying the commands (the residual-engine's backbone alone)."""
    from contactkit.models.residual import Backbone, make_backbone

    world = load_world("nominal")
    return Predictor(name, lambda scene, mode: make_backbone(Backbone.ENGINE, scene, world, ActionMode(mode)),
                     ActionSource.COMMAND)


def _predictor(job: _EvalJob) -> Predictor:
    if job.kind == "checkpoint":
        return checkpoint_predictor(job.source, job.model, job.device)
    if job.kind == "residual":
        return residual_predictor(job.source, job.model, job.device)
    if job.kind == "engine":
        return _engine_predictor(job.model)
    params = load_world(job.source)
    if job.kind == "mujoco-stateful":
        return stateful_predictor(params, job.model)
    return mujoco_predictor(without_unmodelled_effects(params), job.model, ActionSource(job.action_source))


def _eval_job(job: _EvalJob) -> dict:
    """Evaluate one model on one test set (a worker process); returns its row and Fig. 9 curve, or ``{"failed":
    {model, set, error}}`` when the model cannot predict the set (e.g. the engine refusing a predicted state): the
    run keeps every other row and reports the failure."""
    from contactkit.eval.workers import one_torch_thread

    one_torch_thread()
    data = load_recorded(job.data)
    clean = load_recorded(job.clean) if job.clean else None
    try:
        report = evaluate_predictors([_predictor(job)], data, job.config, np.random.default_rng(job.seed),
                                     clean)[job.model]
    except ContactkitError as exc:
        return {"failed": {"model": job.model, "set": job.set_name, "error": " ".join(str(exc).split())}}
    steps = sorted({1, *range(CURVE_EVERY, job.config.horizon + 1, CURVE_EVERY), job.config.horizon})
    curve = {"model": job.model, "policy": data.policy, "set": job.set_name, "steps": steps,
             "pos_mm": [float(report.rollout.pos_curve_m[k - 1] * 1e3) for k in steps],
             "rot_deg": [float(np.degrees(report.rollout.rot_curve_rad[k - 1])) for k in steps]}
    row = {**report_row(job.model, data.policy, report), "set": job.set_name}
    return {"row": row, "curve": curve, "eval_s": report.wall_s}


def _jobs_for(trained: dict | None, sets: list[tuple[int, str, str]], paths: dict, config: EvalConfig, seed: int,
              device: str, worlds: WorldPair) -> list[_EvalJob]:
    """Evaluation jobs of one trained model (``trained``: its name, kind, checkpoint) on its sets, or with None the
    rows that need no training. ``sets``: ``(seed offset, set name, kind)`` with kind ``main`` or ``held-out``."""
    def job(model, kind, source, act, k, name):
        return _EvalJob(model, kind, source, act, name, paths[name], config, 1000 * seed + k, device,
                        paths.get(f"{name}-clean"))

    main = [(k, n) for k, n, kind in sets if kind == "main"]
    if trained is None:
        specs = {"model": worlds.model_name, "truth": worlds.truth_name}
        out = [job(m, "mujoco", specs[w], act, k, n) for k, n in main for m, w, act in MUJOCO_ROWS]
        out += [job("mujoco-nominal", "mujoco", worlds.model_name, "command", k, n)
                for k, n, kind in sets if kind == "held-out"]
        return out + [job("engine-nominal", "engine", "nominal", "command", k, n) for k, n, _ in sets]
    name, kind, source = trained["name"], trained["kind"], trained["checkpoint"]
    if kind == "residual":
        return [job(name, "residual", source, "command", k, n) for k, n, _ in sets]
    if kind == "world":  # a world calibrated with the real-cell fields replays with their hidden state
        replay = "mujoco-stateful" if load_world(source).unmodelled_effects() else "mujoco"
        return [job(name, replay, source, "command", k, n) for k, n in main]
    chosen = main[:1] if name.startswith("act-fignet-mp") else main
    return [job(name, "checkpoint", source, "from-checkpoint", k, n) for k, n in chosen]


def train_and_evaluate(jobs: list, sets: list[tuple[int, str, str]], paths: dict, config: EvalConfig, seed: int,
                       device: str, worlds: WorldPair, workers: int, ray_address: str | None = None):
    """Run the training ``jobs`` and evaluate each model as soon as it is trained (the untrained rows meanwhile),
    ``workers`` jobs at a time (on the Ray cluster at ``ray_address`` if given: its workers must share the data's
    folder). Returns ``(trained, results, failed)``: sorted by name, by set then model, and the evaluations that
    failed (``{model, set, error}``)."""
    cpu = device == "cpu"
    with worker_pool(workers if cpu else 1, ray_address if cpu else None) as pool:
        training = [pool.submit(_run, j) for j in jobs]
        evaluating = [pool.submit(_eval_job, j) for j in _jobs_for(None, sets, paths, config, seed, device, worlds)]
        trained = []
        with progress.task("models trained", total=len(training)) as advance:
            for future in as_completed(training):
                t = future.result()
                trained.append(t)
                evaluating += [pool.submit(_eval_job, j) for j in _jobs_for(t, sets, paths, config, seed, device,
                                                                            worlds)]
                advance()
        done = [f.result() for f in progress.track(evaluating, "evaluations")]
    results = [r for r in done if "failed" not in r]
    failed = [r["failed"] for r in done if "failed" in r]
    order = {name: i for i, name in enumerate(ROW_ORDER)}
    set_order = {name: k for k, name, _ in sets}
    results.sort(key=lambda r: (set_order[r["row"]["set"]], order.get(r["row"]["model"], len(order)),
                                r["row"]["model"]))
    return sorted(trained, key=lambda t: t["name"]), results, failed
