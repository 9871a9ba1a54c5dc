"""Experiment ``prediction-accuracy``: Act-FIGNet paper Table I, Fig. 9, Fig. 10 and Table III in simulation.

The "real world" is ``world`` (default :data:`DEFAULT_WORLD`, MuJoCo's ``target`` preset: other friction, mass,
contact softness and damping, a noisy biased F/T sensor, and a real cell's command latency, flange compliance and
sensor filter; docs/worlds.md): the hexagonal peg around its 1 mm-clearance slot (the paper's real-world setup,
§IV-B.a). Training data: 100k transitions of contact-spline touching (random splines with the contact-seeking z flips
of App. V); test sets: random-spline, the OOD policies (spiral, circles at low and high speed: Fig. 10), the unseen
circle-in-square pairing (``random-spline@circle-in-square``) and, in ``held_out``, random-spline in worlds no model
was trained on (:data:`HELD_OUT_WORLDS`). The baseline rows and the backbones assume ``model_world`` (default
``nominal``; :mod:`contactkit.eval.worlds`).

Rows (``rows``, each with its test ``set``): per model and test policy, the keys of
:func:`~contactkit.eval.predict_eval.report_row`. Models (:mod:`contactkit.eval.prediction_jobs`):

* ``residual-mujoco``, ``residual-engine``: nominal MuJoCo or the engine plus a learned residual
  (:mod:`contactkit.models.residual`), trained on the training data;
* ``mujoco-calibrated``: MuJoCo calibrated to the training data as the paper calibrated its baseline (App. V-D,
  :mod:`contactkit.calibration`);
* ``mujoco-calibrated-full``: the same with the real-cell fields too (latency, flange compliance, sensor filter;
  :mod:`contactkit.calibration.realcell`), replaying each segment from the recorded state at rest; reported without
  a bar: ``target`` is built from those fields, so this set can recover it, which no real cell allows;
* ``act-fignet``, ``fignet-plus``: the graph networks (``small`` preset, yaw augmentation), conditioned on the
  policy's pose-delta commands (closed loop through :mod:`contactkit.models.gnn.actions`);
* ``mujoco-nominal``, ``engine-nominal``: the simulators a user starts from, replaying the recorded commands from the
  recorded states (:mod:`contactkit.eval.predict_eval`); ``mujoco-nominal-wrench`` replays the recorded mean applied
  wrench open loop (drifts even in the recording world); ``mujoco-target-oracle`` replays in the recording world
  without its latency, compliance and filter (their state is not in the recorded tool state).

``horizon_curves``: RMSE(T) against T (Fig. 9). ``bar``: the Act-FIGNet ratios against ``mujoco-nominal``;
``residual_bar``: the residuals' (:func:`~contactkit.eval.prediction_bar.residual_bar`). ``failed_evaluations``: a
model that could not predict a set (the rest of the run is kept).

F/T errors: ``force_err_N``/``torque_err_Nm`` against the recorded readings of the noisy, biased target
sensor; ``force_err_clean_N``/``torque_err_clean_Nm`` against the noise-free readings of a *clean twin*
of each test set — collected again with the same seeds in the target world without F/T noise and bias,
and used only where its trajectories are verified identical (``clean_twins``): the sensor noise does
not act on the dynamics unless a policy that reads the F/T sensor (spiral, circles: contact detection)
decides otherwise because of it.

Training and evaluation jobs run in ``budget.workers`` processes of one torch thread each; a model is evaluated as
soon as it is trained, while the others still train. The full run keeps its data and checkpoints in
``runs/prediction-accuracy/seed<seed>-<world digest>`` and resumes from them.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from contactkit.calibration import CalibrationBudget
from contactkit.data.collect import CollectSpec, collect
from contactkit.errors import DatasetError
from contactkit.eval import paper_quotes, progress
from contactkit.eval.predict_eval import EvalConfig, check_clean_twin, load_recorded, noise_free
from contactkit.eval.prediction_bar import (
    BAR_FORCE_CLEAN_RATIO,
    BAR_FORCE_RATIO,
    BAR_POS_RATIO,
    bar,
    residual_bar,
)
from contactkit.eval.prediction_jobs import _TrainJob, train_and_evaluate
from contactkit.eval.prediction_models import CALIBRATION_QUICK, RESIDUAL_QUICK, CalibrateJob, ResidualJob
from contactkit.eval.worlds import WorldPair, world_digest, world_pair
from contactkit.models.residual import ResidualTrainConfig
from contactkit.physics import WorldParams, load_world

__all__ = ["BAR_FORCE_CLEAN_RATIO", "BAR_FORCE_RATIO", "BAR_POS_RATIO", "FULL_BUDGET", "PAPER", "QUICK_BUDGET",
           "PredictionBudget", "run"]

PAPER = paper_quotes.PREDICTION_ACCURACY
"""The paper's numbers beside ours in the report (:mod:`contactkit.eval.paper_quotes`)."""

