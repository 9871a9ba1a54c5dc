"""Poses for the contact-detection benchmark (tight-tolerance paper Table I): a moving part (peg, nut) placed
along an insertion or a screwing trajectory in the frame of a static part (hole, bolt), with random lateral
offsets and tilts inside the clearance, checked with the exact signed distance.

Conventions (both tasks): the static part's axis is its frame's +z; the moving part's axis is its own +z, and
aligned means the two frames differ by a translation along z (and, for the nut, a turn about it). A pose is
``(pos (3,), quat (4,) wxyz)`` of the moving part's frame in the static part's frame [m]. Offsets are drawn at
two sections of the moving part (its lowest one and the highest one inside the static part), each uniform in a
disc of the task's radial clearance, so the tilt is what the clearance lets through; a pose whose exact gap
(:func:`gap`) is below ``-FEASIBLE_PENETRATION_M`` has its offsets halved until it fits (at zero offset the
aligned pose is feasible by construction of the trajectory). A share ``penetrating_share`` of the poses is then
pushed into clear penetration on purpose (laterally past the clearance, or axially past the free play), so
that both detectors have contacts to find.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contactkit.errors import GeometryError
from contactkit.geometry import Part, signed_distance
from contactkit.rotations import quat_mul, quat_to_mat, rotvec_to_quat

FEASIBLE_PENETRATION_M = 2e-6
"""A kinematically feasible pose may penetrate by at most this much (mesh round-off, resting contact) [m]."""

PENETRATION_RANGE_M = (5e-5, 2e-4)
"""Depth range [m] of the deliberate penetration added to a penetrating pose (beyond the clearance)."""

SHRINK_TRIES = 8
"""Halvings of a sample's offsets before it falls back to the aligned pose."""

PLAY_BISECTIONS = 12
"""Bisection steps when measuring the free axial play of a nut on its thread."""

MIN_TILT_SPAN_M = 1e-3
"""Axial span [m] of the moving part inside the static one below which no tilt is drawn."""


@dataclass(frozen=True)
class PoseSet:
    """Poses of the moving part in the static part's frame.

    Attributes:
        pos: ``(N, 3)`` [m]. quat: ``(N, 4)`` wxyz.
        penetrating: ``(N,)`` bool, pushed into penetration on purpose.
        gap: ``(N,)`` exact gap of each pose (:func:`gap`) [m]; negative is penetration.
    """

    pos: np.ndarray
    quat: np.ndarray
    penetrating: np.ndarray
    gap: np.ndarray


def axial_span(part: Part) -> tuple[float, float]:
    """``(z_min, z_max)`` of a part's vertices in its own frame [m]."""
    return float(part.vertices[:, 2].min()), float(part.vertices[:, 2].max())


def transform(points: np.ndarray, pos: np.ndarray, quat: np.ndarray) -> np.ndarray:
    """``(N, 3)`` points of a frame at ``pos (3,)``, ``quat (4,)`` expressed in the parent frame."""
    return points @ quat_to_mat(quat).T + pos


def gap(static: Part, moving: Part, pos: np.ndarray, quat: np.ndarray) -> float:
    """Exact gap [m] between the two meshes at a pose, by their vertices: the smallest signed distance of the
    moving part's vertices to the static mesh and of the static part's vertices to the moving mesh (negative:
    penetration). Edge–edge crossings between vertices are not seen; the meshes are fine enough that the
    vertex test bounds the penetration of the poses drawn here to well below their clearance."""
    inward = signed_distance(static, transform(moving.vertices, pos, quat))
    rot = quat_to_mat(quat)
    outward = signed_distance(moving, (static.vertices - pos) @ rot)
    return float(min(inward.min(), outward.min()))


