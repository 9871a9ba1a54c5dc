"""Experiment ``prediction-accuracy``: Act-FIGNet paper Table I, Fig. 9, Fig. 10 and Table III in simulation.

The "real world" is ``world`` (default MuJoCo's ``target-parametric`` preset, the stored run's ``target``: other
friction, mass, contact softness and damping, a noisy biased F/T sensor; ``target`` adds a real cell's latency,
compliance and sensor filter): the hexagonal peg around its 1 mm-clearance slot (the paper's real-world
setup, §IV-B.a), random-spline touching. The baseline rows assume ``model_world`` (default ``nominal``;
:mod:`contactkit.eval.worlds`). Act-FIGNet and FIGNet+ (``small`` preset, same sizes) train on
``target`` data only, conditioned on the policy's pose-delta commands (the impedance controller's wrench
at the model's own state, :mod:`contactkit.models.gnn.actions`: rollouts are closed loop); the third row
is MuJoCo's ``nominal`` world — the simulator a user starts from — given the same recorded commands from
the same recorded states (:mod:`contactkit.eval.predict_eval`).

Rows (``rows``): per model and test policy, the keys of :func:`~contactkit.eval.predict_eval.report_row`.
Models: ``act-fignet``, ``fignet-plus``, ``mujoco-nominal`` (replays the policy's commands through its own
impedance controller), ``mujoco-nominal-wrench`` (replays the recorded mean applied wrench open loop:
drifts even in the recording world)
and ``mujoco-target-oracle`` (commands replayed in the recording world itself, noise-free: motion error at
the contact solver's warm-start level, and its F/T error is the floor the sensor's noise and bias set; in a world
with latency, compliance or a sensor filter the oracle replays without them — their state is not in the recorded
tool state — so it is then no longer exact).
The full run adds the OOD policies (spiral insertion, circles at low and high speed: Fig. 10) and
Act-FIGNet with other numbers of message-passing steps (``ablation``, Table III). ``horizon_curves``:
RMSE(T) against T (Fig. 9). ``bar``: the issue's acceptance ratios against ``mujoco-nominal``.

F/T errors: ``force_err_N``/``torque_err_Nm`` against the recorded readings of the noisy, biased target
sensor; ``force_err_clean_N``/``torque_err_clean_Nm`` against the noise-free readings of a *clean twin*
of each test set — collected again with the same seeds in the target world without F/T noise and bias,
and used only where its trajectories are verified identical (``clean_twins``): the sensor noise does
not act on the dynamics unless a policy that reads the F/T sensor (spiral, circles: contact detection)
decides otherwise because of it — measured identical for all four test sets of seed 0.

Training and evaluation jobs run in ``budget.workers`` processes of one torch thread each (the graphs are
small: in a one-off trial on 2 shared cores, two intra-op threads per process were slower than one under
load); a model is evaluated as soon as it is trained, while the others still train. The full
run keeps its data and checkpoints in ``runs/prediction-accuracy/seed<seed>`` and resumes from them.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from concurrent.futures import as_completed
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from contactkit.data.collect import CollectSpec, collect
from contactkit.errors import DatasetError
from contactkit.eval import paper_quotes, progress
from contactkit.eval.predict_eval import (
    ActionSource,
    EvalConfig,
    check_clean_twin,
    checkpoint_predictor,
    evaluate_predictors,
    load_recorded,
    mujoco_predictor,
    noise_free,
    report_row,
)
from contactkit.eval.prediction_bar import BAR_FORCE_CLEAN_RATIO, BAR_FORCE_RATIO, BAR_POS_RATIO, bar
from contactkit.eval.workers import worker_pool
from contactkit.eval.worlds import (
    STORED_TRUTH_WORLD,
    WorldPair,
    without_unmodelled_effects,
    world_digest,
    world_pair,
)
from contactkit.physics import WorldParams, load_world

__all__ = ["BAR_FORCE_CLEAN_RATIO", "BAR_FORCE_RATIO", "BAR_POS_RATIO", "FULL_BUDGET", "PAPER", "QUICK_BUDGET",
           "PredictionBudget", "run"]

PAPER = paper_quotes.PREDICTION_ACCURACY
"""The paper's numbers beside ours in the report (:mod:`contactkit.eval.paper_quotes`)."""