TRAIN_POLICY = "random-spline"
"""The test policy whose rows the bar reads (the paper's Table I)."""
DATA_POLICY = "contact-spline"
"""The training and validation data's policy: random-spline with the contact-seeking z flips of App. V."""
OOD_POLICIES = ("spiral", "circle-slow", "circle-fast")
UNSEEN_PAIRING = ("circle", "square")
"""The unseen tool/slot pairing of §IV-A.c tested beside the hexagon (test set ``circle-in-square``)."""
UNSEEN_SET = "circle-in-square"
DEFAULT_WORLD = "target"
"""The data world of the stored run: a real cell's stand-in (latency, compliance, sensor filter; docs/worlds.md)."""
HELD_OUT_WORLDS = ("nominal", "target-parametric")
"""Worlds no model was trained on, each a random-spline test set: a residual must not make its backbone worse there
(in ``nominal`` the MuJoCo backbone is exact)."""
FULL_WORKDIR = Path("runs/prediction-accuracy")
"""Where a full run keeps its data and checkpoints (resumed by the next run)."""


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
    unseen_episodes: int = 0
    held_out_episodes: int = 0
    residual: ResidualTrainConfig = field(default_factory=ResidualTrainConfig)
    calibration: CalibrationBudget = field(default_factory=CalibrationBudget)


QUICK_BUDGET = PredictionBudget(train_episodes=3, val_episodes=1, test_episodes=1, ood_episodes=0,
                                episode_steps=40, train_steps=8, horizon=10, segments=4, transitions=40,
                                ood=(), ablation=(), workers=1, held_out_episodes=1, residual=RESIDUAL_QUICK,
                                calibration=CALIBRATION_QUICK)
FULL_BUDGET = PredictionBudget(train_episodes=500, val_episodes=10, test_episodes=10, ood_episodes=4,
                               episode_steps=200, train_steps=8000, horizon=100, segments=24, transitions=300,
                               ood=OOD_POLICIES, ablation=(), unseen_episodes=4, held_out_episodes=4,
                               calibration=CalibrationBudget(coarse=48, local=80, segments=96, horizon=10))
"""100k training transitions (500 episodes of 200 steps); the graph networks take 8000 steps of the ``small`` preset
each (batch 16, with tared labels and the previous command; 0.28 s a step on one idle core, 60 steps timed; the stored
run trained the two side by side on its 2 workers in 56 min (Act-FIGNet) under other load, beside a calibration)."""


def _data_sets(budget: PredictionBudget) -> list[tuple[str, str, int, tuple[str, str | None], str | None]]:
    """``(name, policy, episodes, (shape, slot_shape), world)`` of every dataset of a run, in seed order; ``world``
    None is the run's data world, else a :data:`HELD_OUT_WORLDS` preset."""
    hexagon = ("hexagon", None)
    sets = [("train", DATA_POLICY, budget.train_episodes, hexagon, None),
            ("val", DATA_POLICY, budget.val_episodes, hexagon, None),
            ("test", TRAIN_POLICY, budget.test_episodes, hexagon, None)]
    sets += [(p, p, budget.ood_episodes, hexagon, None) for p in budget.ood]
    if budget.unseen_episodes:
        sets.append((UNSEEN_SET, TRAIN_POLICY, budget.unseen_episodes, UNSEEN_PAIRING, None))
    if budget.held_out_episodes:
        sets += [(f"held-out-{w}", TRAIN_POLICY, budget.held_out_episodes, hexagon, w) for w in HELD_OUT_WORLDS]
    return sets


def _eval_sets(budget: PredictionBudget) -> list[tuple[int, str, str]]:
    """``(seed offset, name, kind)`` of the test sets: kind ``main`` (the data world) or ``held-out``."""
    return [(k, name, "held-out" if w else "main") for k, (name, _, _, _, w) in enumerate(_data_sets(budget))
            if name not in ("train", "val")]


