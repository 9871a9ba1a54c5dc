"""Experiment ``mpc-insertion``: iCEM MPC peg insertion with each contact model (Act-FIGNet paper §IV-A, Fig. 4).

The same agent (:class:`contactkit.control.mpc.MPCAgent`, Table IV settings) plans with each available
model — MuJoCo itself (the ground truth), Act-FIGNet, the contactkit engine and (opt-in) the residual over
nominal MuJoCo — while the environment's true dynamics are always the MuJoCo world
(:class:`contactkit.tasks.peg_env.PegInsertionEnv`). The environment runs in ``world`` (reality) and the learned
and engine models assume ``model_world`` (both ``nominal`` by default, as the stored run;
:mod:`contactkit.eval.worlds`), so "plan with nominal, act in my lab's world" is ``--world lab.json --model-world
nominal``. The ground truth always plans in ``world`` itself: batched MuJoCo, or for a world with hidden state
(``target``'s latency, compliance and filter) the :class:`~contactkit.mujoco.oracle.WorldOracle`, which follows
the environment's world. Episodes
run on four tool shapes in matching slots with 5 mm clearance plus the unseen circle-in-square pairing;
every model sees the same initial states (paired comparison). A model that cannot be built is listed under
``"missing"`` with the reason.

Output keys: ``models.NAME.{success_rate, halfway_rate, episodes, replan_s, per_shape, ...}``,
``missing``, ``budget``; with ``plots`` a directory, Fig. 4a (success and halfway rates per shape) and
Fig. 4b (median eq-9 reward against time with its inter-quartile band) as PNG (:mod:`.mpc_insertion_figures`).
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from contactkit.control.mpc import MPCAgent, MPCConfig
from contactkit.data.parallel import uses_ray
from contactkit.errors import ContactkitError, InvalidInputError
from contactkit.eval import paper_quotes, progress
from contactkit.eval.planning_models import (
    CHECKPOINT_MODELS,
    MODEL_FACTORIES,
    OPT_IN_MODELS,
    PLANNING_ENGINE,
    RESIDUAL_CHECKPOINT,
    InsertionBudget,
    ModelUnavailable,
    act_fignet_checkpoint,
    build_models,
    known_models,
)
from contactkit.eval.workers import worker_pool
from contactkit.eval.worlds import STORED_MODEL_WORLD, world_pair
from contactkit.mujoco.oracle import WorldOracle
from contactkit.physics import WorldParams
from contactkit.scene import Scene
from contactkit.tasks.peg_env import INSERTION_PAIRINGS, PegEnvConfig, PegInsertionEnv, split_observation
from contactkit.tasks.reward import SUCCESS_RADIUS_M, goal_reward

__all__ = [
    "FULL_BUDGET",
    "MODEL_FACTORIES",
    "PAPER",
    "PLANNING_ENGINE",
    "QUICK_BUDGET",
    "InsertionBudget",
    "ModelUnavailable",
    "build_models",
    "known_models",
    "evaluate",
    "episode_seed",
    "pairing_index",
    "planner_rng",
    "run",
    "run_episode",
]

PAPER = paper_quotes.MPC_INSERTION
"""The paper's numbers beside ours in the report (:mod:`contactkit.eval.paper_quotes`)."""

_LOG = logging.getLogger(__name__)

FULL_BUDGET = InsertionBudget(tuple(INSERTION_PAIRINGS), episodes_per_pairing=10, max_steps=150, n_threads=2)
"""The paper's run: 10 episodes on each of the 5 pairings, 150 steps, Table IV agent."""
QUICK_BUDGET = InsertionBudget(tuple(INSERTION_PAIRINGS), episodes_per_pairing=1, max_steps=40, horizon=20,
                               population=12, iterations=3, replan_every=5)
"""A smoke run (< 2 min on 2 cores): one short episode per pairing with a small planning budget."""


def narrowing(options: dict) -> list[str]:
    """Which of the harness ``options`` cut this run (or pf-tracking's) below its unrestricted default, one
    reason each (:func:`contactkit.eval.harness.run_measurement` stores only runs with none).

    ``episodes``, ``pairings`` and ``scene`` (not the paper's scenes) always narrow. ``models`` narrows when it
    leaves out a model that the run would otherwise plan with: every model when ``checkpoint`` is given, else
    every model but those of :data:`CHECKPOINT_MODELS` (a stored result may only use a committed checkpoint, and
    none is looked up by default). ``checkpoint`` adds a model: never a narrowing.
    """
    reasons = [f"--{name} {options[name]}" for name in ("episodes", "pairings", "scene")
               if options.get(name) is not None]
    if options.get("models") is not None:
        default = set(MODEL_FACTORIES) - (set() if options.get("checkpoint") else CHECKPOINT_MODELS) - OPT_IN_MODELS
        left_out = sorted(default - set(options["models"]))
        if left_out:
            reasons.append(f"--models leaves out {left_out}")
    return reasons


