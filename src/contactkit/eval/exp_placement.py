"""Experiment ``placement``: stable placement under geometric uncertainty (placement paper §VI, Figs. 4–7).

For each task (:mod:`contactkit.tasks.placement`) and each hidden geometry ``θ_gt`` of its test cases, the MuJoCo
world built at ``θ_gt`` is the "real" one; a method only sees the tool state, its own references and the F/T
readings. Methods (§VI-C): ``ours`` — a belief of 10 estimates refined by gradient descent through the
differentiable contact step, acting on the cheapest (§V-B), with two additions to §V-B that the ablation row
``ours-eq11`` (the belief as written) measures: estimates that predict no contact while contact is measured are
re-drawn from the initial distribution within the same rollout budget, and the estimate acted on is chosen by costs
accumulated over time rather than the 5-step window's alone
(:func:`~contactkit.estimation.geometry_belief.descend`, :class:`~contactkit.estimation.geometry_belief.DescentConfig`).
Both ours and the particle filter compare the last 5 steps after the last 5 earlier steps that measured contact
(:func:`~contactkit.estimation.geometry_belief.window_steps`; eq 10 compares the last 5 only): the policy lifts off to
realign, so it touches in bursts, and a window of the last 5 steps forgets each touch before the next. The ablation
``ours-eq11`` drops all three (§V-B and eq 10 as written). ``particle-filter`` — 50 particles weighted by
``exp(-β c)`` with low-variance resampling, acting on the weighted mean; ``heuristic`` — descend until the contact
force exceeds a threshold. ``ours`` and ``particle-filter`` act through the same interpolating policy; all start
from ``θ_init = 0`` above the nominal goal, run ``T = 50`` steps of 50 ms and release. The error at release is the
bottom face's tilt [deg] for ``shape`` and the distance to the goal [mm] otherwise (§VI-D).

The protocol's ``n_cases`` test cases per task are drawn ``repeats`` times (3 in the full run), repeat ``r`` with the
streams of seed ``seed + r``, so that repeat ``r`` is exactly the single run of that seed. With 10 cases the mean error
of a method is decided by one or two failed placements (outcomes are bimodal: seated, or resting on a rim or edge),
and between ours and the particle filter the ordering changes from seed to seed; the headline pools all cases, and
each seed's means are reported beside it.

Output: ``tasks.TASK.METHOD.{mean, ci95, errors, seed_means}`` (``ci95``: Student-t 95 % interval of the mean over
all cases; ``seed_means``: the mean of each repeat's cases), ``tasks.TASK.unit``, ``seeds``, ``ordering_holds`` (pooled)
and ``ordering_holds_per_seed``, ``gradcheck_max_rel_err`` (finite differences of the step, with the step sweep of
:mod:`contactkit.engine.diff.gradcheck`, for every task's kind of ``θ``, in sticking, sliding and impacting contact;
per case the worst block and any input whose every probe switched the step's structure) and, with ``plots``,
``fig4_release_error.png`` and one estimate-trace figure per task (Figs. 5–7).
"""

from __future__ import annotations

import dataclasses
import enum
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from scipy import stats

from contactkit.engine.diff.gradcheck import Configuration, check_step
from contactkit.engine.diff.step import StepConfig
from contactkit.errors import InvalidInputError
from contactkit.estimation.geometry_belief import (
    HORIZON,
    DescentConfig,
    History,
    ParticleFilterConfig,
    Restart,
    TriggerConfig,
    WrenchModel,
    best_estimate,
    init_belief,
    init_particles,
    pf_update,
    triggered,
    update_belief,
    window_steps,
)
from contactkit.eval import progress
from contactkit.eval.workers import worker_pool
from contactkit.eval.worlds import CONTROL_DT_REL_TOL
from contactkit.model import ActionMode
from contactkit.mujoco.world import MujocoWorld
from contactkit.physics import WorldParams, load_world
from contactkit.rotations import quat_conj, quat_mul, quat_to_rotvec, rotvec_to_quat
from contactkit.tasks.placement import (
    WORLD,
    PlacementTask,
    TaskName,
    diff_scene,
    goal_pose,
    make_task,
    release_error,
    sample_cases,
    task_scene,
)
from contactkit.tasks.placement_policy import PolicyConfig, descend, policy


class Method(str, enum.Enum):
    """The compared methods (§VI-C)."""

    OURS = "ours"
    PARTICLE_FILTER = "particle-filter"
    HEURISTIC = "heuristic"
    OURS_EQ11 = "ours-eq11"
    """Ablation: ours as §V-B and eq 10 write it — no restarts, the estimate acted on chosen by the window's cost
    ``c_t`` alone, the last ``H`` steps only (the same gradient steps and cost ties as ``ours``)."""