def tilted_pose(u_lo: np.ndarray, u_hi: np.ndarray, z: float, s_lo: float, s_hi: float, turn: float,
                spin: float) -> tuple[np.ndarray, np.ndarray]:
    """Pose whose moving-part axis passes through ``(u_lo, z + s_lo)`` and ``(u_hi, z + s_hi)`` [m].

    Args:
        u_lo, u_hi: ``(2,)`` lateral offsets [m] at the part's axial coordinates ``s_lo < s_hi`` [m].
        z: height of the part's frame origin when aligned [m]. turn: rotation about the static axis [rad]
            (screwing); spin: extra rotation about the part's own axis [rad].

    Returns:
        ``pos (3,)``, ``quat (4,)`` in the static frame.
    """
    axis = np.array([*(u_hi - u_lo), s_hi - s_lo])
    axis /= np.linalg.norm(axis)
    bend = np.cross([0.0, 0.0, 1.0], axis)
    sin = np.linalg.norm(bend)
    tilt = bend / sin * np.arctan2(sin, axis[2]) if sin > 0.0 else np.zeros(3)
    quat = quat_mul(rotvec_to_quat(tilt), rotvec_to_quat(np.array([0.0, 0.0, turn + spin])))
    pos = np.array([*u_lo, z + s_lo]) - axis * s_lo
    return pos, quat


def disc(rng: np.random.Generator, radius: float) -> np.ndarray:
    """A point uniform in the disc of ``radius`` [m] about the origin, ``(2,)``."""
    r = radius * np.sqrt(rng.uniform())
    a = rng.uniform(0.0, 2.0 * np.pi)
    return np.array([r * np.cos(a), r * np.sin(a)])


def feasible(static: Part, moving: Part, draw) -> tuple[np.ndarray, np.ndarray, float]:
    """A pose ``draw(scale)`` (offsets scaled by ``scale``) whose :func:`gap` is at least
    ``-FEASIBLE_PENETRATION_M``: scale 1, then halved ``SHRINK_TRIES`` times, then 0 (aligned).

    Raises:
        GeometryError: even the aligned pose penetrates (the trajectory does not fit the parts).
    """
    for scale in [0.5**k for k in range(SHRINK_TRIES)] + [0.0]:
        pos, quat = draw(scale)
        g = gap(static, moving, pos, quat)
        if g >= -FEASIBLE_PENETRATION_M:
            return pos, quat, g
    raise GeometryError(f"the aligned pose of {moving.name!r} in {static.name!r} penetrates by {-g:.3g} m: "
                        "the trajectory does not fit the parts")


def insertion_poses(hole: Part, peg: Part, *, depth: float, clearance: float, n: int, penetrating_share: float,
                    rng: np.random.Generator, above: float = 0.01) -> PoseSet:
    """Poses of a peg moving down a hole's axis from ``above`` [m] over the opening (``z = depth``) to the
    bottom (``z = 0``), hole and peg in the :func:`contactkit.geometry.slot` / :func:`~contactkit.geometry.peg`
    frames (peg tip at its origin). Lateral offsets within the radial ``clearance`` [m]; see the module
    docstring for the feasibility check and the penetrating share."""
    s_lo, s_top = axial_span(peg)
    pushed = set(rng.permutation(n)[: round(penetrating_share * n)].tolist())
    rows = []
    for i in range(n):
        z = float(rng.uniform(0.0, depth + above)) - s_lo
        s_hi = min(s_top, depth - z)
        u_lo, u_hi, spin = disc(rng, clearance), disc(rng, clearance), rng.uniform(0.0, 2.0 * np.pi)
        if s_hi - s_lo < MIN_TILT_SPAN_M:
            s_hi, u_hi = s_top, u_lo

        def draw(scale, z=z, s_hi=s_hi, u_lo=u_lo, u_hi=u_hi, spin=spin):
            return tilted_pose(scale * u_lo, scale * u_hi, z, s_lo, s_hi, 0.0, spin)

        pos, quat, g = feasible(hole, peg, draw)
        push = i in pushed
        if push:
            pos, quat, g = _pushed(hole, peg, pos, quat, clearance, depth, rng)
        rows.append((pos, quat, push, g))
    return _pose_set(rows)


