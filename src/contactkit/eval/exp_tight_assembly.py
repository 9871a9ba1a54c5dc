"""Experiment ``tight-assembly``: data-driven simulation of tight-tolerance assembly (data-driven simulation paper
§V, Figs. 8–11, 14; issue 17 part 5).

Per task (the paper's peg-in-hole at 32.5 µm radial clearance and M48×5 bolting at 0.2 mm,
:mod:`contactkit.assembly.task`): reference data of the high-fidelity simulation (the stand-in for the paper's
measured wrenches, :mod:`contactkit.assembly.reference_data`), split 70/30 by trajectory; the clustering networks
fitted by CMA-ES on the training split (eq 7, :mod:`contactkit.assembly.cma_fit`); the C-space model ``h(q)`` (§IV,
:mod:`contactkit.assembly.cspace`); then on the test split:

a. one-step contact-force RMSE (Fig. 9): ours (learned clustering, Algorithm 1 with the C-space row), K-means
   (Mc = 12) with box-friction PGS, and MuJoCo on the same parts (:mod:`contactkit.assembly.mujoco_baseline`, at
   its defaults and at the tight-insertion benchmark's fastest setting), each from the recorded state under the
   recorded setpoint;
b. complete simulation from each test trajectory's initial state under its recorded setpoints (Fig. 10): force
   RMSE, and the exact penetration of the tool's nodes with and without the C-space model (Fig. 8);
c. time per 10 ms step by stage (Fig. 11), one thread (torch and numba);
d. generalisation (Fig. 14): the M48 clustering networks applied unchanged to the Table II pairs, each with its
   own depth network and C-space model (trained here: purely kinematic, §V-E) and its own reference data;
e. robustness (§V-F stand-in): ``robustness_s`` simulated seconds of random arbitrary commands on the nut.

Force RMSE: ``sqrt(mean_t |f_sim,t − f_ref,t|²)`` over the three force components [N] (the contact force of a
step is the mean over its 10 ms). Steps where a simulator failed (MuJoCo's NaN) are left out and counted.
Energy (e): the tool's kinetic energy plus the coupling springs' ``½k|e|² + ½k_r|φ|²``; a setpoint's jump adds
energy through the coupling (the operator's work); ``energy_growth`` [J] is the sum over steps of the change
within each step (the simulator's own contribution: ≤ 0 for a passive simulation).

JSON: ``tasks.{peg-in-hole,bolting}.{ours_force_rmse_N, kmeans_pgs_force_rmse_N, mujoco_force_rmse_N,
complete_sim_force_rmse_N, max_penetration_m, max_penetration_no_cspace_m, ms_per_step, ms_per_stage}`` (and more),
``generalization[].{diameter_mm, pitch_mm, ours_force_rmse_N, kmeans_pgs_force_rmse_N}``,
``robustness.{sim_s, max_penetration_m, energy_growth, nan}``, ``checkpoints`` (the committed depth networks of the
two static parts, hashed into the provenance by the harness). A piece of the pipeline that is missing is named in
``missing`` and its numbers are None (the result is then ``partial``).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from contactkit.errors import InvalidInputError

TASKS = ("peg-in-hole", "bolting")
"""The paper's two tasks (:class:`contactkit.assembly.task.AssemblyKind` values)."""
PAPER = {"peg-in-hole": {"ours_force_rmse_N": 1.37, "kmeans_pgs_force_rmse_N": 16.27,
                         "complete_sim_force_rmse_N": 1.63, "ms_per_step": 3.2},
         "bolting": {"ours_force_rmse_N": 0.72, "kmeans_pgs_force_rmse_N": 5.28,
                     "complete_sim_force_rmse_N": 1.01, "ms_per_step": 5.6}}
"""The paper's figures (§V-C, §V-D) for the markdown table."""