COMPARED = (Method.OURS, Method.PARTICLE_FILTER, Method.HEURISTIC)
"""The methods of the issue's ordering (§VI-C); :attr:`Method.OURS_EQ11` is an ablation."""


@dataclass(frozen=True)
class PlacementConfig:
    """Budget and settings of the experiment.

    Attributes:
        tasks: task names. methods: the methods run (:class:`Method` values). n_cases: test cases per task.
        repeats: independent draws of the ``n_cases`` cases (repeat ``r`` uses seed ``seed + r``'s streams).
        steps: ``T``. horizon: ``H``. n_estimates: ``N`` of ours.
        memory: earlier steps with measured contact that the estimators' window keeps before the last ``H``
            (:func:`~contactkit.estimation.geometry_belief.window_steps`; 0: eq 10 as written). Both ours and the
            particle filter compare the same steps (``ours-eq11`` the last ``H`` only).
        restart: ours re-draws estimates that predict no contact while contact is measured
            (:func:`~contactkit.estimation.geometry_belief.descend`).
        workers: processes that run episodes in parallel (1, the default, as for every command: in this process,
            no Ray; ``--workers N`` sets it); results do not depend on it.
        descent, pf, trigger, policy, step: the methods' and the model's settings.
        world: the MuJoCo "real" world's parameters (default the task's :data:`~contactkit.tasks.placement.WORLD`).
        model_world: the parameters the methods' differentiable model assumes (default the same).
    """

    tasks: tuple[str, ...] = tuple(t.value for t in TaskName)
    methods: tuple[str, ...] = tuple(m.value for m in Method)
    n_cases: int = 10
    repeats: int = 3
    steps: int = 50
    horizon: int = HORIZON
    memory: int = HORIZON
    n_estimates: int = 10
    restart: bool = True
    workers: int = 1
    descent: DescentConfig = DescentConfig()
    pf: ParticleFilterConfig = ParticleFilterConfig()
    trigger: TriggerConfig = TriggerConfig()
    policy: PolicyConfig = PolicyConfig()
    step: StepConfig = field(default_factory=StepConfig)
    world: WorldParams = WORLD
    model_world: WorldParams = WORLD


class Stream(enum.IntEnum):
    """The last entry of every random-generator key of the experiment: nonzero and distinct per purpose.

    NumPy's ``SeedSequence`` ignores trailing zeros (``[s, t]`` and ``[s, t, 0, 0]`` seed the same stream), so keys
    that differ only by appended zeros would share draws: the test cases of a task and the first case's episode of the
    first method did, which put a task's hidden geometry into that method's initial belief.
    """

    CASES = 1
    EPISODE = 2
    GRADCHECK = 3


def stream_key(seed: int, *indices: int, stream: Stream) -> list[int]:
    """``[seed, *indices, stream]``: the generator key of one purpose (:class:`Stream`)."""
    return [seed, *indices, int(stream)]


FULL = PlacementConfig()
QUICK = PlacementConfig(methods=tuple(m.value for m in COMPARED), n_cases=1, repeats=1, steps=25)


@dataclass(frozen=True)
class Episode:
    """One closed-loop placement.

    Attributes:
        error: release error [deg or mm]. estimates: ``(T, P)`` the estimate acted on at each step.
        particles: ``(T, N, P)`` the belief's estimates or the filter's particles (empty for the heuristic).
        wrench: ``(T, 6)`` the readings. theta_gt: ``(P,)``.
    """

    error: float
    estimates: np.ndarray
    particles: np.ndarray
    wrench: np.ndarray
    theta_gt: np.ndarray


def _history(records: list[tuple], horizon: int, memory: int) -> History:
    forces = np.array([np.linalg.norm(r[6][:3]) for r in records])
    rows = [records[i] for i in window_steps(forces, horizon, memory)]
    cols = list(zip(*rows, strict=True)) if rows else [[]] * 7
    widths = (3, 4, 3, 3, 3, 4, 6)
    return History(*(np.asarray(c, dtype=np.float64).reshape(-1, w) for c, w in zip(cols, widths, strict=True)))


