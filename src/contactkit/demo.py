"""``contactkit demo`` (what ``make demo`` runs): the main story end to end on CPU, in minutes.

Now: touch (collect a peg-in-hole dataset in the target world), learn and predict (train a small
Act-FIGNet on it for a few minutes and predict a held-out episode, next to MuJoCo's nominal world),
insert (spiral search in MuJoCo for each tool shape, the unseen circle-in-square included), estimate
(place a block on a pillar whose location is uncertain, estimating it from F/T through the differentiable
contact step, next to the particle filter and the trigger heuristic), and write a report under ``out/demo/``.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from contactkit.control.policies import SpiralPolicy
from contactkit.data.collect import CollectSpec, collect, run_episode
from contactkit.data.reader import open_dataset
from contactkit.data.schema import Episode
from contactkit.data.training import training_data
from contactkit.eval.predict_eval import (
    ActionSource,
    EvalConfig,
    checkpoint_predictor,
    evaluate_predictors,
    load_recorded,
    mujoco_predictor,
    report_row,
)
from contactkit.model import rollout
from contactkit.mujoco.world import MujocoWorld
from contactkit.physics import load_world
from contactkit.report.html import write_report
from contactkit.report.plots import plot_episode
from contactkit.scene import Scene
from contactkit.state import BodyState
from contactkit.tasks.scenes import peg_in_hole

SUCCESS_DISTANCE_M = 0.002
"""Act-FIGNet paper §IV-A: success when the tool tip is within 2 mm of the slot bottom."""
INSERTION_CASES = (
    ("triangle", None),
    ("square", None),
    ("hexagon", None),
    ("circle", None),
    ("circle", "square"),
)


def _touch(out: Path, seed: int, log: Callable[[str], None]) -> dict:
    spec = CollectSpec(
        task="peg-in-hole",
        shape="hexagon",
        clearance=1e-3,
        policy="random-spline",
        episodes=8,
        steps=200,
        seed=seed,
        world=load_world("target"),
    )
    path = out / "data" / "touch.h5"
    started = time.perf_counter()
    collect(spec, str(path))
    with open_dataset(path) as ds:
        summary = ds.summary()
        episode = ds.episode(0)
    plot_episode(episode, out / "touch_episode0.png", title="random-spline touching, target world, episode 0")
    log(f"collected {summary['episodes']} episodes in {time.perf_counter() - started:.1f} s -> {path}")
    return {"dataset": str(path.relative_to(out)), "episodes": summary["episodes"], "steps": summary["steps"]}


def _insert(out: Path, seed: int, log: Callable[[str], None]) -> list[dict]:
    rows = []
    for shape, slot_shape in INSERTION_CASES:
        scene = peg_in_hole(shape, 1e-3, slot_shape=slot_shape)
        rng = np.random.default_rng([seed, len(rows)])
        start = BodyState.at_rest(scene.tool.init_pos + [*rng.uniform(-0.003, 0.003, size=2), 0.0])
        episode = run_episode(MujocoWorld(scene, load_world("nominal")), SpiralPolicy(), 120, start, rng)
        depth = float(episode.pos[-1, 2] - scene.target_pos[2])
        name = f"{shape}-in-{slot_shape or shape}"
        fig = f"spiral_{name}.png"
        plot_episode(episode, out / fig, title=f"spiral insertion: {name}, 1 mm clearance")
        rows.append(
            {
                "tool": shape,
                "slot": slot_shape or shape,
                "final_tip_height_mm": depth * 1e3,
                "inserted": bool(depth < SUCCESS_DISTANCE_M),
                "figure": fig,
            }
        )
        log(f"spiral insertion {name}: tip {depth * 1e3:.2f} mm above the bottom")
    return rows


LEARN_BUDGET_S = 180.0
"""Wall-clock cap of the demo's Act-FIGNet training [s] (the whole demo stays under 10 minutes on 2 cores)."""
LEARN_MAX_STEPS = 1500
"""Optimisation steps the demo's training stops at, if the time cap has not stopped it first."""
LEARN_CHUNK = 50
"""Steps between the time checks (training resumes from its last checkpoint, so chunks are seamless)."""
PREDICT_HORIZON = 100
"""Steps of the open-loop prediction of the held-out episode (Act-FIGNet paper Table I)."""
PREDICT_SAMPLES = EvalConfig(horizon=PREDICT_HORIZON, max_segments=3, max_transitions=60)
"""Rollout segments and one-step transitions scored on the held-out episode (each GNN graph costs ~30 ms)."""