def _pushed(static: Part, moving: Part, pos: np.ndarray, quat: np.ndarray, clearance: float, depth: float,
            rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, float]:
    """A feasible insertion pose pushed into clear penetration by at least a depth drawn in
    :data:`PENETRATION_RANGE_M`: sideways by twice the ``clearance`` plus that depth (half of the poses whose tip
    is inside the hole), else aligned with the hole's axis (keeping its lateral offset and its turn) and put that
    depth through the floor (``z = 0``)."""
    extra = rng.uniform(*PENETRATION_RANGE_M)
    pos = pos.copy()
    lowest = float(transform(moving.vertices, pos, quat)[:, 2].min())
    if lowest < depth - 2.0 * MIN_TILT_SPAN_M and rng.uniform() < 0.5:
        direction = rng.uniform(0.0, 2.0 * np.pi)
        pos[:2] += np.array([np.cos(direction), np.sin(direction)]) * (2.0 * clearance + extra)
    else:  # aligned first: a tilt that fit near the opening would cut deep into the wall at the bottom
        quat = rotvec_to_quat(np.array([0.0, 0.0, 2.0 * np.arctan2(quat[3], quat[0])]))
        pos[2] = -float(transform(moving.vertices, np.zeros(3), quat)[:, 2].min()) - extra
    return pos, quat, gap(static, moving, pos, quat)


def free_play(static: Part, moving: Part, z: float, limit: float) -> tuple[float, float]:
    """How far [m] the aligned moving part at height ``z`` [m] moves down and up along the axis before its exact
    :func:`gap` closes (to ``-FEASIBLE_PENETRATION_M``), each found by bisection in ``[0, limit]`` to
    ``limit / 2 ** PLAY_BISECTIONS``."""
    quat = np.array([1.0, 0.0, 0.0, 0.0])

    def free(dz: float) -> bool:
        return gap(static, moving, np.array([0.0, 0.0, z + dz]), quat) >= -FEASIBLE_PENETRATION_M

    plays = []
    for sign in (-1.0, 1.0):
        lo, hi = 0.0, limit
        for _ in range(PLAY_BISECTIONS):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if free(sign * mid) else (lo, mid)
        plays.append(lo)
    return plays[0], plays[1]


def screwing_poses(bolt: Part, nut: Part, *, z_start: float, turns: float, pitch: float, handedness: int,
                   radial_play: float, n: int, penetrating_share: float, rng: np.random.Generator) -> PoseSet:
    """Poses of a nut screwed down a bolt: turned by ``-handedness · α`` about the bolt axis and moved by
    ``-pitch · α / 2π`` for ``α`` uniform in ``[0, 2π · turns]`` from ``z_start`` [m], a height where the
    aligned, unturned nut's thread is centred in the bolt's (:func:`contactkit.geometry.fasteners.nut`'s
    nominal pose: a whole number of pitches), with lateral offsets within ``radial_play`` [m] (tilts follow).
    Penetrating poses move the nut axially past its free play (:func:`free_play`) by a depth in
    :data:`PENETRATION_RANGE_M`."""
    z0 = z_start
    play_down, play_up = free_play(bolt, nut, z0, 0.5 * pitch)
    s_lo, s_hi = axial_span(nut)
    pushed = set(rng.permutation(n)[: round(penetrating_share * n)].tolist())
    rows = []
    for i in range(n):
        alpha = float(rng.uniform(0.0, 2.0 * np.pi * turns))
        z = z0 - pitch * alpha / (2.0 * np.pi)
        u_lo, u_hi = disc(rng, radial_play), disc(rng, radial_play)

        def draw(scale, z=z, alpha=alpha, u_lo=u_lo, u_hi=u_hi):
            return tilted_pose(scale * u_lo, scale * u_hi, z, s_lo, s_hi, -handedness * alpha, 0.0)

        pos, quat, g = feasible(bolt, nut, draw)
        push = i in pushed
        if push:
            pos = pos.copy()
            extra = rng.uniform(*PENETRATION_RANGE_M)
            pos[2] += play_up + extra if rng.uniform() < 0.5 else -(play_down + extra)
            g = gap(bolt, nut, pos, quat)
        rows.append((pos, quat, push, g))
    return _pose_set(rows)


def _pose_set(rows: list) -> PoseSet:
    """Stack ``(pos, quat, penetrating, gap)`` rows into a :class:`PoseSet`."""
    pos, quat, push, g = zip(*rows, strict=True)
    return PoseSet(np.array(pos), np.array(quat), np.array(push, dtype=bool), np.array(g))