@dataclass(frozen=True)
class TightAssemblyConfig:
    """Budget of the experiment.

    Attributes:
        tasks: task names (:data:`TASKS`). reference_steps: 10 ms reference rows per task (issue: ≥ 20k).
        trajectory_rows: rows per reference trajectory (None: the reference module's standard length).
        reference_dir: a folder of reference files ``TASK.h5`` (``contactkit assembly reference``) to read instead
            of simulating (their first trajectories up to ``reference_steps`` rows; a file made for other meshes is
            refused); None, or a task without a file: simulated here.
        train_fraction: share of trajectories for training. cma_generations, cma_population: CMA-ES budget;
        cma_steps: training rows per loss evaluation. cspace_samples, cspace_steps: C-space data and training.
        eval_steps: test rows of the one-step comparison (ours and K-means; all when fewer);
        mujoco_steps: test rows MuJoCo steps at its defaults (the peg: ~0.1 s each, the nut: ~0.4 s);
        mujoco_fastest_steps: those at the fastest setting (the nut's 3,000 contacts: ~40 s each on the loaded
        2-core machine); mujoco: which MuJoCo settings
        (``"default"``, ``"fastest"``); mujoco_tasks: the tasks MuJoCo runs on (the bolt and nut need CoACD
        first: minutes, cached after). complete_trajectories, complete_steps: test trajectories simulated
        from their start (b) and the most steps of each. penetration_every: exact penetration every this many
        steps (b, e). pairs: Table II pairs of (d) (0: none); pair_reference_steps, depth_steps: their reference
        rows and depth-network training steps. robustness_s: simulated seconds of (e).
    """

    tasks: tuple[str, ...] = TASKS
    reference_steps: int = 20_000
    trajectory_rows: int | None = None
    reference_dir: str | None = None
    train_fraction: float = 0.7
    cma_generations: int = 40
    cma_population: int = 12
    cma_steps: int = 300
    cspace_samples: int = 20_000
    cspace_steps: int = 6000
    eval_steps: int = 3000
    mujoco_steps: int = 300
    mujoco_fastest_steps: int = 20
    mujoco: tuple[str, ...] = ("default", "fastest")
    mujoco_tasks: tuple[str, ...] = TASKS
    complete_trajectories: int = 6
    complete_steps: int = 600
    penetration_every: int = 1
    pairs: int = 10
    pair_reference_steps: int = 1000
    depth_steps: int = 20_000
    robustness_s: float = 600.0

    def __post_init__(self):
        bad = [t for t in self.tasks if t not in TASKS]
        if bad:
            raise InvalidInputError(f"tight-assembly: unknown tasks {bad}; one of {list(TASKS)}")
        if not 0.0 < self.train_fraction < 1.0:
            raise InvalidInputError(f"tight-assembly: train_fraction must be in (0, 1), got {self.train_fraction}")
        ints = ("reference_steps", "cma_generations", "cma_population", "cma_steps", "cspace_samples",
                "cspace_steps", "eval_steps", "complete_trajectories", "complete_steps", "penetration_every")
        low = [f"{n}={getattr(self, n)}" for n in ints if getattr(self, n) < 1]
        if low or self.robustness_s < 0 or self.pairs < 0 or min(self.mujoco_steps, self.mujoco_fastest_steps) < 0:
            raise InvalidInputError(f"tight-assembly: settings must be positive, got {low or self}")
        unknown = [m for m in self.mujoco if m not in ("default", "fastest")]
        if unknown:
            raise InvalidInputError(f"tight-assembly: unknown MuJoCo settings {unknown}; 'default' or 'fastest'")


FULL = TightAssemblyConfig()
"""The full run. Estimated from the medium runs on the loaded 2-core machine (not run in full yet): reference data
~25 min per task (20k rows), CMA-ES ~20 min per task, C-space ~3 min per model, MuJoCo's fastest setting up to
~15 min on the nut (≈ 40 s per step), ten Table II pairs ~10 min each, the 10 min robustness run ~15 min."""
QUICK = TightAssemblyConfig(reference_steps=90, trajectory_rows=30, cma_generations=2, cma_population=4, cma_steps=8,
                            cspace_samples=300, cspace_steps=100, eval_steps=10, mujoco_steps=3, mujoco=("default",),
                            mujoco_tasks=("peg-in-hole",), complete_trajectories=1, complete_steps=10,
                            penetration_every=5, pairs=1, pair_reference_steps=30, depth_steps=200, robustness_s=0.3)
"""``--quick``: the whole pipeline on tiny budgets (< 2 min; its numbers show that it runs, not how well)."""


class Missing(Exception):
    """A module of the pipeline that is not in the tree yet (named in the result's ``missing``)."""