def _train_capped(data, val, model_dir: Path, seed: int) -> tuple[Path, int, float]:
    """Train a small Act-FIGNet from scratch for up to ``LEARN_MAX_STEPS`` steps or ``LEARN_BUDGET_S`` seconds."""
    import torch

    from contactkit.models.gnn import TrainConfig, train

    config = TrainConfig.preset("small", seed=seed, val_every=LEARN_CHUNK, checkpoint_every=LEARN_CHUNK,
                                val_max_windows=64)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # measured: one thread is faster for these small graphs on a loaded 2-core machine
    started, steps = time.perf_counter(), 0
    try:
        while steps < LEARN_MAX_STEPS and time.perf_counter() - started < LEARN_BUDGET_S:
            chunk = dataclasses.replace(config, num_steps=min(steps + LEARN_CHUNK, LEARN_MAX_STEPS))
            result = train(chunk, data.windows, val.windows, model_dir, scene=data.scenes, step=data.step,
                           resume=steps > 0)
            steps = result.step
    finally:
        torch.set_num_threads(threads)
    return result.best_checkpoint or result.last_checkpoint, steps, time.perf_counter() - started


def _predicted_episode(truth: Episode, model, t0: int, horizon: int, source: ActionSource) -> tuple[Episode, Episode]:
    """The recorded segment ``t0 .. t0+horizon`` and a model's open-loop prediction of it, as Episodes."""
    states = truth.states().as_array()
    inputs = truth.action if source is ActionSource.APPLIED else truth.command
    history = BodyState.from_array(states[t0 - 2:t0 + 1][None])
    pred, wrench = rollout(model, history, inputs[None, t0:t0 + horizon])
    span = slice(t0, t0 + horizon)
    segment = Episode(truth.time[t0:t0 + horizon + 1], *(a[t0:t0 + horizon + 1] for a in (truth.pos, truth.quat,
                      truth.lin_vel, truth.ang_vel)), truth.action[span], truth.command[span], truth.wrench[span])
    full = np.concatenate([states[t0][None], pred.as_array()[0]])
    predicted = dataclasses.replace(segment, pos=full[:, 0:3], quat=full[:, 3:7], lin_vel=full[:, 7:10],
                                    ang_vel=full[:, 10:13], wrench=wrench[0])
    return segment, predicted


def _learn(out: Path, seed: int, log: Callable[[str], None]) -> dict:
    """Train on the touch data but two episodes, predict the last one with the learned and the nominal model."""
    path = out / "data" / "touch.h5"
    data_all = load_recorded(path)
    n = len(data_all.episodes)
    data = training_data(path, episodes=np.arange(n - 2))
    val = training_data(path, episodes=[n - 2])
    ckpt, steps, wall = _train_capped(data, val, out / "model", seed)
    log(f"trained a small Act-FIGNet for {steps} steps in {wall:.0f} s -> {ckpt}")
    held_out = dataclasses.replace(data_all, episodes=data_all.episodes[-1:], scenes=data_all.scenes[-1:])
    predictors = [checkpoint_predictor(ckpt, "act-fignet (demo)"),
                  mujoco_predictor(load_world("nominal"), "mujoco-nominal")]
    horizon = min(PREDICT_HORIZON, held_out.episodes[0].n_steps - 2)
    config = dataclasses.replace(PREDICT_SAMPLES, horizon=horizon)
    reports = evaluate_predictors(predictors, held_out, config, np.random.default_rng(seed))
    rows = [report_row(name, held_out.policy, r) for name, r in reports.items()]
    scene = Scene.from_json(held_out.scenes[0])
    figures = []
    for p in predictors:
        model = p.make(scene, held_out.meta.action_mode)
        segment, predicted = _predicted_episode(held_out.episodes[0], model, 2, horizon, p.source)
        fig = f"predict_{p.name.split()[0]}.png"
        plot_episode(segment, out / fig, title=f"held-out episode (solid) and {p.name} (dashed), {horizon} steps "
                     "open loop", reference=predicted)
        figures.append(fig)
        log(f"{p.name}: {horizon}-step position RMSE {reports[p.name].rollout.rmse_pos_m * 1e3:.2f} mm, "
            f"one-step force error {reports[p.name].one_step.force_err_N:.3f} N")
    return {"train_steps": steps, "train_s": wall, "checkpoint": str(ckpt.relative_to(out)), "rows": rows,
            "figures": figures, "horizon": horizon}


