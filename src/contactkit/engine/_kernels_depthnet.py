"""Node contacts from learned penetration depth, in numba (tight-tolerance paper §III-A, network of §V-B).

A static body with a depth network (:mod:`contactkit.depth`) is collided through the network instead of its
convex pieces inside the network's domain (outside it, through the pieces: :func:`inside_domain`,
:mod:`._kernels_contacts`): every surface node ``x_i`` of the tool (its mesh vertices) that passes the broad phase is
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

from contactkit.engine._kernels_mlp import _backward, _forward
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
CHUNK = 128
"""Nodes evaluated per batch: the hidden layers of a batch (4 × CHUNK × 64 float64) stay in the L2 cache
(measured on the 4,148 nut nodes: 4.2–5.5 ms per query in chunks of 64–256, 7.9–9.5 ms all at once)."""
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
        next_net, prev_net: ``(S,)`` int64, the next / previous network of the same static along its axis (the
            pieces of a :class:`contactkit.depth.DepthNetSet`), -1 for none. A point on a shared axial end belongs
            to the lower piece (the upper one's window is open below), as in :func:`contactkit.depth.query`.
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
    next_net: np.ndarray
    prev_net: np.ndarray


def empty_depth_set(hidden: int = 64) -> DepthSet:
    """A :class:`DepthSet` without networks (a scene collided through convex pieces only)."""
    z = np.zeros
    return DepthSet(z((0, 3)), z(3), z(3), z(0, np.int64), z((0, 7, 3)), z((0, 4)), z((0, MAX_FEATURES)),
                    z((0, MAX_FEATURES)), z((0, 3)), z((0, 3)), z((0, hidden, MAX_FEATURES)), z((0, hidden)),
                    z((0, hidden, hidden)), z((0, hidden)), z((0, hidden, hidden)), z((0, hidden)), z(0), z(0),
                    z(0), z(0, np.int64), z(0, np.int64))


@njit(cache=True)
def features(fr, kind, scalars, points, p, f, jac):
    """Features ``f[p] (MAX_FEATURES,)`` (written, zero-padded) of world point ``points[p] (3,)`` for a network of
    kernel code ``kind`` with frame rows ``fr (7, 3)`` and scalars ``(4,)`` (one network's rows of
    :class:`DepthSet`) and their Jacobian ``jac[p] (MAX_FEATURES, 3)`` (written) with respect to it (module
    docstring). Rows by index, not views, and the network's own rows, not the whole :class:`DepthSet` (passed by
    value per call: a set with two more fields made the loop 1.6× slower): a view per point made it 6× slower
    (0.58 against 0.09 ms for 2,562 nodes, measured)."""
    dx0, dx1, dx2 = points[p, 0] - fr[FRAME_ORIGIN, 0], points[p, 1] - fr[FRAME_ORIGIN, 1], \
        points[p, 2] - fr[FRAME_ORIGIN, 2]
    for i in range(MAX_FEATURES):
        f[p, i] = 0.0
        jac[p, i, 0], jac[p, i, 1], jac[p, i, 2] = 0.0, 0.0, 0.0
    if kind == KIND_CARTESIAN:
        for i in range(3):
            row = FRAME_BASIS + i
            f[p, i] = fr[row, 0] * dx0 + fr[row, 1] * dx1 + fr[row, 2] * dx2
            jac[p, i, 0], jac[p, i, 1], jac[p, i, 2] = fr[row, 0], fr[row, 1], fr[row, 2]
        return
    a0, a1, a2 = fr[FRAME_AXIS, 0], fr[FRAME_AXIS, 1], fr[FRAME_AXIS, 2]
    z = a0 * dx0 + a1 * dx1 + a2 * dx2
    q0, q1, q2 = dx0 - z * a0, dx1 - z * a1, dx2 - z * a2
    eps = scalars[SCALAR_R_EPS]
    r = math.sqrt(q0 * q0 + q1 * q1 + q2 * q2 + eps * eps)
    f[p, 0] = r
    jac[p, 0, 0], jac[p, 0, 1], jac[p, 0, 2] = q0 / r, q1 / r, q2 / r
    last = 1 if kind == KIND_CYLINDRICAL else 3
    f[p, last] = z
    jac[p, last, 0], jac[p, last, 1], jac[p, last, 2] = a0, a1, a2
    if kind == KIND_CYLINDRICAL:
        return
    e0, e1, e2 = fr[FRAME_REF, 0], fr[FRAME_REF, 1], fr[FRAME_REF, 2]
    b0, b1, b2 = fr[FRAME_BINORMAL, 0], fr[FRAME_BINORMAL, 1], fr[FRAME_BINORMAL, 2]
    s1 = q0 * e0 + q1 * e1 + q2 * e2
    s2 = q0 * b0 + q1 * b1 + q2 * b2
    rho2 = s1 * s1 + s2 * s2
    hand = scalars[SCALAR_HAND]
    wave = 2.0 * math.pi / scalars[SCALAR_PITCH]
    phi = wave * z - hand * math.atan2(s2, s1)
    c, sn = math.cos(phi), math.sin(phi)
    f[p, 1], f[p, 2] = c, sn
    inv = 1.0 / rho2 if rho2 > 0.0 else 0.0  # ∂θ/∂x = (s1 b − s2 e) / ρ²
    d0 = wave * a0 - hand * (s1 * b0 - s2 * e0) * inv
    d1 = wave * a1 - hand * (s1 * b1 - s2 * e1) * inv
    d2 = wave * a2 - hand * (s1 * b2 - s2 * e2) * inv
    jac[p, 1, 0], jac[p, 1, 1], jac[p, 1, 2] = -sn * d0, -sn * d1, -sn * d2
    jac[p, 2, 0], jac[p, 2, 1], jac[p, 2, 2] = c * d0, c * d1, c * d2


@njit(cache=True)
def inside_domain(ds, s, x, y, z):
    """Whether world point ``(x, y, z)`` [m] lies in the feature domain of network ``s`` or of a later piece of the
    same static (``next_net``), where the networks answer; elsewhere the static's convex pieces do
    (:mod:`._kernels_contacts`)."""
    frame, kind, scalars, lo, hi, next_net, prev_net = ds.frame, ds.kind, ds.scalars, ds.lo, ds.hi, ds.next_net, \
        ds.prev_net
    while s >= 0:
        if _inside_one(frame[s], kind[s], scalars[s], lo[s], hi[s], prev_net[s] >= 0, x, y, z):
            return True
        s = next_net[s]
    return False


@njit(cache=True)
def _inside_one(fr, kind, scalars, lo, hi, open_below, x, y, z):
    """Whether world point ``(x, y, z)`` [m] lies in one network's feature domain ``[lo, hi]`` (its rows of
    :class:`DepthSet`; the lower axial end open when ``open_below``: a piece with a predecessor). The phase features
    of a helical network always lie in their ``[-1, 1]`` domain, so only ``r`` and ``z`` are tested."""
    dx0, dx1, dx2 = x - fr[FRAME_ORIGIN, 0], y - fr[FRAME_ORIGIN, 1], z - fr[FRAME_ORIGIN, 2]
    if kind == KIND_CARTESIAN:
        for i in range(3):
            row = FRAME_BASIS + i
            f = fr[row, 0] * dx0 + fr[row, 1] * dx1 + fr[row, 2] * dx2
            if f < lo[i] or f > hi[i]:
                return False
        return True
    a0, a1, a2 = fr[FRAME_AXIS, 0], fr[FRAME_AXIS, 1], fr[FRAME_AXIS, 2]
    h = a0 * dx0 + a1 * dx1 + a2 * dx2
    q0, q1, q2 = dx0 - h * a0, dx1 - h * a1, dx2 - h * a2
    r = math.sqrt(q0 * q0 + q1 * q1 + q2 * q2 + scalars[SCALAR_R_EPS] ** 2)
    last = 1 if kind == KIND_CYLINDRICAL else 3
    above = lo[last] < h if open_below else lo[last] <= h
    return lo[0] <= r <= hi[0] and above and h <= hi[last]


@njit(cache=True)
def evaluate(ds, s, points, depth, grad, below):
    """Depth ``(M,)`` [m] (written; ``inf`` outside the domain) of network ``s`` at world ``points (M, 3)`` and,
    where ``depth ≤ below`` [m], its world gradient ``∂d/∂x`` (``grad (M, 3)``, written; zero elsewhere):
    features, forward pass, then the backward pass of those points only (module docstring), batched."""
    m, n_hidden = points.shape[0], ds.w0.shape[1]
    xhat, jac = np.empty((m, MAX_FEATURES)), np.empty((m, MAX_FEATURES, 3))
    inside = np.empty(m, np.bool_)
    lo, hi = ds.lo[s], ds.hi[s]
    open_below = -1  # the axial feature of a piece with a predecessor: its lower end belongs to that one
    if ds.prev_net[s] >= 0:
        open_below = 1 if ds.kind[s] == KIND_CYLINDRICAL else 3
    fr, kind, scalars = ds.frame[s], ds.kind[s], ds.scalars[s]
    for p in range(m):
        features(fr, kind, scalars, points, p, xhat, jac)  # raw features, scaled in place
        ok = not (open_below >= 0 and xhat[p, open_below] <= lo[open_below])
        for i in range(MAX_FEATURES):
            v = xhat[p, i]
            if v < lo[i] or v > hi[i]:
                ok = False
            xhat[p, i] = 2.0 * (v - lo[i]) / (hi[i] - lo[i]) - 1.0
        inside[p] = ok
    h1, h2, out = np.empty((m, n_hidden)), np.empty((m, n_hidden)), np.empty(m)
    _forward(ds, s, xhat, h1, h2, out)
    scale = ds.scalars[s, SCALAR_SCALE]
    slope = np.empty(m)
    near = np.empty(m, np.int64)
    n_near = 0
    for p in range(m):
        t = math.tanh(out[p])
        depth[p] = scale * t if inside[p] else np.inf
        grad[p, 0], grad[p, 1], grad[p, 2] = 0.0, 0.0, 0.0
        if inside[p] and depth[p] <= below:
            near[n_near] = p
            h1[n_near] = h1[p]  # compact in place: n_near <= p
            h2[n_near] = h2[p]
            slope[n_near] = scale * (1.0 - t * t)
            n_near += 1
    g1 = np.empty((n_near, n_hidden))
    _backward(ds, s, h1[:n_near], h2[:n_near], slope, np.empty((n_near, n_hidden)), g1)
    w0 = ds.w0[s]
    acc = np.empty(MAX_FEATURES)
    for q in range(n_near):
        p = near[q]
        acc[:] = 0.0
        for j in range(n_hidden):  # ∂d/∂x̂ = g1 W0: four independent sums
            gj = g1[q, j]
            for i in range(MAX_FEATURES):
                acc[i] += gj * w0[j, i]
        for i in range(MAX_FEATURES):
            a = acc[i] * 2.0 / (ds.hi[s, i] - ds.lo[s, i])
            for c in range(3):
                grad[p, c] += a * jac[p, i, c]


@njit(cache=True)
def depth_at(ds, s, points, depth, normals):
    """Depth ``(P,)`` [m] (``inf`` far) and unit normal ``(P, 3)`` (world; zero far) of network ``s`` at world
    ``points (P, 3)`` (written into ``depth``, ``normals``): the kernel's query, for tests and tools."""
    for c in range(0, points.shape[0], CHUNK):
        e = min(points.shape[0], c + CHUNK)
        evaluate(ds, s, points[c:e], depth[c:e], normals[c:e], np.inf)
    for p in range(points.shape[0]):
        norm = math.sqrt(normals[p, 0] ** 2 + normals[p, 1] ** 2 + normals[p, 2] ** 2)
        for c in range(3):
            normals[p, c] = normals[p, c] / norm if norm > 0.0 else 0.0