def _collect_all(work: Path, budget: PredictionBudget, seed: int, world: WorldParams | None = None,
                 scene=None, workers: int = 1) -> tuple[dict[str, str], dict[str, dict]]:
    """Datasets in ``world`` (default the stored target), on ``scene`` (default the hexagon's): ``train``, ``val``
    (:data:`DATA_POLICY`), ``test`` (random-spline), one per OOD policy and the unseen pairing; and for each test set
    its clean twin (same seed, no F/T noise or bias) when it has the same trajectories. ``workers`` episodes are
    collected at a time (:func:`contactkit.data.collect.collect`).

    Returns:
        ``(paths, twins)``: dataset paths by set name (``<set>-clean`` for the verified twins), and per test
        set ``{"identical": bool, "max_state_diff": float | None, "reason": str | None}``.
    """
    world = world or load_world(DEFAULT_WORLD)
    paths, twins = {}, {}
    for k, (name, policy, episodes, (shape, slot), other) in enumerate(progress.track(_data_sets(budget),
                                                                                       "datasets collected")):
        in_world = load_world(other) if other else world
        spec = CollectSpec(task="peg-in-hole", shape=shape, slot_shape=slot, clearance=1e-3, policy=policy,
                           episodes=episodes, steps=budget.episode_steps, seed=1000 * seed + k + 1, world=in_world,
                           fixed_scene=scene if slot is None else None)
        paths[name] = str(work / f"{name}.h5")
        collect(spec, paths[name], workers=workers)
        if name in ("train", "val"):
            continue
        clean_path = str(work / f"{name}-clean.h5")
        collect(dataclasses.replace(spec, world=noise_free(in_world)), clean_path, workers=workers)
        try:
            diff = check_clean_twin(load_recorded(paths[name]), load_recorded(clean_path))
            paths[f"{name}-clean"] = clean_path
            twins[name] = {"identical": True, "max_state_diff": diff, "reason": None}
        except DatasetError as exc:
            twins[name] = {"identical": False, "max_state_diff": None, "reason": str(exc)}
    return paths, twins


