"""Experiment ``pushing``: PD-only vs RL-assisted multi-point pushing, in the model and in the "real" world
(hybrid-contact residual-RL pushing paper §IV, Tables III–IV, Figs. 5, 6, 8; issue 18 part 8, issue 32 part 4).

For each object (cube, wedge) × angular-velocity profile (constant, trapezoidal, chirp), ``trials`` goal poses are
drawn from the training ranges of :func:`contactkit.pushing.env.sample_goal` (distance 60–120 mm, ``|Δθ|``
0.10–0.35 rad, chord within ±0.05 rad of the push axis) with the generator
``np.random.default_rng([seed, object, profile, TRIAL_STREAM])`` (not the gain search's stream). Each goal is run
four times, 20 s at 100 Hz from the nominal start: PD-only and RL-assisted (the committed residual actor, or
``checkpoint``), in the model (:class:`~contactkit.pushing.hybrid.HybridPushWorld` of the nominal Table II scene)
and in the "real" world (:class:`~contactkit.pushing.real.RealPushWorld` under the mismatch draw
:func:`contactkit.pushing.mismatch.real_draw` ``(seed, object, profile, goal)``: one physical world per goal,
the same for PD and RL, never seen by the policy). The controller always plans with the nominal scene. The PD's
gains are :data:`contactkit.pushing.controller.KP`, ``KV``, chosen by the stated search of
:mod:`contactkit.pushing.gains` in the model, never on "real".

Errors (definitions of :func:`contactkit.pushing.controller.episode_errors`): translation ``mean_t |p − p_des| /
|p_goal − p_start|`` and angle ``mean_t |θ − θ_des| / |Δθ|`` in % (Table III), planar force ``mean_t |Σ_i
(F_i,des − λ_i)|`` [N] and torque ``mean_t |Σ_i (τ_i,des − τ_i)|`` [N m] (Table IV). An episode that stops early
(object lost, unreachable start, singularity, divergence) is a *lost* trial of that controller and world
(``lost``, why in ``failure_reasons``): it counts :data:`LOST_TRIAL_PCT` (100 %) in the translation and angle
means, and its force and torque errors are those of the steps it ran (a trial with no step has none). A goal
whose eq-13 plan is infeasible at any step is run by neither controller (``infeasible``): the same goals for both.

JSON: ``cases[].{object, profile, trials, infeasible, pd_lost, rl_lost, {pd,rl}_translation_err_pct_{sim,real},
{pd,rl}_angle_err_pct_{sim,real}, {pd,rl}_force_err_N_{sim,real}, {pd,rl}_torque_err_Nm_{sim,real}, lost,
completed, failure_reasons}`` (``pd_lost``/``rl_lost``: "real" world; ``lost``: every controller × world; the
unsuffixed ``pd_translation_err_pct`` etc. are the "real" ones, as Table III); ``training.{episodes, steps,
wall_s}`` from the actor's card; ``bar`` (issue 32's criteria, :func:`bar_check`); ``gains``.

Cost (measured on the shared 2-core box): ``--quick`` (1 goal per case, 24 episodes) with 2 workers 211 s wall at
load 8.5 (issue 32's "real" world; the former one: 117 s at load 8–11); the former world with 5 goals per case and
2 workers (120 episodes) took 375 s, so the full run (1200 episodes) is about one to two hours with 2 workers.
"""

from __future__ import annotations

import enum
import itertools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from contactkit.control.icr import AngularProfile, ProfileKind
from contactkit.errors import InvalidInputError
from contactkit.eval import paper_quotes, progress
from contactkit.eval.workers import worker_pool
from contactkit.pushing import controller as ctl
from contactkit.pushing.env import sample_goal
from contactkit.pushing.scene import ObjectKind, PushScene

PAPER = paper_quotes.PUSHING
"""The paper's numbers beside ours in the report (:mod:`contactkit.eval.paper_quotes`)."""

REPO_ROOT = Path(__file__).resolve().parents[3]
"""The repository root (where ``models/`` lies in a source checkout)."""
DEFAULT_CHECKPOINT = Path("models/pushing-residual/residual.safetensors")
"""The committed residual actor, relative to the repository root."""
TRIAL_STREAM = 18
"""Last element of the trial generators' seed sequence (issue 18)."""
DURATION_S, DT_S = 20.0, 0.01
"""Episode length and control period (§IV-A: 20 s at 100 Hz)."""
LOST_TRIAL_PCT = 100.0
"""Translation and angle error [%] a lost trial counts in the means (issue 32 part 4)."""
RL_OVER_PD_SUM_BAR = 0.5
"""Bar: over the six cases, RL's summed translation + angle error ("real") ≤ this × the PD's."""
FORCE_RATIO_BAR = 1.1
"""Bar: RL's planar force error ("real") ≤ this × the PD's in every case."""
ERR_KEYS = ("translation_pct", "angle_pct", "force_N", "torque_Nm")