@njit(cache=True)
def depth_at_any(ds, points, depth, normals):
    """:func:`depth_at` over every network of ``ds``: each point answered by the network whose domain holds it
    (the pieces of a :class:`contactkit.depth.DepthNetSet` have disjoint domains; the first network in ``ds``'s
    order otherwise), ``inf`` and a zero normal where none does. Every point goes through every network: for a
    few points (Newton steps), not for a tool's nodes."""
    m = points.shape[0]
    d, g = np.empty(m), np.empty((m, 3))
    for p in range(m):
        depth[p] = np.inf
        normals[p, 0], normals[p, 1], normals[p, 2] = 0.0, 0.0, 0.0
    for s in range(ds.kind.shape[0]):
        depth_at(ds, s, points, d, g)
        for p in range(m):
            if np.isfinite(d[p]) and not np.isfinite(depth[p]):
                depth[p] = d[p]
                normals[p, 0], normals[p, 1], normals[p, 2] = g[p, 0], g[p, 1], g[p, 2]


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
    n_nodes = ds.nodes.shape[0]
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
    x = np.empty((n_nodes, 3))
    node = np.empty(n_nodes, np.int64)
    for s in range(ds.kind.shape[0]):
        if not _boxes_meet(ds, s, lo, hi):
            continue
        m = 0  # candidates: nodes in the domain's world box
        for v in range(n_nodes):
            inside = True
            for a in range(3):
                c = pos[a] + rot[a, 0] * ds.nodes[v, 0] + rot[a, 1] * ds.nodes[v, 1] + rot[a, 2] * ds.nodes[v, 2]
                x[m, a] = c
                inside = inside and ds.box_lo[s, a] <= c <= ds.box_hi[s, a]
            if inside:
                node[m] = v
                m += 1
        if m == 0:
            continue
        depth, grad = np.empty(m), np.empty((m, 3))
        for c in range(0, m, CHUNK):
            e = min(m, c + CHUNK)
            evaluate(ds, s, x[c:e], depth[c:e], grad[c:e], grow)
        k = _rows(ds, s, x, node, depth, grad, m, motion, com, margin, lookahead, grow, out, k)
    return k


