"""Experiment ``pf-tracking``: tool-pose tracking from F/T with a contact model (Act-FIGNet paper §IV-C, Fig. 12).

A spiral-search insertion (:class:`~contactkit.control.policies.SpiralPolicy`, paper App. E-b) of the
hexagonal tool into its slot with 1 mm clearance — the paper's real-world setup — is recorded in the world
that acts as reality (``world``; default ``"target-parametric"``, the stand-in for the lab of the stored results:
other friction, mass, contact softness, F/T noise and bias; ``"target"`` adds a real cell's latency, compliance
and sensor filter). The filter never sees that world: its motion and observation model is the contact model
under test, configured for ``model_world`` (default ``"nominal"``; :mod:`contactkit.eval.worlds`). Three
configurations are scored against the recorded truth
(:mod:`contactkit.estimation.tracking`): motion-only, particle filter from the known initial pose, and
from a pose corrupted by ``PERTURB_POS_M`` and ``PERTURB_ROT_RAD``.

The filter's process and F/T noise are measured, per model, on separate calibration episodes (other seeds,
same policy and world) as the RMS of the model's one-step residuals (:func:`~contactkit.estimation.
tracking.calibrate_noise`); nothing is tuned on the scored episodes.

Output keys: ``perturbed_final_pos_err_mm`` (median over episodes, of the preferred model) with its spread
``perturbed_final_pos_err_mm_p90`` / ``_max`` and ``perturbed_converged_fraction``; ``models.NAME.
configurations.MODE.{final_pos_err_mm, ..._p10, ..._p90, ..._max, tail_max_pos_err_mm, converged_fraction,
per_episode}``, ``models.NAME.calibration``, ``missing``, the Act-FIGNet ``checkpoint`` tracked with (None when
not); with ``plots``, Fig. 12-style PNGs (estimate against truth per axis, and the errors against time).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from contactkit.control.policies import CONTACT_FORCE_N, SpiralConfig, SpiralPolicy
from contactkit.control.tare import Tare, TareMode, parse_tare_mode
from contactkit.errors import InvalidInputError
from contactkit.estimation.particle_filter import NoiseSpace, PFConfig
from contactkit.estimation.tracking import (
    NoiseCalibration,
    RecordedEpisode,
    TrackingConfig,
    TrackingMode,
    TrackingResult,
    calibrate_noise,
    track,
)
from contactkit.eval import progress
from contactkit.eval.exp_mpc_insertion import narrowing as _planning_narrowing
from contactkit.eval.planning_models import (
    RESIDUAL_CHECKPOINT,
    InsertionBudget,
    act_fignet_checkpoint,
    build_models,
    known_models,
)
from contactkit.eval.workers import worker_pool
from contactkit.eval.worlds import world_pair
from contactkit.model import ActionMode
from contactkit.mujoco.world import MujocoWorld
from contactkit.physics import WorldParams
from contactkit.scene import Scene, load_scene
from contactkit.state import BodyState, stack_states
from contactkit.tasks.scenes import peg_in_hole

__all__ = [
    "CONVERGED_POS_ERR_M",
    "FULL_BUDGET",
    "QUICK_BUDGET",
    "TrackingBudget",
    "record_episode",
    "run",
    "tracking_config",
]

CONVERGED_POS_ERR_M = 2e-3
"""A configuration has converged when its position error stays below 2 mm over the tail of the episode."""
TAIL_FRACTION = 0.25
"""The tail: the last quarter of the steps after the first contact."""
PERTURB_POS_M = 3e-3
"""Position error of the perturbed initial pose [m] (a poor camera estimate: three times the clearance)."""
PERTURB_ROT_RAD = 0.02
"""Orientation error of the perturbed initial pose [rad] (about 1.1°: over the 20 mm peg a tilt of 0.05 rad
already exceeds the 1 mm clearance, and a relative pose-delta action never corrects a particle's tilt)."""
KNOWN_INIT_STD_M = 2e-4
"""Position spread of the known-pose belief [m] (a motion-capture-grade initial pose)."""
KNOWN_INIT_STD_RAD = 1e-3
"""Orientation spread of the known-pose belief [rad]."""
SCORED_SEED_OFFSET = 1000
"""Scored episodes use seeds ``[seed, 1000 + k]``."""
CALIBRATION_SEED_OFFSET = 2000
"""Calibration episodes use seeds ``[seed, 2000 + k]``: never one of the scored episodes."""
CENTER_NOISE_M = 1e-3
"""Error of the spiral policy's belief of the hole centre [m]."""
MODEL_LABELS = {"ground-truth": "mujoco-nominal"}
"""The MPC experiment's ground truth is, here, a model of the wrong world: MuJoCo with nominal parameters."""
MODEL_PREFERENCE = ("act-fignet", "engine", "mujoco-nominal")
"""Which model's result is quoted at the top level: the first available."""


@dataclass(frozen=True)
class TrackingBudget:
    """Scored episodes, calibration episodes (for the filter's noise) and their length [control steps]."""

    episodes: int
    steps: int
    calibration_episodes: int = 2


FULL_BUDGET = TrackingBudget(episodes=10, steps=150, calibration_episodes=4)
QUICK_BUDGET = TrackingBudget(episodes=4, steps=80, calibration_episodes=2)


def tracking_config(calibration: NoiseCalibration, n_particles: int = 30) -> TrackingConfig:
    """30 particles (Act-FIGNet paper §IV-C) with the measured noise of ``calibration``.

    The perturbed-start belief is a Gaussian whose mean squared error equals the perturbation's:
    per-axis std ``PERTURB_POS_M / √3`` and ``PERTURB_ROT_RAD / √3`` (the filter is told how wrong its
    start may be, not in which direction). The known-start belief has :data:`KNOWN_INIT_STD_M` and
    :data:`KNOWN_INIT_STD_RAD`. Velocities start exact (the tool is at rest).
    """
    pf = PFConfig(
        process_noise_std=calibration.process_std,
        measurement_std=calibration.measurement_std,
        n_particles=n_particles,
        noise_space=NoiseSpace.POSE13,
    )
    return TrackingConfig(
        pf=pf,
        init_std=np.array([KNOWN_INIT_STD_M] * 3 + [KNOWN_INIT_STD_RAD] * 3 + [0.0] * 6),
        perturb_pos=PERTURB_POS_M,
        perturb_rot=PERTURB_ROT_RAD,
        perturbed_init_std=np.array([PERTURB_POS_M / np.sqrt(3.0)] * 3 + [PERTURB_ROT_RAD / np.sqrt(3.0)] * 3
                                    + [0.0] * 6),
    )


def record_episode(scene: Scene, params: WorldParams, steps: int, rng: np.random.Generator,
                   tare: TareMode = TareMode.NONE) -> tuple[RecordedEpisode, np.ndarray, Tare | None]:
    """Run the spiral insertion in the world of ``params``; returns the episode with pose-delta actions, the
    ``(T, 6)`` wrenches the controller applied (world frame, about the tool origin), for WRENCH models, and the
    sensor's tare. With ``tare`` :attr:`TareMode.FREE_SPACE` the policy first holds still and tares the sensor
    (:class:`~contactkit.control.policies.SpiralConfig`), and the episode's readings are the tared ones (the
    filter sees what a user's zeroed sensor reads); with :attr:`TareMode.NONE` the raw readings (tare None)."""
    world = MujocoWorld(scene, params, rng=rng)
    state = world.reset()
    policy = SpiralPolicy(SpiralConfig(center_noise=CENTER_NOISE_M, tare=tare))
    policy.reset(scene, state, rng)
    states, actions, readings, applied = [state], [], [], []
    wrench = np.zeros(6)
    for t in range(steps):
        action = policy.act(t, state, wrench)
        result = world.step(action, ActionMode.POSE_DELTA)
        state, wrench = result.state, result.wrench
        states.append(state)
        actions.append(action)
        readings.append(wrench)
        applied.append(result.applied)
    readings = np.array(readings) if policy.tare is None else policy.tare.apply(np.array(readings))
    return RecordedEpisode(stack_states(states), np.array(actions), readings), np.array(applied), policy.tare


def first_contact(readings: np.ndarray, tare: Tare | None) -> int:
    """Index of the first reading ``(T, 6)`` that is a contact: tared readings above the tare's noise threshold
    (:meth:`~contactkit.control.tare.Tare.contact_threshold`, after the still window), or raw forces above
    :data:`CONTACT_FORCE_N` without a tare; ``T`` when none is."""
    force = np.linalg.norm(readings[:, :3], axis=1)
    if tare is None:
        touching = np.flatnonzero(force > CONTACT_FORCE_N)
    else:
        touching = np.flatnonzero(force > tare.contact_threshold())
        touching = touching[touching >= tare.samples]
    return int(touching[0]) if touching.size else readings.shape[0]


def _scores(result: TrackingResult, contact: int) -> dict:
    after = result.pos_err[contact + 1:]
    tail = after[-max(1, int(np.ceil(TAIL_FRACTION * after.size))):] if after.size else result.pos_err[-1:]
    return {
        "final_pos_err_mm": 1e3 * float(result.pos_err[-1]),
        "final_rot_err_deg": float(np.degrees(result.rot_err[-1])),
        "mean_pos_err_after_contact_mm": 1e3 * float(np.mean(after)) if after.size else None,
        "tail_max_pos_err_mm": 1e3 * float(np.max(tail)),
        "converged": bool(np.max(tail) < CONVERGED_POS_ERR_M),
    }


SPREAD_KEYS = ("final_pos_err_mm", "tail_max_pos_err_mm")
"""Scores whose spread over episodes is reported (10th and 90th percentile, maximum) next to the median."""


def _summarise(scores: list[dict]) -> dict:
    """Medians over episodes of every score, the spread of :data:`SPREAD_KEYS`, the converged fraction."""
    summary = {key: float(np.median([s[key] for s in scores])) for key in scores[0]
               if key != "converged" and all(s[key] is not None for s in scores)}
    for key in SPREAD_KEYS:
        values = np.array([s[key] for s in scores])
        summary.update({f"{key}_p10": float(np.percentile(values, 10)), f"{key}_p90": float(np.percentile(values, 90)),
                        f"{key}_max": float(np.max(values))})
    summary["converged_fraction"] = float(np.mean([s["converged"] for s in scores]))
    summary["episodes"] = len(scores)
    summary["per_episode"] = scores
    return summary


def _as_model_input(model, episode: RecordedEpisode, applied: np.ndarray) -> RecordedEpisode:
    """The episode with the actions ``model`` reads: pose deltas as recorded, or the applied wrenches."""
    if ActionMode(model.action_mode) is ActionMode.WRENCH:
        return RecordedEpisode(episode.states, applied, episode.wrenches)
    return episode


_MODELS: dict[str, dict] = {}
"""This process's models of one ``(scene, world, planning budget, device)``, by :func:`_key_digest`: a
worker builds them once (a MuJoCo contact model cannot be pickled, so jobs carry its description, not the model)."""


def _key_digest(key: tuple) -> str:
    """sha256 of ``(scene, world, InsertionBudget, device)`` through their JSON forms (no pickle anywhere)."""
    scene, world, planning, device = key
    text = json.dumps([scene.to_json(), world.to_json(), asdict(planning), str(device)], default=str, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _models_of(key: tuple) -> dict:
    """``{label: model}`` of ``key`` = ``(scene, world, InsertionBudget, device)``, built on first use here."""
    digest = _key_digest(key)
    if digest not in _MODELS:
        models, _ = build_models(*key, (ActionMode.POSE_DELTA, ActionMode.WRENCH))
        _MODELS.clear()
        _MODELS[digest] = {MODEL_LABELS.get(name, name): model for name, model in models.items()}
    return _MODELS[digest]


def _track_job(job: tuple) -> tuple[dict, TrackingResult]:
    """Scores and result of one (episode, configuration) tracked by model ``name`` (a pool job)."""
    key, name, (episode, applied, contact, _), config, mode, rng_key = job
    model = _models_of(key)[name]
    result = track(model, _as_model_input(model, episode, applied), config, mode, np.random.default_rng(rng_key))
    return _scores(result, contact), result


def _evaluate_model(pool, key: tuple, name: str, episodes, config, seed: int) -> tuple[dict, list[dict]]:
    """Scores per configuration (medians and spread over episodes) and the first episode's time series; the
    (episode, configuration) pairs run as ``pool`` jobs (:func:`contactkit.eval.workers.worker_pool`)."""
    jobs = [(key, name, item, config, mode, [seed, e, m_index]) for e, item in enumerate(episodes)
            for m_index, mode in enumerate(TrackingMode)]
    per_mode: dict[str, list[dict]] = {m.value: [] for m in TrackingMode}
    series = []
    done = progress.track(pool.imap(_track_job, jobs), "episode configurations tracked", total=len(jobs))
    for (_, _, (episode, _, _, _), _, mode, (_, e, _)), (scores, result) in zip(jobs, done, strict=True):
        per_mode[mode.value].append(scores)
        if e == 0:
            series.append({"mode": mode.value, "result": result, "truth": episode.states})
    return {mode: _summarise(scores) for mode, scores in per_mode.items()}, series


def _record_job(job: tuple) -> tuple:
    """``(episode, applied, first contact step, tare)`` of one recorded episode (a pool job)."""
    scene, world, steps, rng_key, tare = job
    episode, applied, tared = record_episode(scene, world, steps, np.random.default_rng(rng_key), tare)
    return episode, applied, first_contact(episode.wrenches, tared), tared


def _record(pool, scene, world: WorldParams, budget: TrackingBudget, seed: int, offset: int, count: int,
            tare: TareMode = TareMode.NONE) -> list:
    """``count`` episodes ``(episode, applied (T, 6), first contact step, tare)`` with seeds ``[seed, offset + k]``,
    recorded as ``pool`` jobs."""
    jobs = [(scene, world, budget.steps, [seed, offset + e], tare) for e in range(count)]
    return list(progress.track(pool.imap(_record_job, jobs), "episodes recorded", total=count))


def narrowing(options: dict) -> list[str]:
    """Harness options that cut this run below its default, one reason each: ``models`` leaving out a model the
    run would track with (as for mpc-insertion, :func:`contactkit.eval.exp_mpc_insertion.narrowing`)."""
    return _planning_narrowing(options)


def run(quick: bool, seed: int = 0, device: str = "cpu", plots: str | Path | None = None,
        budget: TrackingBudget | None = None, checkpoint: str | Path | None = None,
        models: tuple[str, ...] | None = None, tare: str | None = None, world: str | None = None,
        model_world: str | None = None, scene: str | Path | None = None, workers: int | None = None,
        ray_address: str | None = None) -> dict:
    """The experiment (harness entry point): JSON-ready results, and Fig. 12-style PNGs in ``plots``.

    ``budget`` replaces the quick or full budget (for smoke tests); ``checkpoint`` and ``models`` as in
    :func:`contactkit.eval.exp_mpc_insertion.run` (the Act-FIGNet checkpoint; the names of its ``MODEL_FACTORIES``
    to track with, the others listed as missing). ``tare``: ``"none"`` (default; raw readings and the fixed
    :data:`CONTACT_FORCE_N`, as the stored run) or ``"free-space"`` (:func:`record_episode`; the filter sees the
    tared readings; ``sensor_tare`` in the result records the first scored episode's tare). ``world`` (reality,
    default ``target-parametric``) and ``model_world`` (what the models assume, default ``nominal``): preset names
    or WorldParams JSON paths (:func:`contactkit.eval.worlds.world_pair`). ``scene``: a peg-in-hole Scene JSON
    file (``contactkit scene``) to insert into instead of the hexagon with 1 mm clearance (a narrowed run).
    Episodes are recorded and tracked ``workers`` (default 1) at a time, on Ray when more than one or at
    ``ray_address`` (:func:`contactkit.eval.workers.worker_pool`); the result does not depend on where.
    """
    if device != "cpu" and (workers or 1) > 1:
        raise InvalidInputError(f"pf-tracking: --workers {workers} runs on CPU workers; with --device {device} "
                                "use one worker")
    with worker_pool(1 if workers is None else workers, ray_address) as pool:
        return _run(pool, quick, seed, plots, budget, checkpoint, models, tare, world, model_world, scene, device)


def _run(pool, quick: bool, seed: int, plots, budget: TrackingBudget | None, checkpoint,
         models: tuple[str, ...] | None, tare: str | None, world: str | None, model_world: str | None,
         scene: str | Path | None, device: str) -> dict:
    """:func:`run` with its jobs on ``pool``."""
    tare_mode = parse_tare_mode(tare)
    models = None if models is None else known_models(models)
    budget = budget or (QUICK_BUDGET if quick else FULL_BUDGET)
    scene_file, scene = scene, peg_in_hole("hexagon", 1e-3) if scene is None else load_scene(scene)
    worlds = world_pair(world, model_world, "pf-tracking")
    truth_world, nominal = worlds.truth, worlds.model
    episodes = _record(pool, scene, truth_world, budget, seed, SCORED_SEED_OFFSET, budget.episodes, tare_mode)
    calibration_episodes = _record(pool, scene, truth_world, budget, seed, CALIBRATION_SEED_OFFSET,
                                   budget.calibration_episodes, tare_mode)
    planning = InsertionBudget((), 0, 0, checkpoint=None if checkpoint is None else str(checkpoint),
                               models=models)
    key = (scene, nominal, planning, device)
    models, missing = build_models(*key, (ActionMode.POSE_DELTA, ActionMode.WRENCH))
    models = {MODEL_LABELS.get(name, name): model for name, model in models.items()}
    _MODELS.clear()
    _MODELS[_key_digest(key)] = models  # inline jobs use these, not a second build
    result: dict = {"models": {}, "missing": missing}
    all_series = {}
    for name, model in progress.track(models.items(), "models", total=len(models)):
        calibration = calibrate_noise(model, [_as_model_input(model, ep, applied)
                                              for ep, applied, _, _ in calibration_episodes])
        config = tracking_config(calibration)
        summary, all_series[name] = _evaluate_model(pool, key, name, episodes, config, seed)
        result["models"][name] = {"configurations": summary, "calibration": {
            "process_std": calibration.process_std.tolist(), "measurement_std": calibration.measurement_std.tolist(),
            "n_samples": calibration.n_samples}}
    quoted = next(name for name in MODEL_PREFERENCE if name in models)
    configurations = result["models"][quoted]["configurations"]
    perturbed = configurations[TrackingMode.PERTURBED_INIT.value]
    result.update({
        "checkpoint": str(act_fignet_checkpoint(planning)) if "act-fignet" in models else None,
        "checkpoints": [RESIDUAL_CHECKPOINT.as_posix()] if "residual-mujoco" in models else [],  # repository-relative
        "quoted_model": quoted,
        "perturbed_final_pos_err_mm": perturbed["final_pos_err_mm"],
        "perturbed_final_pos_err_mm_p90": perturbed["final_pos_err_mm_p90"],
        "perturbed_final_pos_err_mm_max": perturbed["final_pos_err_mm_max"],
        "perturbed_converged_fraction": perturbed["converged_fraction"],
        "final_pos_err_mm": {mode: scores["final_pos_err_mm"] for mode, scores in configurations.items()},
        "first_contact_step": episodes[0][2],
        "sensor_tare": {"mode": tare_mode.value,
                        "first_episode": None if episodes[0][3] is None else episodes[0][3].as_dict()},
        "series": {name: {s["mode"]: {"pos_err_mm": (1e3 * s["result"].pos_err).round(4).tolist(),
                                      "rot_err_deg": np.degrees(s["result"].rot_err).round(4).tolist()}
                          for s in series} for name, series in all_series.items()},
        "setup": {"scene": scene.name, "scene_file": None if scene_file is None else str(scene_file), **worlds.setup(),
                  "control_dt_s": nominal.control_dt, "perturb_pos_m": PERTURB_POS_M,
                  "perturb_rot_rad": PERTURB_ROT_RAD, "n_particles": config.pf.n_particles,
                  "budget": asdict(budget)},
    })
    if plots is not None:
        result["plots"] = [str(p) for name, series in all_series.items()
                           for p in _plot(series, episodes[0][2], nominal.control_dt, Path(plots), name)]
    return result


def _plot(series: list[dict], contact: int, dt: float, out_dir: Path, name: str) -> list[Path]:
    """Fig. 12: per configuration, x, y, z of estimate (dashed) and truth (solid) [mm]; and the errors."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(3, len(series), figsize=(4.2 * len(series), 7), sharex=True, squeeze=False)
    for col, s in enumerate(series):
        truth: BodyState = s["truth"]
        time_s = np.arange(truth.pos.shape[0]) * dt
        for row, axis in enumerate("xyz"):
            ax = axes[row][col]
            ax.plot(time_s, 1e3 * truth.pos[:, row], color=f"C{row}", label="truth")
            ax.plot(time_s, 1e3 * s["result"].estimates[:, row], "--", color=f"C{row}", label="estimate")
            ax.axvline(contact * dt, color="k", lw=0.6, ls=":")
            ax.set_ylabel(f"{axis} [mm]")
        axes[0][col].set_title(s["mode"])
        axes[-1][col].set_xlabel("time [s]")
    axes[0][0].legend(fontsize=8)
    first = _save(fig, out_dir / f"pf_tracking_{name}_positions.png")
    fig, axes = plt.subplots(2, 1, figsize=(8, 5), sharex=True)
    for s in series:
        time_s = np.arange(s["result"].pos_err.shape[0]) * dt
        axes[0].plot(time_s, 1e3 * s["result"].pos_err, label=s["mode"])
        axes[1].plot(time_s, np.degrees(s["result"].rot_err))
    axes[0].axhline(1e3 * CONVERGED_POS_ERR_M, color="k", lw=0.6, ls="--")
    for ax in axes:
        ax.axvline(contact * dt, color="k", lw=0.6, ls=":")
    axes[0].set_ylabel("position error [mm]")
    axes[1].set_ylabel("orientation error [deg]")
    axes[1].set_xlabel("time [s]")
    axes[0].legend(fontsize=8)
    return [first, _save(fig, out_dir / f"pf_tracking_{name}_errors.png")]


def _save(fig, out: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
