"""Force distribution and contact placement for a rigid two-tip pusher (pushing paper eqs 9–13).

Frames and signs. The object's body frame has its origin at the centre of mass. The pushed face is a straight
edge of the object's footprint: its inward normal ``e_n = (cos α, sin α)`` (the direction a push acts) and
``e_t = Jz e_n`` (``Jz`` = +90° turn); its points are ``r = n0 e_n + t e_t`` with ``n0 < 0`` (the face lies
behind the centre of mass) and ``t ∈ [t_min, t_max]`` (eq 13's ``r_i = n_i e_n + t_i e_t``). Contact ``i`` applies
``F_i = F_n,i e_n + F_t,i e_t`` (eq 9) and the torque ``τ_i = n0 F_t,i − t_i F_n,i`` about the centre of mass.

The two tips sit a fixed ``spacing`` apart on a rigid pusher: ``t_i = t_c ∓ spacing/2``; the admissible set R of
eq 13 is the interval of pusher centres ``t_c`` that keeps both tips on the face (minus an edge margin). It is
empty when the face is shorter than the tip spacing — e.g. an 88 mm cube face and the paper's 104 mm pusher.

Solver (why NNLS, not OSQP). Eq 13 is bilinear in ``(t_c, F_n)``, but with one rigid pusher the torque only
involves ``y = t_c Σ F_n``, and the set ``{(F, y): F in the cones, t_c ∈ [lo, hi]}`` is the conic hull of
unit forces along the two cone edges of each tip (the planar cone of eq 10 is exactly the hull of its two edges)
with the pusher at either end of R. Eq 13 is therefore a non-negative least-squares problem in 8 generator
weights, solved exactly (finite active-set termination, no iteration tolerance) by ``scipy.optimize.nnls``;
``t_c = y / Σ F_n``. A tiny ``FORCE_REGULARISATION ‖F‖²`` makes the answer unique where eq 13 has a whole set of
exact solutions (it then picks the least-force split, e.g. equal normal forces when R allows it).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np
from scipy.optimize import nnls

from contactkit.errors import ContactkitError, InvalidInputError

GRAVITY = 9.81
"""Standard gravity [m/s²]."""
FORCE_REGULARISATION = 1e-8
"""Weight of ``‖F‖²`` [dimensionless, relative to eq 13's residual in N²] that picks one of many exact optima."""
WRENCH_ABS_TOL = 1e-6
"""Residual ``‖W (b − A_obᵀ F)‖`` [N, N·m] up to which the required wrench counts as produced."""
WRENCH_REL_TOL = 1e-6
"""Residual tolerance relative to ``‖W b‖`` (added to :data:`WRENCH_ABS_TOL`)."""
FORCE_ZERO_TOL = 1e-12
"""Total normal force [N] below which the pusher applies nothing and its placement is taken as the middle of R."""
GROUND_SPEED_TOL = 1e-9
"""Largest patch-point speed [m/s] below which the object counts as at rest: ground friction then opposes the
desired acceleration field (impending motion) instead of the velocity field."""
GROUND_PATCH_N = 16
"""Points per side of the default square quadrature grid of the object's footprint (uniform pressure)."""
PAPER_TIP_SPACING = 0.104
"""Distance between the two pusher tips [m] (Table II: the pusher is 104 mm long; tips at its ends)."""


class DistributionStatus(enum.Enum):
    """Outcome of eq 13."""

    OK = "ok"
    """The required wrench is produced within tolerance by admissible forces and placement."""
    WRENCH_UNREACHABLE = "wrench_unreachable"
    """No admissible forces produce the wrench (e.g. it needs a pull); the least-squares best is returned."""
    EMPTY_ADMISSIBLE_SET = "empty_admissible_set"
    """No pusher placement keeps both tips on the face; forces are zero."""


class InfeasibleDistributionError(ContactkitError):
    """Eq 13 has no feasible solution (see :class:`DistributionStatus`)."""


@dataclass(frozen=True)
class PushedFace:
    """The pushed face in the object's body frame (module doc): normal angle ``α`` [rad], offset ``n0 < 0`` [m],
    face extent ``t_min < t_max`` [m] along ``e_t``."""

    normal_angle: float
    offset: float
    t_min: float
    t_max: float

    def __post_init__(self):
        vals = (self.normal_angle, self.offset, self.t_min, self.t_max)
        if not np.isfinite(vals).all() or self.offset >= 0 or self.t_min >= self.t_max:
            raise InvalidInputError(f"pushed face needs finite values, offset < 0 and t_min < t_max, got "
                                    f"(normal_angle, offset, t_min, t_max) = {vals!r}")

    @property
    def e_n(self) -> np.ndarray:
        """``(2,)`` inward unit normal, body frame."""
        return np.array([np.cos(self.normal_angle), np.sin(self.normal_angle)])

    @property
    def e_t(self) -> np.ndarray:
        """``(2,)`` unit tangent ``Jz e_n``, body frame."""
        return np.array([-np.sin(self.normal_angle), np.cos(self.normal_angle)])


def box_face(half_depth: float, half_width: float, normal_angle: float = 0.0) -> PushedFace:
    """The face of a centred box footprint at ``−half_depth`` along ``e_n`` [m], spanning ``±half_width`` [m]."""
    return PushedFace(normal_angle, -half_depth, -half_width, half_width)


@dataclass(frozen=True)
class TwoTipPusher:
    """A rigid pusher with two tips ``spacing`` [m] apart; tips stay ``edge_margin`` [m] inside the face ends."""

    spacing: float = PAPER_TIP_SPACING
    edge_margin: float = 0.0

    def __post_init__(self):
        if not (np.isfinite(self.spacing) and self.spacing > 0 and np.isfinite(self.edge_margin)
                and self.edge_margin >= 0):
            raise InvalidInputError(f"pusher needs spacing > 0 and edge_margin >= 0 [m], got "
                                    f"{self.spacing!r}, {self.edge_margin!r}")


@dataclass(frozen=True)
class PlanarObject:
    """Planar rigid body of eq 11: mass ``m`` [kg], inertia ``I_z`` [kg·m²] about the centre of mass, and the
    ``(P, 2)`` footprint points [m, body frame] with ``(P,)`` weights summing to 1 over which its weight presses
    on the table (uniform pressure: equal weights)."""

    mass: float
    inertia_z: float
    patch: np.ndarray
    patch_weights: np.ndarray

    def __post_init__(self):
        p, w = np.asarray(self.patch), np.asarray(self.patch_weights)
        if not (np.isfinite(self.mass) and self.mass > 0 and np.isfinite(self.inertia_z) and self.inertia_z > 0):
            raise InvalidInputError(f"object needs mass > 0 and inertia_z > 0, got {self.mass!r}, {self.inertia_z!r}")
        if p.ndim != 2 or p.shape[1] != 2 or w.shape != (p.shape[0],) or not np.isfinite(p).all() \
                or (w < 0).any() or abs(w.sum() - 1.0) > 1e-9:
            raise InvalidInputError(f"patch must be (P, 2) finite points with (P,) weights >= 0 summing to 1, got "
                                    f"shapes {p.shape}, {w.shape}")


def box_object(mass: float, half_x: float, half_y: float, n: int = GROUND_PATCH_N) -> PlanarObject:
    """A uniform box footprint ``2 half_x × 2 half_y`` [m] centred on the centre of mass, ``n × n`` midpoint grid,
    ``I_z = m (4 half_x² + 4 half_y²) / 12``."""
    gx = (np.arange(n) + 0.5) / n * 2 * half_x - half_x
    gy = (np.arange(n) + 0.5) / n * 2 * half_y - half_y
    pts = np.stack(np.meshgrid(gx, gy, indexing="ij"), -1).reshape(-1, 2)
    return PlanarObject(mass, mass * (half_x**2 + half_y**2) / 3.0, pts, np.full(n * n, 1.0 / (n * n)))


def _convex_ccw(polygon) -> np.ndarray:
    P = np.asarray(polygon, dtype=np.float64)
    if P.ndim != 2 or P.shape[1] != 2 or len(P) < 3 or not np.isfinite(P).all():
        raise InvalidInputError(f"polygon must be (V >= 3, 2) finite vertices [m], got shape {P.shape}")
    e = np.roll(P, -1, 0) - P
    cross = e[:, 0] * np.roll(e, -1, 0)[:, 1] - e[:, 1] * np.roll(e, -1, 0)[:, 0]
    if (cross <= 0).any():
        raise InvalidInputError("polygon must be convex and counter-clockwise (object plan, body frame)")
    return P


def polygon_object(mass: float, inertia_z: float, polygon, n: int = GROUND_PATCH_N) -> PlanarObject:
    """A uniform-pressure footprint over a convex counter-clockwise ``(V, 2)`` plan [m, body frame, origin at the
    centre of mass]: the points of an ``n × n`` midpoint grid of its bounding box that lie inside, equal weights."""
    P = _convex_ccw(polygon)
    lo, hi = P.min(0), P.max(0)
    g = [(np.arange(n) + 0.5) / n * (hi[k] - lo[k]) + lo[k] for k in range(2)]
    pts = np.stack(np.meshgrid(*g, indexing="ij"), -1).reshape(-1, 2)
    e = np.roll(P, -1, 0) - P
    rel = pts[:, None, :] - P[None]
    inside = (e[None, :, 0] * rel[..., 1] - e[None, :, 1] * rel[..., 0] >= 0).all(-1)
    pts = pts[inside]
    return PlanarObject(mass, inertia_z, pts, np.full(len(pts), 1.0 / len(pts)))


def polygon_face(polygon, edge: int) -> PushedFace:
    """The pushed face on edge ``edge`` (from vertex ``edge`` to the next) of a convex counter-clockwise plan
    ``(V, 2)`` [m, body frame, origin inside]: inward normal = the edge direction turned +90°."""
    P = _convex_ccw(polygon)
    if not 0 <= edge < len(P):
        raise InvalidInputError(f"edge must index one of the {len(P)} polygon edges, got {edge!r}")
    a, b = P[edge], P[(edge + 1) % len(P)]
    d = (b - a) / np.linalg.norm(b - a)
    e_n = np.array([-d[1], d[0]])
    e_t = np.array([-e_n[1], e_n[0]])
    ta, tb = float(a @ e_t), float(b @ e_t)
    return PushedFace(float(np.arctan2(e_n[1], e_n[0])), float(a @ e_n), min(ta, tb), max(ta, tb))


def _jz(v: np.ndarray) -> np.ndarray:
    return np.stack([-v[..., 1], v[..., 0]], -1)


def ground_friction_wrench(obj: PlanarObject, mu_ground: float, twist_b, accel_b=None, gravity: float = GRAVITY):
    """Coulomb ground friction on the footprint, eq 11's ``f = [f_n, f_t, τ_z]`` (here in body-frame axes).

    Each patch point ``x`` carries the normal load ``w m g`` and friction ``−μ w m g u/|u|`` along its velocity
    ``u = v + ω Jz x``; when the object is at rest (all ``|u| ≤ GROUND_SPEED_TOL``) ``u`` is the acceleration
    field ``v̇ + ω̇ Jz x`` instead (friction opposes the impending motion).

    Args:
        obj: the object. mu_ground: table friction coefficient >= 0.
        twist_b: ``(T, 3)`` body-frame twist ``(v_x, v_y [m/s], ω [rad/s])``. accel_b: ``(T, 3)`` body-frame
            ``(v̇, ω̇)`` or None. gravity: [m/s²].

    Returns:
        ``(T, 3)`` friction force [N] and torque about the centre of mass [N·m], body frame.
    """
    twist_b = np.atleast_2d(np.asarray(twist_b, dtype=np.float64))
    x = np.asarray(obj.patch, dtype=np.float64)
    u = twist_b[:, None, :2] + twist_b[:, None, 2:3] * _jz(x)[None]
    if accel_b is not None:
        accel_b = np.atleast_2d(np.asarray(accel_b, dtype=np.float64))
        ua = accel_b[:, None, :2] + accel_b[:, None, 2:3] * _jz(x)[None]
        still = np.linalg.norm(u, axis=-1).max(-1) <= GROUND_SPEED_TOL
        u = np.where(still[:, None, None], ua, u)
    speed = np.linalg.norm(u, axis=-1, keepdims=True)
    d = np.where(speed > GROUND_SPEED_TOL, u / np.maximum(speed, GROUND_SPEED_TOL), 0.0)
    fp = -mu_ground * obj.mass * gravity * np.asarray(obj.patch_weights)[None, :, None] * d
    tau = (x[None, :, 0] * fp[..., 1] - x[None, :, 1] * fp[..., 0]).sum(-1)
    return np.concatenate([fp.sum(1), tau[:, None]], -1)


def required_wrench(obj: PlanarObject, mu_ground: float, poses, twists_w, accels_w, gravity: float = GRAVITY):
    """Eq 11 solved for the pusher's wrench: ``b = M_ob v̇_ob,des + c_ob − f`` (body frame).

    Args:
        obj: the object. mu_ground: table friction. poses: ``(T, 3)`` ``(x, y, θ)``; twists_w, accels_w: ``(T, 3)``
            world-frame velocity and acceleration of the centre of mass and ``ω``, ``ω̇`` (e.g. from
            :func:`contactkit.control.icr.icr_trajectory` and ``icr_acceleration``).

    Returns:
        ``(T, 3)`` required force [N] and torque about the centre of mass [N·m], body frame, with
        ``v_b = Rᵀ v_w``, ``v̇_b = Rᵀ a_w − ω Jz v_b``, ``c_ob = (m ω Jz v_b, 0)``.
    """
    poses, tw, ac = (np.atleast_2d(np.asarray(a, dtype=np.float64)) for a in (poses, twists_w, accels_w))
    if not (poses.shape == tw.shape == ac.shape and poses.shape[-1] == 3) or not np.isfinite(poses + tw + ac).all():
        raise InvalidInputError(f"poses, twists and accelerations must be finite (T, 3) arrays, got "
                                f"{poses.shape}, {tw.shape}, {ac.shape}")
    c, s = np.cos(poses[:, 2]), np.sin(poses[:, 2])
    to_body = lambda v: np.stack([c * v[:, 0] + s * v[:, 1], -s * v[:, 0] + c * v[:, 1]], -1)  # noqa: E731
    w, wd = tw[:, 2], ac[:, 2]
    v_b = to_body(tw)
    vd_b = to_body(ac) - w[:, None] * _jz(v_b)
    twist_b = np.concatenate([v_b, w[:, None]], -1)
    accel_b = np.concatenate([vd_b, wd[:, None]], -1)
    c_ob = np.concatenate([obj.mass * w[:, None] * _jz(v_b), np.zeros((len(w), 1))], -1)
    m_vd = np.concatenate([obj.mass * vd_b, obj.inertia_z * wd[:, None]], -1)
    return m_vd + c_ob - ground_friction_wrench(obj, mu_ground, twist_b, accel_b, gravity)


def admissible_centres(face: PushedFace, pusher: TwoTipPusher) -> tuple[float, float] | None:
    """The admissible set R of eq 13 as the interval ``[lo, hi]`` [m] of pusher centres ``t_c`` along ``e_t``
    that keep both tips ``t_c ± spacing/2`` on ``[t_min + margin, t_max − margin]``; None when empty."""
    lo = face.t_min + pusher.edge_margin + pusher.spacing / 2
    hi = face.t_max - pusher.edge_margin - pusher.spacing / 2
    return (lo, hi) if lo <= hi else None


@dataclass(frozen=True)
class ForceDistribution:
    """Eq 13's answer for one required wrench (contacts ordered by ``t``: tip 0 at ``t_c − spacing/2``).

    Attributes:
        f_n, f_t: ``(2,)`` desired normal and tangential forces [N] (eq 9, face frame).
        tau_z: ``(2,)`` torque of each contact about the centre of mass [N·m].
        t: ``(2,)`` contact positions along ``e_t`` [m]; centre: ``t_c`` [m]. points: ``(2, 2)`` contacts [m, body].
        wrench: ``(3,)`` achieved ``A_obᵀ F`` (force [N], torque [N·m], body frame); residual: ``b − wrench``.
        status: :class:`DistributionStatus`.
    """

    f_n: np.ndarray
    f_t: np.ndarray
    tau_z: np.ndarray
    t: np.ndarray
    centre: float
    points: np.ndarray
    wrench: np.ndarray
    residual: np.ndarray
    status: DistributionStatus

    @property
    def feasible(self) -> bool:
        """True when the required wrench is produced (status OK)."""
        return self.status is DistributionStatus.OK


def _mu_pair(mu) -> np.ndarray:
    mu = np.broadcast_to(np.asarray(mu, dtype=np.float64), (2,)).copy()
    if not np.isfinite(mu).all() or (mu < 0).any():
        raise InvalidInputError(f"contact friction coefficients must be finite and >= 0, got {mu!r}")
    return mu


def _generators(face: PushedFace, half: float, lo: float, hi: float, mu: np.ndarray):
    """``(3, 8)`` face-frame wrenches of unit edge forces, ``(8,)`` tip index, ``(8,)`` tangential sign·μ,
    ``(8,)`` pusher centre of each generator (tip, edge ±, end of R)."""
    tip = np.repeat([0, 1], 4)
    sig = np.tile([1.0, -1.0], 4) * mu[tip]
    tc = np.tile(np.repeat([lo, hi], 2), 2)
    t = tc + np.where(tip == 0, -half, half)
    return np.stack([np.ones(8), sig, face.offset * sig - t]), tip, sig, tc


def distribute_forces(wrench_b, face: PushedFace, pusher: TwoTipPusher, mu_contact, weights=(1.0, 1.0, 1.0)):
    """Eq 13: desired contact forces and pusher placement for a required body-frame wrench.

    ``min ‖W (b − A_obᵀ F)‖² (+ FORCE_REGULARISATION ‖F‖²)`` over ``F_n,i ≥ 0``, ``|F_t,i| ≤ μ_i F_n,i`` (eq 10)
    and ``t_c ∈ R`` (module doc: exact NNLS reformulation).

    Args:
        wrench_b: ``(3,)`` required ``b`` (force [N], torque [N·m], body frame; :func:`required_wrench`).
        face, pusher: geometry. mu_contact: pusher–object friction, scalar or ``(2,)`` per tip.
        weights: ``(3,)`` ``W`` diagonal on the face-frame ``(n, t, τ)`` components (paper: ones).

    Returns:
        :class:`ForceDistribution` (never NaN; ``status`` reports an unreachable wrench or an empty R).
    """
    b = np.asarray(wrench_b, dtype=np.float64)
    W = np.asarray(weights, dtype=np.float64)
    if b.shape != (3,) or not np.isfinite(b).all() or W.shape != (3,) or not np.isfinite(W).all() or (W <= 0).any():
        raise InvalidInputError(f"wrench must be 3 finite numbers and weights 3 finite numbers > 0, got {b!r}, {W!r}")
    mu = _mu_pair(mu_contact)
    R = np.stack([face.e_n, face.e_t])
    b_face = np.concatenate([R @ b[:2], b[2:]])
    R_set = admissible_centres(face, pusher)
    if R_set is None:
        mid = 0.5 * (face.t_min + face.t_max)
        return _result(face, pusher, np.zeros(2), np.zeros(2), mid, b, DistributionStatus.EMPTY_ADMISSIBLE_SET)
    lo, hi = R_set
    G, tip, sig, tc = _generators(face, pusher.spacing / 2, lo, hi, mu)
    E = np.zeros((4, 8))
    E[2 * tip, np.arange(8)] = 1.0
    E[2 * tip + 1, np.arange(8)] = sig
    A = np.vstack([W[:, None] * G, np.sqrt(FORCE_REGULARISATION) * E])
    z, _ = nnls(A, np.concatenate([W * b_face, np.zeros(4)]), maxiter=50 * A.shape[1])
    f_n, f_t = (E @ z)[0::2], (E @ z)[1::2]
    total = f_n.sum()
    centre = float(np.clip((tc @ z) / total, lo, hi)) if total > FORCE_ZERO_TOL else 0.5 * (lo + hi)
    res = _result(face, pusher, f_n, f_t, centre, b, DistributionStatus.OK)
    tol = WRENCH_ABS_TOL + WRENCH_REL_TOL * np.linalg.norm(W * b)
    if np.linalg.norm(W * np.concatenate([R @ res.residual[:2], res.residual[2:]])) > tol:
        res = _result(face, pusher, f_n, f_t, centre, b, DistributionStatus.WRENCH_UNREACHABLE)
    return res


def _result(face: PushedFace, pusher: TwoTipPusher, f_n, f_t, centre: float, b, status) -> ForceDistribution:
    t = centre + np.array([-0.5, 0.5]) * pusher.spacing
    points = face.offset * face.e_n[None] + t[:, None] * face.e_t[None]
    tau = face.offset * f_t - t * f_n
    force = (f_n[:, None] * face.e_n[None] + f_t[:, None] * face.e_t[None]).sum(0)
    wrench = np.concatenate([force, [tau.sum()]])
    return ForceDistribution(f_n, f_t, tau, t, centre, points, wrench, b - wrench, status)


def distribute_trajectory(wrenches_b, face: PushedFace, pusher: TwoTipPusher, mu_contact,
                          weights=(1.0, 1.0, 1.0)) -> list[ForceDistribution]:
    """:func:`distribute_forces` at every step of a ``(T, 3)`` required-wrench sequence; ``T`` answers."""
    wrenches_b = np.asarray(wrenches_b, dtype=np.float64)
    if wrenches_b.ndim != 2 or wrenches_b.shape[1] != 3:
        raise InvalidInputError(f"wrenches must be (T, 3), got {wrenches_b.shape}")
    return [distribute_forces(w, face, pusher, mu_contact, weights) for w in wrenches_b]


def require_feasible(dist: ForceDistribution) -> ForceDistribution:
    """Return ``dist`` if eq 13 was solved; raise :class:`InfeasibleDistributionError` naming why otherwise."""
    if not dist.feasible:
        raise InfeasibleDistributionError(f"eq 13 infeasible ({dist.status.value}): residual wrench "
                                          f"{dist.residual.tolist()!r} [N, N, N*m]")
    return dist