@dataclass(frozen=True)
class EpisodeRecord:
    """Outcome of one episode: success, halfway, steps taken, eq-9 reward per step, replan times [s]."""

    pairing: str
    seed: int
    success: bool
    halfway: bool
    steps: int
    final_distance_mm: float
    rewards: tuple[float, ...]
    replan_s: tuple[float, ...]


SCENE_PAIRING = "scene"
"""The pairing label of a run on a given scene (``--scene FILE``); its streams follow those of the built-in ones."""


def pairing_index(pairing: str) -> int:
    """Position of ``pairing`` in :data:`INSERTION_PAIRINGS` (:data:`SCENE_PAIRING` after them): it keys the
    pairing's planner stream and episode starts, so a run of some pairings plans from the same starts with the same
    stream as the full run."""
    return len(INSERTION_PAIRINGS) if pairing == SCENE_PAIRING else list(INSERTION_PAIRINGS).index(pairing)


def episode_seed(seed: int, pairing: str, episode: int) -> int:
    """``env.reset`` seed of episode ``episode`` of ``pairing`` in the run of ``seed``."""
    return seed * 1000 + 100 * pairing_index(pairing) + episode


def planner_rng(seed: int, pairing: str) -> np.random.Generator:
    """The iCEM sampling stream of ``pairing`` in the run of ``seed``, keyed by :func:`pairing_index`; every model's
    agent on that pairing draws the same one.

    Tagged with a trailing 1: NumPy's ``SeedSequence`` ignores trailing zeros, so ``[seed, 0]`` would be the stream
    of ``env.reset(seed=seed)``, which samples the initial state of the first episode of pairing 0.
    """
    return np.random.default_rng([seed, pairing_index(pairing), 1])


def run_episode(env: PegInsertionEnv, agent: MPCAgent, seed: int, pairing: str = "",
                observations: list | None = None) -> EpisodeRecord:
    """Roll out ``agent`` in ``env`` from the initial state of ``seed`` until success or truncation; the observation
    ``(19,)`` each action was chosen from is appended to ``observations`` when given."""
    obs, info = env.reset(seed=seed)
    if isinstance(agent.model, WorldOracle):  # the ground truth of a world with hidden state plans from it
        agent.model.follow(env.world)
    agent.reset(split_observation(obs)[0])
    first_replan = len(agent.replan_seconds)
    rewards, halfway = [], info["halfway"]
    terminated = truncated = False
    while not (terminated or truncated):
        if observations is not None:
            observations.append(obs)
        action = agent.act(split_observation(obs)[0])
        obs, reward, terminated, truncated, info = env.step(action)
        rewards.append(reward)
        halfway = halfway or info["halfway"]
    return EpisodeRecord(pairing, seed, bool(info["success"]), bool(halfway), len(rewards),
                         1e3 * info["distance"], tuple(rewards), tuple(agent.replan_seconds[first_replan:]))


def _rates(records: list[EpisodeRecord]) -> dict:
    return {
        "success_rate": float(np.mean([r.success for r in records])),
        "halfway_rate": float(np.mean([r.success or r.halfway for r in records])),
        "episodes": len(records),
    }


def _summary(records: list[EpisodeRecord], wall_s: float) -> dict:
    replans = np.concatenate([r.replan_s for r in records])
    per_shape = {}
    for pairing in dict.fromkeys(r.pairing for r in records):
        mine = [r for r in records if r.pairing == pairing]
        per_shape[pairing] = {**_rates(mine), "mean_steps": float(np.mean([r.steps for r in mine]))}
    return {
        **_rates(records),
        "replan_s": float(np.mean(replans)),
        "replan_s_p90": float(np.percentile(replans, 90)),
        "replans": int(replans.size),
        "control_steps": int(sum(r.steps for r in records)),
        "wall_s": wall_s,
        "per_shape": per_shape,
        "per_episode": [{"pairing": r.pairing, "seed": r.seed, "success": r.success, "halfway": r.halfway,
                         "steps": r.steps, "final_distance_mm": r.final_distance_mm} for r in records],
    }


