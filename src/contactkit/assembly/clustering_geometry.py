"""Geometry of the original contact set for the learned clustering (:mod:`contactkit.assembly.clustering`, §III-B).

* ``S_i`` of eq 5: each contact's ``k`` nearest other contacts (:func:`contact_neighbours`, exact: through the
  tool's precomputed node neighbours, a cKDTree where those do not suffice);
* the surface projection of the averaged points (:class:`SurfaceProjection`, :func:`project_to_surface`): onto
  the tool's contact patch, then by Newton steps on the static part's depth network onto the level set of the
  clustered distance (the clustering module's docstring says why).

Pure geometry and numba kernels; no network parameters.
"""

from __future__ import annotations

import functools
from enum import Enum

import numpy as np
from numba import njit
from scipy.spatial import cKDTree

from contactkit.assembly.task import AssemblyTask
from contactkit.depth import NodeContacts
from contactkit.engine._kernels_depthnet import depth_at_any
from contactkit.rotations import quat_to_mat
from contactkit.state import BodyState

PROJECTION_STEPS = 8
"""Newton steps at most that move a clustered point onto its level set of the depth network."""
PROJECTION_TOL = 1e-8
"""[m] ``|d(x) − d̄|`` at which a projected point is on its level set (of the network: not its accuracy)."""
PATCH_STEPS = 2
"""Nearest-contact tangent-plane projections that put an averaged point on the tool's contact patch."""
NEIGHBOUR_POOL = 32
"""Nearest tool nodes kept per node (body frame) to find ``S_i`` among the contacts without a tree per step.
Measured (M48 nut, 169 contacts on its thread flanks, k = 10): 165 contacts find fewer than ``k`` in a pool of 32
and go to the cKDTree (0.12 ms thread-CPU); a pool of 128 finds all (0.025 ms) with the same neighbour distances,
but it breaks ties among equidistant nodes (the regular thread mesh) otherwise than the tree, which changed the
nut's simulated wrench by up to 0.5 N within 15 steps: kept at 32 so results stay those of the tree."""
NODE_MATCH_TOL = 1e-7
"""[m] how far a contact point may lie from its node (``node_index``) at the state for the precomputed search."""


class SurfaceProjection(str, Enum):
    """How an averaged point is put back on the contact surface (module docstring)."""

    DEPTH_NET = "depth-net"
    """Onto the contact patch, then along the depth network's normal to the clustered distance's level set."""
    CONTACT_PATCH = "contact-patch"
    """Onto the tool's contact patch only (tangent planes of the nearest original contacts)."""



def neighbours(points: np.ndarray, k: int) -> np.ndarray:
    """``(N, min(k, N−1))`` indices of each point's nearest other points (cKDTree; ``S_i`` of eq 5)."""
    n = len(points)
    kk = min(k, n - 1)
    if kk <= 0:
        return np.zeros((n, 0), dtype=np.int64)
    tree = cKDTree(points, balanced_tree=False, compact_nodes=False)
    _, idx = tree.query(points, k=kk + 1)
    return np.asarray(idx[:, 1:], dtype=np.int64)


@functools.lru_cache(maxsize=8)
def _node_pool(task: AssemblyTask) -> np.ndarray:
    """``(N_nodes, NEIGHBOUR_POOL)`` each tool node's nearest other nodes, nearest first (body frame = any pose)."""
    nodes = task.nodes
    kk = min(NEIGHBOUR_POOL, len(nodes) - 1)
    _, idx = cKDTree(nodes).query(nodes, k=kk + 1)
    return np.ascontiguousarray(idx[:, 1:], dtype=np.int64)


@njit(cache=True)
def _pooled_kernel(pool, node_index, n_nodes, out):
    """Rows of ``out (m, k)`` (written): the first ``k`` contacts among each contact's pool; returns the
    ``(m,)`` mask of rows that found ``k`` (the others hold −1 where nothing was found)."""
    m, k = out.shape
    slot = -np.ones(n_nodes, dtype=np.int64)
    for a in range(m):
        slot[node_index[a]] = a
    full = np.zeros(m, dtype=np.bool_)
    for a in range(m):
        cnt = 0
        for p in pool[node_index[a]]:
            b = slot[p]
            if b >= 0:
                out[a, cnt] = b
                cnt += 1
                if cnt == k:
                    break
        full[a] = cnt == k
        for c in range(cnt, k):
            out[a, c] = -1
    return full


def contact_neighbours(task: AssemblyTask, contacts: NodeContacts, state: BodyState, k: int) -> np.ndarray:
    """:func:`neighbours` of the contact points, exact, via the task's precomputed node neighbours.

    The contacts' ``k`` nearest contacts are among each node's ``NEIGHBOUR_POOL`` nearest nodes whenever ``k`` of
    those are in contact (the tool is rigid: body-frame distances are world distances); the other rows, and
    contacts whose ``node_index`` does not name ``task.nodes`` at ``state`` (within ``NODE_MATCH_TOL``), go
    through a cKDTree of the contact points.
    """
    pts, idx = contacts.points, np.asarray(contacts.node_index, dtype=np.int64)
    n, nodes = len(pts), task.nodes
    kk = min(k, n - 1)
    if kk <= 0 or kk > NEIGHBOUR_POOL or len(idx) != n or idx.min() < 0 or idx.max() >= len(nodes):
        return neighbours(pts, k)
    world = nodes[idx] @ quat_to_mat(np.asarray(state.quat, np.float64)).T + np.asarray(state.pos, np.float64)
    if np.abs(world - pts).max() > NODE_MATCH_TOL:
        return neighbours(pts, k)
    out = np.empty((n, kk), dtype=np.int64)
    full = _pooled_kernel(_node_pool(task), idx, len(nodes), out)
    if not full.all():
        rows = np.flatnonzero(~full)
        _, near = cKDTree(pts).query(pts[rows], k=kk + 1)
        out[rows] = near[:, 1:]
    return out

