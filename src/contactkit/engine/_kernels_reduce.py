"""Canonical order, contact reduction and warm-start matching of node contacts (numba).

Canonical order: contacts are solved in increasing *feature key* (source, vertex, piece; see
:mod:`contactkit.engine._kernels_contacts`), so the order never depends on how they were found, and a
contact keeps its key while the same vertex touches the same piece — the warm start of the next step
(:func:`warm_start`) matches impulses by key. The order matters: the solvers note that on coplanar contacts
Gauss-Seidel can select among several valid Coulomb solutions by visiting order.

Reduction (when more than ``max_contacts`` are found): the role of the tight-tolerance paper's contact clustering
(§III-B; learned there, geometric here). Contacts are visited deepest first (distances rounded to
``DEPTH_QUANTUM`` so that round-off does not reorder equal depths; ties by key); each joins the first
cluster whose seed normal lies within ``cluster_angle`` of its own, or seeds a new cluster.
Each cluster keeps its deepest contact and then, by farthest-point sampling, the contacts that spread its
support most, up to ``points_per_cluster``; clusters are kept deepest first until ``max_contacts``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from contactkit.engine.layout import ROW_DISTANCE, ROW_KEY, ROW_NORMAL, ROW_POINT

DEPTH_QUANTUM = 1e-7
"""Distances [m] are compared on this grid when ordering contacts by depth: depths closer than the solver's
drift per step (a resting face's corners differ by ~1e-9 m from step to step) must not reorder the selection, or
the warm start would miss the newly chosen contacts."""


@njit(cache=True)
def _by_depth(raw, count):
    """Indices ``(count,)`` of the rows of ``raw`` ordered by rounded distance, then key."""
    by_key = np.argsort(raw[:count, ROW_KEY], kind="mergesort")
    depth = np.empty(count)
    for i in range(count):
        depth[i] = np.round(raw[by_key[i], ROW_DISTANCE] / DEPTH_QUANTUM)
    return by_key[np.argsort(depth, kind="mergesort")]


@njit(cache=True)
def _clusters(raw, order, cos_cluster):
    """Cluster label of each row of ``raw`` (-1 for unused rows) and the number of clusters: visiting rows
    deepest first, a row joins the first cluster whose seed normal lies within the cluster angle, or seeds a
    new one (so labels are in order of the clusters' deepest contact). ``O(K × clusters)``."""
    count = order.shape[0]
    label = np.full(raw.shape[0], -1, np.int64)
    seeds = np.empty(count, np.int64)
    n_clusters = 0
    for a in range(count):
        i = order[a]
        for c in range(n_clusters):
            j = seeds[c]
            cos = (raw[i, ROW_NORMAL] * raw[j, ROW_NORMAL] + raw[i, ROW_NORMAL + 1] * raw[j, ROW_NORMAL + 1]
                   + raw[i, ROW_NORMAL + 2] * raw[j, ROW_NORMAL + 2])
            if cos >= cos_cluster:
                label[i] = c
                break
        if label[i] < 0:
            label[i] = n_clusters
            seeds[n_clusters] = i
            n_clusters += 1
    return label, n_clusters


@njit(cache=True)
def _sample(raw, members, per_cluster, chosen, n_chosen):
    """Farthest-point sampling of one cluster's ``members`` (deepest first) into ``chosen``."""
    m = members.shape[0]
    gap = np.full(m, np.inf)
    pick = 0
    for _ in range(min(per_cluster, m)):
        i = members[pick]
        chosen[n_chosen] = i
        n_chosen += 1
        gap[pick] = -1.0
        best = -1.0
        for b in range(m):
            if gap[b] < 0.0:
                continue
            j = members[b]
            dx = raw[j, ROW_POINT] - raw[i, ROW_POINT]
            dy = raw[j, ROW_POINT + 1] - raw[i, ROW_POINT + 1]
            dz = raw[j, ROW_POINT + 2] - raw[i, ROW_POINT + 2]
            gap[b] = min(gap[b], dx * dx + dy * dy + dz * dz)
            if gap[b] > best:
                best, pick = gap[b], b
        if best < 0.0:
            break
    return n_chosen


@njit(cache=True)
def reduce_contacts(raw, count, max_contacts, cos_cluster, per_cluster, out):
    """Canonical, reduced contacts (module docstring).

    Args:
        raw: ``(N, ROW_WIDTH)`` contact rows (:mod:`contactkit.engine.layout`) from
            :func:`~._kernels_contacts.node_contacts`.
        count: rows of ``raw`` in use. max_contacts: capacity of the result.
        cos_cluster: cosine of the cluster angle. per_cluster: points kept per cluster.
        out: ``(≥ max_contacts, ROW_WIDTH)`` written with the kept rows in increasing key.

    Returns:
        Number of rows written.
    """
    if count <= max_contacts:
        order = np.argsort(raw[:count, ROW_KEY], kind="mergesort")
        for a in range(count):
            out[a] = raw[order[a]]
        return count
    order = _by_depth(raw, count)
    label, n_clusters = _clusters(raw, order, cos_cluster)
    chosen = np.empty(count, np.int64)
    n_chosen = 0
    sizes = np.zeros(n_clusters + 1, np.int64)
    for a in range(count):
        sizes[label[order[a]] + 1] += 1
    starts = np.cumsum(sizes)
    grouped = np.empty(count, np.int64)  # rows cluster by cluster, deepest first within each
    fill = starts[:-1].copy()
    for a in range(count):
        c = label[order[a]]
        grouped[fill[c]] = order[a]
        fill[c] += 1
    for c in range(n_clusters):
        room = min(per_cluster, max_contacts - n_chosen)
        n_chosen = _sample(raw, grouped[starts[c]:starts[c + 1]], room, chosen, n_chosen)
        if n_chosen >= max_contacts:
            break
    keys = np.empty(n_chosen)
    for a in range(n_chosen):
        keys[a] = raw[chosen[a], ROW_KEY]
    final = np.argsort(keys, kind="mergesort")
    for a in range(n_chosen):
        out[a] = raw[chosen[final[a]]]
    return n_chosen


@njit(cache=True)
def warm_start(keys, count, prev_keys, prev_impulses, prev_count, impulses):
    """Impulses ``(count, 3)`` (written) of the previous step's contacts with the same key, else 0.

    Both key lists ``keys (count,)`` and ``prev_keys (prev_count,)`` are increasing (canonical order).
    """
    j = 0
    for i in range(count):
        while j < prev_count and prev_keys[j] < keys[i]:
            j += 1
        if j < prev_count and prev_keys[j] == keys[i]:
            for r in range(3):
                impulses[i, r] = prev_impulses[j, r]
        else:
            impulses[i, 0], impulses[i, 1], impulses[i, 2] = 0.0, 0.0, 0.0