TRAIN_POLICY = "random-spline"
OOD_POLICIES = ("spiral", "circle-slow", "circle-fast")
CURVE_EVERY = 10
"""Fig. 9 curves are stored at T = 1 and every ``CURVE_EVERY`` steps."""
FULL_WORKDIR = Path("runs/prediction-accuracy")


@dataclass(frozen=True)
class PredictionBudget:
    """Sizes of a run.

    Attributes:
        train_episodes, val_episodes, test_episodes, ood_episodes: episodes collected per set (OOD: per policy).
        episode_steps: control steps per episode.
        train_steps: optimisation steps of every model (``small`` preset otherwise).
        horizon: rollout length ``T``; segments, transitions: samples per test set (rollouts, one-step).
        ood: OOD test policies; ablation: message-passing steps of extra Act-FIGNet models (Table III).
        workers: parallel processes (1: everything in the calling process, no start-up cost).
    """

    train_episodes: int
    val_episodes: int
    test_episodes: int
    ood_episodes: int
    episode_steps: int
    train_steps: int
    horizon: int
    segments: int
    transitions: int
    ood: tuple[str, ...]
    ablation: tuple[int, ...]
    workers: int = 2


QUICK_BUDGET = PredictionBudget(train_episodes=3, val_episodes=1, test_episodes=1, ood_episodes=0,
                                episode_steps=40, train_steps=8, horizon=10, segments=4, transitions=40,
                                ood=(), ablation=(), workers=1)
FULL_BUDGET = PredictionBudget(train_episodes=40, val_episodes=6, test_episodes=10, ood_episodes=4,
                               episode_steps=200, train_steps=3000, horizon=100, segments=24, transitions=300,
                               ood=OOD_POLICIES, ablation=(2,))
"""The ``small`` preset's 3000 steps per model (the stored run resumed from 1500-step checkpoints:
``training[*].resumed_from_step``)."""


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
    kind: str  # "checkpoint" | "mujoco"
    source: str  # checkpoint path, or world preset
    action_source: str
    data: str
    config: EvalConfig
    seed: int
    device: str
    clean: str | None = None  # verified clean twin of ``data``


def _train_job(job: _TrainJob) -> dict:
    """Train one model (a worker process); returns its name, checkpoint and timing.

    A run resumes from the model's ``last.safetensors`` in the work folder (same settings, fewer steps):
    ``resumed_from_step`` says from which step, and ``train_s`` counts this invocation only.
    """
    from contactkit.data.training import training_data
    from contactkit.models.gnn import ModelVariant, TrainConfig, load_checkpoint, train

    started = time.perf_counter()
    last = Path(job.out) / "last.safetensors"
    resumed_from = int(load_checkpoint(last).train_state.get("step", 0)) if last.exists() else 0
    data, val = training_data(job.train), training_data(job.val)
    config = TrainConfig.preset("small", seed=job.seed)
    model = dataclasses.replace(config.model, message_passing_steps=job.message_passing_steps,
                                graph=dataclasses.replace(config.model.graph, variant=ModelVariant(job.variant)))
    config = dataclasses.replace(config, model=model, num_steps=job.steps)
    result = train(config, data.windows, val.windows, job.out, job.device, scene=data.scenes, step=data.step)
    best = result.val_history[-1][1] if result.val_history else {}
    return {"name": job.name, "checkpoint": str(result.best_checkpoint or result.last_checkpoint),
            "steps": result.step, "resumed_from_step": resumed_from, "train_s": time.perf_counter() - started,
            "final_val": {k: best.get(k) for k in ("pos_rmse", "force_err", "torque_err")}}


