"""K-means contact clustering: the standard baseline the paper compares with (§V-C, "K-means/PGS", its [14]).

The original contacts' points are split into ``Mc`` clusters by K-means (k-means++ seeding from an explicit
generator, then Lloyd iterations to a fixed assignment). Each cluster gives one contact: its point is the centroid
(world; off a curved surface by the chord's sag, as in the baseline), its normal the normalised mean of its normals
(the normal of its deepest contact if they cancel), its distance the minimum (deepest) depth of its members. With
``N ≤ Mc`` contacts they come back unchanged; an empty cluster (only possible with repeated points) gives no
contact.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contactkit.assembly.task import AssemblyTask
from contactkit.collision import Contacts
from contactkit.depth import NodeContacts
from contactkit.errors import InvalidInputError
from contactkit.state import BodyState

MAX_LLOYD_ITERATIONS = 100
"""Lloyd iterations at most (they stop earlier when no point changes cluster)."""
NORMAL_CANCEL_TOL = 1e-9
"""``|mean normal|`` below which a cluster's normals are taken as cancelled."""


def kmeans_pp(points: np.ndarray, mc: int, rng: np.random.Generator) -> np.ndarray:
    """k-means++ seeding: ``(mc, 3)`` initial centroids chosen among ``points (N, 3)`` (``N ≥ mc``), each next one
    with probability ∝ its squared distance to the nearest chosen (uniform when all are zero)."""
    n = len(points)
    centres = np.empty((mc, points.shape[1]))
    centres[0] = points[rng.integers(n)]
    d2 = np.sum((points - centres[0]) ** 2, axis=1)
    for j in range(1, mc):
        total = d2.sum()
        pick = rng.choice(n, p=d2 / total) if total > 0 else rng.integers(n)
        centres[j] = points[pick]
        d2 = np.minimum(d2, np.sum((points - centres[j]) ** 2, axis=1))
    return centres


def kmeans(points: np.ndarray, mc: int, rng: np.random.Generator,
           max_iterations: int = MAX_LLOYD_ITERATIONS) -> tuple[np.ndarray, np.ndarray]:
    """K-means of ``points (N, 3)`` [m] into ``mc ≤ N`` clusters.

    Returns:
        ``labels (N,)`` int64 in ``[0, mc)`` and ``centroids (mc, 3)`` (an empty cluster keeps its last centroid).

    Raises:
        InvalidInputError: ``mc < 1``, ``mc > N`` or non-finite points.
    """
    x = np.asarray(points, dtype=np.float64)
    if x.ndim != 2 or not np.isfinite(x).all():
        raise InvalidInputError(f"k-means points must be a finite (N, d) array, got shape {x.shape}")
    if not 1 <= mc <= len(x):
        raise InvalidInputError(f"k-means needs 1 <= mc <= N, got mc={mc}, N={len(x)}")
    centres = kmeans_pp(x, mc, rng)
    labels = np.full(len(x), -1, dtype=np.int64)
    for _ in range(max_iterations):
        d2 = np.sum(x**2, axis=1)[:, None] - 2 * x @ centres.T + np.sum(centres**2, axis=1)[None, :]
        new = np.argmin(d2, axis=1)
        if np.array_equal(new, labels):
            break
        labels = new
        counts = np.bincount(labels, minlength=mc)
        sums = np.zeros_like(centres)
        np.add.at(sums, labels, x)
        filled = counts > 0
        centres[filled] = sums[filled] / counts[filled, None]
    return labels, centres


@dataclass(frozen=True)
class KMeansClustering:
    """The K-means baseline as a :class:`contactkit.assembly.simulator.Clustering` (module docstring).

    Attributes:
        mc: number of clusters (paper: 12). seed: seeds the generator of every call (``np.random.default_rng``),
            so the same contacts always give the same clusters.
    """

    mc: int = 12
    seed: int = 0

    def cluster(self, task: AssemblyTask, contacts: NodeContacts, state: BodyState,
                applied_wrench: np.ndarray) -> Contacts:
        """``min(N, mc)`` clustered contacts (world) of the ``N`` original ones; ``state`` and ``applied_wrench``
        are not used (the baseline looks at geometry only). Friction ``task.friction``."""
        pts = np.asarray(contacts.points, dtype=np.float64).reshape(-1, 3)
        nrm = np.asarray(contacts.normals, dtype=np.float64).reshape(-1, 3)
        dep = np.asarray(contacts.depth, dtype=np.float64).reshape(-1)
        n, mu = len(pts), float(task.friction)
        if n <= self.mc:
            return Contacts(pts, nrm, dep, np.full(n, mu))
        labels, centres = kmeans(pts, self.mc, np.random.default_rng(self.seed))
        out_p, out_n, out_d = [], [], []
        for j in range(self.mc):
            members = np.flatnonzero(labels == j)
            if len(members) == 0:
                continue
            mean = nrm[members].mean(axis=0)
            length = np.linalg.norm(mean)
            deepest = members[np.argmin(dep[members])]
            out_p.append(centres[j])
            out_n.append(mean / length if length > NORMAL_CANCEL_TOL else nrm[deepest])
            out_d.append(dep[deepest])
        k = len(out_p)
        return Contacts(np.reshape(out_p, (k, 3)), np.reshape(out_n, (k, 3)), np.asarray(out_d), np.full(k, mu))