class Controller(enum.Enum):
    """PD-only (π_H) or RL-assisted (π_H + π_θ)."""

    PD = "pd"
    RL = "rl"


class WorldKind(enum.Enum):
    """The hybrid MLCP model or the "real" MuJoCo world."""

    SIM = "sim"
    REAL = "real"


@dataclass(frozen=True)
class PushingConfig:
    """Budget: ``trials`` goals per object × profile; ``duration`` [s]; ``workers`` processes (1: inline)."""

    trials: int
    duration: float = DURATION_S
    workers: int = 1


FULL = PushingConfig(trials=50)
QUICK = PushingConfig(trials=1)


def resolve_checkpoint(path: str | Path | None) -> Path:
    """``path`` (default :data:`DEFAULT_CHECKPOINT`) as given when it exists, else under :data:`REPO_ROOT`."""
    p = Path(path) if path is not None else DEFAULT_CHECKPOINT
    return p if p.is_file() or p.is_absolute() else REPO_ROOT / p


def trial_goals(seed: int, obj: ObjectKind, profile: ProfileKind, n: int) -> np.ndarray:
    """``(n, 3)`` goal poses [m, m, rad] of one case (module doc), from the nominal start pose."""
    rng = np.random.default_rng([seed, list(ObjectKind).index(obj), list(ProfileKind).index(profile), TRIAL_STREAM])
    start = np.array(PushScene.for_object(obj).object_pose)
    return np.array([sample_goal(rng, start) for _ in range(n)]).reshape(n, 3)


_POLICIES: dict[str, object] = {}


def _policy(checkpoint: str):
    from contactkit.pushing.residual import load_residual

    if checkpoint not in _POLICIES:
        _POLICIES[checkpoint] = load_residual(checkpoint)
    return _POLICIES[checkpoint]


def _world(kind: WorldKind, scene: PushScene, real_key: tuple[int, ...]):
    if kind is WorldKind.SIM:
        from contactkit.pushing.hybrid import HybridPushWorld

        return HybridPushWorld(scene)
    from contactkit.pushing.mismatch import real_draw
    from contactkit.pushing.real import RealPushWorld, RealWorldParams

    return RealPushWorld(scene, RealWorldParams(physics=real_draw(*real_key)))


def run_trial(job: tuple) -> dict:
    """One episode: ``job = (object, profile, goal (3,), controller, world, checkpoint, duration, traces,
    real_key)``; ``real_key`` = ``(seed, object index, profile index, goal index)`` of the "real" draw.

    Returns ``{"failure": str | None, "errors": {...}}`` and, when ``traces``, per-step ``pose``, ``desired``
    ``(N, 3)``, ``force_err`` [N] and ``torque_err`` [N m] ``(N,)``.
    """
    obj, profile, goal, controller, world, checkpoint, duration, traces, real_key = job
    scene = PushScene.for_object(ObjectKind(obj))
    start = np.array(scene.object_pose)
    policy = _policy(checkpoint) if Controller(controller) is Controller.RL else None
    log = ctl.run_episode(_world(WorldKind(world), scene, real_key), scene, start, np.asarray(goal), AngularProfile(
        ProfileKind(profile)), duration, DT_S, policy=policy)
    out = {"failure": log.failure, "errors": ctl.episode_errors(log, start, goal)}
    if traces:
        out.update(pose=log.obj_pose, desired=log.desired_pose,
                   force_err=np.linalg.norm((log.force_des - log.force).sum(1), axis=1),
                   torque_err=np.abs((log.torque_z_des - log.torque_z).sum(1)))
    return out


def feasible_goal(obj: ObjectKind, profile: ProfileKind, goal: np.ndarray, duration: float) -> bool:
    """Eq 13 produces the required wrench at every step of the plan to ``goal`` (nominal scene)."""
    scene = PushScene.for_object(obj)
    plan = ctl.plan_push(scene, np.array(scene.object_pose), goal, AngularProfile(profile), duration, DT_S)
    return bool(plan.feasible.all())


RUNS = tuple(itertools.product(Controller, WorldKind))


def _mean(values: list[float]) -> float | None:
    v = [x for x in values if np.isfinite(x)]
    return float(np.mean(v)) if v else None