ESTIMATE_TASK = "env"
"""The placement task of the demo's estimation step (a block onto a pillar at an uncertain place and height)."""


def _estimate(out: Path, seed: int, log: Callable[[str], None]) -> dict:
    """One ``env`` placement case with each compared method (the placement experiment's code, one case)."""
    from contactkit.eval.exp_placement import COMPARED, PlacementConfig, run_experiment

    config = PlacementConfig(tasks=(ESTIMATE_TASK,), methods=tuple(m.value for m in COMPARED), n_cases=1, repeats=1,
                             workers=1)
    result = run_experiment(config, seed, plots=out / "placement")
    entry = result["tasks"][ESTIMATE_TASK]
    rows = []
    for method in COMPARED:
        error = entry[method.value]["errors"][0]
        rows.append({"method": method.value, f"error at release [{entry['unit']}]": error})
        log(f"placement ({ESTIMATE_TASK}) {method.value}: {error:.2f} {entry['unit']} from the goal at release")
    return {"task": ESTIMATE_TASK, "theta_gt_mm": [1e3 * v for v in entry["theta_gt"][0]], "params": entry["params"],
            "rows": rows, "figures": [f"placement/{name}" for name in result["figures"]],
            "gradcheck_max_rel_err": result["gradcheck_max_rel_err"]}


def run_demo(out: str | Path = "out/demo", seed: int = 0, log: Callable[[str], None] = print) -> dict:
    """Run the demo and write ``out/index.html``, ``out/summary.json`` and the figures; returns the summary."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    touch = _touch(out, seed, log)
    learn = _learn(out, seed, log)
    insert = _insert(out, seed, log)
    estimate = _estimate(out, seed, log)
    summary = {"touch": touch, "learn": learn, "insertion": insert, "estimate": estimate,
               "wall_s": time.perf_counter() - started}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    write_report(
        out,
        "contactkit demo",
        [
            {
                "title": "1. Touch: learning data from contact",
                "text": f"{touch['episodes']} random-spline episodes ({touch['steps']} control steps) of a hexagonal "
                "peg around a 1 mm-clearance slot in the 'target' world (noisy, biased F/T).",
                "figures": ["touch_episode0.png"],
            },
            {
                "title": "2. Learn and predict: Act-FIGNet from the touch data",
                "text": f"A small Act-FIGNet trained for {learn['train_steps']} steps ({learn['train_s']:.0f} s, "
                f"capped at {LEARN_BUDGET_S:.0f} s) on all touch episodes but the last two (one validates). "
                f"It predicts the held-out last episode open loop over {learn['horizon']} steps from the recorded "
                "pose-delta commands of the impedance controller; MuJoCo's 'nominal' world replays the same "
                "commands from the same states. "
                "Rows: rollout RMSE (absolute, and relative to the RMS displacement from the start) and one-step "
                "F/T error against the noisy readings. A few minutes of CPU training is far from the paper's "
                "120k steps: see `contactkit experiment prediction-accuracy` for the full comparison.",
                "rows": learn["rows"],
                "figures": learn["figures"],
            },
            {
                "title": "3. Insert: spiral search in MuJoCo",
                "text": "Spiral search with a constant downward push, one trial per tool; the circle-in-square "
                "pairing is paper 0's unseen case.",
                "rows": [{k: v for k, v in r.items() if k != "figure"} for r in insert],
                "figures": [r["figure"] for r in insert],
            },
            {
                "title": "4. Estimate: where is the pillar? Geometry from F/T",
                "text": "A block with a recessed bottom is placed onto a 15 mm pillar whose location and height "
                f"(l1, l2, h) are off by {', '.join(f'{v:.1f}' for v in estimate['theta_gt_mm'])} mm from the "
                "nominal ones; MuJoCo holding the true pillar plays the real world. 'ours' refines 10 estimates by "
                "gradient descent of the F/T discrepancy through the differentiable contact step "
                "(differentiable-contact paper §V), the particle filter weighs 50, the heuristic descends until "
                "the force exceeds 1 N. Rows: distance to the goal at release (one case; "
                "`contactkit experiment placement` runs 10 per task on four tasks). Figures: the estimates over "
                "time (dashed: the truth) and the release errors.",
                "rows": estimate["rows"],
                "figures": estimate["figures"][::-1],
            },
        ],
    )
    log(f"report: {out / 'index.html'} ({summary['wall_s']:.0f} s)")
    return summary
