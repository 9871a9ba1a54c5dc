"""Where a depth network's training samples come from (tight-tolerance paper §III-A: "generating many interior and
exterior points" near the part's surface): area-weighted surface points, points uniform in the (r, z) profile an
axial network sees, and points on the sharp edges where the signed distance bends. Used by
:mod:`contactkit.depth.training`; every draw comes from an explicit generator.
"""

from __future__ import annotations

import math

import numpy as np

from contactkit.depth.coordinates import SymmetryFrame, features_numpy
from contactkit.geometry.part import Part

OFFSET_SCALES = (2e-5, 1e-4, 5e-4, 2e-3)
"""[m] standard deviations of the normal offsets of near-surface samples (each drawn equally often)."""
SHARP_EDGE_ANGLE = math.radians(20.0)
"""Edges whose faces' normals differ by more than this are sampled more densely (rims, corners, thread crests)."""
PROFILE_CHUNK = 500_000
"""Candidates drawn at a time by :func:`profile_samples`."""


def surface_samples(part: Part, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n`` area-weighted random points on the part's surface and their outward face normals, ``(n, 3)`` each."""
    tri = part.vertices[part.faces]
    cross = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    area = np.linalg.norm(cross, axis=1)
    face = rng.choice(len(tri), size=n, p=area / area.sum())
    u, v = rng.random(n), rng.random(n)
    flip = u + v > 1
    u[flip], v[flip] = 1 - u[flip], 1 - v[flip]
    t = tri[face]
    points = t[:, 0] + u[:, None] * (t[:, 1] - t[:, 0]) + v[:, None] * (t[:, 2] - t[:, 0])
    return points, cross[face] / area[face, None]


def profile_samples(part: Part, frame: SymmetryFrame, n: int, rng: np.random.Generator, r_min: float = 0.0,
                    end_span: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` random surface points and their outward face normals, ``(n, 3)`` each, from area-weighted
    candidates (:func:`surface_samples`) of an axial ``frame``, kept with probability ``min(1, r_min / r)``
    when ``r_min`` > 0 [m] (uniform in the (r, z) profile: area-weighted, a face ⊥ the axis has a density ∝ r
    that starves the axis), and only within ``end_span`` > 0 [m] of the part's lowest or highest z (the ends of
    a thread, where the helical symmetry breaks)."""
    z_lo, z_hi = (lambda z: (z.min(), z.max()))(features_numpy(frame, part.vertices)[:, -1])
    points, normals, have = [], [], 0
    while have < n:
        p, nrm = surface_samples(part, PROFILE_CHUNK, rng)
        f = features_numpy(frame, p)
        keep = np.ones(len(p), dtype=bool)
        if r_min > 0:
            keep = rng.random(len(p)) * np.maximum(f[:, 0], r_min) < r_min
        if end_span > 0:
            keep &= (f[:, -1] < z_lo + end_span) | (f[:, -1] > z_hi - end_span)
        points.append(p[keep])
        normals.append(nrm[keep])
        have += int(keep.sum())
    return np.concatenate(points)[:n], np.concatenate(normals)[:n]


def sharp_edges(part: Part, min_angle: float = SHARP_EDGE_ANGLE) -> np.ndarray:
    """``(E, 2, 3)`` end points [m] of the mesh edges whose two faces' normals differ by more than ``min_angle``
    [rad] (the rims and corners, where the signed distance bends)."""
    f = part.faces
    tri = part.vertices[f]
    normal = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    normal /= np.linalg.norm(normal, axis=1, keepdims=True)
    edges = np.sort(np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]]), axis=1)
    face = np.tile(np.arange(len(f)), 3)
    order = np.lexsort((edges[:, 1], edges[:, 0]))
    e, face = edges[order], face[order]
    pair = np.flatnonzero((e[1:] == e[:-1]).all(axis=1))  # closed manifold: each edge twice, adjacent
    cos = (normal[face[pair]] * normal[face[pair + 1]]).sum(axis=1)
    sharp = e[pair[cos < np.cos(min_angle)]]
    return part.vertices[sharp]


def edge_samples(part: Part, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` points on the sharp edges (length-weighted), moved by isotropic Gaussian offsets of the
    :data:`OFFSET_SCALES`; ``(0, 3)`` when the part has no sharp edge."""
    ends = sharp_edges(part)
    if len(ends) == 0 or n == 0:
        return np.zeros((0, 3))
    length = np.linalg.norm(ends[:, 1] - ends[:, 0], axis=1)
    k = rng.choice(len(ends), size=n, p=length / length.sum())
    t = rng.random(n)[:, None]
    sigma = np.asarray(OFFSET_SCALES)[rng.integers(0, len(OFFSET_SCALES), n)]
    return ends[k, 0] + t * (ends[k, 1] - ends[k, 0]) + sigma[:, None] * rng.standard_normal((n, 3))