def tracking_error(result: dict, key: str) -> float:
    """A trial's Table III error ``key`` [%]: :data:`LOST_TRIAL_PCT` when the trial was lost."""
    return LOST_TRIAL_PCT if result["failure"] is not None else result["errors"][key]


def _case_entry(obj, profile, goals, feasible, runs: dict) -> dict:
    """One ``cases[]`` row from the trial results ``runs[(controller, world)]`` (a list over feasible goals)."""
    entry = {"object": obj.value, "profile": profile.value, "trials": len(goals),
             "infeasible": int((~feasible).sum()), "lost": {}, "completed": {}, "failure_reasons": {}}
    for (c, w), results in runs.items():
        lost = [r["failure"] for r in results if r["failure"] is not None]
        entry["lost"][f"{c.value}_{w.value}"] = len(lost)
        entry["completed"][f"{c.value}_{w.value}"] = len(results) - len(lost)
        entry["failure_reasons"][f"{c.value}_{w.value}"] = lost
        for key, name in (("translation_pct", "translation_err_pct"), ("angle_pct", "angle_err_pct")):
            entry[f"{c.value}_{name}_{w.value}"] = _mean([tracking_error(r, key) for r in results])
        for key, name in (("force_N", "force_err_N"), ("torque_Nm", "torque_err_Nm")):
            entry[f"{c.value}_{name}_{w.value}"] = _mean([r["errors"][key] for r in results])
    for c in Controller:  # Table III's names and the issue's lost counts: the "real" world
        entry[f"{c.value}_translation_err_pct"] = entry[f"{c.value}_translation_err_pct_real"]
        entry[f"{c.value}_angle_err_pct"] = entry[f"{c.value}_angle_err_pct_real"]
        entry[f"{c.value}_lost"] = entry["lost"].get(f"{c.value}_real", 0)
    return entry


def bar_check(cases: list[dict]) -> dict:
    """Issue 32's bar on ``cases`` ("real" world, lost trials at 100 %; None where a case has no number):
    RL's translation + angle error ≤ the PD's in every case, RL's six-case sum ≤ :data:`RL_OVER_PD_SUM_BAR` × the
    PD's, RL loses no more trials than the PD in any case, RL's force error ≤ :data:`FORCE_RATIO_BAR` × the PD's."""
    def ok(values):
        return None if any(v is None for v in values) else bool(all(values))

    def total(c, ctrl):
        t, a = c[f"{ctrl}_translation_err_pct_real"], c[f"{ctrl}_angle_err_pct_real"]
        return None if t is None or a is None else t + a

    rl, pd = [total(c, "rl") for c in cases], [total(c, "pd") for c in cases]
    sums = None if None in rl or None in pd or not cases else (float(np.sum(rl)), float(np.sum(pd)))
    force = [None if c["rl_force_err_N_real"] is None or c["pd_force_err_N_real"] is None else
             c["rl_force_err_N_real"] <= FORCE_RATIO_BAR * c["pd_force_err_N_real"] for c in cases]
    return {"rl_le_pd_every_case": ok([None if r is None or p is None else r <= p for r, p in zip(rl, pd,
                                                                                               strict=True)]),
            "rl_sum_pct_real": None if sums is None else sums[0], "pd_sum_pct_real": None if sums is None else sums[1],
            "rl_sum_le_half_pd": None if sums is None else sums[0] <= RL_OVER_PD_SUM_BAR * sums[1],
            "rl_lost_le_pd_lost_every_case": bool(all(c["rl_lost"] <= c["pd_lost"] for c in cases)),
            "rl_force_le_1p1_pd_every_case": ok(force)}


