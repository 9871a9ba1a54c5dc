"""Contact reduction: redundant contacts of one normal group dropped (the query's step 4, :mod:`.query`).

Contacts of one problem that share a face normal (one reference face, possibly over several tool pieces, e.g. a ring
of pieces resting on a table) form a group. With a planar contact the gap and the normal velocity are affine in the
contact point, so the constraints at the corners of the group's convex hull (seen along the normal) imply those inside
it: a group of more than ``REDUCE_ABOVE`` contacts keeps its hull corners and any interior contact deeper than all of
them. A tool point repeated within a group (pieces sharing a vertex) counts once.
"""

from __future__ import annotations

import numpy as np
from numba import njit

REDUCE_ABOVE = 4
"""Same-normal contact groups larger than this are reduced to their convex hull."""

HULL_GAP_TOL = 1e-9
"""An interior contact deeper than the group's hull corners by more than this [m] is kept."""

DUPLICATE_TOL = 1e-9
"""Two contacts of one normal group whose tool points agree on this grid [m] count once."""


@njit(cache=True)
def _hull_mask(flat: np.ndarray, gap: np.ndarray, start: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Per group (rows ``start[g] : start[g] + size[g]`` of ``flat (N, 2)``): its 2-D convex hull corners (Andrew's
    monotone chain; collinear points are not corners) and the interior points deeper than all corners (compiled)."""
    keep = np.ones(flat.shape[0], dtype=np.bool_)
    for g in range(start.shape[0]):
        n = size[g]
        if n <= REDUCE_ABOVE:
            continue
        rows = start[g] + np.argsort(flat[start[g] : start[g] + n, 1], kind="mergesort")
        order = rows[np.argsort(flat[rows, 0], kind="mergesort")]  # by x, then y (stable)
        hull = np.empty(2 * n, dtype=np.int64)
        k = 0
        for sweep in range(2):
            base = k
            for idx in range(n):
                i = order[idx] if sweep == 0 else order[n - 1 - idx]
                while k >= base + 2:
                    o, a = flat[hull[k - 2]], flat[hull[k - 1]]
                    if (a[0] - o[0]) * (flat[i, 1] - o[1]) - (a[1] - o[1]) * (flat[i, 0] - o[0]) > 0.0:
                        break
                    k -= 1
                hull[k] = i
                k += 1
            k -= 1  # the last point of a chain starts the other
        if k < 3:
            continue  # collinear: nothing is interior
        deepest = np.inf
        for j in range(k):
            deepest = min(deepest, gap[hull[j]])
        for r in range(start[g], start[g] + n):
            keep[r] = gap[r] < deepest - HULL_GAP_TOL
        for j in range(k):
            keep[hull[j]] = True
    return keep


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.stack([a[:, 1] * b[:, 2] - a[:, 2] * b[:, 1], a[:, 2] * b[:, 0] - a[:, 0] * b[:, 2],
                     a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]], axis=-1)


def reduce_contacts(problem: np.ndarray, kind: np.ndarray, face: np.ndarray, point: np.ndarray, normal: np.ndarray,
                    gap: np.ndarray, singleton_kind: int) -> np.ndarray:
    """Indices of the contacts kept (module docstring), grouped by problem then normal group.

    Args:
        problem: ``(N,)`` problem of each contact. kind: ``(N,)`` normal kind; face: ``(N,)`` the face giving the
            normal (contacts of kind ``singleton_kind``, edge-edge, are groups of their own).
        point: ``(N, 3)`` tool points [m]. normal: ``(N, 3)`` unit normals. gap: ``(N,)`` gaps [m].
    """
    own = -1 - np.arange(len(problem))
    key = np.column_stack([problem, kind, np.where(kind == singleton_kind, own, face)])
    cell = np.round(point / DUPLICATE_TOL)
    _, first = np.unique(np.column_stack([key, cell]), axis=0, return_index=True)
    first = np.sort(first)
    index = first[np.lexsort(key[first].T[::-1])]
    key = key[index]
    starts = np.flatnonzero(np.r_[True, np.any(key[1:] != key[:-1], axis=1)])
    sizes = np.diff(np.r_[starts, len(index)])
    n = normal[index]
    u = _cross(n, np.where(np.abs(n[:, :1]) < 0.9, [[1.0, 0.0, 0.0]], [[0.0, 1.0, 0.0]]))
    u /= np.maximum(np.linalg.norm(u, axis=1, keepdims=True), 1e-300)
    w = _cross(n, u)
    p = point[index]
    flat = np.column_stack([np.einsum("nk,nk->n", p, u), np.einsum("nk,nk->n", p, w)])
    return index[_hull_mask(flat, np.ascontiguousarray(gap[index]), starts, sizes)]