def _pairing_env(budget: InsertionBudget, params: WorldParams, scene: Scene | None, pairing: str):
    """The environment of ``pairing`` (or of ``scene``) and the Table IV MPC config on it."""
    config = PegEnvConfig(pairing=None if scene is not None else pairing, max_steps=budget.max_steps)
    env = PegInsertionEnv(config, params, scene=scene,
                          observation_dtype=np.float64)  # the agent plans from the observed state
    return env, MPCConfig.table_iv(env.scale, horizon=budget.horizon, population=budget.population,
                                   iterations=budget.iterations, replan_every=budget.replan_every)


def _pairing_job(job: tuple) -> tuple[list[EpisodeRecord], float]:
    """Every episode of one (pairing, model), in order (the agent's planner stream runs on across them); the model
    is the job's, or (a worker's job: a MuJoCo model cannot be pickled) built here from the budget. Returns the
    records and the wall seconds."""
    budget, seed, device, params, model_params, scene, pairing, name, model = job
    env, config = _pairing_env(budget, params, scene, pairing)
    if model is None:
        built, gone = build_models(env.scene, model_params, replace(budget, models=(name,)), device, truth=params)
        if name not in built:
            raise ContactkitError(f"planning model {name!r} cannot be built for {pairing!r} on a worker: {gone}")
        model = built[name]
    started = time.perf_counter()
    agent = MPCAgent(model, config, goal_reward(env.scene), planner_rng(seed, pairing))
    records = []
    for episode in range(budget.episodes_per_pairing):
        records.append(run_episode(env, agent, episode_seed(seed, pairing, episode), pairing))
        r = records[-1]
        _LOG.info("%s %s episode %d: success=%s steps=%d distance=%.1f mm replan=%.3f s wall=%.0f s", name, pairing,
                  episode, r.success, r.steps, r.final_distance_mm, float(np.mean(r.replan_s)),
                  time.perf_counter() - started)
    return records, time.perf_counter() - started


def evaluate(budget: InsertionBudget, seed: int, device: str = "cpu", params: WorldParams | None = None,
             model_params: WorldParams | None = None, scene: Scene | None = None, workers: int = 1,
             ray_address: str | None = None) -> tuple[dict[str, list[EpisodeRecord]], dict, list[dict]]:
    """Run every available model on every pairing; returns (records per model, wall seconds, missing).

    The environment runs in ``params`` (default :class:`WorldParams` ``()``, the nominal world), the planning
    models assume ``model_params`` (default: ``params``). With ``scene`` (a peg-in-hole scene, e.g. from
    ``contactkit scene``) the episodes run on it alone, as the pairing :data:`SCENE_PAIRING`.

    Which models run is decided once, on the first pairing (a checkpoint that appears during the run does
    not join it halfway); a model that then cannot be built for a later pairing is an error. Each (pairing, model)
    is one job of :func:`~contactkit.eval.workers.worker_pool` (``workers`` at a time, on Ray when more than one or
    at ``ray_address``); its episodes run in order, so the records do not depend on where.
    """
    params = params or WorldParams()
    model_params = model_params or params
    records: dict[str, list[EpisodeRecord]] = {}
    wall: dict[str, float] = {}
    found: dict = {"names": None, "missing": []}
    inline = not uses_ray(workers, ray_address)

    def jobs():
        for pairing in (SCENE_PAIRING,) if scene is not None else budget.pairings:
            names = found["names"]
            pairing_scene = scene if scene is not None else PegEnvConfig(pairing=pairing).scene()
            models, gone = build_models(pairing_scene, model_params,
                                        budget if names is None else replace(budget, models=names), device,
                                        truth=params)
            if names is None:
                found["names"], found["missing"] = tuple(models), gone
            elif tuple(models) != names:
                raise ContactkitError(f"planning models {sorted(set(names) - set(models))} cannot be built for "
                                      f"{pairing!r}: {gone}")
            for name, model in models.items():
                yield (budget, seed, device, params, model_params, scene, pairing, name, model if inline else None)

    with worker_pool(workers, ray_address) as pool:
        if inline:  # one pairing's models at a time, as they are built
            runs = ((job, _pairing_job(job)) for job in jobs())
        else:  # every pairing's models checked here first; the workers build their own
            todo = list(jobs())
            runs = zip(todo, pool.imap(_pairing_job, todo), strict=True)
        for job, (recs, seconds) in progress.track(runs, "pairing × model runs"):
            records.setdefault(job[7], []).extend(recs)
            wall[job[7]] = wall.get(job[7], 0.0) + seconds
    return records, wall, found["missing"]


