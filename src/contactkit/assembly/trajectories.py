"""Random human-like setpoint trajectories for the reference data (the paper's teleoperated demonstrations, §V-A).

A trajectory is a sequence of setpoints (the commanded pose of the tool's body frame, one per
:data:`~contactkit.assembly.task.SIM_DT` row, held over the row's ten reference steps) and an initial tool state.
Each setpoint channel is a minimum-jerk path (``s(τ) = 10τ³ - 15τ⁴ + 6τ⁵``, Flash & Hogan) through random waypoints
at random intervals, plus small coloured noise (white noise through two first-order low-pass filters: a hand's
tremor and imperfect tracking), so the path is smooth and starts exactly at the initial pose.

Peg in hole (hole floor at z = 0, opening at ``axis_height``; peg body origin at its tip centre, axis +z):
INSERT (partly inserted, pushed down onto the floor), EXTRACT (near the floor, pulled up, staying engaged), WIGGLE
(inserted, lateral and rotational wiggle), TILT (inserted, tilted about a random horizontal axis while pushed).
Bolting (the infinite-turn gripper: the setpoint turns about the bolt axis and advances by the pitch per turn, with
imperfect axial tracking): SCREW_IN, SCREW_OUT, PUSH (axial push without turning: the thread must hold).
Every trajectory starts at rest in a collision-free, engaged pose: the peg upright and centred in the bore, the
nut screwed on 1–3 pitches at the nominal fit (:func:`contactkit.geometry.fasteners.screw_pose`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from contactkit.assembly.task import SIM_DT, AssemblyKind, AssemblyTask
from contactkit.errors import InvalidInputError
from contactkit.rotations import quat_mul, quat_normalize, rotvec_to_quat
from contactkit.state import BodyState

SEGMENT_S = (0.25, 0.8)
"""[s] range of the duration of one minimum-jerk segment between waypoints."""
NOISE_TIME_CONSTANT = 0.1
"""[s] time constant of each of the two low-pass filters that colour the noise."""
POSITION_NOISE = 5e-5
"""[m] standard deviation of the coloured position noise of a setpoint."""
ANGLE_NOISE = 2e-3
"""[rad] standard deviation of the coloured rotation noise of a setpoint."""
PEG_INSERTED_M = (3e-3, 12e-3)
"""[m] range of the initial insertion depth of the peg (tip below the opening) for INSERT."""
NUT_ENGAGED_TURNS = (1.0, 3.0)
"""Range of the initial engagement of the nut [pitches screwed on]."""


class TrajectoryKind(str, Enum):
    """What the simulated operator does (module docstring)."""

    INSERT = "insert"
    EXTRACT = "extract"
    WIGGLE = "wiggle"
    TILT = "tilt"
    SCREW_IN = "screw-in"
    SCREW_OUT = "screw-out"
    PUSH = "push"


KINDS = {
    AssemblyKind.PEG_IN_HOLE: (TrajectoryKind.INSERT, TrajectoryKind.EXTRACT, TrajectoryKind.WIGGLE,
                               TrajectoryKind.TILT),
    AssemblyKind.BOLTING: (TrajectoryKind.SCREW_IN, TrajectoryKind.SCREW_OUT, TrajectoryKind.PUSH),
}
"""The trajectory kinds of each task."""


@dataclass(frozen=True)
class Trajectory:
    """Setpoints of one demonstration.

    Attributes:
        kind: :class:`TrajectoryKind`. initial: the tool's state at ``t = 0`` (at rest, world).
        setpoint_pos: ``(T, 3)`` [m] world; setpoint_quat: ``(T, 4)`` wxyz — the commanded body-frame pose of row
            ``t`` (held over ``[t·dt, (t+1)·dt)``). dt: row period [s].
    """

    kind: TrajectoryKind
    initial: BodyState
    setpoint_pos: np.ndarray
    setpoint_quat: np.ndarray
    dt: float = SIM_DT


def min_jerk(waypoints: np.ndarray, times: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Minimum-jerk path ``(T, D)`` through ``waypoints (W, D)`` at increasing ``times (W,)`` [s], sampled at
    ``t (T,)`` [s] (held at the ends): on each segment ``x = x_i + (x_{i+1} - x_i)(10τ³ - 15τ⁴ + 6τ⁵)``."""
    seg = np.clip(np.searchsorted(times, t, side="right") - 1, 0, len(times) - 2)
    tau = np.clip((t - times[seg]) / (times[seg + 1] - times[seg]), 0.0, 1.0)[:, None]
    s = tau**3 * (10.0 - 15.0 * tau + 6.0 * tau**2)
    return waypoints[seg] + (waypoints[seg + 1] - waypoints[seg]) * s


