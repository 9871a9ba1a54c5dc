"""``contactkit demo`` (what ``make demo`` runs): the main story end to end on CPU, in minutes.

Now: touch (collect a peg-in-hole dataset in the ``target`` world, the stand-in for a real cell with its latency,
compliance and sensor filter), learn and predict (train a residual over nominal MuJoCo on it — the model that wins
``contactkit experiment prediction-accuracy`` — and predict a held-out episode, next to MuJoCo's nominal world),
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

from contactkit.control.policies import CONTACT_FORCE_N, SpiralConfig, SpiralPolicy
from contactkit.data.collect import CollectSpec, collect, dataset_meta, run_episode, set_aside_if_stale
from contactkit.data.reader import open_dataset
from contactkit.data.schema import Episode
from contactkit.devices import torch_threads
from contactkit.eval.predict_eval import (
    ActionSource,
    EvalConfig,
    evaluate_predictors,
    load_recorded,
    mujoco_predictor,
    report_row,
)
from contactkit.eval.prediction_models import fit_residual
from contactkit.eval.predictors import residual_predictor
from contactkit.model import rollout
from contactkit.models.residual import ResidualTrainConfig
from contactkit.mujoco.world import MujocoWorld
from contactkit.physics import load_world
from contactkit.report.html import write_report
from contactkit.report.phrases import height_phrase, signed_phrase
from contactkit.report.plots import plot_episode
from contactkit.report.render import RenderConfig, render_gif
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


TOUCH_EPISODES = 12
"""Episodes of touching (200 steps each): all but the last two train the residual, one calibrates its gate, the last
is predicted."""


def _touch(out: Path, seed: int, log: Callable[[str], None]) -> dict:
    spec = CollectSpec(
        task="peg-in-hole",
        shape="hexagon",
        clearance=1e-3,
        policy="contact-spline",
        episodes=TOUCH_EPISODES,
        steps=200,
        seed=seed,
        world=load_world("target"),  # a real cell's stand-in: latency, compliance, sensor filter (docs/worlds.md)
    )
    path = out / "data" / "touch.h5"
    started = time.perf_counter()
    aside = set_aside_if_stale(path, dataset_meta(spec))
    if aside is not None:
        log(f"{path} was written with other settings (an earlier demo or version): kept as {aside.name}")
    collect(spec, str(path))
    with open_dataset(path) as ds:
        summary = ds.summary()
        episode = ds.episode(0)
    plot_episode(episode, out / "touch_episode0.png", title="contact-spline touching, target world, episode 0")
    log(f"collected {summary['episodes']} episodes in {time.perf_counter() - started:.1f} s -> {path}")
    return {"dataset": str(path.relative_to(out)), "episodes": summary["episodes"], "steps": summary["steps"]}


SPIRAL_STEPS = 240
"""Control steps of each spiral insertion (12 s at 20 Hz; the misaligned searches tried while choosing it found the
hole within 180 steps, after the spiral's restart from the centre at ``max_radius`` in the slow cases)."""
SPIRAL_OFFSET_M = (0.002, 0.004)
"""Range of the lateral misalignment [m]: the policy's believed hole centre (and the tool's start) is this far from
the true centre, magnitude and direction uniform, drawn from the trial's generator; 1 mm clearance needs a search."""
SLOT_FLOOR = "the slot floor"


def spiral_trial(scene: Scene, rng: np.random.Generator, steps: int = SPIRAL_STEPS) -> tuple[Episode, dict]:
    """One misaligned spiral search (Act-FIGNet paper App. E-b) in MuJoCo's nominal world.

    Args:
        scene: a peg-in-hole scene (``target_pos`` is the slot floor's centre, world frame [m]).
        rng: draws the misalignment (:data:`SPIRAL_OFFSET_M`) and the policy's randomness.
        steps: control steps.

    Returns:
        The episode and its measurements: ``offset_mm`` ``(2,)`` (believed minus true hole centre, world x, y
        [mm]), ``contact_s`` (first F/T force above ``CONTACT_FORCE_N`` [s]), ``search_s`` (from that contact
        until the tip first comes within :data:`SUCCESS_DISTANCE_M` of the floor [s]; None if never),
        ``tip_height_mm`` (final tip height over the slot floor [mm], negative when it sank into it), ``inserted``.
    """
    angle = rng.uniform(0.0, 2.0 * np.pi)
    offset = rng.uniform(*SPIRAL_OFFSET_M) * np.array([np.cos(angle), np.sin(angle)])
    start = BodyState.at_rest(scene.tool.init_pos + [*offset, 0.0])
    policy = SpiralPolicy(SpiralConfig(center_offset=(float(offset[0]), float(offset[1]))))
    episode = run_episode(MujocoWorld(scene, load_world("nominal")), policy, steps, start, rng)
    height = episode.pos[:, 2] - scene.target_pos[2]
    touching = np.flatnonzero(np.linalg.norm(episode.wrench[:, :3], axis=1) > CONTACT_FORCE_N)
    found = np.flatnonzero(height < SUCCESS_DISTANCE_M)
    contact_s = float(episode.time[touching[0] + 1]) if touching.size else None  # reading k ends at state k + 1
    search_s = float(episode.time[found[0]]) - contact_s if found.size and contact_s is not None else None
    return episode, {"offset_mm": (offset * 1e3).tolist(), "contact_s": contact_s, "search_s": search_s,
                     "tip_height_mm": float(height[-1]) * 1e3, "inserted": bool(height[-1] < SUCCESS_DISTANCE_M)}


ROLLOUT_VIDEO = RenderConfig(width=320, height=240, stride=4)
"""The rendered insertions of the demo page: 61 frames of 320 x 240 per 240-step trial, real time (5 frames/s)."""


def _insert(out: Path, seed: int, log: Callable[[str], None]) -> list[dict]:
    rows = []
    for shape, slot_shape in INSERTION_CASES:
        scene = peg_in_hole(shape, 1e-3, slot_shape=slot_shape)
        episode, row = spiral_trial(scene, np.random.default_rng([seed, len(rows)]))
        name = f"{shape}-in-{slot_shape or shape}"
        fig = f"spiral_{name}.png"
        plot_episode(episode, out / fig, title=f"spiral insertion: {name}, 1 mm clearance, "
                     f"started {np.hypot(*row['offset_mm']):.1f} mm off the hole")
        video = render_gif(scene, episode, out, name, log, stem="spiral", config=ROLLOUT_VIDEO)
        rows.append({"tool": shape, "slot": slot_shape or shape, **row, "figure": fig, "video": video})
        log(f"spiral insertion {name}: started {np.hypot(*row['offset_mm']):.1f} mm off the hole, "
            f"{_search_words(row)}; tip {height_phrase(row['tip_height_mm'] * 1e-3, SLOT_FLOOR)}")
    return rows


def _search_words(row: dict) -> str:
    """How the search of a :func:`spiral_trial` went, in words."""
    if row["search_s"] is None:
        return f"did not find the hole in {SPIRAL_STEPS} steps"
    return f"found the hole {row['search_s']:.2f} s after first touching the surface"


def _insert_table(rows: list[dict]) -> list[dict]:
    """The insertion rows as the report shows them (distances and times in words and units)."""
    return [{"tool in slot": f"{r['tool']} in {r['slot']}",
             "start off the hole": f"{np.hypot(*r['offset_mm']):.1f} mm "
                                   f"(x {r['offset_mm'][0]:+.1f}, y {r['offset_mm'][1]:+.1f})",
             "search time": "not found" if r["search_s"] is None else f"{r['search_s']:.2f} s",
             "tip at the end": height_phrase(r["tip_height_mm"] * 1e-3, SLOT_FLOOR),
             "inserted": "yes" if r["inserted"] else "no"} for r in rows]


LEARN_CONFIG = ResidualTrainConfig(one_step_iters=1500, rollout_iters=100)
"""The demo's residual training: fixed iteration counts, never a wall-clock cap, so that two runs with the same seed
give the same model (about a minute of one core on the touch data)."""
TORCH_THREADS = 1
"""Torch intra-op threads for the whole demo: results of parallel reductions can depend on the thread count, so it
is fixed rather than left to the machine."""
PREDICT_HORIZON = 100
"""Steps of the open-loop prediction of the held-out episode (Act-FIGNet paper Table I)."""
PREDICT_SAMPLES = EvalConfig(horizon=PREDICT_HORIZON, max_segments=8, max_transitions=150)
"""Rollout segments and one-step transitions scored on the held-out episode."""


def train_demo_model(path: Path, n_episodes: int, model_path: Path, seed: int,
                     config: ResidualTrainConfig = LEARN_CONFIG) -> tuple[Path, dict]:
    """Train the demo's residual over nominal MuJoCo on the touch data at ``path``: episodes ``0 .. n-3`` train,
    ``n-2`` calibrates the gate; writes ``model_path`` (overwritten). The same arguments give bit-identical weights
    (single-threaded torch, see :data:`TORCH_THREADS`). Returns ``(checkpoint, training record)``."""
    from contactkit.data.writer import DatasetWriter

    split = {"train": range(n_episodes - 2), "val": [n_episodes - 2]}
    model_path.parent.mkdir(parents=True, exist_ok=True)
    parts = {}
    with open_dataset(path) as ds:
        meta = ds.meta
        for name, episodes in split.items():
            parts[name] = model_path.parent / f"{model_path.stem}-{name}.h5"
            parts[name].unlink(missing_ok=True)
            with DatasetWriter(parts[name], meta=meta) as writer:
                for i in episodes:
                    writer.append_episode(ds.episode(i))
    with torch_threads(TORCH_THREADS):
        return fit_residual([parts["train"]], [parts["val"]], "mujoco", load_world("nominal"),
                            dataclasses.replace(config, seed=seed), model_path)


def _predicted_episode(truth: Episode, model, t0: int, horizon: int, source: ActionSource) -> tuple[Episode, Episode]:
    """The recorded segment ``t0 .. t0+horizon`` and a model's open-loop prediction of it, as Episodes (a model that
    reads the previous command is given the recorded one)."""
    states = truth.states().as_array()
    inputs = truth.action if source is ActionSource.APPLIED else truth.command
    history = BodyState.from_array(states[t0 - 2:t0 + 1][None])
    if hasattr(model, "prime"):
        model.prime(inputs[None, t0 - 1])
    pred, wrench = rollout(model, history, inputs[None, t0:t0 + horizon])
    span = slice(t0, t0 + horizon)
    segment = Episode(truth.time[t0:t0 + horizon + 1], *(a[t0:t0 + horizon + 1] for a in (truth.pos, truth.quat,
                      truth.lin_vel, truth.ang_vel)), truth.action[span], truth.command[span], truth.wrench[span])
    full = np.concatenate([states[t0][None], pred.as_array()[0]])
    predicted = dataclasses.replace(segment, pos=full[:, 0:3], quat=full[:, 3:7], lin_vel=full[:, 7:10],
                                    ang_vel=full[:, 10:13], wrench=wrench[0])
    return segment, predicted


def _learn(out: Path, seed: int, log: Callable[[str], None]) -> dict:
    """Train the residual on the touch data but two episodes, predict the last one with it and the nominal model."""
    path = out / "data" / "touch.h5"
    data_all = load_recorded(path)
    n = len(data_all.episodes)
    started = time.perf_counter()
    ckpt, record = train_demo_model(path, n, out / "model" / "residual.safetensors", seed)
    wall = time.perf_counter() - started
    log(f"trained a residual over nominal MuJoCo ({record['config']['one_step_iters']} + "
        f"{record['config']['rollout_iters']} iterations) in {wall:.0f} s -> {ckpt}")
    held_out = dataclasses.replace(data_all, episodes=data_all.episodes[-1:], scenes=data_all.scenes[-1:])
    predictors = [residual_predictor(ckpt, "residual-mujoco (demo)"),
                  mujoco_predictor(load_world("nominal"), "mujoco-nominal")]
    horizon = min(PREDICT_HORIZON, held_out.episodes[0].n_steps - 3)
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
    ratio = reports[predictors[0].name].rollout.rmse_pos_m / reports[predictors[1].name].rollout.rmse_pos_m
    log(f"the residual's rollout error is {ratio:.2f} x nominal MuJoCo's on the held-out episode")
    return {"train_iters": record["config"]["one_step_iters"] + record["config"]["rollout_iters"], "train_s": wall,
            "checkpoint": str(ckpt.relative_to(out)), "rows": rows, "figures": figures, "horizon": horizon,
            "pos_ratio_vs_nominal": ratio}


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
    video = _placement_rollout(out, seed, entry["theta_gt"][0], log)
    return {"task": ESTIMATE_TASK, "theta_gt_mm": [1e3 * v for v in entry["theta_gt"][0]], "params": entry["params"],
            "rows": rows, "figures": [f"placement/{name}" for name in result["figures"]],
            "gradcheck_max_rel_err": result["gradcheck_max_rel_err"], "video": video}


PLACEMENT_VIDEO = RenderConfig(width=320, height=240, stride=1)
"""The rendered placement: every control step (the placement runs 50)."""
PLACEMENT_STREAM = 21
"""Second word of the seed of the rendered placement's generator (F/T noise, the estimates' draws)."""


def _placement_rollout(out: Path, seed: int, theta_gt, log: Callable[[str], None], steps: int | None = None
                       ) -> str | None:
    """One more 'ours' placement of the estimate stage's case (the pillar's true offsets ``theta_gt`` [m]; ``steps``
    control steps, default the experiment's), traced and rendered; its own generator, so its release error may
    differ from the table's."""
    from contactkit.eval.placement_rollout import traced_placement

    scene, episode = traced_placement(ESTIMATE_TASK, theta_gt, np.random.default_rng([seed, PLACEMENT_STREAM]),
                                      steps=steps)
    return render_gif(scene, episode, out, f"ours-{ESTIMATE_TASK}", log, stem="placement", config=PLACEMENT_VIDEO)


def run_demo(out: str | Path = "out/demo", seed: int = 0, log: Callable[[str], None] = print) -> dict:
    """Run the demo and write ``out/index.html``, ``out/summary.json`` and the figures; returns the summary.

    Everything but ``summary["wall_s"]`` (wall-clock seconds of each stage, also the report's footer) depends only on
    ``seed``: fixed step counts, generators seeded from it, torch on :data:`TORCH_THREADS` thread(s).
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    wall: dict[str, float] = {}
    started = time.perf_counter()
    with torch_threads(TORCH_THREADS):
        touch = _timed(wall, "touch", _touch, out, seed, log)
        learn = _timed(wall, "learn", _learn, out, seed, log)
        insert = _timed(wall, "insert", _insert, out, seed, log)
        estimate = _timed(wall, "estimate", _estimate, out, seed, log)
    wall["total"] = time.perf_counter() - started
    wall["train"] = learn.pop("train_s")
    summary = {"touch": touch, "learn": learn, "insertion": insert, "estimate": estimate, "wall_s": wall}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    footer = ("Wall-clock times of this run (they vary with the machine and its load; every other number on this "
              "page depends only on the seed): " + ", ".join(f"{k} {v:.0f} s" for k, v in wall.items()) + ".")
    write_report(out, "contactkit demo", report_sections(summary), footer=footer)
    log(f"report: {out / 'index.html'} ({wall['total']:.0f} s)")
    return summary


def _timed(wall: dict[str, float], name: str, stage: Callable, *args):
    """``stage(*args)``, its wall-clock seconds stored in ``wall[name]``."""
    started = time.perf_counter()
    result = stage(*args)
    wall[name] = time.perf_counter() - started
    return result


def _learn_table(rows: list[dict]) -> list[dict]:
    """Table I rows of the learn stage as the report shows them."""
    return [{"model": r["model"], "rollout position RMSE [mm]": r["rmse_pos_mm"],
             "position RMSE / RMS displacement": r["rel_pos"],
             "rollout rotation RMSE [deg]": r["rmse_rot_deg"], "rotation RMSE / RMS rotation": r["rel_rot"],
             "one-step force error [N]": r["force_err_N"], "one-step torque error [N·m]": r["torque_err_Nm"]}
            for r in rows]


def _pillar_words(theta_gt_mm: list[float]) -> str:
    """The ``env`` task's true (l1, l2, h) offsets [mm] from the nominal pillar (world x, y, height), in words."""
    l1, l2, h = theta_gt_mm
    return (f"stands {signed_phrase(l1, 'mm', 'toward +x', 'toward −x')} and "
            f"{signed_phrase(l2, 'mm', 'toward +y', 'toward −y')} of its nominal place and is "
            f"{signed_phrase(h, 'mm', 'taller', 'shorter')} than nominal")


def report_sections(summary: dict) -> list[dict]:
    """The report's sections (see :func:`contactkit.report.html.write_report`) from the demo's summary."""
    touch, learn, insert, estimate = (summary[k] for k in ("touch", "learn", "insertion", "estimate"))
    return [
        {
            "title": "1. Touch: learning data from contact",
            "text": f"{touch['episodes']} random-spline episodes ({touch['steps']} control steps) of a hexagonal "
            "peg around a 1 mm-clearance slot in the 'target' world (noisy, biased F/T).",
            "figures": ["touch_episode0.png"],
        },
        {
            "title": "2. Learn and predict: physics plus a learned residual from the touch data",
            "text": "Nominal MuJoCo does not know the cell's command latency, flange compliance, sensor filter, "
            "friction or mass. A residual (an ensemble of small MLPs) learns to correct its next state and F/T "
            f"reading from the touch episodes but the last two ({learn['train_iters']} fixed iterations: one-step "
            "fit with input noise, then a multi-step rollout loss; one episode calibrates its uncertainty gate). "
            f"It predicts the held-out last episode open loop over {learn['horizon']} steps from the recorded "
            "pose-delta commands; MuJoCo's 'nominal' world replays the same commands from the same states. "
            f"The residual's rollout error is {learn['pos_ratio_vs_nominal']:.2f} x nominal MuJoCo's here. "
            "Rows: rollout RMSE (absolute, and relative to the RMS displacement from the start) and one-step "
            "F/T error against the noisy readings (the residual predicts the tared reading, nominal MuJoCo the "
            "ideal one). `contactkit experiment prediction-accuracy` compares it with a calibrated MuJoCo and "
            "Act-FIGNet on 100k transitions.",
            "rows": _learn_table(learn["rows"]),
            "figures": learn["figures"],
        },
        {
            "title": "3. Insert: spiral search in MuJoCo",
            "text": "Spiral search with a constant downward push, one trial per tool; the circle-in-square "
            "pairing is the Act-FIGNet paper's unseen case. Each trial starts misaligned: the policy believes the "
            f"hole is {SPIRAL_OFFSET_M[0] * 1e3:.0f}-{SPIRAL_OFFSET_M[1] * 1e3:.0f} mm (drawn at random) from where "
            "it is, descends there until it touches, then spirals outward while pressing down. Search time: "
            "from the first touch until the tip is within "
            f"{SUCCESS_DISTANCE_M * 1e3:.0f} mm of the slot floor (the success criterion). The animations are "
            "the trials rendered by MuJoCo (`contactkit render`): F/T force arrow red, torque blue, contact points "
            "green.",
            "rows": _insert_table(insert),
            "figures": [r["video"] for r in insert if r.get("video")] + [r["figure"] for r in insert],
        },
        {
            "title": "4. Estimate: where is the pillar? Geometry from F/T",
            "text": "A block with a recessed bottom is placed onto a 15 mm pillar that "
            f"{_pillar_words(estimate['theta_gt_mm'])} (l1, l2, h); MuJoCo holding the true pillar plays the "
            "real world. 'ours' refines 10 estimates by "
            "gradient descent of the F/T discrepancy through the differentiable contact step "
            "(differentiable-contact paper §V), the particle filter weighs 50, the heuristic descends until "
            "the force exceeds 1 N. Rows: distance to the goal at release (one case; "
            "`contactkit experiment placement` runs 10 per task on four tasks). Figures: one more placement by "
            "'ours' of the same case rendered by MuJoCo (its own random draws), the estimates over "
            "time (dashed: the truth) and the release errors.",
            "rows": estimate["rows"],
            "figures": ([estimate["video"]] if estimate.get("video") else []) + estimate["figures"][::-1],
        },
    ]
