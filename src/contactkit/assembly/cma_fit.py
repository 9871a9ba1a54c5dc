"""Fitting the clustering networks by CMA-ES on one-step contact wrenches (tight-tolerance paper §III-B, eq 7 of the
issue: the loss that the paper minimises "with the contact wrench measured at the center of the object").

Each training row is a recorded state ``s_t``, its setpoint and the recorded mean contact wrench ``w_t`` (world,
about the COM at ``s_t``; :mod:`contactkit.assembly.reference_data`). A candidate parameter vector is scored by
running ONE simulator step (:func:`contactkit.assembly.simulator.step`: detection, the candidate's clustering, the
contact solver) from every row and comparing its :attr:`SimStep.wrench` with ``w_t``:

    L(θ) = mean_rows ( ‖f_sim − f_ref‖² + ‖τ_sim − τ_ref‖² / ℓ² )    [N²]

with ``ℓ`` [m] the torque length (default: the RMS distance of the tool's nodes from its COM, the lever arm at
which a force error of 1 N makes a torque error of ``ℓ`` N·m, so both count alike). CMA-ES (``cma``) searches the
flat parameter vector; its normal samples come from the caller's generator (``cma``'s global seeding is bypassed),
so a fit is reproducible for a seed. The separable (diagonal) variant is the default: the full covariance of the
2 558 parameters costs a dense eigendecomposition per update.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import cma
import numpy as np

from contactkit.assembly.clustering import ClusteringNet, LearnedClustering, SurfaceProjection, node_inputs
from contactkit.assembly.clustering_checkpoint import check_task, task_hashes
from contactkit.assembly.task import AssemblyTask
from contactkit.errors import ContactkitError, InvalidInputError
from contactkit.rotations import rotvec_to_quat
from contactkit.state import BodyState

CONTACT_FORCE_TOL = 1e-6
"""[N] rows whose recorded contact force is below this are free flight (the clustering cannot matter there)."""
RANGE_PAD = 1e-6
"""Half-width added to an input range that the data leave flat (a constant input), so scaling stays finite."""


class FitDiverged(ContactkitError, RuntimeError):
    """The CMA-ES loss became NaN/Inf; ``best`` holds the best net found before it, ``history`` its losses."""

    def __init__(self, message: str, best: ClusteringNet, history: np.ndarray) -> None:
        super().__init__(message)
        self.best = best
        self.history = history


@dataclass(frozen=True)
class FitRow:
    """One training row: the tool's state ``s_t``, the setpoint of step t and the recorded contact wrench.

    Attributes:
        state: single :class:`BodyState`. setpoint_pos ``(3,)`` [m], setpoint_quat ``(4,)`` wxyz (world).
        wrench: ``(6,)`` recorded mean contact wrench over the step, world, about the COM at ``s_t`` [N, N·m].
    """

    state: BodyState
    setpoint_pos: np.ndarray
    setpoint_quat: np.ndarray
    wrench: np.ndarray


@dataclass(frozen=True)
class FitConfig:
    """CMA-ES settings (the CLI's; nothing here is read from the environment).

    Attributes:
        generations: CMA-ES generations; popsize: samples per generation (None: ``cma``'s ``4 + 3 ln n``);
        sigma0: initial step size in parameter units (0.02: on 24 peg reference rows, 10 generations of 27 took the
            loss from 0.047 to 0.018 N²; 0.2 found nothing better than the start in 12);
        diagonal: separable CMA-ES (linear cost per sample);
        torque_length: ``ℓ`` [m] of the loss (None: RMS node distance from the COM);
        projection: the clustering's surface projection while fitting.
    """

    generations: int = 50
    popsize: int | None = None
    sigma0: float = 0.02
    diagonal: bool = True
    torque_length: float | None = None
    projection: SurfaceProjection = SurfaceProjection.DEPTH_NET

    def __post_init__(self) -> None:
        if self.generations < 1 or (self.popsize is not None and self.popsize < 2):
            raise InvalidInputError(f"FitConfig needs generations >= 1 and popsize >= 2 (or None), got "
                                    f"{self.generations}, {self.popsize}")
        if not (np.isfinite(self.sigma0) and self.sigma0 > 0):
            raise InvalidInputError(f"FitConfig.sigma0 must be finite and > 0, got {self.sigma0!r}")
        if self.torque_length is not None and not (np.isfinite(self.torque_length) and self.torque_length > 0):
            raise InvalidInputError(f"FitConfig.torque_length must be finite and > 0 m, got {self.torque_length!r}")


@dataclass(frozen=True)
class FitResult:
    """Outcome of :func:`fit_clustering`.

    Attributes:
        net: the best net found (stamped with the task's mesh hashes and the fit's facts in ``meta``).
        history: ``(G+1,)`` best loss so far [N²], before the first generation and after each.
        generation_s: ``(G,)`` wall time of each generation [s]. evaluations: loss evaluations (candidates).
    """

    net: ClusteringNet
    history: np.ndarray
    generation_s: np.ndarray
    evaluations: int


def rows_from_episodes(episodes: Sequence, n_rows: int | None, rng: np.random.Generator, *,
                       contact_only: bool = True) -> list[FitRow]:
    """Training rows drawn without replacement from episodes (contract: ``action[t]`` = setpoint as position
    ``(3,)`` + rotation vector ``(3,)``, ``wrench[t]`` the contact wrench), ``n_rows`` of them (None: all).

    Args:
        contact_only: keep only rows whose recorded force exceeds :data:`CONTACT_FORCE_TOL`.
    """
    rows = []
    for ep in episodes:
        action, wrench = np.asarray(ep.action, np.float64), np.asarray(ep.wrench, np.float64)
        for t in range(len(action)):
            if contact_only and np.linalg.norm(wrench[t, :3]) <= CONTACT_FORCE_TOL:
                continue
            state = BodyState(np.asarray(ep.pos[t], np.float64), np.asarray(ep.quat[t], np.float64),
                              np.asarray(ep.lin_vel[t], np.float64), np.asarray(ep.ang_vel[t], np.float64))
            rows.append(FitRow(state, action[t, :3].copy(), rotvec_to_quat(action[t, 3:]), wrench[t].copy()))
    if n_rows is not None and n_rows < len(rows):
        rows = [rows[i] for i in np.sort(rng.choice(len(rows), size=n_rows, replace=False))]
    return rows


def torque_length(task: AssemblyTask) -> float:
    """RMS distance [m] of the tool's nodes from its COM (the loss's default ``ℓ``)."""
    return float(np.sqrt(np.mean(np.sum((task.nodes - task.body.com_body) ** 2, axis=1))))


def wrench_loss(predicted: np.ndarray, recorded: np.ndarray, length: float) -> float:
    """``mean_rows(‖Δf‖² + ‖Δτ‖²/ℓ²)`` [N²] of ``(R, 6)`` world wrenches (module docstring); NaN propagates."""
    d = np.asarray(predicted, np.float64) - np.asarray(recorded, np.float64)
    return float(np.mean(np.sum(d[:, :3] ** 2, axis=1) + np.sum(d[:, 3:] ** 2, axis=1) / length**2))


def input_ranges(task: AssemblyTask, rows: Sequence[FitRow], gains, sim_config) -> tuple[np.ndarray, np.ndarray]:
    """``(x_lo, x_hi)`` ``(19,)``: min/max of the eq-4 inputs of the nodes detected at the rows (paper §V-B: inputs
    scaled with their min and max), flat ranges padded by :data:`RANGE_PAD`.

    Raises:
        InvalidInputError: no row has any node contact.
    """
    from contactkit.assembly.coupling import coupled_free_velocity
    from contactkit.assembly.detection import detect_nodes

    lo, hi = np.full(19, np.inf), np.full(19, -np.inf)
    for r in rows:
        nodes = detect_nodes(task, r.state, sim_config.margin)
        if len(nodes.depth) == 0:
            continue
        _, applied = coupled_free_velocity(task.body, r.state, r.setpoint_pos, r.setpoint_quat, gains, sim_config.dt)
        x = node_inputs(task, nodes.points, r.state, applied)
        lo, hi = np.minimum(lo, x.min(axis=0)), np.maximum(hi, x.max(axis=0))
    if not np.isfinite(lo).all():
        raise InvalidInputError(f"input ranges: none of the {len(rows)} rows has a node contact")
    flat = hi - lo < 2 * RANGE_PAD
    return np.where(flat, lo - RANGE_PAD, lo), np.where(flat, hi + RANGE_PAD, hi)


StepFn = Callable[..., object]
"""``step(task, state, setpoint_pos, setpoint_quat, gains, clustering, config)`` returning an object with
``.wrench (6,)``: :func:`contactkit.assembly.simulator.step` (a test passes a fake)."""


def rows_loss(net: ClusteringNet, task: AssemblyTask, rows: Sequence[FitRow], gains, sim_config, step_fn: StepFn,
              length: float, projection: SurfaceProjection = SurfaceProjection.DEPTH_NET) -> float:
    """The loss (module docstring) [N²] of ``net`` over ``rows``: one simulator step from each."""
    clustering = LearnedClustering(net, projection)
    pred = np.array([np.asarray(step_fn(task, r.state, r.setpoint_pos, r.setpoint_quat, gains, clustering,
                                        sim_config).wrench, np.float64) for r in rows])
    return wrench_loss(pred, np.array([r.wrench for r in rows]), length)


def _strategy(x0: np.ndarray, config: FitConfig, rng: np.random.Generator) -> cma.CMAEvolutionStrategy:
    opts = {"seed": np.nan, "randn": lambda *shape: rng.standard_normal(shape), "verbose": -9,
            "verb_log": 0, "verb_disp": 0, "CMA_diagonal": bool(config.diagonal), "maxiter": config.generations,
            "tolfun": 0.0, "tolx": 0.0, "tolfunhist": 0.0, "tolstagnation": 10**9}
    if config.popsize is not None:
        opts["popsize"] = int(config.popsize)
    return cma.CMAEvolutionStrategy(np.array(x0, dtype=np.float64), config.sigma0, opts)


def fit_clustering(task: AssemblyTask, rows: Sequence[FitRow], net0: ClusteringNet, gains, sim_config,
                   rng: np.random.Generator, config: FitConfig = FitConfig(), *, step_fn: StepFn | None = None,
                   progress: Callable[[int, int, float], None] | None = None) -> FitResult:
    """CMA-ES over ``net0``'s parameters minimising the one-step wrench loss over ``rows`` (module docstring).

    Args:
        task: the task; net0: the start (its input ranges are kept; a net fitted on another task is refused).
        rows: training rows (:func:`rows_from_episodes`). gains: the virtual coupling. sim_config: the simulator's
            :class:`~contactkit.assembly.simulator.SimConfig`. rng: the generator of every CMA-ES sample.
        step_fn: the one-step simulation (default :func:`contactkit.assembly.simulator.step`).
        progress: ``progress(generation, generations, best_loss)`` after each generation.

    Raises:
        CheckpointError: ``net0`` fitted on other meshes. InvalidInputError: no rows.
        FitDiverged: a NaN/Inf loss; it carries the best net and the history up to then.
    """
    check_task(net0, task, "clustering start")
    if len(rows) == 0:
        raise InvalidInputError("fit_clustering: no training rows")
    if step_fn is None:
        from contactkit.assembly.simulator import step as step_fn
    length = config.torque_length or torque_length(task)
    tool, static = task_hashes(task)
    stamp = lambda x, loss, g: ClusteringNet(  # noqa: E731
        x, net0.x_lo, net0.x_hi, net0.mc, net0.k, task.kind.value, tool, static,
        {**net0.meta, "fit_loss_N2": loss, "fit_generations": g, "fit_rows": len(rows), "torque_length_m": length})
    loss_of = lambda x: rows_loss(net0.with_params(x), task, rows, gains, sim_config, step_fn, length,  # noqa: E731
                                  config.projection)
    best_x, best = np.array(net0.params), loss_of(net0.params)
    history, gen_s, evaluations = [best], [], 1
    if not np.isfinite(best):
        raise FitDiverged(f"CMA-ES: the start's loss is {best} (not finite)", net0, np.array(history))
    es = _strategy(net0.params, config, rng)
    for g in range(config.generations):
        t0 = time.perf_counter()
        xs = es.ask()
        losses = [loss_of(x) for x in xs]
        evaluations += len(xs)
        bad = [i for i, v in enumerate(losses) if not np.isfinite(v)]
        if bad:
            raise FitDiverged(f"CMA-ES generation {g + 1}: loss {losses[bad[0]]} for {len(bad)} of {len(xs)} "
                              f"candidates; best so far {best:.6g} N²", stamp(best_x, best, g), np.array(history))
        es.tell(xs, losses)
        i = int(np.argmin(losses))
        if losses[i] < best:
            best, best_x = float(losses[i]), np.array(xs[i])
        history.append(best)
        gen_s.append(time.perf_counter() - t0)
        if progress is not None:
            progress(g + 1, config.generations, best)
    return FitResult(stamp(best_x, best, config.generations), np.array(history), np.array(gen_s), evaluations)


def fit_from_reference(path, task: AssemblyTask, net0: ClusteringNet, gains, sim_config, rng: np.random.Generator,
                       config: FitConfig = FitConfig(), *, n_rows: int | None = 64,
                       progress: Callable[[int, int, float], None] | None = None) -> FitResult:
    """:func:`fit_clustering` on ``n_rows`` contact rows of a reference file; the file is read with
    :func:`contactkit.assembly.reference_data.read_reference`, which refuses a file of another task (mesh hashes);
    ``net0`` fitted on another task is refused too."""
    from contactkit.assembly.reference_data import read_reference

    check_task(net0, task, "clustering start")
    rows = rows_from_episodes(read_reference(path, task), n_rows, rng)
    return fit_clustering(task, rows, net0, gains, sim_config, rng, config, progress=progress)