def run_episode(task: PlacementTask, method: Method, theta_gt: np.ndarray, config: PlacementConfig,
                rng: np.random.Generator, trace: list | None = None) -> Episode:
    """Place the object in the MuJoCo world holding ``θ_gt`` with ``method``; see the module docstring.

    ``trace``, if given, receives ``(state, reading)`` for the start (reading None) and after every step (the
    MuJoCo :class:`~contactkit.state.BodyState`, world frame; the ``(6,)`` F/T reading of that step), e.g. to render
    the rollout (``make demo``); the episode is the same with or without it.
    """
    world = MujocoWorld(task_scene(task, theta_gt), config.world, rng=rng)  # rng: F/T noise of a noisy world
    state = world.reset()
    if trace is not None:
        trace.append((state, None))
    ref_pos, ref_quat = state.pos.copy(), state.quat.copy()
    model = WrenchModel(diff_scene(task, config.model_world), config.step)
    theta_init = np.zeros(task.n_params)
    belief = init_belief(theta_init, task.init_std, config.n_estimates, rng)
    restart = Restart(theta_init, task.init_std) if config.restart and method is Method.OURS else None
    descent = config.descent if method is Method.OURS else dataclasses.replace(config.descent, evidence_decay=0.0)
    memory = 0 if method is Method.OURS_EQ11 else config.memory
    particles = init_particles(theta_init, task.init_std, config.pf, rng)
    records, estimates, clouds, readings, fired = [], [], [], [], False
    estimate = theta_init
    for _ in range(config.steps):
        history = _history(records, config.horizon, memory)
        if method in (Method.OURS, Method.OURS_EQ11):
            belief = update_belief(model, history, belief, descent, restart, rng)
            estimate, cloud = best_estimate(belief), belief.thetas
        elif method is Method.PARTICLE_FILTER:
            particles, estimate, _ = pf_update(model, history, particles, config.pf, rng)
            cloud = particles.thetas
        else:
            cloud = np.zeros((0, task.n_params))
        if method is Method.HEURISTIC:
            fired = fired or bool(readings and triggered(readings[-1], config.trigger))
            if not fired:
                ref_pos, ref_quat = descend(ref_pos, ref_quat, config.policy)
        else:
            ref_pos, ref_quat = policy(task, ref_pos, ref_quat, state.pos, state.quat, estimate, config.policy)
        delta = np.concatenate([ref_pos - state.pos, quat_to_rotvec(quat_mul(ref_quat, quat_conj(state.quat)))])
        result = world.step(delta, ActionMode.POSE_DELTA)
        records.append((state.pos, state.quat, state.lin_vel, state.ang_vel, ref_pos, ref_quat, result.wrench))
        estimates.append(estimate)
        clouds.append(cloud)
        readings.append(result.wrench)
        state = result.state
        if trace is not None:
            trace.append((state, result.wrench))
    return Episode(release_error(task, state.pos, state.quat, theta_gt), np.array(estimates), np.array(clouds),
                   np.array(readings), np.asarray(theta_gt))


def interval95(values: np.ndarray) -> list[float]:
    """Student-t 95 % confidence interval ``[lo, hi]`` of the mean of ``values`` (a point for one value)."""
    values = np.asarray(values, dtype=np.float64)
    mean = float(values.mean())
    if len(values) < 2:
        return [mean, mean]
    half = float(stats.t.ppf(0.975, len(values) - 1) * values.std(ddof=1) / np.sqrt(len(values)))
    return [mean - half, mean + half]


def gradcheck_configurations(task: PlacementTask, rng: np.random.Generator) -> list[Configuration]:
    """Base points of the step's gradient check for one task: pressed and sticking, sliding, and impacting contact.

    The tool is at the goal of a nearby geometry, turned by a small random rotation; ``θ`` is a small random value.
    """
    theta = rng.uniform(-5e-4, 5e-4, task.n_params)
    goal, quat = goal_pose(task, theta)
    quat = quat_mul(rotvec_to_quat(rng.uniform(-4e-3, 4e-3, 3)), quat)
    down = np.array([0.0, 0.0, 1.0])
    lateral = np.array([1.0, 0.5, 0.0]) / np.sqrt(1.25)
    zero = np.zeros(3)
    return [
        Configuration(goal - 1e-4 * down, quat, zero, zero, goal - 4e-3 * down + 1e-3 * lateral, quat, theta),
        Configuration(goal - 1e-4 * down, quat, 0.03 * lateral, zero, goal - 4e-3 * down + 0.02 * lateral, quat, theta),
        Configuration(goal + 4e-4 * down, quat, -0.02 * down, zero, goal - 5e-3 * down, quat, theta),
    ]