def _eval_job(job: _EvalJob) -> dict:
    """Evaluate one model on one test set (a worker process); returns its row and Fig. 9 curve."""
    if job.kind == "checkpoint":
        predictor = checkpoint_predictor(job.source, job.model, job.device)
    else:
        params = without_unmodelled_effects(load_world(job.source))
        predictor = mujoco_predictor(params, job.model, ActionSource(job.action_source))
    data = load_recorded(job.data)
    clean = load_recorded(job.clean) if job.clean else None
    report = evaluate_predictors([predictor], data, job.config, np.random.default_rng(job.seed), clean)[job.model]
    steps = sorted({1, *range(CURVE_EVERY, job.config.horizon + 1, CURVE_EVERY), job.config.horizon})
    curve = {"model": job.model, "policy": data.policy, "steps": steps,
             "pos_mm": [float(report.rollout.pos_curve_m[k - 1] * 1e3) for k in steps],
             "rot_deg": [float(np.degrees(report.rollout.rot_curve_rad[k - 1])) for k in steps]}
    return {"row": report_row(job.model, data.policy, report), "curve": curve, "eval_s": report.wall_s}


def _collect_all(work: Path, budget: PredictionBudget, seed: int, world: WorldParams | None = None,
                 scene=None) -> tuple[dict[str, str], dict[str, dict]]:
    """Datasets in ``world`` (default the stored target), on ``scene`` (default the hexagon's): ``train``, ``val``,
    ``test`` (random-spline) and one per OOD policy; and for each test set its clean twin (same seed, no F/T noise
    or bias) when it has the same
    trajectories.

    Returns:
        ``(paths, twins)``: dataset paths by set name (``<set>-clean`` for the verified twins), and per test
        set ``{"identical": bool, "max_state_diff": float | None, "reason": str | None}``.
    """
    world = world or load_world(STORED_TRUTH_WORLD)
    sets = [("train", TRAIN_POLICY, budget.train_episodes), ("val", TRAIN_POLICY, budget.val_episodes),
            ("test", TRAIN_POLICY, budget.test_episodes)]
    sets += [(p, p, budget.ood_episodes) for p in budget.ood]
    paths, twins = {}, {}
    for k, (name, policy, episodes) in enumerate(progress.track(sets, "datasets collected")):
        spec = CollectSpec(task="peg-in-hole", shape="hexagon", clearance=1e-3, policy=policy, episodes=episodes,
                           steps=budget.episode_steps, seed=1000 * seed + k + 1, world=world, fixed_scene=scene)
        paths[name] = str(work / f"{name}.h5")
        collect(spec, paths[name])
        if name in ("train", "val"):
            continue
        clean_path = str(work / f"{name}-clean.h5")
        collect(dataclasses.replace(spec, world=noise_free(world)), clean_path)
        try:
            diff = check_clean_twin(load_recorded(paths[name]), load_recorded(clean_path))
            paths[f"{name}-clean"] = clean_path
            twins[name] = {"identical": True, "max_state_diff": diff, "reason": None}
        except DatasetError as exc:
            twins[name] = {"identical": False, "max_state_diff": None, "reason": str(exc)}
    return paths, twins


def _train_jobs(work: Path, paths: dict, budget: PredictionBudget, seed: int, device: str) -> list[_TrainJob]:
    base = dict(steps=budget.train_steps, seed=seed, train=paths["train"], val=paths["val"], device=device)
    jobs = [_TrainJob("act-fignet", "act_fignet", 5, out=str(work / "act-fignet"), **base),
            _TrainJob("fignet-plus", "fignet_plus", 5, out=str(work / "fignet-plus"), **base)]
    return jobs + [_TrainJob(f"act-fignet-mp{k}", "act_fignet", k, out=str(work / f"act-fignet-mp{k}"), **base)
                   for k in budget.ablation]


MUJOCO_ROWS = (("mujoco-nominal", "model", "command"), ("mujoco-nominal-wrench", "model", "applied"),
               ("mujoco-target-oracle", "truth", "command"))
"""MuJoCo rows: name, which world of the run (``model_world`` or ``world``), which recorded input it replays."""


