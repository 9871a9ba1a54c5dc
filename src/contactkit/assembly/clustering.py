"""Learned contact clustering (tight-tolerance paper §III-B, eqs 4–6; network sizes §V-B), forward in numpy.

The original contacts (tool nodes found by the depth network, :class:`contactkit.depth.NodeContacts`) are reduced
to ``Mc`` clustered contacts by learned weights:

* node inputs (eq 4) ``X_i = [x_i; q; v_i; ω; f; τ_i] ∈ R¹⁹``, world frame: ``x_i`` the node's position [m];
  ``q`` the tool body's quaternion wxyz, sign fixed to ``w ≥ 0`` (q and −q are one pose); ``v_i = v + ω × (x_i − p)``
  the node's velocity [m/s] (``v`` of the body origin ``p``); ``ω`` the body's angular velocity [rad/s]; ``f`` the
  applied force [N] (the virtual coupling's, the same for every node); ``τ_i = τ_c + (c − x_i) × f`` the applied
  moment about the node [N·m] (``τ_c`` about the COM ``c``). Every input is scaled to ``[−1, 1]`` by the net's
  min/max ranges (``2 (X − lo)/(hi − lo) − 1``, not clipped).
* eq 5 interaction network: ``Y_W,i = f_O1(X_i, Σ_{l∈S_i} f_R1(X_i, X_l)) ∈ R^Mc`` with ``S_i`` the ``k = 10``
  nearest other contacts of node ``i`` (exact; :func:`contact_neighbours`); ``f_R1``: 38→16→16→4, ReLU on every layer;
  ``f_O1``: 23→8 (ReLU)→Mc (linear). The weights ``W_i^j = softmax_i(Y_W,i^j)`` sum to one over the nodes of
  each cluster ``j`` (§V-B).
* clustered points ``x_r = W x_o`` kept on the surface (:class:`SurfaceProjection`): the Euclidean average of
  points on a curved wall (the 50 mm bore, the thread flanks) lies off it by the chord's sag (3 mm for ±30° of the
  bore; near the axis for a whole ring), where the depth network (trained in a band about the surface) is wrong
  and the nearest surface may be another one (the floor). So the averaged point first goes onto the tool's contact
  patch (the tangent plane of its nearest original contact, twice: the middle of a contact arc), then by Newton
  steps ``x ← x − (d(x) − d̄) ∇d(x)`` on the static part's depth network (the engine's float64 kernel) onto the
  level set where the clustered distance puts it. This replaces
  the paper's geodesic surface average (its [30]) by a projection onto the surface the simulation itself sees;
  where Newton does not converge it restarts from the nearest original contact; without a network the patch point
  is kept.
* clustered distance ``d̄_j = Σ_i W_i^j d_i`` (the W-weighted depth of the original contacts), not the depth at the
  averaged point: that point is off the surface by the sag before the projection, and the weighted depth is exact
  when the nodes it averages share one gap.
* clustered normals ``n_r = normalise(W n_o)`` (the heaviest contact's normal if the average cancels), then eq 6:
  ``Y_N,j = f_O2(X̄_j, Σ_{l≠j} f_R2(X̄_j, X̄_l))`` with ``X̄_j = [X_j(x_r); n_r] ∈ R²²`` (the eq-4 inputs at the
  clustered point, then its normal); ``f_R2``: 44→16→16→4 ReLU; ``f_O2``: 26→8 (ReLU)→2 (linear, in units of
  :data:`ANGLE_UNIT`) gives ``(θ1, θ2)`` [rad] and ``n̄ = R_n(θ1) R_t(θ2) n_r`` (tilt by θ2 about the tangent ``t`` of
  :func:`contactkit.collision.contact_frames`, then turn by θ1 about ``n_r``; the other order would make θ1 void).

With ``N ≤ Mc`` original contacts they come back unchanged (clustering cannot reduce them further); zero contacts
give an empty :class:`~contactkit.collision.Contacts`. All parameters live in one flat float64 vector (the CMA-ES
search space of :mod:`contactkit.assembly.cma_fit`), laid out by :func:`param_layout`. The contact-set
geometry (``S_i``, the surface projection) is :mod:`contactkit.assembly.clustering_geometry` (names importable here).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from contactkit.assembly.clustering_geometry import (  # noqa: F401 (re-exported: the clustering's public names)
    NEIGHBOUR_POOL,
    NODE_MATCH_TOL,
    PATCH_STEPS,
    PROJECTION_STEPS,
    PROJECTION_TOL,
    SurfaceProjection,
    contact_neighbours,
    neighbours,
    onto_contact_patch,
    project_to_surface,
)
from contactkit.assembly.task import AssemblyTask
from contactkit.collision import Contacts
from contactkit.collision.contact_set import contact_frames
from contactkit.depth import NodeContacts
from contactkit.engine.reference import com_position
from contactkit.errors import InvalidInputError
from contactkit.state import BodyState

MC_DEFAULT = 12
"""Number of clustered contacts ``Mc`` (paper §V-B)."""
K_NEIGHBOURS = 10
"""Size of ``S_i``, the neighbours of each original contact in eq 5 (paper §V-B)."""
N_INPUT = 19
"""Size of the eq-4 node input ``X_i``."""
R_HIDDEN, R_OUT, O_HIDDEN = 16, 4, 8
"""Widths (§V-B): ``f_R`` hidden layers, ``f_R`` output, ``f_O`` hidden layer."""
ANGLE_UNIT = 0.01
"""[rad] the unit of ``f_O2``'s linear outputs ``(θ1, θ2)``: a scale on its output layer (the same function class),
so that CMA-ES steps of one size suit both heads. Measured on 24 peg reference rows: perturbing the parameters by
σ = 0.05 with a unit of 1 rad raised the one-step wrench loss 2–40× through the normal head alone (a tilt of a bore
wall's normal by tens of mrad), against 1–3× through the weight head."""
NORMAL_CANCEL_TOL = 1e-9
"""``|W n_o|`` below which the averaged normal is taken as cancelled (opposite walls) and replaced."""


def param_layout(mc: int = MC_DEFAULT) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """Names and shapes of the parameter blocks, in their order in the flat vector (weights as (out, in))."""
    n, nb = N_INPUT, N_INPUT + 3
    mlp_r = lambda p, d: ((f"{p}.W0", (R_HIDDEN, 2 * d)), (f"{p}.b0", (R_HIDDEN,)),  # noqa: E731
                          (f"{p}.W1", (R_HIDDEN, R_HIDDEN)), (f"{p}.b1", (R_HIDDEN,)),
                          (f"{p}.W2", (R_OUT, R_HIDDEN)), (f"{p}.b2", (R_OUT,)))
    mlp_o = lambda p, d, m: ((f"{p}.W0", (O_HIDDEN, d + R_OUT)), (f"{p}.b0", (O_HIDDEN,)),  # noqa: E731
                             (f"{p}.W1", (m, O_HIDDEN)), (f"{p}.b1", (m,)))
    return mlp_r("fR1", n) + mlp_o("fO1", n, mc) + mlp_r("fR2", nb) + mlp_o("fO2", nb, 2)


def n_params(mc: int = MC_DEFAULT) -> int:
    """Length of the flat parameter vector for ``mc`` clusters (2 558 for Mc = 12)."""
    return int(sum(np.prod(s) for _, s in param_layout(mc)))


def unpack(params: np.ndarray, mc: int) -> dict[str, np.ndarray]:
    """The blocks of :func:`param_layout` as views into ``params (P,)``."""
    out, at = {}, 0
    for name, shape in param_layout(mc):
        size = int(np.prod(shape))
        out[name] = params[at : at + size].reshape(shape)
        at += size
    return out


@dataclass(frozen=True, eq=False)
class ClusteringNet:
    """The clustering networks of eqs 5–6 as one flat parameter vector, with their input scaling.

    Attributes:
        params: ``(n_params(mc),)`` float64, blocks of :func:`param_layout`.
        x_lo, x_hi: ``(19,)`` min/max of the eq-4 inputs (scaled to ``[−1, 1]``); normals are used as they are.
        mc: number of clustered contacts; k: neighbours per node in eq 5.
        task_kind, tool_sha256, static_sha256: the task it was fitted on ("" for an unfitted net).
        meta: JSON-compatible facts (fit seed, generations, loss).

    Raises:
        InvalidInputError: wrong shapes, non-finite values, ``x_hi <= x_lo``, ``mc < 1`` or ``k < 1``.
    """

    params: np.ndarray
    x_lo: np.ndarray
    x_hi: np.ndarray
    mc: int = MC_DEFAULT
    k: int = K_NEIGHBOURS
    task_kind: str = ""
    tool_sha256: str = ""
    static_sha256: str = ""
    meta: dict = field(default_factory=dict)
    _blocks: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if int(self.mc) < 1 or int(self.k) < 1:
            raise InvalidInputError(f"clustering net needs mc >= 1 and k >= 1, got mc={self.mc}, k={self.k}")
        p = np.array(self.params, dtype=np.float64).reshape(-1)
        if p.shape != (n_params(self.mc),) or not np.isfinite(p).all():
            raise InvalidInputError(f"clustering params must be {n_params(self.mc)} finite values for mc="
                                    f"{self.mc}, got shape {p.shape} (finite: {bool(np.isfinite(p).all())})")
        lo, hi = (np.array(a, dtype=np.float64).reshape(-1) for a in (self.x_lo, self.x_hi))
        if lo.shape != (N_INPUT,) or hi.shape != (N_INPUT,) or not (np.isfinite(lo).all() and np.isfinite(hi).all()
                                                                   and (hi > lo).all()):
            raise InvalidInputError(f"clustering input ranges must be finite ({N_INPUT},) with hi > lo, got "
                                    f"lo {lo.tolist()}, hi {hi.tolist()}")
        for name, value in (("params", p), ("x_lo", lo), ("x_hi", hi)):
            value.flags.writeable = False
            object.__setattr__(self, name, value)
        object.__setattr__(self, "mc", int(self.mc))
        object.__setattr__(self, "k", int(self.k))
        object.__setattr__(self, "_blocks", unpack(p, self.mc))

    def with_params(self, params: np.ndarray, **meta) -> ClusteringNet:
        """The same net with new ``params`` (and ``meta`` updated by the keywords)."""
        return ClusteringNet(params, self.x_lo, self.x_hi, self.mc, self.k, self.task_kind, self.tool_sha256,
                             self.static_sha256, {**self.meta, **meta})


def init_params(rng: np.random.Generator, mc: int = MC_DEFAULT, logit_scale: float = 4.0) -> np.ndarray:
    """Random ``(n_params(mc),)`` parameters: He-normal weights, zero biases; ``f_O1``'s output layer scaled by
    ``logit_scale`` so the softmax weights start localised (logits of O(1) over thousands of nodes would make every
    cluster the global centroid); ``f_O2``'s output starts at zero (no normal rotation)."""
    out = []
    for name, shape in param_layout(mc):
        if name.endswith(("b0", "b1", "b2")) or name == "fO2.W1":
            out.append(np.zeros(int(np.prod(shape))))
            continue
        scale = np.sqrt(2.0 / shape[1]) * (logit_scale if name == "fO1.W1" else 1.0)
        out.append(rng.normal(0.0, scale, size=shape).reshape(-1))
    return np.concatenate(out)


def default_ranges(task: AssemblyTask, *, speed: float = 0.05, spin: float = 2.0, force: float = 50.0,
                   moment: float = 5.0) -> tuple[np.ndarray, np.ndarray]:
    """``(x_lo, x_hi)`` ``(19,)`` for a task: positions over the static part's bounding box grown by the tool's
    size [m], quaternion ``[−1, 1]``, velocities ``±speed`` [m/s], ``±spin`` [rad/s], forces ``±force`` [N],
    moments ``±moment`` [N·m]. :func:`contactkit.assembly.cma_fit.input_ranges` takes them from data instead."""
    v = np.asarray(task.static.vertices, dtype=np.float64)
    reach = float(np.ptp(task.nodes, axis=0).max())
    lo = np.concatenate([v.min(axis=0) - reach, -np.ones(4), -speed * np.ones(3), -spin * np.ones(3),
                         -force * np.ones(3), -moment * np.ones(3)])
    hi = np.concatenate([v.max(axis=0) + reach, np.ones(4), speed * np.ones(3), spin * np.ones(3),
                         force * np.ones(3), moment * np.ones(3)])
    return lo, hi


def node_inputs(task: AssemblyTask, points: np.ndarray, state: BodyState, applied_wrench: np.ndarray) -> np.ndarray:
    """Eq 4: ``(N, 19)`` inputs ``[x_i; q; v_i; ω; f; τ_i]`` of world points ``(N, 3)`` [m] (module docstring).

    Args:
        task: gives the tool's COM (body frame). state: the tool's single state (body frame origin, wxyz, world
            velocities). applied_wrench: ``(6,)`` world ``(f, τ about the COM)`` [N, N·m].
    """
    x = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    q = np.asarray(state.quat, dtype=np.float64).reshape(4)
    q = -q if q[0] < 0 else q
    pos, v, w = (np.asarray(a, dtype=np.float64).reshape(3) for a in (state.pos, state.lin_vel, state.ang_vel))
    wr = np.asarray(applied_wrench, dtype=np.float64).reshape(6)
    out = np.empty((len(x), N_INPUT))
    _inputs_kernel(np.ascontiguousarray(x), q, pos, v, w, wr, com_position(task.body, state), out)
    return out


@njit(cache=True)
def _inputs_kernel(x, q, pos, v, w, wr, com, out):
    """Rows of ``out (N, 19)`` (written): ``[x_i; q; v + ω × (x_i − p); ω; f; τ_c + (c − x_i) × f]``."""
    for i in range(x.shape[0]):
        r0, r1, r2 = x[i, 0] - pos[0], x[i, 1] - pos[1], x[i, 2] - pos[2]
        a0, a1, a2 = com[0] - x[i, 0], com[1] - x[i, 1], com[2] - x[i, 2]
        out[i, 0], out[i, 1], out[i, 2] = x[i, 0], x[i, 1], x[i, 2]
        out[i, 3], out[i, 4], out[i, 5], out[i, 6] = q[0], q[1], q[2], q[3]
        out[i, 7] = v[0] + (w[1] * r2 - w[2] * r1)
        out[i, 8] = v[1] + (w[2] * r0 - w[0] * r2)
        out[i, 9] = v[2] + (w[0] * r1 - w[1] * r0)
        out[i, 10], out[i, 11], out[i, 12] = w[0], w[1], w[2]
        out[i, 13], out[i, 14], out[i, 15] = wr[0], wr[1], wr[2]
        out[i, 16] = wr[3] + (a1 * wr[2] - a2 * wr[1])
        out[i, 17] = wr[4] + (a2 * wr[0] - a0 * wr[2])
        out[i, 18] = wr[5] + (a0 * wr[1] - a1 * wr[0])


def _scaled(net: ClusteringNet, inputs: np.ndarray) -> np.ndarray:
    return 2.0 * (inputs - net.x_lo) / (net.x_hi - net.x_lo) - 1.0



@njit(cache=True, fastmath=True)
def _interaction_kernel(xs, nbr, w0, b0, w1, b1, w2, b2, out):
    """``out (n, R)`` (written) ``= Σ_a f_R(xs[i], xs[nbr[i, a]])``: ``f_R`` = three ReLU layers, the first split
    as ``W0 [X_i; X_l] = A X_i + B X_l`` so it is applied per node, not per pair (numba: no BLAS threads)."""
    n, d = xs.shape
    hid, r_out = w0.shape[0], w2.shape[0]
    u, v = np.empty((n, hid)), np.empty((n, hid))
    for i in range(n):
        for c in range(hid):
            su, sv = b0[c], 0.0
            for e in range(d):
                su += w0[c, e] * xs[i, e]
                sv += w0[c, d + e] * xs[i, e]
            u[i, c], v[i, c] = su, sv
    h1, h2 = np.empty(hid), np.empty(hid)
    for i in range(n):
        for r in range(r_out):
            out[i, r] = 0.0
        for a in range(nbr.shape[1]):
            ll = nbr[i, a]
            for c in range(hid):
                h1[c] = max(u[i, c] + v[ll, c], 0.0)
            for c in range(hid):
                s = b1[c]
                for e in range(hid):
                    s += w1[c, e] * h1[e]
                h2[c] = max(s, 0.0)
            for r in range(r_out):
                s = b2[r]
                for e in range(hid):
                    s += w2[r, e] * h2[e]
                out[i, r] += max(s, 0.0)


@njit(cache=True, fastmath=True)
def _object_kernel(xs, effect, w0, b0, w1, b1, out):
    """``out (n, m)`` (written) ``= f_O(xs[i], effect[i])``: one ReLU hidden layer, then a linear output."""
    n, d = xs.shape
    hid, m, r_in = w0.shape[0], w1.shape[0], effect.shape[1]
    h = np.empty(hid)
    for i in range(n):
        for c in range(hid):
            s = b0[c]
            for e in range(d):
                s += w0[c, e] * xs[i, e]
            for e in range(r_in):
                s += w0[c, d + e] * effect[i, e]
            h[c] = max(s, 0.0)
        for j in range(m):
            s = b1[j]
            for c in range(hid):
                s += w1[j, c] * h[c]
            out[i, j] = s


def _interaction(b: dict, prefix: str, xs: np.ndarray, nbr: np.ndarray) -> np.ndarray:
    """``(n, R_OUT)`` = Σ over each row's neighbours ``nbr (n, k)`` of ``f_R(X_i, X_l)``."""
    out = np.zeros((len(xs), R_OUT))
    if nbr.shape[1]:
        _interaction_kernel(np.ascontiguousarray(xs), np.ascontiguousarray(nbr), *(b[f"{prefix}.{w}"] for w in
                            ("W0", "b0", "W1", "b1", "W2", "b2")), out)
    return out


def _object(b: dict, prefix: str, xs: np.ndarray, effect: np.ndarray) -> np.ndarray:
    """``f_O(X, Σ f_R)`` over the rows of ``xs``."""
    out = np.empty((len(xs), b[f"{prefix}.b1"].shape[0]))
    _object_kernel(np.ascontiguousarray(xs), effect, *(b[f"{prefix}.{w}"] for w in ("W0", "b0", "W1", "b1")), out)
    return out


def cluster_weights(net: ClusteringNet, inputs: np.ndarray, nbr: np.ndarray) -> np.ndarray:
    """Eq 5 + softmax: ``(Mc, N)`` weights ``W_i^j`` of the ``N`` nodes, each row summing to one.

    Args:
        inputs: ``(N, 19)`` unscaled eq-4 inputs; nbr: ``(N, k')`` neighbour indices (:func:`neighbours`).
    """
    xs = _scaled(net, inputs)
    effect = _interaction(net._blocks, "fR1", xs, nbr)
    logits = _object(net._blocks, "fO1", xs, effect).T
    logits = logits - logits.max(axis=1, keepdims=True)
    w = np.exp(logits)
    return w / w.sum(axis=1, keepdims=True)


def normal_angles(net: ClusteringNet, inputs_r: np.ndarray, normals_r: np.ndarray) -> np.ndarray:
    """Eq 6: ``(Mc, 2)`` angles ``(θ1, θ2)`` [rad] from the clustered inputs ``(Mc, 19)`` and normals ``(Mc, 3)``."""
    xs = np.concatenate([_scaled(net, inputs_r), normals_r], axis=1)
    m = len(xs)
    others = np.nonzero(~np.eye(m, dtype=bool))[1].reshape(m, m - 1)
    effect = _interaction(net._blocks, "fR2", xs, others)
    return ANGLE_UNIT * _object(net._blocks, "fO2", xs, effect)


def _rotate(v: np.ndarray, axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """Rodrigues: rows of ``v (M, 3)`` turned by ``angle (M,)`` [rad] about the unit rows of ``axis (M, 3)``."""
    out = np.empty_like(v)
    _rotate_kernel(np.ascontiguousarray(v, dtype=np.float64), np.ascontiguousarray(axis, dtype=np.float64),
                   np.ascontiguousarray(angle, dtype=np.float64), out)
    return out


@njit(cache=True)
def _rotate_kernel(v, axis, angle, out):
    """:func:`_rotate` into ``out (M, 3)``: ``v cos θ + (a × v) sin θ + a (a·v)(1 − cos θ)``."""
    for i in range(v.shape[0]):
        c, s = math.cos(angle[i]), math.sin(angle[i])
        a0, a1, a2 = axis[i, 0], axis[i, 1], axis[i, 2]
        v0, v1, v2 = v[i, 0], v[i, 1], v[i, 2]
        dot = a0 * v0 + a1 * v1 + a2 * v2
        out[i, 0] = v0 * c + (a1 * v2 - a2 * v1) * s + a0 * dot * (1 - c)
        out[i, 1] = v1 * c + (a2 * v0 - a0 * v2) * s + a1 * dot * (1 - c)
        out[i, 2] = v2 * c + (a0 * v1 - a1 * v0) * s + a2 * dot * (1 - c)


def rotate_normals(normals: np.ndarray, angles: np.ndarray) -> np.ndarray:
    """``n̄ = R_n(θ1) R_t(θ2) n`` for unit ``normals (M, 3)`` and ``angles (M, 2)`` (module docstring)."""
    t = contact_frames(normals)[:, 1]
    tilted = _rotate(normals, t, angles[:, 1])
    out = _rotate(tilted, normals, angles[:, 0])
    return out / np.linalg.norm(out, axis=1, keepdims=True)



@dataclass(frozen=True, eq=False)
class LearnedClustering:
    """The learned clustering of §III-B as a :class:`contactkit.assembly.simulator.Clustering`.

    Attributes:
        net: the networks and input ranges. projection: how clustered points are kept on the surface.
    """

    net: ClusteringNet
    projection: SurfaceProjection = SurfaceProjection.DEPTH_NET

    def cluster(self, task: AssemblyTask, contacts: NodeContacts, state: BodyState,
                applied_wrench: np.ndarray) -> Contacts:
        """``Mc`` clustered contacts (world) of the original ``contacts`` (eqs 4–6, module docstring).

        Args:
            task: the task (tool COM, depth network, friction). contacts: ``N`` original node contacts, world.
            state: the tool's single state. applied_wrench: ``(6,)`` world applied wrench about the COM [N, N·m].

        Returns:
            ``Contacts`` with ``min(N, Mc)`` rows: the originals unchanged when ``N ≤ Mc``; friction ``task.friction``.
        """
        pts = np.asarray(contacts.points, dtype=np.float64).reshape(-1, 3)
        nrm = np.asarray(contacts.normals, dtype=np.float64).reshape(-1, 3)
        dep = np.asarray(contacts.depth, dtype=np.float64).reshape(-1)
        n, mu = len(pts), float(task.friction)
        if n <= self.net.mc:
            return Contacts(pts, nrm, dep, np.full(n, mu))
        nbr = contact_neighbours(task, contacts, state, self.net.k)
        w = cluster_weights(self.net, node_inputs(task, pts, state, applied_wrench), nbr)
        dist = w @ dep
        n_r = w @ nrm
        length = np.linalg.norm(n_r, axis=1, keepdims=True)
        n_r = np.where(length > NORMAL_CANCEL_TOL, n_r / np.maximum(length, NORMAL_CANCEL_TOL),
                       nrm[np.argmax(w, axis=1)])
        reach = np.linalg.norm(pts[nbr[:, 0]] - pts, axis=1) if nbr.shape[1] else np.zeros(n)
        x = project_to_surface(task, w @ pts, dist, pts, nrm, reach, self.projection)
        angles = normal_angles(self.net, node_inputs(task, x, state, applied_wrench), n_r)
        return Contacts(x, rotate_normals(n_r, angles), dist, np.full(len(x), mu))