def gradient_checks(tasks: list[PlacementTask], config: PlacementConfig, seed: int, modes: int = 3) -> dict:
    """Worst relative error of the step's gradients per task and contact mode (the first ``modes`` of sticking,
    sliding, impact), and overall."""
    rng = np.random.default_rng(stream_key(seed, stream=Stream.GRADCHECK))
    out = {}
    for task in tasks:
        scene = diff_scene(task, config.model_world)
        pairs = list(zip(("sticking", "sliding", "impact"), gradcheck_configurations(task, rng), strict=True))
        for mode, base in pairs[:modes]:
            check = check_step(scene, config.step, base)
            worst = max(check.rel_err, key=check.rel_err.get, default=None)
            out[f"{task.name.value}/{mode}"] = {"max_rel_err": check.max_rel_err, "worst_block": worst,
                                               "toi": check.toi, "n_contacts": check.n_contacts,
                                               "finite": check.finite(), "switching": list(check.switching)}
    return {"cases": out, "max_rel_err": max(v["max_rel_err"] for v in out.values())}


def _episode_job(job: tuple) -> Episode:
    """One episode (in a worker of one torch thread: the batches are small)."""
    name, method, theta, config, seed = job
    return run_episode(make_task(name), Method(method), theta, config, np.random.default_rng(seed))


def _run_jobs(jobs: list[tuple], workers: int, ray_address: str | None = None) -> list[Episode]:
    with worker_pool(workers, ray_address) as pool:
        return list(progress.track(pool.map(_episode_job, jobs), "episodes", total=len(jobs)))