def _import(name: str, owner: str):
    import importlib

    try:
        return importlib.import_module(f"contactkit.assembly.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"contactkit.assembly.{name}":
            raise
        raise Missing(f"contactkit.assembly.{name} ({owner}) is not in the tree") from None


def force_rmse(sim: np.ndarray, ref: np.ndarray) -> tuple[float, int]:
    """``(RMSE [N], failed rows)``: ``sqrt(mean |f_sim − f_ref|²)`` over rows ``(T, ≥3)`` where ``sim`` is finite
    (force = the first three columns); NaN when no row is finite."""
    sim, ref = np.asarray(sim, np.float64)[:, :3], np.asarray(ref, np.float64)[:, :3]
    ok = np.all(np.isfinite(sim), axis=1)
    if not ok.any():
        return math.nan, int(len(sim))
    return float(np.sqrt(np.mean(np.sum((sim[ok] - ref[ok]) ** 2, axis=1)))), int((~ok).sum())


def sample_rows(episodes: list, n: int, rng: np.random.Generator) -> list[tuple[int, int]]:
    """``n`` (episode, step) pairs drawn without replacement from ``episodes`` (all when fewer), in order."""
    rows = [(e, t) for e, ep in enumerate(episodes) for t in range(ep.n_steps)]
    if len(rows) <= n:
        return rows
    pick = np.sort(rng.choice(len(rows), size=n, replace=False))
    return [rows[i] for i in pick]


def _row(episode, t: int, setpoint_quat):
    """(state s_t, setpoint pos (3,), setpoint quat (4,), recorded contact wrench (6,)) of one test row."""
    from contactkit.state import BodyState

    state = BodyState(episode.pos[t], episode.quat[t], episode.lin_vel[t], episode.ang_vel[t])
    return state, episode.action[t, :3], setpoint_quat(episode.action[t:t + 1])[0], episode.wrench[t]


@dataclass(frozen=True, eq=False)
class Pipeline:
    """What the sections share for one task: the task, coupling gains, the reference splits, ours (learned
    clustering), the K-means baseline, the C-space model, the rotation-vector → quaternion helper and the fit's
    facts."""

    task: object
    gains: object
    train: list
    test: list
    ours: object
    kmeans: object
    cspace: object
    setpoint_quat: Callable
    fit: dict


def _fit_clustering(task, train: list, gains, config: TightAssemblyConfig, rng: np.random.Generator):
    """The learned clustering fitted by CMA-ES on ``cma_steps`` contact rows of ``train`` (eq 7;
    :mod:`contactkit.assembly.cma_fit`, H3), inputs scaled by their ranges over those rows (§V-B). A diverged fit
    keeps its best net and says so in the returned facts."""
    cma_fit = _import("cma_fit", "H3")
    clustering = _import("clustering", "H3")
    nc, _ = _configs()
    rows = cma_fit.rows_from_episodes(train, config.cma_steps, rng)
    lo, hi = cma_fit.input_ranges(task, rows, gains, nc)
    net0 = clustering.ClusteringNet(clustering.init_params(rng), lo, hi)
    fit_config = cma_fit.FitConfig(generations=config.cma_generations, popsize=config.cma_population)
    start = time.perf_counter()
    try:
        res = cma_fit.fit_clustering(task, rows, net0, gains, nc, rng, fit_config)
        net, info = res.net, {"loss_N2": res.history.tolist(), "evaluations": res.evaluations, "diverged": None}
    except cma_fit.FitDiverged as exc:
        net, info = exc.best, {"loss_N2": exc.history.tolist(), "diverged": str(exc)}
    info.update(rows=len(rows), generations=config.cma_generations, population=config.cma_population,
                seconds=time.perf_counter() - start)
    return clustering.LearnedClustering(net), info


def _train_cspace(task, config: TightAssemblyConfig, rng: np.random.Generator):
    """The C-space classifier ``h(q)`` of ``task`` (§IV-A, §V-B; :mod:`contactkit.assembly.cspace`, H4) and its
    training report."""
    import torch

    cspace = _import("cspace", "H4")
    start = time.perf_counter()
    data = cspace.cspace_dataset(task, config.cspace_samples, rng)
    model, report = cspace.train_cspace(task, data, cspace.TrainSettings(steps=config.cspace_steps),
                                        torch.Generator().manual_seed(int(rng.integers(2**31))))
    return model, {**dataclasses.asdict(report), "seconds": time.perf_counter() - start}


def _reference(reference, task, n_rows: int, trajectory_rows: int | None, rng: np.random.Generator) -> list:
    """``n_rows`` reference rows: :func:`~contactkit.assembly.reference_data.reference_dataset` (trajectories of
    its standard length), or with ``trajectory_rows`` trajectories that short, the task's kinds in turn."""
    if trajectory_rows is None:
        return reference.reference_dataset(task, n_rows, rng)
    plan = reference.episode_plan(task, max(n_rows // trajectory_rows, 1) * reference.TRAJECTORY_ROWS, rng)
    return [reference.reference_episode(task, kind, seed, trajectory_rows)[0] for kind, seed, _ in plan]


def prepare(task, config: TightAssemblyConfig, rng: np.random.Generator, *, clustering=None,
            reference_steps: int | None = None) -> Pipeline:
    """Reference data (split by trajectory), clustering (fitted here, or ``clustering`` as given: the M48 one for
    the Table II pairs), K-means and the C-space model of ``task``."""
    from contactkit.assembly.coupling import default_gains
    from contactkit.assembly.task import assembly_task

    reference = _import("reference_data", "H2")
    kmeans = _import("kmeans", "H3")
    gains = default_gains(task)
    n_rows = reference_steps or config.reference_steps
    path = Path(config.reference_dir or "", f"{task.kind.value}.h5")
    if config.reference_dir is not None and task.name == assembly_task(task.kind).name and path.is_file():
        episodes = reference.read_reference(path, task)
        keep = np.searchsorted(np.cumsum([e.n_steps for e in episodes]), n_rows) + 1
        episodes = episodes[:keep]
    else:
        episodes = _reference(reference, task, n_rows, config.trajectory_rows, rng)
    train, test = reference.split_episodes(episodes, config.train_fraction, rng)
    fit = {}
    if clustering is None:
        clustering, fit = _fit_clustering(task, train, gains, config, rng)
    km = kmeans.KMeansClustering(mc=12, seed=int(rng.integers(2**31)))
    model, fit["cspace"] = _train_cspace(task, config, rng)
    return Pipeline(task, gains, train, test, clustering, km, model, reference.setpoint_quat, fit)


def _configs():
    from contactkit.assembly.simulator import SimConfig, SolverKind

    return SimConfig(solver=SolverKind.NC_SOR), SimConfig(solver=SolverKind.PGS)


def one_step(p: Pipeline, episodes: list, config: TightAssemblyConfig, rng: np.random.Generator,
             mujoco: tuple[str, ...] = ()) -> tuple[dict, dict]:
    """(a) The one-step contact force of ours, K-means/PGS and MuJoCo from recorded test rows (Fig. 9).

    Returns ``(numbers, traces)``: RMSEs [N] and failures; traces hold the reference and simulated forces."""
    from contactkit.assembly import mujoco_baseline as mjb
    from contactkit.assembly.simulator import step

    nc, pgs = _configs()
    rows = sample_rows(episodes, config.eval_steps, rng)
    ref, ours, km = (np.zeros((len(rows), 6)) for _ in range(3))
    for i, (e, t) in enumerate(rows):
        state, sp_pos, sp_quat, ref[i] = _row(episodes[e], t, p.setpoint_quat)
        ours[i] = step(p.task, state, sp_pos, sp_quat, p.gains, p.ours, nc, p.cspace).wrench
        km[i] = step(p.task, state, sp_pos, sp_quat, p.gains, p.kmeans, pgs, None).wrench
    out = {"ours_force_rmse_N": force_rmse(ours, ref)[0], "kmeans_pgs_force_rmse_N": force_rmse(km, ref)[0],
           "one_step_rows": len(rows)}
    traces = {"rows": rows, "reference": ref, "ours": ours, "kmeans_pgs": km}
    for name in mujoco:
        n = min(config.mujoco_steps if name == "default" else config.mujoco_fastest_steps, len(rows))
        settings = mjb.DEFAULTS if name == "default" else mjb.FASTEST
        key = "mujoco_force_rmse_N" if name == "default" else "mujoco_fastest_force_rmse_N"
        if n == 0:
            out[key], out[f"{key}_failure"] = math.nan, "not run: no rows in this budget"
            continue
        sub = np.unique(np.linspace(0, len(rows) - 1, n).round().astype(int))
        try:
            steps = [mjb.mujoco_step(p.task, *_row(episodes[rows[i][0]], rows[i][1], p.setpoint_quat)[:3], p.gains,
                                     settings) for i in sub]
        except Exception as exc:  # CoACD or MuJoCo's compiler: the baseline could not be built
            out[key], out[f"{key}_failure"] = math.nan, f"{type(exc).__name__}: {str(exc)[:300]}"
            continue
        sim = np.array([s.wrench for s in steps])
        out[key], failed = force_rmse(sim, ref[sub])
        out[f"{key}_failures"] = failed
        tag = key.replace("_force_rmse_N", "")  # ours and K-means on MuJoCo's rows too: like for like
        out[f"{tag}_rows"] = len(sub)
        out[f"{tag}_rows_ours_force_rmse_N"] = force_rmse(ours[sub], ref[sub])[0]
        out[f"{tag}_rows_kmeans_pgs_force_rmse_N"] = force_rmse(km[sub], ref[sub])[0]
        reasons = [s.failure for s in steps if s.failure]
        if reasons:
            out[f"{key}_failure"] = reasons[0]
        out[f"{key.replace('force_rmse_N', 'ms_per_step')}"] = 1e3 * float(np.mean([s.seconds for s in steps]))
        traces[f"mujoco_{name}"], traces[f"mujoco_{name}_rows"] = sim, sub
    return out, traces


def penetration(task, state) -> tuple[float, float]:
    """``(max, mean)`` penetration [m] of the tool's nodes into the static part (exact signed distance of its
    mesh); the mean is over the nodes that penetrate (0 when none do) — Fig. 8's ``|d_mean|``."""
    from contactkit.geometry.signed_distance import signed_distance
    from contactkit.rotations import quat_to_mat

    world = task.nodes @ quat_to_mat(np.asarray(state.quat, np.float64)).T + np.asarray(state.pos, np.float64)
    d = signed_distance(task.static, world)
    inside = -d[d < 0]
    return (float(inside.max()), float(inside.mean())) if len(inside) else (0.0, 0.0)


def _rollout(p: Pipeline, episode, n: int, clustering, config, cspace, every: int) -> dict:
    from contactkit.assembly.simulator import simulate
    from contactkit.state import BodyState

    initial = BodyState(episode.pos[0], episode.quat[0], episode.lin_vel[0], episode.ang_vel[0])
    steps = simulate(p.task, initial, episode.action[:n, :3], p.setpoint_quat(episode.action[:n]), p.gains,
                     clustering, config, cspace)
    pen = np.array([penetration(p.task, s.state) if k % every == 0 else (np.nan, np.nan)
                    for k, s in enumerate(steps)])
    return {"wrench": np.array([s.wrench for s in steps]), "pen": pen,
            "stage_s": np.array([[s.stage_s[k] for k in ("detection", "clustering", "solving", "integration")]
                                 for s in steps])}


def mujoco_complete(p: Pipeline, episode, n: int) -> tuple[dict, np.ndarray]:
    """MuJoCo (default settings) from a test trajectory's start under its first ``n`` setpoints (Fig. 12): force
    RMSE against the reference, its failure if any, and the wrenches."""
    from contactkit.assembly import mujoco_baseline as mjb
    from contactkit.state import BodyState

    initial = BodyState(episode.pos[0], episode.quat[0], episode.lin_vel[0], episode.ang_vel[0])
    try:
        run = mjb.mujoco_simulate(p.task, initial, episode.action[:n, :3], p.setpoint_quat(episode.action[:n]),
                                  p.gains, mjb.DEFAULTS)
    except Exception as exc:  # CoACD or MuJoCo's compiler: the baseline could not be built
        return {"mujoco_complete_sim_force_rmse_N": math.nan,
                "mujoco_complete_sim_failure": f"{type(exc).__name__}: {str(exc)[:300]}"}, np.full((n, 6), np.nan)
    return {"mujoco_complete_sim_force_rmse_N": force_rmse(run.wrenches, episode.wrench[:n])[0],
            "mujoco_complete_sim_failure": run.failure}, run.wrenches


def complete(p: Pipeline, config: TightAssemblyConfig, mujoco: bool = False) -> tuple[dict, dict]:
    """(b, c) Complete simulations of the first test trajectories under their recorded setpoints: ours with and
    without the C-space model, and K-means/PGS; force RMSE, penetration (Fig. 8, 10) and stage times (Fig. 11);
    with ``mujoco``, MuJoCo at its defaults on the first trajectory (Fig. 12)."""
    from contactkit.assembly.simulator import STAGES

    nc, pgs = _configs()
    runs = {"ours": [], "no_cspace": [], "kmeans_pgs": []}
    refs = []
    for episode in p.test[:config.complete_trajectories]:
        n = min(episode.n_steps, config.complete_steps)
        refs.append(episode.wrench[:n])
        every = config.penetration_every
        runs["ours"].append(_rollout(p, episode, n, p.ours, nc, p.cspace, every))
        runs["no_cspace"].append(_rollout(p, episode, n, p.ours, nc, None, every))
        runs["kmeans_pgs"].append(_rollout(p, episode, n, p.kmeans, pgs, None, every))
    ref = np.concatenate(refs)
    cat = {k: {f: np.concatenate([r[f] for r in v]) for f in ("wrench", "pen", "stage_s")} for k, v in runs.items()}
    stages = cat["ours"]["stage_s"] * 1e3
    out = {"complete_sim_force_rmse_N": force_rmse(cat["ours"]["wrench"], ref)[0],
           "complete_sim_kmeans_pgs_force_rmse_N": force_rmse(cat["kmeans_pgs"]["wrench"], ref)[0],
           "max_penetration_m": float(np.nanmax(cat["ours"]["pen"][:, 0])),
           "max_penetration_no_cspace_m": float(np.nanmax(cat["no_cspace"]["pen"][:, 0])),
           "mean_penetration_m": float(np.nanmean(cat["ours"]["pen"][:, 1])),
           "mean_penetration_no_cspace_m": float(np.nanmean(cat["no_cspace"]["pen"][:, 1])),
           "max_penetration_kmeans_pgs_m": float(np.nanmax(cat["kmeans_pgs"]["pen"][:, 0])),
           "ms_per_step": float(stages.sum(axis=1).mean()),
           "ms_per_stage": {s: float(v) for s, v in zip(STAGES, stages.mean(axis=0), strict=True)},
           "complete_sim_steps": len(ref), "complete_sim_trajectories": len(refs)}
    traces = {"reference": refs[0], **{k: {f: v[0][f] for f in ("wrench", "pen")} for k, v in runs.items()}}
    if mujoco:
        numbers, traces["mujoco_default"] = mujoco_complete(p, p.test[0], len(refs[0]))
        out.update(numbers)
    return out, traces


def pair_depth_net(bolt, steps: int, seed: int):
    """The helical depth network of a Table II bolt, set up as the M48's preset (:mod:`contactkit.depth.presets`:
    r from 2 mm inside the minor to 2 mm outside the major radius, z from the bottom to 3 mm above the top) with
    ``steps`` Adam steps (§V-E: "newly [trained] ... with no experiments")."""
    from contactkit.depth import presets
    from contactkit.depth.coordinates import Coordinates, make_frame
    from contactkit.depth.training import TrainConfig, default_setup, train_depth_net

    m = bolt.meta
    frame = make_frame(Coordinates.HELICAL, pitch=m["p"], handedness=m["handedness"])
    setup = default_setup(bolt, frame, r_range=(m["minor_radius"] - presets.THREAD_PAD,
                                                m["major_radius"] + presets.THREAD_PAD),
                          z_range=(0.0, m["length"] + presets.REACH_PAD))
    samples = min(300_000, max(20_000, 15 * steps))
    return train_depth_net(bolt, setup, TrainConfig(samples=samples, steps=steps, batch=8192, lr=3e-3, lr_final=1e-7,
                                                    fit_band=1e-3, seed=seed))


def generalization(m48: Pipeline, config: TightAssemblyConfig, rng: np.random.Generator, progress) -> list[dict]:
    """(d) The M48 clustering applied unchanged to the first ``config.pairs`` Table II pairs (Fig. 14): each pair
    gets its own depth network, C-space model and reference data; one-step force RMSE of ours and K-means/PGS over
    all its rows (none of them was used to fit the clustering)."""
    from contactkit.assembly.task import bolting_task
    from contactkit.geometry.fasteners import GENERALISATION_PAIRS

    out = []
    for spec in GENERALISATION_PAIRS[:config.pairs]:
        start = time.perf_counter()
        base = bolting_task(spec.diameter, spec.pitch, depth_net=None)
        net = pair_depth_net(base.static, config.depth_steps, int(rng.integers(2**31)))
        task = dataclasses.replace(base, depth_net=net)
        p = prepare(task, config, rng, clustering=m48.ours, reference_steps=config.pair_reference_steps)
        numbers, _ = one_step(p, p.train + p.test, config, rng)
        out.append({"name": spec.name, "group": spec.group, "diameter_mm": spec.diameter * 1e3,
                    "pitch_mm": spec.pitch * 1e3, "ours_force_rmse_N": numbers["ours_force_rmse_N"],
                    "kmeans_pgs_force_rmse_N": numbers["kmeans_pgs_force_rmse_N"], "rows": numbers["one_step_rows"],
                    "depth_steps": config.depth_steps, "seconds": time.perf_counter() - start})
        progress(f"generalization {spec.name}: ours {numbers['ours_force_rmse_N']:.3g} N, K-means/PGS "
                 f"{numbers['kmeans_pgs_force_rmse_N']:.3g} N")
    return out


ROBUST_SPIN = 3.0
"""[rad/s] scale of the commanded turning speed of the nut (the keyboard-driven gripper of §V-F)."""
ROBUST_OFFSET = 2e-3
"""[m] scale of the commanded position offset from the screwed pose (the haptic device's hand motion)."""
ROBUST_TILT = 0.03
"""[rad] scale of the commanded tilt."""
ROBUST_TAU = 0.5
"""[s] correlation time of the random commands (Ornstein-Uhlenbeck)."""


def random_commands(pitch: float, n: int, rng: np.random.Generator, z0: float, turns: float
                    ) -> tuple[np.ndarray, np.ndarray]:
    """``(pos (n,3), quat (n,4))`` arbitrary nut setpoints: the screwed pose (from height ``z0`` [m]) of a turn
    angle whose speed is an Ornstein-Uhlenbeck process (scale :data:`ROBUST_SPIN`), kept within ``[0, turns]``
    turns by reflection (the nut stays on the thread: below is the table, above the bolt's end), plus OU offsets
    and tilts (:data:`ROBUST_OFFSET`, :data:`ROBUST_TILT`), all with correlation time :data:`ROBUST_TAU`, at
    ``SIM_DT``."""
    from contactkit.assembly.task import SIM_DT
    from contactkit.geometry.fasteners import screw_pose
    from contactkit.rotations import quat_mul, rotvec_to_quat

    a, top = math.exp(-SIM_DT / ROBUST_TAU), 2.0 * math.pi * max(turns, 0.0)
    x = np.zeros(6)
    scale = np.array([ROBUST_SPIN, ROBUST_OFFSET, ROBUST_OFFSET, ROBUST_OFFSET, ROBUST_TILT, ROBUST_TILT])
    pos, quat, angle = np.zeros((n, 3)), np.zeros((n, 4)), 0.0
    for t in range(n):
        x = a * x + math.sqrt(1 - a * a) * scale * rng.standard_normal(6)
        angle += x[0] * SIM_DT
        if not 0.0 <= angle <= top:  # reflect the angle and its speed at the ends of the range
            angle, x[0] = min(max(-angle if angle < 0.0 else 2.0 * top - angle, 0.0), top), -x[0]
        p, q = screw_pose(pitch, angle, z0=z0)
        pos[t] = p + x[1:4]
        quat[t] = quat_mul(rotvec_to_quat(np.array([x[4], x[5], 0.0])), q)
    return pos, quat


def energy(task, gains, state, sp_pos, sp_quat) -> float:
    """Kinetic energy of the tool plus the coupling springs' ``½k|e|² + ½k_r|φ|²`` [J] (module docstring)."""
    from contactkit.assembly.coupling import pose_error
    from contactkit.engine.reference import generalized_velocity, kinetic_energy

    e, phi = pose_error(task.body, state, sp_pos, sp_quat)
    return (kinetic_energy(task.body, generalized_velocity(task.body, state))
            + 0.5 * gains.stiffness * float(e @ e) + 0.5 * gains.angular_stiffness * float(phi @ phi))


def robustness(p: Pipeline, config: TightAssemblyConfig, rng: np.random.Generator) -> tuple[dict, dict]:
    """(e) ``config.robustness_s`` simulated seconds of :func:`random_commands` on the nut from its screwed pose
    one pitch up (turned up to a pitch below the bolt's top), with ours (learned clustering, Algorithm 1,
    C-space): NaN, exact penetration, energy growth."""
    from contactkit.assembly.simulator import step
    from contactkit.assembly.task import SIM_DT
    from contactkit.geometry.fasteners import screw_pose
    from contactkit.state import BodyState

    nc, _ = _configs()
    n = max(1, int(round(config.robustness_s / SIM_DT)))
    z0 = p.task.pitch
    thickness = float(np.ptp(p.task.nodes[:, 2]))
    turns = (p.task.axis_height - thickness - 2.0 * z0) / p.task.pitch  # one pitch clear of the bolt's top
    pos, quat = random_commands(p.task.pitch, n, rng, z0, turns)
    state = BodyState.at_rest(*screw_pose(p.task.pitch, 0.0, z0=z0))
    growth, worst, nan, pen, force = 0.0, 0.0, False, [], np.full(n, np.nan)
    for t in range(n):
        result = step(p.task, state, pos[t], quat[t], p.gains, p.ours, nc, p.cspace)
        if not (np.all(np.isfinite(result.state.as_array())) and np.all(np.isfinite(result.wrench))):
            nan = True
            break
        gain = energy(p.task, p.gains, result.state, pos[t], quat[t]) - energy(p.task, p.gains, state, pos[t], quat[t])
        growth, worst = growth + gain, max(worst, gain)
        force[t] = np.linalg.norm(result.wrench[:3])
        state = result.state
        if t % config.penetration_every == 0 or t == n - 1:
            pen.append(((t + 1) * SIM_DT, penetration(p.task, state)[0]))
    pen = np.array(pen).reshape(-1, 2)  # (time after the step [s], max penetration [m])
    out = {"sim_s": n * SIM_DT, "steps": n, "max_penetration_m": float(pen[:, 1].max()) if len(pen) else math.nan,
           "energy_growth": growth, "max_step_energy_gain_J": worst, "nan": nan,
           "clearance_m": p.task.clearance}
    return out, {"force": force, "penetration": pen}


def _section(missing: list[str], fn, *args):
    """``fn(*args)``, or None with the missing module recorded in ``missing``."""
    try:
        return fn(*args)
    except Missing as exc:
        missing.append(str(exc))
        return None


def _task_entry(name: str, config: TightAssemblyConfig, rng, progress, missing, traces) -> tuple[dict, object]:
    from contactkit.assembly.task import assembly_task

    start = time.perf_counter()
    entry = dict.fromkeys(("ours_force_rmse_N", "kmeans_pgs_force_rmse_N", "mujoco_force_rmse_N",
                           "complete_sim_force_rmse_N", "max_penetration_m", "max_penetration_no_cspace_m",
                           "ms_per_step", "ms_per_stage"))
    p = _section(missing, prepare, assembly_task(name), config, rng)
    if p is None:
        return entry, None
    progress(f"{name}: {sum(e.n_steps for e in p.train)} training / {sum(e.n_steps for e in p.test)} test rows, "
             f"clustering fitted")
    mujoco = config.mujoco if name in config.mujoco_tasks else ()
    numbers, traces[(name, "one_step")] = one_step(p, p.test, config, rng, mujoco)
    entry.update(numbers)
    if not mujoco:
        entry["mujoco_force_rmse_N_failure"] = "not run: MuJoCo is run on " + (", ".join(config.mujoco_tasks) or
                                                                              "no task") + " in this budget"
    progress(f"{name}: one-step RMSE ours {entry['ours_force_rmse_N']:.3g} N, K-means/PGS "
             f"{entry['kmeans_pgs_force_rmse_N']:.3g} N, MuJoCo {entry.get('mujoco_force_rmse_N')}")
    numbers, traces[(name, "complete")] = complete(p, config, "default" in mujoco)
    entry.update(numbers, fit=p.fit, seconds=time.perf_counter() - start,
                 train_rows=sum(e.n_steps for e in p.train), test_rows=sum(e.n_steps for e in p.test))
    progress(f"{name}: complete RMSE {entry['complete_sim_force_rmse_N']:.3g} N, {entry['ms_per_step']:.3g} ms/step")
    return entry, p


def run_experiment(config: TightAssemblyConfig, seed: int = 0, plots: str | Path | None = None,
                   progress: Callable[[str], None] | None = None) -> dict:
    """Sections (a)–(e) of the module docstring on one thread (torch and numba); figures in ``plots``."""
    import numba
    import torch

    progress = progress or (lambda _msg: None)
    threads, nthreads = torch.get_num_threads(), numba.get_num_threads()
    torch.set_num_threads(1)
    numba.set_num_threads(1)
    result, missing, traces, pipes = {"tasks": {}}, [], {}, {}
    try:
        for name in config.tasks:
            result["tasks"][name], pipes[name] = _task_entry(name, config, np.random.default_rng(
                [seed, TASKS.index(name)]), progress, missing, traces)
        bolt = pipes.get("bolting")
        result["generalization"], result["robustness"] = [], dict.fromkeys(("sim_s", "max_penetration_m",
                                                                             "energy_growth", "nan"))
        if bolt is not None:
            result["generalization"] = _section(missing, generalization, bolt, config,
                                                np.random.default_rng([seed, 2]), progress) or []
            result["robustness"], traces["robustness"] = robustness(bolt, config, np.random.default_rng([seed, 3]))
            progress(f"robustness: {result['robustness']}")
    finally:
        torch.set_num_threads(threads)
        numba.set_num_threads(nthreads)
    from contactkit.assembly.task import DEFAULT_NETS

    result["checkpoints"] = [str(DEFAULT_NETS[name]) for name in config.tasks]  # the committed depth networks
    result["missing"] = sorted(set(missing))
    result["partial"] = bool(missing) or any(t not in config.tasks for t in TASKS)
    result["config"] = dataclasses.asdict(config)
    from contactkit.eval.tight_assembly_figures import bars, plot_tight_assembly

    result["bars"] = bars(result)
    if plots is not None:
        result["figures"] = plot_tight_assembly(result, traces, Path(plots))
    return result


def markdown(result: dict) -> str:
    """The experiment's table (:func:`contactkit.eval.tight_assembly_figures.markdown_table`)."""
    from contactkit.eval.tight_assembly_figures import markdown_table

    return markdown_table(result, PAPER)


def run(quick: bool, seed: int = 0, device: str = "cpu", plots: str | Path | None = None,
        config: TightAssemblyConfig | None = None) -> dict:
    """Harness entry point: the quick or full budget (``config`` replaces it, for tests). CPU only (float64)."""
    del device
    return run_experiment(config or (QUICK if quick else FULL), seed, plots)
