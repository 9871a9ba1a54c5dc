"""Benchmark ``replan``: seconds (wall clock and CPU) per iCEM replan of the mpc-insertion agent with each planning
model.

Act-FIGNet paper §IV-A and Table IV: the agent replans every 5 control steps with horizon 50, population 20 and 5
iterations, i.e. 250 batched model steps of 20 sequences per replan; issue 19's goal for the learned model is a median ≤
2 s on CPU for the triangle, square and hexagon. ``contactkit experiment mpc-insertion`` reports replan times only for
the models whose episodes it runs; this benchmark times every model that can be built
(:data:`~contactkit.eval.exp_mpc_insertion.MODEL_FACTORIES`, Act-FIGNet only from ``--checkpoint``) from the same
states, including a learned model whose full episodes would take hours on CPU. A checkpoint comes from ``contactkit
train --model act-fignet ...`` on target-world data (the committed one: ``models/act-fignet-hexagon-target/``), or from
``contactkit experiment prediction-accuracy``; the replan time depends on the model's size and on how many contact edges
its rollouts build, on its training only through those.

Per pairing the ground-truth agent runs the pairing's first mpc-insertion episode with the experiment's sampling
stream (the reference episode); every model then plans once, from a fresh sampling distribution, at ``points``
of its replans spread evenly from the first to the last — in free space, in contact, in the slot — each from the
same observed history, so the models are timed on the same states (the cost of a MuJoCo or engine step grows with
the contacts, that of Act-FIGNet with its contact edges). Reported: ``models.NAME.{replan_s (median), replan_s_p90,
replans, vs_ground_truth, within_goal, replan_s_by_point}`` in wall-clock seconds — ``vs_ground_truth`` is the ratio
of medians against MuJoCo planning itself, timed in the same process — and ``replan_cpu_s``,
``replan_cpu_s_by_point``, ``cpu_vs_ground_truth`` in the CPU seconds the process spent (all its threads: what a
replan costs, whatever else loads the machine); the ``points`` (pairing, control step, tool in contact),
``missing``, ``goal_s`` and the Act-FIGNet ``checkpoint`` timed.

Parallel (``--workers N``, ``--ray-address ADDR``; ``docs/scale.md``): each pairing — its reference episode and every
model timed on its points — is one job of :func:`~contactkit.eval.workers.worker_pool`, on Ray (one CPU and one
torch thread per job; a worker builds its own models, MuJoCo models cannot be pickled). Everything but the timings
equals the serial run's. The timings do not: jobs side by side share the machine's cores (and the ground-truth
model's rollout threads), so the seconds of a ``workers > 1`` run are not comparable with a serial run's, nor with a
stored one. Such a run records ``workers`` (and ``ray_address``) at the top of its JSON and in its table; the serial
default (no Ray, the calling process's torch threads) is unchanged.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from contactkit.control.icem import initial_state, optimize
from contactkit.control.mpc import MPCAgent, MPCConfig, make_objective
from contactkit.control.policies import CONTACT_FORCE_N
from contactkit.data.parallel import uses_ray
from contactkit.errors import InvalidInputError
from contactkit.eval import paper_quotes, progress
from contactkit.eval.exp_mpc_insertion import (
    FULL_BUDGET,
    QUICK_BUDGET,
    SCENE_PAIRING,
    InsertionBudget,
    act_fignet_checkpoint,
    build_models,
    episode_seed,
    planner_rng,
    run_episode,
)
from contactkit.eval.planning_models import MODEL_FACTORIES, RESIDUAL_CHECKPOINT
from contactkit.eval.workers import worker_pool
from contactkit.physics import WorldParams
from contactkit.state import BodyState, stack_states
from contactkit.tasks.peg_env import PegEnvConfig, PegInsertionEnv, split_observation
from contactkit.tasks.reward import goal_reward

PAPER = paper_quotes.REPLAN
"""The paper's numbers beside ours in the report (:mod:`contactkit.eval.paper_quotes`)."""

GOAL_S = 2.0
"""Issue 19's goal for the median replan of the learned model on CPU [s] (it was 1 s in the earlier MPC issue)."""

REFERENCE = "ground-truth"
"""The peer every model's replan time is divided by."""

QUICK = replace(QUICK_BUDGET, pairings=("square",))
"""The quick run: one pairing, the quick experiment's small agent."""

