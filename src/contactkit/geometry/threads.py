"""ISO 68-1 basic thread profile and the helical height-field mesher behind the bolt and the nut of
:mod:`contactkit.geometry.fasteners` (data-driven simulation paper §V-A: M48 x 5 bolting task).

Profile (ISO 68-1, external and internal threads share it): pitch ``p``, fundamental triangle height
``H = sqrt(3) / 2 p``, flanks at 60 degrees to each other (30 degrees to the radial direction), a flat crest
``p / 8`` wide at the major diameter ``D`` and a flat root ``p / 4`` wide at the minor diameter
``D1 = D - 5 / 4 H = D - 1.0825 p``; pitch diameter ``D2 = D - 3 / 4 H = D - 0.6495 p``. Each flank spans
``5 p / 16`` axially.

Phase: a right-hand thread about +z is a radial height field ``r(theta, z) = R(u)`` with the axial phase
``u = (z - handedness p theta / 2 pi) mod p`` (``theta`` measured counter-clockwise from +x seen from +z);
it is invariant under the screw ``theta -> theta + a, z -> z + handedness p a / 2 pi``. ``R`` is periodic and
piecewise linear with four corners per pitch, at ``u = p/16`` (end of crest), ``3p/8`` (start of root),
``5p/8`` (end of root) and ``15p/16`` (start of crest): the crest is centred on ``u = 0``.

Mesh (:func:`helical_columns`, :func:`tube_faces`): ``N`` columns at ``theta_i = 2 pi i / N``; column ``i``
holds the vertices at ``z`` in the ends plus every ``z`` where the phase hits a corner,
``z = k p + handedness p theta_i / 2 pi + u_j``; so every profile corner lies exactly on the mesh, and the
vertex set is exactly invariant under the discrete screw ``(theta + 2 pi / N, z + handedness p / N)``
away from the ends. Adjacent columns are joined by an edge between the vertices of the same corner row (or
of the same clip kink line), and by a zipper over their sorted ``z`` in between, so no triangle straddles a
corner. Between columns the triangles are chords of the helical surface: they fall at most
``r (1 - cos(pi / N))`` (the sagitta) inside it. End rims pass through the corners (:func:`helical_tube`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from contactkit.errors import InvalidInputError
from contactkit.geometry.prism import check_positive

H_PER_PITCH = math.sqrt(3.0) / 2.0
"""Fundamental triangle height over pitch, ``H / p`` (0.866025)."""

CORNER_PHASES = (1.0 / 16.0, 3.0 / 8.0, 5.0 / 8.0, 15.0 / 16.0)
"""Axial phases of the profile's four corners as fractions of the pitch (crest end, root start, root end,
crest start)."""

ROW_MERGE_TOL = 1e-9
"""Two vertices of one column closer than this along z [m] are one (a corner landing on an end is dropped:
the end's vertex lies on the profile already)."""


@dataclass(frozen=True)
class ThreadProfile:
    """The ISO 68-1 basic profile of one thread, possibly shifted radially (a nut's play).

    Attributes:
        diameter: nominal (major) diameter ``D`` [m].
        pitch: ``p`` [m].
        height: fundamental triangle height ``H = 0.866025 p`` [m].
        minor_diameter: ``D1 = D - 1.0825 p`` [m].
        pitch_diameter: ``D2 = D - 0.6495 p`` [m].
        radial_offset: added to every radius [m] (0 for the bolt, ``play / 2`` for the nut).
        corner_phase: ``(4,)`` axial phases ``u`` of the corners within one pitch [m], increasing in ``[0, p)``.
        corner_radius: ``(4,)`` radii of those corners [m], offset included.
    """

    diameter: float
    pitch: float
    height: float
    minor_diameter: float
    pitch_diameter: float
    radial_offset: float
    corner_phase: np.ndarray
    corner_radius: np.ndarray


def thread_profile(diameter: float, pitch: float, *, radial_offset: float = 0.0) -> ThreadProfile:
    """The ISO 68-1 basic profile (module docstring) of major diameter ``diameter`` and ``pitch`` [m], every
    radius shifted by ``radial_offset`` [m].

    Raises:
        InvalidInputError: non-positive diameter or pitch, a pitch so coarse that ``D1 <= 0``, or a
            non-finite offset that makes a radius non-positive.
    """
    d = check_positive("thread diameter", diameter)
    p = check_positive("thread pitch", pitch)
    off = float(radial_offset)
    h = H_PER_PITCH * p
    d1 = d - 1.25 * h  # = D - 2 (5/8) H
    if not math.isfinite(off) or d1 / 2.0 + off <= 0.0:
        raise InvalidInputError(f"thread diameter {d:g} m / pitch {p:g} m / radial_offset {off!r} give a minor "
                                f"radius {d1 / 2 + off:g} m <= 0")
    phase = np.array(CORNER_PHASES) * p
    radius = np.array([d / 2.0, d1 / 2.0, d1 / 2.0, d / 2.0]) + off
    return ThreadProfile(d, p, h, d1, d - 0.75 * h, off, phase, radius)


def profile_radius(profile: ThreadProfile, u: np.ndarray) -> np.ndarray:
    """``R(u)`` [m] of ``profile`` at axial phases ``u`` [m] (any shape; taken modulo the pitch)."""
    p = profile.pitch
    up = np.concatenate([profile.corner_phase - p, profile.corner_phase, profile.corner_phase + p])
    rp = np.tile(profile.corner_radius, 3)
    return np.interp(np.mod(u, p), up, rp)


def phase(profile: ThreadProfile, theta: np.ndarray, z: np.ndarray, handedness: int = 1) -> np.ndarray:
    """Axial phase ``u = (z - handedness p theta / 2 pi) mod p`` [m] of points at angle ``theta`` [rad], height
    ``z`` [m]."""
    return np.mod(z - handedness * profile.pitch * theta / (2.0 * math.pi), profile.pitch)


def _merge_close(z: np.ndarray) -> np.ndarray:
    z = np.sort(z)
    keep = np.concatenate([[True], np.diff(z) > ROW_MERGE_TOL])
    return z[keep]


def helical_columns(
    profile: ThreadProfile,
    segments: int,
    z0: float,
    z1: float,
    *,
    handedness: int = 1,
    clip: Callable[[np.ndarray], np.ndarray] | None = None,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Vertex columns of the thread surface between ``z0`` and ``z1`` [m] (module docstring).

    Args:
        profile: the thread profile; segments: columns per turn ``N``; handedness: +1 right, -1 left.
        clip: optional axisymmetric upper bound ``c(z)`` on the radius, LINEAR in ``z`` (a chamfer cone);
            the surface becomes ``min(R, c)`` and the crossings of ``R`` and ``c`` are added to every column.

    Returns:
        ``N`` pairs ``(z (K_i,), r (K_i,))`` [m], ``z`` increasing from ``z0`` to ``z1``; column ``i`` at angle
        ``2 pi i / N``.
    """
    p = profile.pitch
    cols = []
    k = np.arange(math.floor((z0 - p) / p) - 1, math.ceil((z1 + p) / p) + 2)
    for i in range(segments):
        theta = 2.0 * math.pi * i / segments
        base = handedness * p * theta / (2.0 * math.pi)
        zc = (k[:, None] * p + base + profile.corner_phase[None, :]).ravel()
        zc = zc[(zc > z0 + ROW_MERGE_TOL) & (zc < z1 - ROW_MERGE_TOL)]
        z = _merge_close(np.concatenate([[z0, z1], zc]))
        if clip is not None:
            zx = _crossings(profile, theta, z, clip, handedness)
            z = _merge_close(np.concatenate([z, zx[(zx > z0 + ROW_MERGE_TOL) & (zx < z1 - ROW_MERGE_TOL)]]))
        r = profile_radius(profile, phase(profile, theta, z, handedness))
        if clip is not None:
            r = np.minimum(r, clip(z))
        cols.append((z, r))
    return cols


def _crossings(profile, theta, z, clip, handedness) -> np.ndarray:
    """Heights where ``R`` (linear between the column's corners ``z``) crosses the linear ``clip(z)``."""
    f = profile_radius(profile, phase(profile, theta, z, handedness)) - clip(z)
    a, b = f[:-1], f[1:]
    cross = (a * b) < 0.0
    t = a[cross] / (a[cross] - b[cross])
    return z[:-1][cross] + t * (z[1:][cross] - z[:-1][cross])


@dataclass(frozen=True)
class HelicalTube:
    """The open thread surface between two end planes, ready to be closed by end faces.

    Attributes:
        vertices: ``(V, 3)`` float64 [m]; faces: ``(F, 3)`` int64.
        bottom, top: vertex indices of the rim at ``z0`` / ``z1``, counter-clockwise seen from +z.
        bottom_angle, top_angle: their angles ``theta`` [rad], increasing in ``[0, 2 pi)``.
    """

    vertices: np.ndarray
    faces: np.ndarray
    bottom: np.ndarray
    top: np.ndarray
    bottom_angle: np.ndarray
    top_angle: np.ndarray


def _rim_crossing(profile, n, i, z_e, hand, at_top, r_max):
    """Where a corner row crosses the end plane ``z_e`` between columns ``i`` and ``i + 1``: ``(theta, j,
    right)`` with ``right`` True when the row's vertex next to the crossing is on column ``i + 1``; or None.
    Corners of radius above ``r_max`` (clipped away by a chamfer there) are no corners of the surface."""
    p, dth = profile.pitch, 2.0 * math.pi / n
    u0 = float(np.mod(z_e - hand * p * i / n, p))  # phase of (theta_i, z_e); it moves by -hand p / n per column
    for j, s in enumerate(profile.corner_phase):
        if profile.corner_radius[j] > r_max:
            continue
        back = float(np.mod(hand * (u0 - s), p))  # z_e - z_row(theta_i), right-hand; mirrored for left
        if ROW_MERGE_TOL < back < p / n - ROW_MERGE_TOL:
            theta = dth * (i + back / (p / n))
            rises = hand == 1  # the row's z grows with theta
            return theta, j, rises != at_top
    return None


def _zipper(za: np.ndarray, ia: list, zb: np.ndarray, ib: list) -> list[tuple[int, int, int]]:
    """Triangles joining column ``a`` to the next column ``b`` (counter-clockwise), normals away from the axis."""
    tris, i, j = [], 0, 0
    while i < len(za) - 1 or j < len(zb) - 1:
        if j == len(zb) - 1 or (i < len(za) - 1 and za[i + 1] <= zb[j + 1]):
            tris.append((ia[i], ib[j], ia[i + 1]))
            i += 1
        else:
            tris.append((ia[i], ib[j], ib[j + 1]))
            j += 1
    return tris


def _row_keys(profile, theta, z, r, clip, hand) -> list:
    """Which line of the (theta, z) parameter plane each interior vertex of a column lies on: ``("c", k, j)``
    for corner ``j`` of turn ``k``, ``("x", k, j)`` for the kink where the clip cuts segment ``j`` of turn
    ``k``; None for the ends. Vertices on the same line in adjacent columns are joined by an edge."""
    p, s0 = profile.pitch, profile.corner_phase[0]
    rel = profile.corner_phase - s0
    w = z - hand * p * theta / (2.0 * math.pi) - s0
    kk = np.floor(w / p)
    uu = w - kk * p
    near = np.abs(np.append(rel, p)[None, :] - uu[:, None]) <= 2.0 * ROW_MERGE_TOL
    corner = near.any(axis=1)
    jc = np.argmax(near, axis=1)
    kink = ~corner & (np.abs(r - clip(z)) <= ROW_MERGE_TOL) if clip is not None else np.zeros(len(z), bool)
    js = np.searchsorted(rel, uu, side="right") - 1
    keys = [None] * len(z)
    for m in np.flatnonzero(corner | kink):
        if 0 < m < len(z) - 1:
            keys[m] = ("c", int(kk[m]) + (jc[m] == 4), int(jc[m]) % 4) if corner[m] else ("x", int(kk[m]), int(js[m]))
    return keys


def _strip(za, ia, ka, zb, ib, kb) -> list[tuple[int, int, int]]:
    """Triangles between adjacent columns: vertices on the same parameter line (same key) in both columns are
    joined by an edge (so no triangle straddles a corner or a kink), the rest zipped by height in between."""
    where_b = {key: j for j, key in enumerate(kb) if key is not None}
    anchors, last = [(0, 0)], 0
    for i, key in enumerate(ka):
        j = where_b.get(key, -1) if key is not None else -1
        if j > last and i > anchors[-1][0]:
            anchors.append((i, j))
            last = j
    anchors.append((len(za) - 1, len(zb) - 1))
    tris = []
    for (i0, j0), (i1, j1) in zip(anchors[:-1], anchors[1:], strict=True):
        tris += _zipper(za[i0:i1 + 1], ia[i0:i1 + 1], zb[j0:j1 + 1], ib[j0:j1 + 1])
    return tris


def helical_tube(
    profile: ThreadProfile,
    segments: int,
    z0: float,
    z1: float,
    *,
    handedness: int = 1,
    clip: Callable[[np.ndarray], np.ndarray] | None = None,
    outward: bool = True,
) -> HelicalTube:
    """The thread surface of :func:`helical_columns` between ``z0`` and ``z1`` [m] as an open triangle tube.

    Adjacent columns are joined by a zipper over their sorted ``z``. On each end plane where the thread is
    not clipped, the points where a corner row crosses the plane between two columns are added to the rim
    (so the rim passes through the profile's corners, as the cut of the ideal thread does), each joined to
    its row by one triangle. Faces point away from the axis if ``outward`` (a bolt), towards it otherwise
    (a nut's bore).
    """
    cols = helical_columns(profile, segments, z0, z1, handedness=handedness, clip=clip)
    n = len(cols)
    verts, idx, start = [], [], 0
    for i, (z, r) in enumerate(cols):
        th = 2.0 * math.pi * i / n
        verts.append(np.column_stack([r * math.cos(th), r * math.sin(th), z]))
        idx.append(list(range(start, start + len(z))))
        start += len(z)
    r_max = [math.inf if clip is None else float(clip(np.array([z_e]))[0]) + ROW_MERGE_TOL for z_e in (z0, z1)]
    keys = [_row_keys(profile, 2.0 * math.pi * i / n, z, r, clip, handedness) for i, (z, r) in enumerate(cols)]
    wrap_keys = _row_keys(profile, 2.0 * math.pi, cols[0][0], cols[0][1], clip, handedness)  # column 0 seen at 2 pi
    extra, tris, rims = [], [], ([], [])
    for i in range(n):
        k = (i + 1) % n
        left, right = list(idx[i]), list(idx[k])
        for end, z_e in enumerate((z0, z1)):
            rims[end].append((2.0 * math.pi * i / n, idx[i][-end]))
            hit = _rim_crossing(profile, n, i, z_e, handedness, end == 1, r_max[end])
            if hit is None:
                continue
            theta, j, on_right = hit
            x = start + len(extra)
            extra.append([profile.corner_radius[j] * math.cos(theta), profile.corner_radius[j] * math.sin(theta), z_e])
            rims[end].append((theta, x))
            if end == 0 and on_right:
                tris.append((x, right[0], right[1]))
                right[0] = x
            elif end == 0:
                tris.append((left[0], x, left[1]))
                left[0] = x
            elif on_right:
                tris.append((right[-2], right[-1], x))
                right[-1] = x
            else:
                tris.append((left[-2], x, left[-1]))
                left[-1] = x
        tris += _strip(cols[i][0], left, keys[i], cols[k][0], right, keys[k] if k else wrap_keys)
    vertices = np.concatenate(verts + ([np.asarray(extra)] if extra else []))
    faces = np.asarray(tris, dtype=np.int64)
    ring = [np.array(sorted(rim)) for rim in rims]
    return HelicalTube(vertices, faces if outward else faces[:, [0, 2, 1]], ring[0][:, 1].astype(np.int64),
                       ring[1][:, 1].astype(np.int64), ring[0][:, 0], ring[1][:, 0])


def stack_tubes(tubes: list[HelicalTube]) -> HelicalTube:
    """One tube from tubes stacked along z, each one's top rim the next one's bottom rim (same planes, made by
    :func:`helical_tube` with the same profile, segments, handedness and clip, so the shared rims' vertices are
    bitwise equal); the upper copy of each shared rim is dropped. Used to put every horizontal kink of a
    clipped thread (where a chamfer cone meets the crest or root circle) on a rim, through its corners."""
    verts, faces, offset = [tubes[0].vertices], [tubes[0].faces], len(tubes[0].vertices)
    top = tubes[0].top
    for t in tubes[1:]:
        low = verts[0] if len(verts) == 1 else np.concatenate(verts)
        if len(t.bottom) != len(top) or not np.array_equal(t.vertices[t.bottom], low[top]):
            raise InvalidInputError("stack_tubes: a tube's bottom rim differs from the top rim below it")
        keep = np.ones(len(t.vertices), dtype=bool)
        keep[t.bottom] = False
        remap = np.empty(len(t.vertices), dtype=np.int64)
        remap[keep] = offset + np.arange(keep.sum())
        remap[t.bottom] = top
        verts.append(t.vertices[keep])
        faces.append(remap[t.faces])
        offset += int(keep.sum())
        top = remap[t.top]
    b = tubes[0]
    return HelicalTube(np.concatenate(verts), np.concatenate(faces), b.bottom, top, b.bottom_angle,
                       tubes[-1].top_angle)


def check_handedness(handedness: int) -> int:
    """Return ``handedness`` once checked to be +1 (right-hand) or -1 (left-hand)."""
    if isinstance(handedness, bool) or handedness not in (1, -1):
        raise InvalidInputError(f"handedness must be +1 (right-hand) or -1 (left-hand), got {handedness!r}")
    return int(handedness)
