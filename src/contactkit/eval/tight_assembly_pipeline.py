"""The shared part of the tight-assembly experiment (:mod:`contactkit.eval.exp_tight_assembly`): its budget
(:class:`TightAssemblyConfig`), and per task the :class:`Pipeline` its sections share — reference data (cached,
:mod:`contactkit.eval.tight_assembly_reference`) split by trajectory, the clustering fitted by CMA-ES (eq 7), the
K-means baseline and the C-space model ``h(q)`` (§IV) — plus the force RMSE of Figs. 9, 10 and 14.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from contactkit.errors import InvalidInputError
from contactkit.eval.tight_assembly_reference import reference_episodes

TASKS = ("peg-in-hole", "bolting")
"""The paper's two tasks (:class:`contactkit.assembly.task.AssemblyKind` values)."""


@dataclass(frozen=True)
class TightAssemblyConfig:
    """Budget of the experiment.

    Attributes:
        tasks: task names (:data:`TASKS`). reference_steps: 10 ms reference rows per task (issue: ≥ 20k).
        trajectory_rows: rows per reference trajectory (None: the reference module's standard length).
        reference_dir: the folder of cached reference files (:mod:`contactkit.eval.tight_assembly_reference`:
            reused when task, seed, rows and code match, refused when a file there does not; None: simulated
            every run and not stored).
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
    clustering), the K-means baseline, the C-space model, the rotation-vector → quaternion helper, the fit's
    facts and the reference data's (seed, cache file, cached / simulated episodes)."""

    task: object
    gains: object
    train: list
    test: list
    ours: object
    kmeans: object
    cspace: object
    setpoint_quat: Callable
    fit: dict
    reference: dict


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


def prepare(task, config: TightAssemblyConfig, rng: np.random.Generator, *, clustering=None,
            reference_steps: int | None = None) -> Pipeline:
    """Reference data (split by trajectory), clustering (fitted here, or ``clustering`` as given: the M48 one for
    the Table II pairs), K-means and the C-space model of ``task``."""
    from contactkit.assembly.coupling import default_gains

    reference = _import("reference_data", "H2")
    kmeans = _import("kmeans", "H3")
    gains = default_gains(task)
    seed = int(rng.integers(2**31))  # drawn whether or not the rows are cached: the later draws stay the same
    episodes, ref_facts = reference_episodes(task, reference_steps or config.reference_steps, config.trajectory_rows,
                                             seed, config.reference_dir)
    train, test = reference.split_episodes(episodes, config.train_fraction, rng)
    fit = {}
    if clustering is None:
        clustering, fit = _fit_clustering(task, train, gains, config, rng)
    km = kmeans.KMeansClustering(mc=12, seed=int(rng.integers(2**31)))
    model, fit["cspace"] = _train_cspace(task, config, rng)
    return Pipeline(task, gains, train, test, clustering, km, model, reference.setpoint_quat, fit,
                    {**ref_facts, "seed": seed})


def _configs():
    from contactkit.assembly.simulator import SimConfig, SolverKind

    return SimConfig(solver=SolverKind.NC_SOR), SimConfig(solver=SolverKind.PGS)