@functools.lru_cache(maxsize=8)
def _depth_set(task: AssemblyTask):
    """The engine's float64 kernel arrays of the task's depth network (every piece of its set), placed at the world
    origin."""
    from contactkit.engine.depth_contacts import placed_depth_set

    return placed_depth_set([(task.depth_net, np.zeros(3), np.array([1.0, 0, 0, 0]), task.friction)], task.nodes)


def onto_contact_patch(x: np.ndarray, pts: np.ndarray, nrm: np.ndarray, reach: np.ndarray) -> np.ndarray:
    """Rows of ``x (M, 3)`` put on the tool's contact patch: orthogonally onto the tangent plane of the nearest
    original contact ``k`` (``pts, nrm (N, 3)``), kept within ``reach[k]`` [m] of it (``reach (N,)``: the distance
    to its nearest other contact, where that plane stands for the surface), :data:`PATCH_STEPS` times. A point off
    a bore's contact arc lands on the wall at the arc's middle; one near a nut's axis (contacts all round the
    thread) lands next to the nearest contact (within the node spacing: 2–5 mm on the M48 nut, so up to 0.9 mm off
    its helical flank; the depth-network step corrects that)."""
    y = np.array(x, dtype=np.float64)
    for _ in range(PATCH_STEPS):
        k = np.argmin(np.sum(y**2, axis=1)[:, None] - 2 * y @ pts.T + np.sum(pts**2, axis=1)[None, :], axis=1)
        off = y - pts[k]
        off -= np.sum(off * nrm[k], axis=1, keepdims=True) * nrm[k]
        length = np.linalg.norm(off, axis=1, keepdims=True)
        y = pts[k] + off * np.minimum(1.0, reach[k, None] / np.maximum(length, 1e-300))
    return y


def project_to_surface(task: AssemblyTask, x: np.ndarray, dist: np.ndarray, pts: np.ndarray, nrm: np.ndarray,
                       reach: np.ndarray, mode: SurfaceProjection) -> np.ndarray:
    """Averaged points ``x (M, 3)`` (world) moved onto the surface (module docstring, :class:`SurfaceProjection`).

    First onto the tool's contact patch (:func:`onto_contact_patch`), then
    (``DEPTH_NET``) Newton steps ``y ← y − (d(y) − d̄) ∇d(y)`` on the static part's depth network until
    ``|d − d̄| <`` :data:`PROJECTION_TOL`; a point that leaves the network's domain or does not converge in
    :data:`PROJECTION_STEPS` starts again from its nearest original contact (which lies in the network's band),
    and keeps its patch position only if that fails too.

    Args:
        dist: ``(M,)`` the clustered distances [m] (the level set to reach); pts, nrm: ``(N, 3)`` original points
            and normals; reach: ``(N,)`` [m] distance of each contact to its nearest other (:func:`onto_contact_patch`).
    """
    plane = onto_contact_patch(x, pts, nrm, reach)
    if mode is not SurfaceProjection.DEPTH_NET or task.depth_net is None:
        return plane
    ds = _depth_set(task)
    y, ok = _newton(ds, plane, dist)
    if not ok.all():  # restart from the nearest original contact (inside the network's band by construction)
        k = np.argmin(np.sum(plane**2, axis=1)[:, None] - 2 * plane @ pts.T + np.sum(pts**2, axis=1)[None, :], axis=1)
        y2, ok2 = _newton(ds, pts[k], dist)
        y = np.where(ok[:, None], y, np.where(ok2[:, None], y2, plane))
    return y


def _newton(ds, start: np.ndarray, dist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Newton steps on the depth network from ``start (M, 3)`` to the level sets ``dist (M,)``; ``(points, ok)``."""
    y = np.array(start, dtype=np.float64, order="C")
    ok = np.empty(len(y), dtype=np.bool_)
    _newton_kernel(ds, y, np.ascontiguousarray(dist, dtype=np.float64), PROJECTION_STEPS, PROJECTION_TOL, ok)
    return y, ok


@njit(cache=True)
def _newton_kernel(ds, y, dist, steps, tol, ok):
    """:func:`_newton` in numba (``y (M, 3)`` updated in place, ``ok (M,)`` written): all points step together
    until every one is within ``tol`` (a point outside the domain, ``d = inf``, stays where it is)."""
    m = y.shape[0]
    d, g = np.empty(m), np.empty((m, 3))
    for _ in range(steps):
        depth_at_any(ds, y, d, g)
        done = True
        for p in range(m):
            if not (np.isfinite(d[p]) and abs(d[p] - dist[p]) < tol):
                done = False
        if done:
            break
        for p in range(m):
            if np.isfinite(d[p]):
                err = d[p] - dist[p]
                for c in range(3):
                    y[p, c] = y[p, c] - err * g[p, c]
    depth_at_any(ds, y, d, g)
    for p in range(m):
        ok[p] = np.isfinite(d[p]) and abs(d[p] - dist[p]) < tol