def _restricted(budget: InsertionBudget, episodes: int | None, pairings: tuple[str, ...] | None) -> InsertionBudget:
    """``budget`` with ``episodes`` per pairing and only ``pairings`` (each None: unchanged).

    Raises:
        InvalidInputError: fewer than one episode, or a pairing that is not one of :data:`INSERTION_PAIRINGS`.
    """
    if episodes is not None:
        if not (isinstance(episodes, int) and episodes >= 1):
            raise InvalidInputError(f"episodes per pairing must be an integer >= 1, got {episodes!r}")
        budget = replace(budget, episodes_per_pairing=episodes)
    if pairings is not None:
        unknown = sorted(set(pairings) - set(INSERTION_PAIRINGS))
        if unknown or not pairings:
            raise InvalidInputError(f"unknown pairings {unknown or list(pairings)}; "
                                    f"available: {list(INSERTION_PAIRINGS)}")
        budget = replace(budget, pairings=tuple(pairings))
    return budget


def run(quick: bool, seed: int = 0, device: str = "cpu", plots: str | Path | None = None,
        budget: InsertionBudget | None = None, checkpoint: str | Path | None = None,
        models: tuple[str, ...] | None = None, episodes: int | None = None,
        pairings: tuple[str, ...] | None = None, world: str | None = None, model_world: str | None = None,
        scene: str | Path | None = None, workers: int | None = None, ray_address: str | None = None) -> dict:
    """The experiment (harness entry point): JSON-ready results, and Fig. 4 PNGs in ``plots`` if given.

    ``budget`` replaces the quick or full budget (for smoke tests); ``checkpoint`` names the Act-FIGNet
    checkpoint to plan with (none by default: Act-FIGNet is then listed as missing); ``models``
    (names of :data:`MODEL_FACTORIES`) restricts the models planned with (the others are listed as missing).
    ``episodes`` (per pairing) and ``pairings`` (keys of :data:`INSERTION_PAIRINGS`) cut the run down, same
    agent and episode starts: the result is then ``"partial"`` (the harness does not store it as the full run).
    ``world`` (the environment, reality) and ``model_world`` (what the planning models assume): preset names or
    WorldParams JSON paths, both ``nominal`` by default (:func:`contactkit.eval.worlds.world_pair`).
    ``scene``: a Scene JSON file (``contactkit scene``) to run on instead of the five pairings (then no ``pairings``).
    ``workers`` (default 1) (pairing, model) runs at a time, on Ray when more than one or at ``ray_address``
    (:func:`evaluate`); the same records either way (the timings aside).
    """
    given_scene = None
    if scene is not None:
        from contactkit.scene import load_scene

        if pairings is not None:
            raise InvalidInputError("mpc-insertion runs on --scene or on --pairings, not both")
        given_scene = load_scene(scene)
    worlds = world_pair(world, model_world, "mpc-insertion", default_world=STORED_MODEL_WORLD)
    budget = budget or (QUICK_BUDGET if quick else FULL_BUDGET)
    if checkpoint is not None:
        budget = replace(budget, checkpoint=str(checkpoint))
    if models is not None:
        budget = replace(budget, models=known_models(models))
    budget = _restricted(budget, episodes, pairings)
    if given_scene is not None:
        budget = replace(budget, pairings=(SCENE_PAIRING,))
    if device != "cpu" and (workers or 1) > 1:
        raise InvalidInputError(f"mpc-insertion: --workers {workers} runs on CPU workers; with --device {device} "
                                "use one worker")
    records, wall, missing = evaluate(budget, seed, device, worlds.truth, worlds.model, given_scene,
                                      1 if workers is None else workers, ray_address)
    result = {
        "partial": episodes is not None or pairings is not None or scene is not None,
        "models": {name: _summary(recs, wall[name]) for name, recs in records.items()},
        "checkpoint": str(act_fignet_checkpoint(budget)) if "act-fignet" in records else None,
        "checkpoints": [RESIDUAL_CHECKPOINT.as_posix()] if "residual-mujoco" in records else [],  # repository-relative
        "missing": missing,
        "budget": asdict(budget),
        "planning_engine": {k: (v.value if hasattr(v, "value") else v) for k, v in asdict(PLANNING_ENGINE).items()},
        "task": {"clearance_m": PegEnvConfig().clearance if given_scene is None else given_scene.meta.get("clearance"),
                 "scene": None if given_scene is None else {"file": str(scene), "name": given_scene.name},
                 "success_radius_m": SUCCESS_RADIUS_M,
                 "control_dt_s": worlds.truth.control_dt},
        "setup": worlds.setup(),
    }
    if plots is not None:
        from contactkit.eval.mpc_insertion_figures import plot_reward_curves, plot_success_rates

        result["plots"] = [str(plot_success_rates(result, Path(plots) / "mpc_insertion_success.png")),
                           str(plot_reward_curves(records, budget.max_steps,
                                                  Path(plots) / "mpc_insertion_rewards.png"))]
    return result
