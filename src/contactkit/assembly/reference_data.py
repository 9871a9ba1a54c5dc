"""Reference datasets: the stand-in for the paper's measured demonstrations (§V-A), rows at 10 ms.

Each episode is one :class:`~contactkit.assembly.trajectories.Trajectory` run through the high-fidelity
:func:`~contactkit.assembly.reference.reference_step` (1 ms). A row ``t`` (:data:`~contactkit.assembly.task.SIM_DT`)
is ten reference steps with the setpoint of row ``t`` held; it stores (contract of issue 17):

* states ``s_0 .. s_T``: the tool's body frame (pos, quat, lin_vel of the origin, ang_vel; world);
* ``action[t]``: the setpoint of row ``t`` as (pos (3,) [m], rotation vector (3,) [rad]) world
  (:func:`setpoint_quat` turns it back into quaternions);
* ``command[t]``: the mean coupling wrench over the row; ``wrench[t]``: the mean contact wrench over the row —
  both world, torque about the COM at ``s_t`` [N, N·m] (each 1 ms step's wrench, taken about the COM at the start
  of that step, is moved to the COM at ``s_t``: ``τ += (c_k - c_t) × F``).

The file's meta names the task (kind, name) and the SHA-256 of the tool and static meshes
(:func:`contactkit.geometry.mesh_sha256`); :func:`read_reference` refuses a file made for another task or mesh.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from contactkit.assembly.coupling import CouplingGains, default_gains
from contactkit.assembly.reference import REFERENCE_TOL, reference_margin, reference_step
from contactkit.assembly.task import REFERENCE_DT, SIM_DT, AssemblyTask
from contactkit.assembly.trajectories import KINDS, Trajectory, TrajectoryKind, random_trajectory
from contactkit.data import DatasetMeta, DatasetWriter, Episode, open_dataset
from contactkit.engine.reference import SolveStatus, com_position
from contactkit.errors import DatasetError, InvalidInputError
from contactkit.geometry.part import mesh_sha256
from contactkit.model import ActionMode
from contactkit.rotations import quat_to_rotvec, rotvec_to_quat
from contactkit.state import BodyState

MAX_REFERENCE_ROWS = 10_000_000
"""Most rows of a reference dataset: 28 hours of 10 ms rows, weeks of compute at about a millisecond per 1 ms step
(the paper's reference data is 20,000 rows); more is a typo (1e11 rows hung in planning 5e8 episodes)."""
TRAJECTORY_ROWS = 200
"""Rows (of :data:`SIM_DT`) per trajectory: 2 s of demonstration."""
SUBSTEPS = int(round(SIM_DT / REFERENCE_DT))
"""Reference steps per row (10)."""
BACKEND = "assembly-reference"
"""``meta.backend`` of a reference dataset."""


@dataclass(frozen=True)
class EpisodeStats:
    """What one reference episode measured: mean / max node contacts per 1 ms step, max penetration [m] at the
    start of any step, 1 ms steps whose cone SOR hit its sweep cap, wall time per 1 ms step [s], the kind."""

    kind: TrajectoryKind
    mean_contacts: float
    max_contacts: int
    max_penetration: float
    unconverged: int
    seconds_per_step: float


def _about(wrench: np.ndarray, com_k: np.ndarray, com_t: np.ndarray) -> np.ndarray:
    out = wrench.copy()
    out[3:] += np.cross(com_k - com_t, wrench[:3])
    return out


def run_trajectory(task: AssemblyTask, trajectory: Trajectory, gains: CouplingGains, seed: int | None = None,
                   progress: Callable[[int], None] | None = None) -> tuple[Episode, EpisodeStats]:
    """Run ``trajectory`` through the reference (``SUBSTEPS`` 1 ms steps per row; module docstring).

    Args:
        task, trajectory, gains: what to simulate. seed: stored as the episode's seed.
        progress: called with the number of rows done after each row.

    Returns:
        The :class:`~contactkit.data.Episode` (T rows, T+1 states) and its :class:`EpisodeStats`.
    """
    body, state, warm = task.body, trajectory.initial, None
    n = len(trajectory.setpoint_pos)
    states, command, wrench = [state], np.zeros((n, 6)), np.zeros((n, 6))
    counts, pen, bad = [], 0.0, 0
    start = time.perf_counter()
    for t in range(n):
        sp, sq = trajectory.setpoint_pos[t], trajectory.setpoint_quat[t]
        com_t = com_position(body, state)
        for _ in range(SUBSTEPS):
            com_k = com_position(body, state)
            step = reference_step(task, state, sp, sq, gains, warm, dt=REFERENCE_DT)
            wrench[t] += _about(step.wrench, com_k, com_t) / SUBSTEPS
            command[t] += _about(step.coupling, com_k, com_t) / SUBSTEPS
            counts.append(step.n_contacts)
            pen = max(pen, step.max_penetration)
            bad += step.status is not SolveStatus.CONVERGED
            state, warm = step.state, step.warm
        states.append(state)
        if progress is not None:
            progress(t + 1)
    stacked = BodyState(*(np.array([getattr(s, f) for s in states]) for f in ("pos", "quat", "lin_vel", "ang_vel")))
    action = np.concatenate([trajectory.setpoint_pos, quat_to_rotvec(trajectory.setpoint_quat)], axis=1)
    episode = Episode.from_states(np.arange(n + 1) * trajectory.dt, stacked, action, command, wrench, seed)
    stats = EpisodeStats(trajectory.kind, float(np.mean(counts)), int(np.max(counts)), pen, bad,
                         (time.perf_counter() - start) / (n * SUBSTEPS))
    return episode.validated(), stats


def episode_plan(task: AssemblyTask, n_steps: int, rng: np.random.Generator
                 ) -> list[tuple[TrajectoryKind, int, int]]:
    """``(kind, seed, rows)`` of each episode of a dataset of ``n_steps`` rows: trajectories of
    :data:`TRAJECTORY_ROWS` rows (the last one shorter), the task's kinds in turn, seeds drawn from ``rng``."""
    if int(n_steps) < 1 or int(n_steps) > MAX_REFERENCE_ROWS:
        raise InvalidInputError(f"n_steps must be in [1, {MAX_REFERENCE_ROWS:,}] rows of 10 ms, got {n_steps!r}")
    kinds = KINDS[task.kind]
    n_ep = -(-int(n_steps) // TRAJECTORY_ROWS)
    seeds = rng.integers(0, 2**31 - 1, n_ep)
    rows = [min(TRAJECTORY_ROWS, int(n_steps) - i * TRAJECTORY_ROWS) for i in range(n_ep)]
    return [(kinds[i % len(kinds)], int(seeds[i]), rows[i]) for i in range(n_ep)]


def reference_episode(task: AssemblyTask, kind: TrajectoryKind, seed: int, n_rows: int,
                      gains: CouplingGains | None = None, progress: Callable[[int], None] | None = None
                      ) -> tuple[Episode, EpisodeStats]:
    """One episode of :func:`episode_plan`: the trajectory drawn from ``np.random.default_rng(seed)``, run."""
    trajectory = random_trajectory(task, kind, n_rows, np.random.default_rng(seed))
    return run_trajectory(task, trajectory, gains or default_gains(task), seed, progress)


def reference_dataset(task: AssemblyTask, n_steps: int, rng: np.random.Generator, *,
                      progress: Callable[[int, int], None] | None = None) -> list[Episode]:
    """Reference episodes totalling ``n_steps`` rows of 10 ms (module docstring; plan of :func:`episode_plan`).

    ``progress(rows_done, n_steps)`` is called after each row.
    """
    episodes, done = [], 0
    for kind, seed, rows in episode_plan(task, n_steps, rng):
        report = None if progress is None else (lambda r, d=done: progress(d + r, int(n_steps)))
        episode, _ = reference_episode(task, kind, seed, rows, progress=report)
        episodes.append(episode)
        done += rows
    return episodes


def task_identity(task: AssemblyTask) -> dict:
    """What a reference file must agree on with the task that reads it: kind, name, mesh SHA-256s."""
    return {"task": task.kind.value, "name": task.name,
            "tool_sha256": mesh_sha256(task.tool.vertices, task.tool.faces),
            "static_sha256": mesh_sha256(task.static.vertices, task.static.faces)}


def reference_meta(task: AssemblyTask, seed: int, gains: CouplingGains | None = None) -> DatasetMeta:
    """The :class:`~contactkit.data.DatasetMeta` of a reference file (scene: :func:`task_identity` + fit data;
    world: reference step settings and coupling gains; ``command`` is a wrench)."""
    g = gains or default_gains(task)
    scene = {**task_identity(task), "friction": task.friction, "clearance": task.clearance,
             "axis_height": task.axis_height, "pitch": task.pitch, "mass": task.body.mass}
    world = {"reference_dt": REFERENCE_DT, "margin": reference_margin(task), "solver_tol": REFERENCE_TOL,
             "gains": {"stiffness": g.stiffness, "angular_stiffness": g.angular_stiffness, "damping": g.damping,
                       "angular_damping": g.angular_damping}}
    policy = {"name": "human-like-setpoints", "kinds": [k.value for k in KINDS[task.kind]],
              "trajectory_rows": TRAJECTORY_ROWS,
              "fields": "action = setpoint (pos, rotvec) world; command = mean coupling wrench; wrench = mean "
                        "contact wrench; world, about the COM at s_t"}
    return DatasetMeta(json.dumps(scene, sort_keys=True), json.dumps(world, sort_keys=True),
                       json.dumps(policy, sort_keys=True), int(seed), ActionMode.WRENCH, SIM_DT, BACKEND)


def write_reference(path, task: AssemblyTask, episodes: list[Episode], seed: int) -> int:
    """Append ``episodes`` to the HDF5 file ``path`` (created, or resumed when its meta matches); returns the
    number of committed episodes. Raises :class:`~contactkit.errors.DatasetError` on a mismatched file."""
    with DatasetWriter(path, meta=reference_meta(task, seed)) as writer:
        for episode in episodes:
            writer.append_episode(episode)
        return writer.n_committed


def read_reference(path, task: AssemblyTask) -> list[Episode]:
    """All episodes of a reference file, validated, after checking it was made for ``task``.

    Raises:
        DatasetError: the file is not a reference dataset, or its task kind, name or a mesh hash differs from
            ``task``'s (naming the key and both values).
    """
    with open_dataset(path) as ds:
        meta = ds.meta
        if meta.backend != BACKEND:
            raise DatasetError(f"{path}: not a reference dataset (backend {meta.backend!r}, expected {BACKEND!r})")
        scene = json.loads(meta.scene)
        for key, want in task_identity(task).items():
            if scene.get(key) != want:
                raise DatasetError(f"{path}: made for another task: {key} is {scene.get(key)!r}, this task's is "
                                   f"{want!r}")
        return ds.all_episodes()


def setpoint_quat(action: np.ndarray) -> np.ndarray:
    """``(T, 4)`` wxyz setpoint quaternions of stored actions ``(T, 6)`` (pos, rotation vector)."""
    action = np.asarray(action, dtype=np.float64)
    if action.ndim != 2 or action.shape[1] != 6:
        raise InvalidInputError(f"action must be (T, 6), got {action.shape}")
    return rotvec_to_quat(action[:, 3:])


def split_episodes(episodes: list, train_fraction: float = 0.7, rng: np.random.Generator | None = None
                   ) -> tuple[list, list]:
    """Split by trajectory: ``round(fraction·E)`` episodes (at least 1 each side when ``E >= 2``) for training.
    Without ``rng`` the first episodes train (file order); with it, a permutation drawn from ``rng``."""
    if not 0.0 < train_fraction < 1.0:
        raise InvalidInputError(f"train_fraction must be in (0, 1), got {train_fraction!r}")
    n = len(episodes)
    k = min(max(int(round(train_fraction * n)), 1), n - 1) if n >= 2 else n
    order = np.arange(n) if rng is None else rng.permutation(n)
    return [episodes[i] for i in order[:k]], [episodes[i] for i in order[k:]]


__all__ = ["BACKEND", "SUBSTEPS", "TRAJECTORY_ROWS", "EpisodeStats", "episode_plan", "read_reference",
           "reference_dataset", "reference_episode", "reference_meta", "run_trajectory", "setpoint_quat",
           "split_episodes", "task_identity", "write_reference"]
