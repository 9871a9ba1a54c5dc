"""Node contacts from learned penetration depth, in numba (tight-tolerance paper §III-A, network of §V-B).

A static body with a depth network (:mod:`contactkit.depth`) is collided through the network instead of its
convex pieces: every surface node ``x_i`` of the tool (its mesh vertices) that passes the broad phase is
evaluated, ``d_i = d(x_i)`` is its signed distance [m] (negative: penetration) and ``n_i = ∂d/∂x`` (normalised)
its contact normal, pointing out of the static part — the direction the engine's contact rows use (environment
into tool). The rows are written exactly as :func:`._kernels_contacts.node_contacts` writes its rows, so the
reduction, the exact-cone block SOR, the sensing and the integration read them unchanged.

The network and its input coordinates are the contract of :mod:`contactkit.depth` (``features`` and ``query``),
written out here with the analytic gradient (the torch version differentiates by autograd):

* features ``f`` of a point ``p`` (the part's frame placed in the world, so ``x`` is used directly):
  cartesian ``f = R_sᵀ (x - o)``; cylindrical ``f = (r, z)``, ``z = (x - o)·a``, ``q = (x - o) - z a``,
  ``r = sqrt(|q|² + R_EPS²)``; helical ``f = (r, cos φ, sin φ, z)``, ``φ = 2π z / pitch - s θ``,
  ``θ = atan2(q·b, q·e)`` (``e`` the reference direction, ``b = a × e``, ``s`` the handedness);
* ``x̂ = 2 (f - lo) / (hi - lo) - 1``; ``h1 = relu(W0 x̂ + b0)``; ``h2 = relu(W1 h1 + b1)``;
  ``d = scale · tanh(W2 h2 + b2)``;
* gradient by the chain rule: ``∂d/∂x = scale (1 - t²) · W2 D2 W1 D1 W0 · diag(2 / (hi - lo)) · ∂f/∂x`` with
  ``D1, D2`` the ReLU masks; ``∂r/∂x = q / r``, ``∂z/∂x = a``, ``∂θ/∂x = (s1 b - s2 e) / (s1² + s2²)``
  (``s1 = q·e``, ``s2 = q·b``).

A point whose features leave ``[lo, hi]`` (the padded training domain) is far: no contact. Broad phase: the
tool nodes' world box against the domain's world box, then each node's own box and feature test.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from contactkit.engine.layout import ROW_DISTANCE, ROW_FRICTION, ROW_KEY, ROW_NORMAL, ROW_POINT

KIND_CARTESIAN, KIND_CYLINDRICAL, KIND_HELICAL = 0, 1, 2
"""Kernel codes of :class:`contactkit.depth.Coordinates`."""
MAX_FEATURES = 4
"""Most input features of a depth network (helical); fewer are padded with zero weights."""
FRAME_ORIGIN, FRAME_AXIS, FRAME_REF, FRAME_BINORMAL, FRAME_BASIS = 0, 1, 2, 3, 4
"""Rows of :attr:`DepthSet.frame`: world origin, axis, reference direction, ``axis × ref``, then the three
rows of ``R_sᵀ`` (the part's axes in the world; cartesian features)."""
SCALAR_PITCH, SCALAR_HAND, SCALAR_R_EPS, SCALAR_SCALE = 0, 1, 2, 3
"""Columns of :attr:`DepthSet.scalars`: pitch [m], handedness (±1), R_EPS [m], depth scale [m]."""
KEY_SOURCE = 2.0
"""Source code of a depth contact's feature key (0: tool vertex, 1: environment vertex; :mod:`._kernels_contacts`)."""
MIN_GRADIENT = 1e-12
"""A node whose depth gradient is shorter than this has no defined normal: no contact."""


class DepthSet(NamedTuple):
    """The depth networks of ``S`` static bodies, placed in the world, and the tool's nodes (all float64 unless
    said). Built by :func:`contactkit.engine.depth_contacts.depth_set`.

    Attributes:
        nodes: ``(N, 3)`` the tool's surface nodes (its mesh vertices), tool frame [m].
        node_lo, node_hi: ``(3,)`` their tool-frame bounding box [m].
        kind: ``(S,)`` int64 ``KIND_*``.
        frame: ``(S, 7, 3)`` rows ``FRAME_*`` (world frame).
        scalars: ``(S, 4)`` columns ``SCALAR_*``.
        lo, hi: ``(S, MAX_FEATURES)`` feature domain (padding: -1, 1).
        box_lo, box_hi: ``(S, 3)`` world bounding box of the feature domain [m].
        w0: ``(S, H, MAX_FEATURES)``; b0: ``(S, H)``; w1t: ``(S, H, H)`` ``W1`` transposed; b1: ``(S, H)``;
        w1: ``(S, H, H)``; w2: ``(S, H)``; b2: ``(S,)``.
        friction: ``(S,)`` friction coefficient of contacts with each body (before ``friction_scale``).
        key_piece: ``(S,)`` the piece number of each body in the contact keys (after the convex pieces).
    """

    nodes: np.ndarray
    node_lo: np.ndarray
    node_hi: np.ndarray
    kind: np.ndarray
    frame: np.ndarray
    scalars: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    box_lo: np.ndarray
    box_hi: np.ndarray
    w0: np.ndarray
    b0: np.ndarray
    w1t: np.ndarray
    b1: np.ndarray
    w1: np.ndarray
    w2: np.ndarray
    b2: np.ndarray
    friction: np.ndarray
    key_piece: np.ndarray


def empty_depth_set(hidden: int = 64) -> DepthSet:
    """A :class:`DepthSet` without networks (a scene collided through convex pieces only)."""
    z = np.zeros
    return DepthSet(z((0, 3)), z(3), z(3), z(0, np.int64), z((0, 7, 3)), z((0, 4)), z((0, MAX_FEATURES)),
                    z((0, MAX_FEATURES)), z((0, 3)), z((0, 3)), z((0, hidden, MAX_FEATURES)), z((0, hidden)),
                    z((0, hidden, hidden)), z((0, hidden)), z((0, hidden, hidden)), z((0, hidden)), z(0), z(0),
                    z(0))


@njit(cache=True)
def features(ds, s, x, f, jac):
    """Features ``f (MAX_FEATURES,)`` (written, zero-padded) of world point ``x (3,)`` for network ``s`` and
    their Jacobian ``jac (MAX_FEATURES, 3)`` (written) with respect to ``x`` (module docstring)."""
    fr = ds.frame[s]
    dx0, dx1, dx2 = x[0] - fr[FRAME_ORIGIN, 0], x[1] - fr[FRAME_ORIGIN, 1], x[2] - fr[FRAME_ORIGIN, 2]
    f[:] = 0.0
    jac[:] = 0.0
    kind = ds.kind[s]
    if kind == KIND_CARTESIAN:
        for i in range(3):
            row = FRAME_BASIS + i
            f[i] = fr[row, 0] * dx0 + fr[row, 1] * dx1 + fr[row, 2] * dx2
            jac[i, 0], jac[i, 1], jac[i, 2] = fr[row, 0], fr[row, 1], fr[row, 2]
        return
    a = fr[FRAME_AXIS]
    z = a[0] * dx0 + a[1] * dx1 + a[2] * dx2
    q0, q1, q2 = dx0 - z * a[0], dx1 - z * a[1], dx2 - z * a[2]
    eps = ds.scalars[s, SCALAR_R_EPS]
    r = math.sqrt(q0 * q0 + q1 * q1 + q2 * q2 + eps * eps)
    f[0] = r
    jac[0, 0], jac[0, 1], jac[0, 2] = q0 / r, q1 / r, q2 / r
    last = 1 if kind == KIND_CYLINDRICAL else 3
    f[last] = z
    jac[last, 0], jac[last, 1], jac[last, 2] = a[0], a[1], a[2]
    if kind == KIND_CYLINDRICAL:
        return
    e, b = fr[FRAME_REF], fr[FRAME_BINORMAL]
    s1 = q0 * e[0] + q1 * e[1] + q2 * e[2]
    s2 = q0 * b[0] + q1 * b[1] + q2 * b[2]
    rho2 = s1 * s1 + s2 * s2
    hand = ds.scalars[s, SCALAR_HAND]
    wave = 2.0 * math.pi / ds.scalars[s, SCALAR_PITCH]
    phi = wave * z - hand * math.atan2(s2, s1)
    c, sn = math.cos(phi), math.sin(phi)
    f[1], f[2] = c, sn
    for k in range(3):
        dtheta = (s1 * b[k] - s2 * e[k]) / rho2 if rho2 > 0.0 else 0.0
        dphi = wave * a[k] - hand * dtheta
        jac[1, k] = -sn * dphi
        jac[2, k] = c * dphi


@njit(cache=True)
def network(ds, s, f, jac, h1, h2, g, grad):
    """Depth ``d`` [m] of network ``s`` at features ``f`` and its world gradient ``grad (3,)`` (written), or
    ``inf`` when ``f`` lies outside the domain. ``jac``: ``∂f/∂x`` from :func:`features`; ``h1, h2, g (H,)``:
    scratch."""
    xhat = np.empty(MAX_FEATURES)
    for i in range(MAX_FEATURES):
        lo, hi = ds.lo[s, i], ds.hi[s, i]
        if f[i] < lo or f[i] > hi:
            return np.inf
        xhat[i] = 2.0 * (f[i] - lo) / (hi - lo) - 1.0
    w0, w1t, w1 = ds.w0[s], ds.w1t[s], ds.w1[s]
    n_hidden = w0.shape[0]
    for j in range(n_hidden):
        acc = ds.b0[s, j]
        for i in range(MAX_FEATURES):
            acc += w0[j, i] * xhat[i]
        h1[j] = max(acc, 0.0)
    h2[:] = ds.b1[s]
    for j in range(n_hidden):
        if h1[j] > 0.0:
            h2 += h1[j] * w1t[j]
    out = ds.b2[s]
    for j in range(n_hidden):
        h2[j] = max(h2[j], 0.0)
        out += ds.w2[s, j] * h2[j]
    t = math.tanh(out)
    scale = ds.scalars[s, SCALAR_SCALE]
    slope = scale * (1.0 - t * t)
    g[:] = 0.0  # ∂d/∂h1 = slope W2 D2 W1
    for j in range(n_hidden):
        if h2[j] > 0.0:
            g += (slope * ds.w2[s, j]) * w1[j]
    grad[:] = 0.0
    for i in range(MAX_FEATURES):
        acc = 0.0
        for j in range(n_hidden):
            if h1[j] > 0.0:
                acc += g[j] * w0[j, i]
        acc *= 2.0 / (ds.hi[s, i] - ds.lo[s, i])
        for k in range(3):
            grad[k] += acc * jac[i, k]
    return scale * t


@njit(cache=True)
def depth_at(ds, s, points, depth, normals):
    """Depth ``(P,)`` [m] (``inf`` far) and unit normal ``(P, 3)`` (world; zero far) of network ``s`` at world
    ``points (P, 3)`` (written into ``depth``, ``normals``): the kernel's query, for tests and tools."""
    n_hidden = ds.w0.shape[1]
    f, jac = np.empty(MAX_FEATURES), np.empty((MAX_FEATURES, 3))
    h1, h2, g, grad = np.empty(n_hidden), np.empty(n_hidden), np.empty(n_hidden), np.empty(3)
    for p in range(points.shape[0]):
        features(ds, s, points[p], f, jac)
        depth[p] = network(ds, s, f, jac, h1, h2, g, grad)
        norm = math.sqrt(grad[0] ** 2 + grad[1] ** 2 + grad[2] ** 2)
        for k in range(3):
            normals[p, k] = grad[k] / norm if (depth[p] < np.inf and norm > 0.0) else 0.0


@njit(cache=True)
def _boxes_meet(ds, s, lo, hi):
    for a in range(3):
        if lo[a] > ds.box_hi[s, a] or hi[a] < ds.box_lo[s, a]:
            return False
    return True


@njit(cache=True)
def depth_contacts(ds, rot, pos, motion, com, margin, lookahead, speed, out, k):
    """Contacts of the tool's nodes with every depth network that may close to within ``margin`` during the
    step (arguments as :func:`._kernels_contacts.node_contacts`); appended to ``out`` from row ``k``, one per node
    and network at most. Returns the new row count.

    A node is kept when ``d ≤ margin + lookahead · closing speed`` along its normal (the speculative rule of
    :func:`._kernels_contacts._reach`); the row holds ``d``, the world normal ``∂d/∂x / |∂d/∂x|`` (out of the
    static part, into the tool), the node's world position, the friction and the key
    ``((2 · 2²¹ + node) · 2²¹ + key_piece)``.
    """
    n_nodes, n_hidden = ds.nodes.shape[0], ds.w0.shape[1]
    if ds.kind.shape[0] == 0 or n_nodes == 0:
        return k
    lo, hi = np.empty(3), np.empty(3)
    grow = margin + lookahead * speed
    for a in range(3):  # world box of the nodes (grown by the largest reach)
        centre, half = pos[a], grow
        for b in range(3):
            centre += rot[a, b] * 0.5 * (ds.node_lo[b] + ds.node_hi[b])
            half += abs(rot[a, b]) * 0.5 * (ds.node_hi[b] - ds.node_lo[b])
        lo[a], hi[a] = centre - half, centre + half
    f, jac = np.empty(MAX_FEATURES), np.empty((MAX_FEATURES, 3))
    h1, h2, g, grad = np.empty(n_hidden), np.empty(n_hidden), np.empty(n_hidden), np.empty(3)
    x = np.empty(3)
    for s in range(ds.kind.shape[0]):
        if not _boxes_meet(ds, s, lo, hi):
            continue
        shift = 2.0 ** 21
        for v in range(n_nodes):
            for a in range(3):
                x[a] = pos[a] + rot[a, 0] * ds.nodes[v, 0] + rot[a, 1] * ds.nodes[v, 1] + rot[a, 2] * ds.nodes[v, 2]
            inside = True
            for a in range(3):
                if x[a] < ds.box_lo[s, a] or x[a] > ds.box_hi[s, a]:
                    inside = False
            if not inside:
                continue
            features(ds, s, x, f, jac)
            d = network(ds, s, f, jac, h1, h2, g, grad)
            if d > grow:
                continue
            norm = math.sqrt(grad[0] ** 2 + grad[1] ** 2 + grad[2] ** 2)
            if norm < MIN_GRADIENT:
                continue
            nx, ny, nz = grad[0] / norm, grad[1] / norm, grad[2] / norm
            if d > margin:
                close = 0.0
                rx, ry, rz = x[0] - com[0], x[1] - com[1], x[2] - com[2]
                for j in range(2):
                    ux = motion[j, 0] + motion[j, 4] * rz - motion[j, 5] * ry
                    uy = motion[j, 1] + motion[j, 5] * rx - motion[j, 3] * rz
                    uz = motion[j, 2] + motion[j, 3] * ry - motion[j, 4] * rx
                    close = max(close, -(nx * ux + ny * uy + nz * uz))
                if d > margin + lookahead * close:
                    continue
            out[k, ROW_DISTANCE] = d
            out[k, ROW_NORMAL], out[k, ROW_NORMAL + 1], out[k, ROW_NORMAL + 2] = nx, ny, nz
            out[k, ROW_POINT], out[k, ROW_POINT + 1], out[k, ROW_POINT + 2] = x[0], x[1], x[2]
            out[k, ROW_FRICTION] = ds.friction[s]
            out[k, ROW_KEY] = (KEY_SOURCE * shift + v) * shift + ds.key_piece[s]
            k += 1
    return k