def colored_noise(rng: np.random.Generator, n: int, dims: int, sigma: float, dt: float) -> np.ndarray:
    """``(n, dims)`` noise starting at 0: white noise through two first-order low-pass filters of time constant
    :data:`NOISE_TIME_CONSTANT`, scaled so that the stationary standard deviation is ``sigma``."""
    from scipy.signal import lfilter

    a = np.exp(-dt / NOISE_TIME_CONSTANT)
    eps = rng.standard_normal((n, dims))
    eps[0] = 0.0  # x_i = a x_{i-1} + (1 - a) eps_i from x_0 = 0, twice
    y = lfilter([1.0 - a], [1.0, -a], lfilter([1.0 - a], [1.0, -a], eps, axis=0), axis=0)
    stationary = (1 - a) ** 2 * np.sqrt((1 + a * a) / (1 - a * a) ** 3)  # std of the doubly filtered unit noise
    return y * (sigma / stationary)


def _path(rng: np.random.Generator, n: int, dt: float, start: np.ndarray, sample) -> np.ndarray:
    """Min-jerk path ``(n, D)`` from ``start (D,)`` through waypoints ``sample(rng, k) -> (k, D)``."""
    total = n * dt
    durations = []
    while sum(durations) < total:
        durations.append(rng.uniform(*SEGMENT_S))
    times = np.concatenate([[0.0], np.cumsum(durations)])
    waypoints = np.vstack([start[None, :], sample(rng, len(durations))])
    return min_jerk(waypoints, times, (np.arange(n) + 1) * dt)


def _peg(rng: np.random.Generator, task: AssemblyTask, kind: TrajectoryKind, n: int, dt: float):
    top = task.axis_height
    if kind is TrajectoryKind.EXTRACT:
        z0 = rng.uniform(0.5e-3, 4e-3)
    elif kind is TrajectoryKind.INSERT:
        z0 = top - rng.uniform(*PEG_INSERTED_M)
    else:
        z0 = rng.uniform(3e-3, top - 5e-3)
    lateral, tilt, push = 3e-4, 5e-3, rng.uniform(0.0, 2e-3)
    if kind is TrajectoryKind.WIGGLE:
        lateral, tilt = 1e-3, 0.02

    def sample(r, k):
        if kind is TrajectoryKind.INSERT:  # down onto the floor, the last waypoint 0.5-3 mm into it
            z = np.linspace(z0, -r.uniform(0.5e-3, 3e-3), k + 1)[1:]
        elif kind is TrajectoryKind.EXTRACT:  # up, ending 2-6 mm below the opening (still engaged)
            z = np.linspace(z0, top - r.uniform(2e-3, 6e-3), k + 1)[1:]
        else:
            z = z0 - push + r.normal(0.0, 1e-3, k)
        axes = r.normal(0.0, tilt, (k, 2))
        if kind is TrajectoryKind.TILT:
            axis = r.normal(size=2)
            axes = np.outer(r.uniform(-0.05, 0.05, k), axis / np.linalg.norm(axis))
        return np.column_stack([r.normal(0.0, lateral, (k, 2)), z, axes, r.normal(0.0, 0.02, k)])

    start = np.array([0.0, 0.0, z0, 0.0, 0.0, 0.0])
    path = _path(rng, n, dt, start, sample)
    pos = path[:, :3] + colored_noise(rng, n, 3, POSITION_NOISE, dt)
    quat = rotvec_to_quat(path[:, 3:] + colored_noise(rng, n, 3, ANGLE_NOISE, dt))
    return BodyState.at_rest(start[:3]), pos, quat


