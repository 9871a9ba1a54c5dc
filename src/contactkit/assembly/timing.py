"""Time per simulator step by stage (tight-tolerance paper Fig. 11; issue 17 part 5c): detection, clustering,
solving, integration, in thread-CPU milliseconds (``time.thread_time``: the cost on one core, robust to other load
on the machine) and wall milliseconds, over a short engaged trajectory.

The trajectory is one of :func:`contactkit.assembly.trajectories.random_trajectory` (by default the peg's TILT,
pushed and tilted in the bore; the nut's SCREW_IN, turned down the thread under an axial push), simulated from its
initial state under its setpoints; the first :data:`WARMUP_STEPS` steps are run and discarded first so numba's
compilation and first-call caches are not timed.

Measured on the shared 2-core box (load 4.5-5.5; 40 steps, rng 1, the initial ClusteringNet of seed 0, NC-SOR without
C-space row; median of 3 interleaved runs of each tree), thread-CPU ms per step, before -> after the fused detection
pass and the numba eq-4 inputs / normal rotation / Newton projection (results bitwise unchanged): peg 3.33 -> 2.74 and
3.66 -> 3.24 (two sessions), nut 3.13 -> 2.55 and 3.29 -> 2.94. Peg stages after: detection 1.1-1.3, clustering
1.0-1.2, solving 0.2, integration 0.4-0.5. Wall time on that box is about twice the thread-CPU time (the other
processes' share of the two cores), so the paper's per-core figure is the thread-CPU one.

2026-11-27, the depth kernel's blocked product and index-based features, a scalar ``quat_to_mat`` for one
quaternion (results the same to round-off): the complete simulation of a reference test trajectory (200 steps,
with the C-space row, the learned clustering of a short CMA-ES fit; the M48 bolt as the three-piece set), the old
and new trees run interleaved on the same idle machine, thread-CPU mean ms per step: peg 3.28–3.48 -> 2.22–2.37
(detection 1.41–1.51 -> 0.67–0.69), nut 3.35–3.48 -> 2.49–2.53.
"""

from __future__ import annotations

import numpy as np

from contactkit.assembly.coupling import CouplingGains, default_gains
from contactkit.assembly.simulator import STAGES, Clustering, SimConfig, simulate
from contactkit.assembly.task import AssemblyKind, AssemblyTask
from contactkit.assembly.trajectories import TrajectoryKind, random_trajectory
from contactkit.engine.reference import SolveStatus
from contactkit.errors import InvalidInputError

WARMUP_STEPS = 3
"""Steps simulated (and not timed) before the timed ones: numba compilation and caches."""
DEFAULT_KIND = {AssemblyKind.PEG_IN_HOLE: TrajectoryKind.TILT, AssemblyKind.BOLTING: TrajectoryKind.SCREW_IN}
"""The trajectory kind timed for each task when none is given (both stay engaged throughout)."""


def time_steps(task: AssemblyTask, clustering: Clustering, config: SimConfig, n_steps: int,
               rng: np.random.Generator, *, cspace=None, kind: TrajectoryKind | str | None = None,
               gains: CouplingGains | None = None) -> dict:
    """Median / mean milliseconds per 10 ms step and per stage over ``n_steps`` steps of a random engaged trajectory.

    Args:
        task: the task. clustering: any :class:`~contactkit.assembly.simulator.Clustering`. config: the
            simulator settings. n_steps: timed steps (``>= 1``). rng: draws the trajectory (the only randomness).
        cspace: the C-space model or None (passed to :func:`~contactkit.assembly.simulator.step`).
        kind: the trajectory kind (default :data:`DEFAULT_KIND`). gains: the coupling (default
            :func:`~contactkit.assembly.coupling.default_gains`).

    Returns:
        ``{"ms_per_step": median thread-CPU ms of a whole step, "ms_per_step_mean", "ms_per_stage": {stage: median
        thread-CPU ms}, "ms_per_stage_mean", "wall_ms_per_step", "wall_ms_per_stage": {stage: median wall ms},
        "n_steps", "n_nodes_median", "n_clustered_median", "solver_iterations_median", "iteration_limit_steps",
        "trajectory_kind"}`` (stages :data:`~contactkit.assembly.simulator.STAGES`).

    Raises:
        InvalidInputError: ``n_steps < 1``.
    """
    if int(n_steps) < 1:
        raise InvalidInputError(f"time_steps needs n_steps >= 1, got {n_steps!r}")
    kind = TrajectoryKind(kind) if kind is not None else DEFAULT_KIND[task.kind]
    traj = random_trajectory(task, kind, WARMUP_STEPS + int(n_steps), rng)
    gains = default_gains(task) if gains is None else gains
    steps = simulate(task, traj.initial, traj.setpoint_pos, traj.setpoint_quat, gains, clustering, config,
                     cspace)[WARMUP_STEPS:]
    cpu = {s: 1e3 * np.array([r.stage_cpu_s[s] for r in steps]) for s in STAGES}
    wall = {s: 1e3 * np.array([r.stage_s[s] for r in steps]) for s in STAGES}
    cpu_total, wall_total = sum(cpu.values()), sum(wall.values())
    return {
        "ms_per_step": float(np.median(cpu_total)),
        "ms_per_step_mean": float(np.mean(cpu_total)),
        "ms_per_stage": {s: float(np.median(v)) for s, v in cpu.items()},
        "ms_per_stage_mean": {s: float(np.mean(v)) for s, v in cpu.items()},
        "wall_ms_per_step": float(np.median(wall_total)),
        "wall_ms_per_stage": {s: float(np.median(v)) for s, v in wall.items()},
        "n_steps": len(steps),
        "n_nodes_median": float(np.median([r.n_nodes for r in steps])),
        "n_clustered_median": float(np.median([r.n_clustered for r in steps])),
        "solver_iterations_median": float(np.median([r.iterations for r in steps])),
        "iteration_limit_steps": int(sum(r.status is SolveStatus.ITERATION_LIMIT for r in steps)),
        "trajectory_kind": kind.value,
    }