@njit(cache=True)
def _rows(ds, s, x, node, depth, grad, m, motion, com, margin, lookahead, grow, out, k):
    """Write the contact rows of the candidates ``x[:m]`` (world) whose gap can close to within ``margin``
    (:func:`depth_contacts`). Returns the new row count."""
    shift = 2.0 ** 21
    for p in range(m):
        d = depth[p]
        if d > grow:
            continue
        norm = math.sqrt(grad[p, 0] ** 2 + grad[p, 1] ** 2 + grad[p, 2] ** 2)
        if norm < MIN_GRADIENT:
            continue
        nx, ny, nz = grad[p, 0] / norm, grad[p, 1] / norm, grad[p, 2] / norm
        if d > margin:
            close = 0.0
            rx, ry, rz = x[p, 0] - com[0], x[p, 1] - com[1], x[p, 2] - com[2]
            for j in range(2):
                ux = motion[j, 0] + motion[j, 4] * rz - motion[j, 5] * ry
                uy = motion[j, 1] + motion[j, 5] * rx - motion[j, 3] * rz
                uz = motion[j, 2] + motion[j, 3] * ry - motion[j, 4] * rx
                close = max(close, -(nx * ux + ny * uy + nz * uz))
            if d > margin + lookahead * close:
                continue
        out[k, ROW_DISTANCE] = d
        out[k, ROW_NORMAL], out[k, ROW_NORMAL + 1], out[k, ROW_NORMAL + 2] = nx, ny, nz
        out[k, ROW_POINT], out[k, ROW_POINT + 1], out[k, ROW_POINT + 2] = x[p, 0], x[p, 1], x[p, 2]
        out[k, ROW_FRICTION] = ds.friction[s]
        out[k, ROW_KEY] = (KEY_SOURCE * shift + node[p]) * shift + ds.key_piece[s]
        k += 1
    return k