def _nut(rng: np.random.Generator, task: AssemblyTask, kind: TrajectoryKind, n: int, dt: float):
    from contactkit.geometry.fasteners import screw_pose

    p = task.pitch
    engaged = rng.uniform(*NUT_ENGAGED_TURNS)
    theta0 = 2.0 * np.pi * (task.axis_height / p - engaged)
    turns = {TrajectoryKind.SCREW_IN: -rng.uniform(0.3, 1.5),
             TrajectoryKind.SCREW_OUT: rng.uniform(0.3, min(1.5, engaged - 0.5)),
             TrajectoryKind.PUSH: 0.0}[kind]
    axial = -rng.uniform(0.0, 1e-3) if kind is not TrajectoryKind.PUSH else -rng.uniform(0.5e-3, 4e-3)

    def sample(r, k):
        theta = theta0 + 2.0 * np.pi * turns * np.sort(r.uniform(0.0, 1.0, k))
        theta[-1] = theta0 + 2.0 * np.pi * turns
        offset = axial + r.normal(0.0, 5e-4, k)
        return np.column_stack([theta, r.normal(0.0, 2e-4, (k, 2)), offset, r.normal(0.0, 3e-3, (k, 2))])

    path = _path(rng, n, dt, np.array([theta0, 0.0, 0.0, 0.0, 0.0, 0.0]), sample)
    path[:, 1:4] += colored_noise(rng, n, 3, POSITION_NOISE, dt)
    path[:, 4:] += colored_noise(rng, n, 2, ANGLE_NOISE, dt)
    path[:, 0] += colored_noise(rng, n, 1, ANGLE_NOISE, dt)[:, 0]
    screw = [screw_pose(p, float(th), z0=0.0, handedness=int(task.tool.meta.get("handedness", 1)))
             for th in path[:, 0]]
    pos = np.array([s[0] for s in screw]) + path[:, 1:4]
    tilt = rotvec_to_quat(np.column_stack([path[:, 4:], np.zeros(n)]))
    quat = quat_normalize(quat_mul(tilt, np.array([s[1] for s in screw])))
    pos0, quat0 = screw_pose(p, float(theta0), z0=0.0, handedness=int(task.tool.meta.get("handedness", 1)))
    return BodyState.at_rest(pos0, quat0), pos, quat


def random_trajectory(task: AssemblyTask, kind: TrajectoryKind | str, n_rows: int, rng: np.random.Generator,
                      dt: float = SIM_DT) -> Trajectory:
    """One random human-like trajectory of ``n_rows`` setpoints (module docstring).

    Args:
        task: the task; kind: one of ``KINDS[task.kind]``; n_rows: ``T >= 1`` setpoints; rng: the only randomness;
        dt: row period [s].

    Raises:
        InvalidInputError: a kind of the other task, or ``n_rows < 1``.
    """
    kind = TrajectoryKind(kind)
    if kind not in KINDS[task.kind]:
        raise InvalidInputError(f"trajectory kind {kind.value!r} is not one of {task.kind.value}'s "
                                f"{[k.value for k in KINDS[task.kind]]}")
    if int(n_rows) < 1:
        raise InvalidInputError(f"n_rows must be >= 1, got {n_rows!r}")
    make = _peg if task.kind is AssemblyKind.PEG_IN_HOLE else _nut
    initial, pos, quat = make(rng, task, kind, int(n_rows), float(dt))
    return Trajectory(kind, initial, pos, quat, float(dt))