def _eval_jobs(paths: dict, budget: PredictionBudget, seed: int, device: str, model: str | None,
               checkpoint: str | None = None, worlds: WorldPair | None = None) -> list[_EvalJob]:
    """Evaluation jobs of one trained model (on every test set; ablation models on ``test`` only), or with
    ``model=None`` those of the MuJoCo rows (in the run's ``worlds``, default the stored pairing)."""
    worlds = worlds or world_pair(None, None, "prediction-accuracy")
    specs = {"model": worlds.model_name, "truth": worlds.truth_name}
    config = EvalConfig(horizon=budget.horizon, max_segments=budget.segments, max_transitions=budget.transitions)
    sets = list(enumerate(("test", *budget.ood)))
    if model is None:
        return [_EvalJob(m, "mujoco", specs[world], act, paths[name], config, 1000 * seed + k, device,
                         paths.get(f"{name}-clean")) for k, name in sets for m, world, act in MUJOCO_ROWS]
    if model.startswith("act-fignet-mp"):
        sets = sets[:1]
    # a checkpoint's own action mode says which recorded input drives it (checkpoint_predictor)
    return [_EvalJob(model, "checkpoint", checkpoint, "from-checkpoint", paths[name], config, 1000 * seed + k,
                     device, paths.get(f"{name}-clean")) for k, name in sets]


def _train_and_evaluate(work: Path, paths: dict, budget: PredictionBudget, seed: int, device: str,
                        worlds: WorldPair | None = None, ray_address: str | None = None):
    """Train every model and evaluate each as soon as it is trained (the MuJoCo rows meanwhile), ``budget.workers``
    jobs at a time (on the Ray cluster at ``ray_address`` if given: its workers must share ``work``'s folder)."""
    with worker_pool(budget.workers if device == "cpu" else 1, ray_address if device == "cpu" else None) as pool:
        training = [pool.submit(_train_job, j) for j in _train_jobs(work, paths, budget, seed, device)]
        evaluating = [pool.submit(_eval_job, j) for j in _eval_jobs(paths, budget, seed, device, None, None,
                                                                    worlds)]
        trained = []
        with progress.task("models trained", total=len(training)) as advance:
            for future in as_completed(training):
                t = future.result()
                trained.append(t)
                evaluating += [pool.submit(_eval_job, j) for j in _eval_jobs(paths, budget, seed, device, t["name"],
                                                                             t["checkpoint"])]
                advance()
        results = [f.result() for f in progress.track(evaluating, "evaluations")]
    order = {name: i for i, name in enumerate(["act-fignet", "fignet-plus", *(m[0] for m in MUJOCO_ROWS)])}
    policies = {name: i for i, name in enumerate((TRAIN_POLICY, *budget.ood))}
    results.sort(key=lambda r: (policies[r["row"]["policy"]], order.get(r["row"]["model"], len(order)),
                                r["row"]["model"]))
    return sorted(trained, key=lambda t: t["name"]), results


NOTES = [
    "rel_pos, rel_rot: RMSE(T) divided by the RMS of the true displacement (rotation angle) from the rollout "
    "start over the same samples; a model predicting no motion scores 1.",
    "force_err_N, torque_err_Nm: mean norm of the one-step F/T error, sensor frame, against the recorded "
    "(noisy, biased) readings; mujoco-target-oracle's value is the floor that noise and bias set.",
    "force_err_clean_N, torque_err_clean_Nm: the same against the noise-free readings of the test set's clean "
    "twin (same seeds, target world without F/T noise and bias, trajectories verified identical: "
    "clean_twins); null where the noise changed the trajectories (a policy reading the F/T sensor).",
    "act-fignet and fignet-plus take the policy's pose-delta commands: the impedance controller's wrench at "
    "the start of the step is computed from the command and the model's own state (finite-difference "
    "velocities), so their rollouts are closed loop like mujoco-nominal's, which replays the same commands "
    "through its own controller. mujoco-nominal-wrench replays the recorded mean applied wrench open loop, "
    "which is not faithful under impedance control and drifts even in the recording world.",
]


def plot_curves(curves: list[dict], path: Path) -> Path:
    """Fig. 9: ``RMSE(T)`` of position [mm] and orientation [deg] against ``T``, one line per model (log scale;
    the oracle, at round-off level, is left out)."""
    import matplotlib.pyplot as plt

    from contactkit.report.plots import save_figure

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for c in (c for c in curves if "oracle" not in c["model"]):
        axes[0].plot(c["steps"], c["pos_mm"], marker=".", label=c["model"])
        axes[1].plot(c["steps"], c["rot_deg"], marker=".", label=c["model"])
    for ax, label in zip(axes, ("position RMSE(T) [mm]", "orientation RMSE(T) [deg]"), strict=True):
        ax.set_xlabel("T [steps]")
        ax.set_ylabel(label)
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    return save_figure(fig, path)