NOTES = [
    "rel_pos, rel_rot: RMSE(T) divided by the RMS of the true displacement (rotation angle) from the rollout "
    "start over the same samples; a model predicting no motion scores 1.",
    "force_err_N, torque_err_Nm: mean norm of the one-step F/T error, sensor frame, against the recorded "
    "(noisy, biased) readings; in a world without latency, compliance or filter mujoco-target-oracle's value is "
    "the floor that noise and bias set (in target the oracle replays without them and is no floor).",
    "force_err_clean_N, torque_err_clean_Nm: the same against the noise-free readings of the test set's clean "
    "twin (same seeds, target world without F/T noise and bias, trajectories verified identical: "
    "clean_twins); null where the noise changed the trajectories (a policy reading the F/T sensor).",
    "act-fignet and fignet-plus take the policy's pose-delta commands: the impedance controller's wrench at "
    "the start of the step is computed from the command and the model's own state (finite-difference "
    "velocities), so their rollouts are closed loop like mujoco-nominal's, which replays the same commands "
    "through its own controller. mujoco-nominal-wrench replays the recorded mean applied wrench open loop, "
    "which is not faithful under impedance control and drifts even in the recording world.",
    "residual-mujoco and residual-engine predict the tared reading (the log's sensor offset removed): compare them "
    "on the clean columns; their rollouts start from recorded histories with the recorded previous command, so "
    "their history check (docs/residual.md) can turn the correction off where the logs do not support it.",
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


def _training_jobs(work: Path, paths: dict, budget: PredictionBudget, seed: int, device: str,
                   worlds: WorldPair) -> list:
    """The run's training jobs: the graph networks (and ablations), a residual per backbone, the calibration."""
    base = dict(steps=budget.train_steps, seed=seed, train=paths["train"], val=paths["val"], device=device)
    jobs: list = [_TrainJob("act-fignet", "act_fignet", 5, out=str(work / "act-fignet"), **base),
                  _TrainJob("fignet-plus", "fignet_plus", 5, out=str(work / "fignet-plus"), **base)]
    jobs += [_TrainJob(f"act-fignet-mp{k}", "act_fignet", k, out=str(work / f"act-fignet-mp{k}"), **base)
             for k in budget.ablation]
    config = dataclasses.replace(budget.residual, seed=seed)
    jobs += [ResidualJob(f"residual-{kind}", kind, worlds.model, paths["train"], paths["val"],
                         str(work / f"residual-{kind}.safetensors"), config) for kind in ("mujoco", "engine")]
    return jobs + [CalibrateJob(name, paths["train"], paths["val"], worlds.model, params, budget.calibration,
                                str(work / f"{name}.json"), seed)
                   for name, params in (("mujoco-calibrated", "paper"), ("mujoco-calibrated-full", "full"))]


def _work_folder(seed: int, worlds: WorldPair, fixed) -> str:
    """``seed<seed>-<data world digest>``, with ``-scene-<digest>`` for a user's scene."""
    import hashlib

    folder = f"seed{seed}-{world_digest(worlds.truth)}"
    if fixed is not None:
        folder += f"-scene-{hashlib.sha256(fixed.to_json().encode()).hexdigest()[:12]}"
    return folder


def _tables(results: list[dict], budget: PredictionBudget) -> dict:
    """The result's row lists: ``rows`` (the data world's hexagon sets; the unseen pairing's rows with the policy
    ``random-spline@circle-in-square``), ``held_out`` (the other worlds), ``ablation`` and the Fig. 9 curves."""
    rows, held = [], []
    for r in results:
        row = r["row"]
        if row["model"].startswith("act-fignet-mp"):
            continue
        if row["set"].startswith("held-out-"):
            held.append({**row, "world": row["set"][len("held-out-"):]})
        elif row["set"] == UNSEEN_SET:
            rows.append({**row, "policy": f"{row['policy']}@{UNSEEN_SET}"})
        else:
            rows.append(row)
    mp = {"act-fignet": 5, **{f"act-fignet-mp{k}": k for k in budget.ablation}}
    ablation = sorted(({"message_passing_steps": mp[r["row"]["model"]], **r["row"]} for r in results
                       if r["row"]["model"] in mp and r["row"]["set"] == "test"),
                      key=lambda r: r["message_passing_steps"])
    curves = [r["curve"] for r in results if r["curve"]["set"] == "test"
              and not r["curve"]["model"].startswith("act-fignet-mp")]
    return {"rows": rows, "held_out": held, "ablation": ablation if budget.ablation else [], "curves": curves}


def run(quick: bool = False, seed: int = 0, device: str = "cpu", plots: str | Path | None = None,
        workdir: str | Path | None = None, world: str | None = None, model_world: str | None = None,
        workers: int | None = None, ray_address: str | None = None, scene: str | Path | None = None) -> dict:
    """Collect, train, evaluate; returns the JSON-ready result (see the module docstring for the keys).

    ``plots``: folder for the Fig. 9 figure (``prediction_horizon.png``); ``workdir``: where data and
    checkpoints go (default: a temporary folder for ``quick``, ``runs/prediction-accuracy/seed<seed>-<world digest>``
    else). ``world`` (the data's world, default :data:`DEFAULT_WORLD`) and ``model_world`` (the baseline rows' and
    the backbones', default ``nominal``): preset names or WorldParams JSON paths
    (:func:`contactkit.eval.worlds.world_pair`). ``workers`` (default the budget's) jobs run at a time, on Ray when
    more than one or at ``ray_address`` (:func:`contactkit.eval.workers.worker_pool`); the collection uses as many.
    ``scene``: a peg-in-hole Scene JSON file (``contactkit scene``) whose data replace the hexagon's (a narrowed run;
    the full run's folder then ends in ``-scene-<digest of the file's scene>``).
    """
    from contactkit.scene import load_scene

    fixed = load_scene(scene) if scene is not None else None
    budget = QUICK_BUDGET if quick else FULL_BUDGET
    if workers is not None:
        budget = dataclasses.replace(budget, workers=workers)
    worlds = world_pair(world, model_world, "prediction-accuracy", default_world=DEFAULT_WORLD)
    with tempfile.TemporaryDirectory(prefix="ck-prediction-") as tmp:
        work = Path(workdir) if workdir is not None else (
            Path(tmp) if quick else FULL_WORKDIR / _work_folder(seed, worlds, fixed))
        work.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        paths, twins = _collect_all(work, budget, seed, worlds.truth, fixed, budget.workers)
        t1 = time.perf_counter()
        config = EvalConfig(horizon=budget.horizon, max_segments=budget.segments, max_transitions=budget.transitions)
        trained, results, failed = train_and_evaluate(_training_jobs(work, paths, budget, seed, device, worlds),
                                              _eval_sets(budget), paths, config, seed, device, worlds,
                                              budget.workers, ray_address)
        t2 = time.perf_counter()
    tables = _tables(results, budget)
    figures = [str(plot_curves(tables["curves"], Path(plots) / "prediction_horizon.png"))] if plots else []
    return {
        "quick_numbers_meaningful": not quick,
        "note": "quick run: tiny data and a few training steps; its numbers say nothing about accuracy" if quick
        else "full run",
        "world": {"data": worlds.truth_name, "baseline": worlds.model_name, "held_out": list(HELD_OUT_WORLDS),
                  "data_params": worlds.truth.to_dict()},
        "scene": None if fixed is None else {"file": str(scene), "name": fixed.name},
        "setup": worlds.setup(),
        "budget": dataclasses.asdict(budget),
        "rows": tables["rows"],
        "held_out": tables["held_out"],
        "ablation": tables["ablation"],
        "horizon_curves": tables["curves"],
        "plots": figures,
        "bar": bar(tables["rows"], TRAIN_POLICY),
        "residual_bar": residual_bar(tables["rows"], tables["held_out"], TRAIN_POLICY, budget.ood),
        "failed_evaluations": failed,
        "clean_twins": twins,
        "training": [{k: v for k, v in t.items() if k != "checkpoint"} for t in trained],
        "timing_s": {"collect": t1 - t0, "train_and_evaluate": t2 - t1, "total": t2 - t0,
                     "evaluation_jobs": sum(r["eval_s"] for r in results)},
        "notes": NOTES,
    }