PLACEMENT_OPTIONS: frozenset[str] = frozenset()
"""Options that never narrow a run (:func:`contactkit.eval.store.narrowing`): none here. The replan times depend
on where the jobs run, so a run with ``--workers`` or ``--ray-address`` is not stored."""

QUICK_POINTS = 2
"""Replans timed per pairing in the quick run (the first and the last of the reference episode)."""

FULL_POINTS = 3
"""Replans timed per pairing in the full run (first, middle, last)."""


@dataclass(frozen=True)
class ReplanPoint:
    """A state the models plan from: the observed history ending at control step ``step`` of a reference episode.

    Attributes:
        pairing: the peg/slot pairing. step: control step of the replan.
        states: observed tool states of the episode up to ``step``, batch ``(step + 1,)``, world frame.
        contact: the measured contact force exceeded :data:`CONTACT_FORCE_N` there.
    """

    pairing: str
    step: int
    states: BodyState
    contact: bool

    def history(self, length: int) -> BodyState:
        """``(length,)`` window ending at ``step``, padded with the episode's first state (:func:`mpc_reset`)."""
        index = np.clip(np.arange(self.step - length + 1, self.step + 1), 0, None)
        return BodyState(*(np.asarray(a)[index] for a in (self.states.pos, self.states.quat, self.states.lin_vel,
                                                            self.states.ang_vel)))


def reference_points(env: PegInsertionEnv, agent: MPCAgent, seed: int, points: int, pairing: str) -> list[ReplanPoint]:
    """Run ``agent`` through the episode of ``env`` from the start of ``seed`` (:func:`run_episode`); the states at
    ``points`` of its replans, evenly spread from the first to the last (fewer if it replanned fewer times)."""
    observations: list = []
    run_episode(env, agent, seed, pairing, observations)
    states, wrenches = zip(*(split_observation(obs) for obs in observations), strict=True)
    replans = np.arange(0, len(states), agent.config.icem.replan_every)
    chosen = np.unique(replans[np.linspace(0, len(replans) - 1, points).round().astype(int)])
    return [ReplanPoint(pairing, int(t), stack_states(list(states[:t + 1])),
                        bool(np.linalg.norm(wrenches[t][:3]) > CONTACT_FORCE_N)) for t in chosen]


class ReplanTime(NamedTuple):
    """One replan's wall-clock seconds and the CPU seconds the process spent in it (every thread: MuJoCo's rollout
    threads, torch's), [s]. On a loaded machine the wall time grows with the load; the CPU time does not."""

    wall_s: float
    cpu_s: float


def time_replan(model, config: MPCConfig, scene, point: ReplanPoint, rng: np.random.Generator) -> ReplanTime:
    """Wall and CPU seconds of one iCEM optimisation of ``model``'s rollouts from ``point`` (eq 9 reward, fresh
    distribution)."""
    objective = make_objective(model, goal_reward(scene), config.scale, point.history(int(model.history)))
    started, cpu = time.perf_counter(), time.process_time()
    optimize(objective, initial_state(config.icem), config.icem, rng)
    return ReplanTime(time.perf_counter() - started, time.process_time() - cpu)


@dataclass(frozen=True)
class PairingTimes:
    """What one pairing's job returns.

    Attributes:
        times: wall and CPU seconds of each model's replan at each of ``points``, ``{model: [ReplanTime per
            point]}``.
        points: the reference episode's states the models planned from.
        missing: the models that could not be built, ``[{"model", "reason"}]``.
        torch_threads: torch intra-op threads of the process that timed them.
    """

    times: dict[str, list[ReplanTime]]
    points: list[ReplanPoint]
    missing: list[dict]
    torch_threads: int