def run(quick: bool = False, seed: int = 0, device: str = "cpu", plots: str | Path | None = None,
        workdir: str | Path | None = None, world: str | None = None, model_world: str | None = None,
        workers: int | None = None, ray_address: str | None = None, scene: str | Path | None = None) -> dict:
    """Collect, train, evaluate; returns the JSON-ready result (see the module docstring for the keys).

    ``plots``: folder for the Fig. 9 figure (``prediction_horizon.png``); ``workdir``: where data and
    checkpoints go (default: a temporary folder for ``quick``, ``runs/prediction-accuracy/seed<seed>`` else, with
    ``-<world digest>`` appended when the data world is not the stored one). ``world`` (the data's world) and
    ``model_world`` (the baseline rows'): preset names or WorldParams JSON paths
    (:func:`contactkit.eval.worlds.world_pair`). ``workers`` (default the budget's) training and evaluation jobs
    run at a time, on Ray when more than one or at ``ray_address`` (:func:`contactkit.eval.workers.worker_pool`).
    ``scene``: a peg-in-hole Scene JSON file (``contactkit scene``) whose data replace the hexagon's (a narrowed run;
    the full run's folder then ends in ``-scene-<digest of the file's scene>``).
    """
    fixed = None
    if scene is not None:
        import hashlib

        from contactkit.scene import load_scene

        fixed = load_scene(scene)
    budget = QUICK_BUDGET if quick else FULL_BUDGET
    if workers is not None:
        budget = dataclasses.replace(budget, workers=workers)
    worlds = world_pair(world, model_world, "prediction-accuracy")
    folder = f"seed{seed}" if worlds.truth == load_world(STORED_TRUTH_WORLD) else \
        f"seed{seed}-{world_digest(worlds.truth)}"
    if fixed is not None:
        folder += f"-scene-{hashlib.sha256(fixed.to_json().encode()).hexdigest()[:12]}"
    with tempfile.TemporaryDirectory(prefix="ck-prediction-") as tmp:
        work = Path(workdir) if workdir is not None else (Path(tmp) if quick else FULL_WORKDIR / folder)
        work.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        paths, twins = _collect_all(work, budget, seed, worlds.truth, fixed)
        t1 = time.perf_counter()
        trained, results = _train_and_evaluate(work, paths, budget, seed, device, worlds, ray_address)
        t2 = time.perf_counter()
    rows = [r["row"] for r in results if not r["row"]["model"].startswith("act-fignet-mp")]
    mp = {t["name"]: 5 for t in trained if t["name"] == "act-fignet"}
    mp.update({f"act-fignet-mp{k}": k for k in budget.ablation})
    ablation = sorted(({"message_passing_steps": mp[r["row"]["model"]], **r["row"]} for r in results
                       if r["row"]["model"] in mp and r["row"]["policy"] == TRAIN_POLICY),
                      key=lambda r: r["message_passing_steps"])
    curves = [r["curve"] for r in results if r["curve"]["policy"] == TRAIN_POLICY
              and not r["curve"]["model"].startswith("act-fignet-mp")]
    figures = [str(plot_curves(curves, Path(plots) / "prediction_horizon.png"))] if plots else []
    return {
        "quick_numbers_meaningful": not quick,
        "note": "quick run: tiny data and a few training steps; its numbers say nothing about accuracy" if quick
        else "full run",
        "world": {"data": worlds.truth_name, "baseline": worlds.model_name},
        "scene": None if fixed is None else {"file": str(scene), "name": fixed.name},
        "setup": worlds.setup(),
        "budget": dataclasses.asdict(budget),
        "rows": rows,
        "ablation": ablation if budget.ablation else [],
        "horizon_curves": curves,
        "plots": figures,
        "bar": bar(rows, TRAIN_POLICY),
        "clean_twins": twins,
        "training": [{k: v for k, v in t.items() if k != "checkpoint"} for t in trained],
        "timing_s": {"collect": t1 - t0, "train_and_evaluate": t2 - t1, "total": t2 - t0,
                     "evaluation_jobs": sum(r["eval_s"] for r in results)},
        "notes": NOTES,
    }