def run_experiment(config: PushingConfig, seed: int = 0, checkpoint: str | Path | None = None,
                   plots: str | Path | None = None, ray_address: str | None = None) -> dict:
    """All objects × profiles × trials × (PD, RL) × (model, "real") (module doc); figures into ``plots``. Trials run
    ``config.workers`` at a time (:func:`~contactkit.eval.workers.worker_pool`; on the Ray cluster at ``ray_address``
    if given, whose machines need the checkpoint at the same path)."""
    from contactkit.pushing.residual import load_residual

    if config.trials < 1 or not config.duration > 0:
        raise InvalidInputError(f"pushing: trials must be >= 1 and duration > 0, got {config.trials}, "
                                f"{config.duration}")
    ckpt = resolve_checkpoint(checkpoint)
    card = load_residual(ckpt).card  # refuses a bad checkpoint before any episode
    cases = list(itertools.product(ObjectKind, ProfileKind))
    goals = {c: trial_goals(seed, *c, config.trials) for c in cases}
    feasible = {c: np.array([feasible_goal(*c, g, config.duration) for g in goals[c]]) for c in cases}
    traced = (ObjectKind.CUBE, ProfileKind.CONSTANT)
    jobs, keys = [], []
    for c in cases:
        for i in np.flatnonzero(feasible[c]):
            for ctrl, world in RUNS:
                real_key = (seed, list(ObjectKind).index(c[0]), list(ProfileKind).index(c[1]), int(i))
                jobs.append((c[0].value, c[1].value, goals[c][i], ctrl.value, world.value, str(ckpt),
                             config.duration, c == traced or i == np.flatnonzero(feasible[c])[0], real_key))
                keys.append((c, ctrl, world))
    with worker_pool(config.workers, ray_address) as pool:
        results = list(progress.track(pool.map(run_trial, jobs), "trials", total=len(jobs)))
    per = {c: {r: [] for r in RUNS} for c in cases}
    for (c, ctrl, world), res in zip(keys, results, strict=True):
        per[c][(ctrl, world)].append(res)
    rows = [_case_entry(*c, goals[c], feasible[c], per[c]) for c in cases]
    training = card.get("training", {})
    result = {"cases": rows, "bar": bar_check(rows),
              "training": {"episodes": training.get("episodes"), "steps": training.get("steps"),
                           "wall_s": training.get("wall_s")},
              "gains": {"kp": ctl.KP, "kv": ctl.KV, "actor_trained_kp": training.get("kp"),
                        "actor_trained_kv": training.get("kv"),
                        "chosen_by": "contactkit.pushing.gains.search_pd_gains (model world, training draws)"},
              "real_world": "contactkit.pushing.mismatch.real_draw(seed, object, profile, goal), REAL_RANGES",
              "checkpoint": str(ckpt),
              "config": {"trials": config.trials, "duration_s": config.duration, "dt_s": DT_S, "seed": seed}}
    if plots is not None:
        from contactkit.eval.pushing_figures import plot_pushing

        result["figures"] = plot_pushing(result, per, ckpt.parent, Path(plots))
    return result


def markdown(result: dict) -> str:
    """Tables III and IV of a result: per case, PD-only vs RL-assisted errors ("real" translation and angle with lost
    trials at 100 %) and the lost trials ("–": no trial ran)."""
    def f(v, fmt):
        return "–" if v is None else format(v, fmt)

    lines = ["| object | profile | trials (infeasible) | lost PD / RL, real | transl. PD / RL [%] | "
             "angle PD / RL [%] | force sim PD / RL [N] | force real PD / RL [N] | torque real PD / RL [N m] |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for c in result["cases"]:
        lines.append(f"| {c['object']} | {c['profile']} | {c['trials']} ({c['infeasible']}) | "
                     f"{c.get('pd_lost', '–')} / {c.get('rl_lost', '–')} | "
                     f"{f(c['pd_translation_err_pct'], '.1f')} / {f(c['rl_translation_err_pct'], '.1f')} | "
                     f"{f(c['pd_angle_err_pct'], '.1f')} / {f(c['rl_angle_err_pct'], '.1f')} | "
                     f"{f(c['pd_force_err_N_sim'], '.3f')} / {f(c['rl_force_err_N_sim'], '.3f')} | "
                     f"{f(c['pd_force_err_N_real'], '.3f')} / {f(c['rl_force_err_N_real'], '.3f')} | "
                     f"{f(c['pd_torque_err_Nm_real'], '.4f')} / {f(c['rl_torque_err_Nm_real'], '.4f')} |")
    lines += ["", f"Bar: {result['bar']}"]
    return "\n".join(lines) + "\n"


def narrowing(options: dict) -> list[str]:
    """Why harness ``options`` cut a run below the full protocol (:func:`contactkit.eval.store.narrowing`):
    ``workers`` does not (results do not depend on it) nor does ``checkpoint`` (another actor, recorded);
    ``config`` does."""
    return [f"--{k} {v}" for k, v in options.items() if k not in ("workers", "checkpoint", "ray_address")
            and v is not None]


def run(quick: bool, seed: int = 0, device: str = "cpu", plots: str | Path | None = None,
        checkpoint: str | Path | None = None, workers: int | None = None,
        config: PushingConfig | None = None, ray_address: str | None = None) -> dict:
    """Harness entry point: the quick (1 goal per case) or full (50) budget; ``config`` replaces it (tests)."""
    del device  # numpy / MuJoCo on the CPU
    cfg = config or (QUICK if quick else FULL)
    if workers is not None:
        from dataclasses import replace

        cfg = replace(cfg, workers=int(workers))
    return run_experiment(cfg, seed, checkpoint, plots, ray_address)