def time_pairing(job: tuple) -> PairingTimes:
    """One pairing (a :func:`~contactkit.eval.workers.worker_pool` job, or inline): its reference episode with the
    ground-truth agent, then every model of the budget timed at ``points`` of its replans. ``job = (budget,
    points, seed, device, scene, pairing)``; ``scene`` a peg-in-hole Scene (the pairing ``SCENE_PAIRING``) or None."""
    budget, points, seed, device, scene, pairing = job
    params = WorldParams()
    config = PegEnvConfig(pairing=None if scene is not None else pairing, max_steps=budget.max_steps)
    env = PegInsertionEnv(config, params, scene=scene,
                          observation_dtype=np.float64)  # the agent plans from the observed state
    config = MPCConfig.table_iv(env.scale, horizon=budget.horizon, population=budget.population,
                                iterations=budget.iterations, replan_every=budget.replan_every)
    models, missing = build_models(env.scene, params, budget, device)
    if REFERENCE not in models:
        raise InvalidInputError(f"the replan benchmark's reference episodes need the {REFERENCE!r} model; "
                                f"this budget builds {sorted(models)}")
    reference = MPCAgent(models[REFERENCE], config, goal_reward(env.scene), planner_rng(seed, pairing))
    here = reference_points(env, reference, episode_seed(seed, pairing, 0), points, pairing)
    times = {}
    for name, model in progress.track(models.items(), f"{pairing}: models timed", total=len(models)):
        rng = planner_rng(seed, pairing)
        times[name] = [time_replan(model, config, env.scene, p, rng) for p in here]
    return PairingTimes(times, here, missing, torch.get_num_threads())


def measure(budget: InsertionBudget, points: int, seed: int, device: str, scene=None, workers: int = 1,
            ray_address: str | None = None) -> tuple[dict[str, list[ReplanTime]], list[ReplanPoint], list[dict], int]:
    """``({model: wall and CPU seconds per point}, points, missing, torch threads)`` over the pairings of ``budget``
    with its agent, or on ``scene`` alone (a peg-in-hole :class:`~contactkit.scene.Scene`, as the pairing
    ``SCENE_PAIRING``). Pairings run one after another in this process, or ``workers`` at a time on Ray when more
    than one or at ``ray_address`` (:func:`time_pairing`; module doc); ``missing`` is the last pairing's."""
    pairings = (SCENE_PAIRING,) if scene is not None else budget.pairings
    jobs = [(budget, points, seed, device, scene, pairing) for pairing in pairings]
    if uses_ray(workers, ray_address):
        if budget.models is not None and REFERENCE not in budget.models:  # before any worker starts
            raise InvalidInputError(f"the replan benchmark's reference episodes need the {REFERENCE!r} model; "
                                    f"this budget plans with {list(budget.models)}")
        with worker_pool(workers, ray_address) as pool:
            done = list(progress.track(pool.imap(time_pairing, jobs), "pairings", total=len(jobs)))
    else:
        done = [time_pairing(job) for job in progress.track(jobs, "pairings")]
    times: dict[str, list[ReplanTime]] = {}
    for pairing in done:
        for name, seconds in pairing.times.items():
            times.setdefault(name, []).extend(seconds)
    return (times, [p for pairing in done for p in pairing.points], done[-1].missing,
            max(pairing.torch_threads for pairing in done))


def run(quick: bool, seed: int = 0, device: str = "cpu", checkpoint: str | Path | None = None,
        budget: InsertionBudget | None = None, scene: str | Path | None = None, workers: int | None = None,
        ray_address: str | None = None) -> dict:
    """The benchmark (harness entry point): the quick run times two points of one pairing (:data:`QUICK`); the
    full run :data:`FULL_POINTS` points of each of the five pairings with the Table IV agent. ``budget`` replaces
    either (tests). ``scene``: a peg-in-hole Scene JSON file (``contactkit scene``) to time on instead of the
    pairings (a narrowed run: not stored). ``workers`` (default 1: serial, in this process) pairings at a time, on
    Ray when more than one or at ``ray_address``; such a run's timings are contended (module doc) and it records
    ``workers`` and ``ray_address``."""
    budget = budget or (QUICK if quick else FULL_BUDGET)
    if checkpoint is not None:
        budget = replace(budget, checkpoint=str(checkpoint))
    if budget.models is None:  # every model that can be built, the opt-in ones (the committed residual) included
        budget = replace(budget, models=tuple(MODEL_FACTORIES))
    workers = 1 if workers is None else workers
    parallel = uses_ray(workers, ray_address)
    if parallel and device != "cpu":
        raise InvalidInputError(f"replan: --workers {workers} / --ray-address run on CPU workers; with --device "
                                f"{device} use one worker and no address")
    given = None
    if scene is not None:
        from contactkit.scene import load_scene

        given = load_scene(scene)
        budget = replace(budget, pairings=(SCENE_PAIRING,))
    times, points, missing, threads = measure(budget, QUICK_POINTS if quick else FULL_POINTS, seed, device, given,
                                              workers, ray_address)
    models = _rows(times)
    checkpoint = str(act_fignet_checkpoint(budget)) if "act-fignet" in times else None
    residual = [RESIDUAL_CHECKPOINT.as_posix()] if "residual-mujoco" in times else []  # repository-relative
    result = {"models": models, "missing": missing, "goal_s": GOAL_S, "pairings": list(budget.pairings),
              "points": [{"pairing": p.pairing, "step": p.step, "contact": p.contact} for p in points],
              "checkpoint": checkpoint, "checkpoints": residual,
              "agent": {"horizon": budget.horizon, "population": budget.population, "iterations": budget.iterations,
                        "replan_every": budget.replan_every, "n_threads": budget.n_threads, "torch_threads": threads}}
    if parallel:
        result.update(workers=workers, ray_address=ray_address)
    return result