def run_experiment(config: PlacementConfig, seed: int = 0, plots: str | Path | None = None,
                   ray_address: str | None = None) -> dict:
    """All tasks × methods × cases of seeds ``seed .. seed + repeats - 1`` (module docstring); figures in ``plots``
    when given. Episodes run ``config.workers`` at a time (:func:`~contactkit.eval.workers.worker_pool`; on the Ray
    cluster at ``ray_address`` if given); the result does not depend on where."""
    if config.n_cases < 1 or config.repeats < 1:
        raise InvalidInputError(f"placement: n_cases and repeats must be at least 1, got {config.n_cases} and "
                                f"{config.repeats}")
    result, episodes = {"tasks": {}}, {}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small batched linear algebra: threads only contend on a shared machine
    try:
        tasks = [make_task(name) for name in config.tasks]
        ids = [list(TaskName).index(task.name) for task in tasks]  # a task's streams do not depend on the others run
        seeds = [seed + r for r in range(config.repeats)]
        cases = [np.concatenate([sample_cases(task, config.n_cases, np.random.default_rng(
            stream_key(s, i, stream=Stream.CASES))) for s in seeds]) for i, task in zip(ids, tasks, strict=True)]
        methods = [Method(name) for name in config.methods]
        n = config.n_cases
        jobs = [(task.name.value, method.value, theta, config,
                 stream_key(seeds[k // n], ids[t], list(Method).index(method), k % n, stream=Stream.EPISODE))
                for t, task in enumerate(tasks) for method in methods for k, theta in enumerate(cases[t])]
        done = iter(_run_jobs(jobs, config.workers, ray_address))
        for t, task in enumerate(tasks):
            entry = {"unit": "deg" if task.angle_error else "mm", "params": list(task.param_names),
                     "theta_gt": cases[t].tolist()}
            for method in methods:
                runs = [next(done) for _ in cases[t]]
                errors = np.array([r.error for r in runs])
                entry[method.value] = {"mean": float(errors.mean()), "ci95": interval95(errors),
                                       "errors": errors.tolist(),
                                       "seed_means": errors.reshape(len(seeds), n).mean(axis=1).tolist()}
                episodes[(task.name.value, method.value)] = runs
            result["tasks"][task.name.value] = entry
        checks = gradient_checks(tasks, config, seed, modes=3 if config.n_cases > 1 else 1)
    finally:
        torch.set_num_threads(threads)
    result["gradcheck_max_rel_err"] = checks["max_rel_err"]
    result["gradcheck"] = checks["cases"]
    result["seeds"] = seeds
    if all(m in methods for m in COMPARED):
        result["ordering_holds"] = {name: _orders(e)[0] for name, e in result["tasks"].items()}
        result["ordering_holds_per_seed"] = {name: [_orders(e, r)[0] for r in range(len(seeds))]
                                             for name, e in result["tasks"].items()}
    result["config"] = {"n_cases": config.n_cases, "repeats": config.repeats, "steps": config.steps,
                        "horizon": config.horizon, "memory": config.memory,
                        "n_estimates": config.n_estimates, "n_particles": config.pf.n_particles,
                        "methods": list(config.methods), "restart": config.restart,
                        "descent": dataclasses.asdict(config.descent)}
    if config.world != WORLD or config.model_world != WORLD:  # the stored run's config keys stay as they were
        result["config"]["worlds"] = {"truth": config.world.to_dict(), "model": config.model_world.to_dict()}
    if plots is not None:
        from contactkit.eval.placement_figures import plot_placement

        result["figures"] = plot_placement(result, episodes, Path(plots))
    return result


def _orders(entry: dict, repeat: int | None = None) -> tuple[bool | None, bool | None]:
    """``(ours < PF < heuristic, ours lowest)`` by mean error of one task's entry, over all cases or (``repeat``) one
    seed's; None where one did not run."""
    if not all(m.value in entry for m in COMPARED):
        return None, None
    ours, pf, heuristic = (entry[m.value]["mean"] if repeat is None else entry[m.value]["seed_means"][repeat]
                           for m in COMPARED)
    return bool(ours < pf < heuristic), bool(ours < min(pf, heuristic))


def markdown(result: dict) -> str:
    """Markdown tables of the release errors: per task, each method's mean [95 % interval] over all cases and the
    ordering; then each seed's means of the compared methods and whether the ordering holds for that seed alone."""
    tasks = result["tasks"]
    methods = [m.value for m in Method if any(m.value in e for e in tasks.values())]
    lines = ["| task | unit | " + " | ".join(methods) + " | ours < PF < heuristic | ours lowest |",
             "|---|---|" + "---:|" * len(methods) + "---|---|"]
    for name, entry in tasks.items():
        cells = [f"{entry[m]['mean']:.3g} [{entry[m]['ci95'][0]:.2g}, {entry[m]['ci95'][1]:.2g}]" if m in entry else "–"
                 for m in methods]
        lines.append(f"| {name} | {entry['unit']} | " + " | ".join(cells)
                     + "".join(f" | {'–' if v is None else v}" for v in _orders(entry)) + " |")
    seeds, n = result.get("seeds", []), result["config"]["n_cases"]
    over = f"{n} cases per task and seed, seeds {seeds}, pooled (the first table) and per seed (the second, where " \
        "the ordering of two close methods changes with the seed)" if len(seeds) > 1 else f"{n} cases per task"
    lines += ["", f"Mean [Student-t 95 % interval] of the error at release over {over}; gradient check: worst "
                  f"relative error {result['gradcheck_max_rel_err']:.2g} (bar ≤ 1e-4). The issue's bar is the full "
                  "ordering; the paper's claim (§VI-E) is ours lowest on average, and it notes that the particle "
                  "filter does not always beat the heuristic."]
    compared = [m.value for m in COMPARED]
    if len(seeds) > 1 and all(all(m in e for m in compared) for e in tasks.values()):
        lines += ["", "| task | seed | " + " | ".join(compared) + " | ours < PF < heuristic |",
                  "|---|---:|" + "---:|" * len(compared) + "---|"]
        for name, entry in tasks.items():
            for r, s in enumerate(seeds):
                cells = " | ".join(f"{entry[m]['seed_means'][r]:.3g}" for m in compared)
                lines.append(f"| {name} | {s} | {cells} | {_orders(entry, r)[0]} |")
    return "\n".join(lines) + "\n"


def run(quick: bool, seed: int = 0, device: str = "cpu", plots: str | Path | None = None,
        config: PlacementConfig | None = None, world: str | None = None, model_world: str | None = None,
        workers: int | None = None, ray_address: str | None = None) -> dict:
    """Harness entry point: the quick or full budget (``config`` replaces it, for smoke tests). CPU only.

    ``world`` (the MuJoCo "real" world) and ``model_world`` (what the estimators' differentiable model assumes):
    preset names or WorldParams JSON paths (:func:`contactkit.physics.load_world`); each defaults to the task's
    :data:`~contactkit.tasks.placement.WORLD`, as the stored run. ``workers`` (default the config's) episodes run
    at a time, on Ray when more than one or when ``ray_address`` names a cluster; the same result either way.
    """
    del device  # the contact step runs on the CPU (float64, small batched systems)
    config = config or (QUICK if quick else FULL)
    if world is not None:
        config = dataclasses.replace(config, world=load_world(world))
    if model_world is not None:
        config = dataclasses.replace(config, model_world=load_world(model_world))
    if not math.isclose(config.world.control_dt, config.model_world.control_dt, rel_tol=CONTROL_DT_REL_TOL):
        raise InvalidInputError(f"placement: --world steps every {config.world.control_dt:g} s but --model-world "
                                f"every {config.model_world.control_dt:g} s; give both the same timestep * "
                                "n_substeps")
    if workers is not None:
        config = dataclasses.replace(config, workers=workers)
    return run_experiment(config, seed, plots, ray_address)