def _rows(times: dict[str, list[ReplanTime]]) -> dict:
    """Per model: median, p90 and per-point wall seconds, the ratio of medians to the reference, whether the median
    is within the goal, and the same medians and points in CPU seconds (``replan_cpu_s``)."""
    wall = {name: [t.wall_s for t in ts] for name, ts in times.items()}
    cpu = {name: [t.cpu_s for t in ts] for name, ts in times.items()}
    medians = {name: float(np.median(t)) for name, t in wall.items()}
    cpu_medians = {name: float(np.median(t)) for name, t in cpu.items()}
    return {name: {"replan_s": medians[name], "replan_s_p90": float(np.percentile(t, 90)), "replans": len(t),
                   "vs_ground_truth": medians[name] / medians[REFERENCE] if REFERENCE in medians else None,
                   "within_goal": medians[name] <= GOAL_S, "replan_s_by_point": t,
                   "replan_cpu_s": cpu_medians[name], "replan_cpu_s_by_point": cpu[name],
                   "cpu_vs_ground_truth": cpu_medians[name] / cpu_medians[REFERENCE] if REFERENCE in cpu_medians
                   else None}
            for name, t in wall.items()}


def markdown(result: dict) -> str:
    """Table: per model the median and p90 replan seconds, the median over points in contact, the ratio to MuJoCo
    planning, whether the median is within the goal, and the median CPU seconds and their ratio (a stored result
    without them shows a dash)."""
    contact = np.array([p["contact"] for p in result["points"]], dtype=bool)
    lines = ["| model | replan s (median) | p90 | median in contact | replans | × ground truth | ≤ goal "
             "| CPU s (median) | CPU × ground truth |", "|---|---:|---:|---:|---:|---:|---|---:|---:|"]
    for name, row in result["models"].items():
        ratio = "–" if row["vs_ground_truth"] is None else f"{row['vs_ground_truth']:.2f}"
        touching = np.asarray(row["replan_s_by_point"])[contact]
        in_contact = f"{np.median(touching):.3g}" if touching.size else "–"
        cpu = f"{row['replan_cpu_s']:.3g}" if "replan_cpu_s" in row else "–"
        cpu_ratio = "–" if row.get("cpu_vs_ground_truth") is None else f"{row['cpu_vs_ground_truth']:.2f}"
        lines.append(f"| {name} | {row['replan_s']:.3g} | {row['replan_s_p90']:.3g} | {in_contact} | {row['replans']} "
                     f"| {ratio} | {row['within_goal']} | {cpu} | {cpu_ratio} |")
    lines += ["", f"Agent {result['agent']} on {result['pairings']}, planning from {len(contact)} states of the "
              f"ground-truth agent's episodes ({int(contact.sum())} in contact); goal {result['goal_s']} s per replan "
              "for the learned model (CPU). Missing: "
              + (", ".join(f"{m['model']} ({m['reason']})" for m in result["missing"]) or "none") + "."]
    if "workers" in result:
        lines += ["", f"Timed on Ray, {result['workers']} pairings at a time"
                  + (f" on the cluster at {result['ray_address']}" if result["ray_address"] else "")
                  + ": timings under contention, not comparable with a serial run's."]
    return "\n".join(lines) + "\n"
