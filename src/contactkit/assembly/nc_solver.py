"""N/C-space contact solve of one step: Algorithm 1 of the tight-tolerance paper (§III-C, §IV-C), and the PGS baseline.

The problem is that of one floating body (tight-tolerance paper eq 1, ``V = [v_com (world); ω (body)]``):
``Mc`` clustered point contacts with rows ``[n; t1; t2]`` (``n`` from the static part into the tool) and, where the
C-space model says the configuration is in (or at) collision, one frictionless unilateral row ``N_C`` (eq 8,
:mod:`contactkit.engine.reference.solvers.virtual_constraint`). ``W = J M⁻¹ Jᵀ`` is never formed: the solver keeps
``V = V_free + M⁻¹(Jᵀλ + N_C λ_C)`` and reads a row's velocity as ``J_r V`` (the house style of
:mod:`contactkit.engine._kernels_solve`, whose ``build_rows`` and ``invert3`` it reuses; its exact ``single_contact`` is
rewritten here with a Newton root for the slip case, :func:`single_contact_newton`: same cases, same solution).

* :attr:`FrictionKind.CONE` — Algorithm 1 exactly: zero start (line 1); per sweep, each contact by the exact
  single-contact solve (opening / stick / slip by bisection, §III-C; line 4), relaxed ``λ ← αλ* + (1-α)λ``
  (line 5); then the C-space row: ``v_C*`` with ``λ_C = 0`` (line 7), ``λ_C* = -v_C*/W_CC`` if ``v_C* < 0`` else 0
  (lines 8–11), relaxed (line 13). It is the reference :class:`~contactkit.engine.reference.ConeSOR`, matrix-free.
* :attr:`FrictionKind.BOX` — the baseline of §V-C: projected Gauss-Seidel on the box-friction MLCP
  (``|λ_tj| ≤ μλ_n`` per tangent), the C-space row handled the same way.

Convergence is judged on the constraint residuals (natural-map residuals in velocity units, as
:func:`contactkit.engine.reference.solvers.base.residuals`): Signorini, friction bound, maximum dissipation (cone)
or box projection, and the C-space complementarity ``|min(W_CC λ_C, v_C)|``. A solve that ends on the iteration cap
reports :attr:`SolveStatus.ITERATION_LIMIT` with its residuals; nothing is hidden.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

import numpy as np
from numba import njit

from contactkit.collision import Contacts
from contactkit.engine._kernels_solve import build_rows, invert3, slip_impulse, slip_terms, stick_or_open
from contactkit.engine.layout import ROW_NORMAL, ROW_POINT, ROW_WIDTH
from contactkit.engine.reference import RigidBody, SolveStatus, inverse_mass_matrix
from contactkit.engine.reference.body import com_position, rotation, wrench_from_generalized
from contactkit.errors import InvalidInputError
from contactkit.state import BodyState

DEFAULT_TOL = 1e-5
"""[m/s] default bound on every constraint residual (0.1 µm per 10 ms step). Measured on clustered contacts
(K-means, 12): the M48 nut turning under a 10 N push needs a median 428 sweeps for 1e-5 (contact force within
0.01 N of the 1e-11 solution, of 8 N), 110 for 1e-4 (0.07 N), 505 for 1e-6; a peg pressed sideways into the bore
meets 1e-5 in 8 sweeps but its GS iterates then drift for ~9300 sweeps to another solution 0.1 N away (the
jammed, redundant frictional contact is not unique)."""
DEFAULT_MAX_ITERATIONS = 200
"""Default cap on sweeps (about 7 µs each for 12 contacts); reaching it is reported as ``ITERATION_LIMIT``."""
SLIP_TOL = 1e-13
"""Newton/bisection on the slip parameter ``s ∈ [0, 1]`` stops when a step or the bracket is below this."""
SLIP_MAX_STEPS = 64
"""Cap on slip iterations (each halves the bracket at least when Newton is refused)."""
DEFAULT_RELAXATION = 1.0
"""Default relaxation ``α`` of Algorithm 1 lines 5 and 13 (1: plain block Gauss-Seidel)."""
class FrictionKind(str, Enum):
    """The friction law of the contact rows."""

    CONE = "cone"  # Coulomb cone, maximum dissipation, exact single-contact solve (Algorithm 1)
    BOX = "box"  # box friction, projected Gauss-Seidel per row (baseline, §V-C)


@dataclass(frozen=True)
class NCSolution:
    """Result of one N/C-space solve.

    Attributes:
        impulses: ``(K, 3)`` contact impulses ``(λ_n, λ_t1, λ_t2)`` [N·s] in contact frames ``[n; t1; t2]``.
        frames: ``(K, 3, 3)`` the contact frames used (rows ``n, t1, t2``, world).
        cspace_impulse: ``λ_C`` [N·s along the unit ``N_C``], 0 without the C-space row.
        velocity: ``(6,)`` ``V⁺ = [v_com (world); ω (body)]`` at the end of the step.
        wrench: ``(6,)`` mean world wrench over the step [N, N·m] of all impulses (contacts and ``N_C λ_C``),
            torque about the COM at the start of the step.
        iterations: sweeps performed.
        residual: largest constraint residual [m/s] at the end.
        status: ``CONVERGED`` or ``ITERATION_LIMIT``.
    """

    impulses: np.ndarray
    frames: np.ndarray
    cspace_impulse: float
    velocity: np.ndarray
    wrench: np.ndarray
    iterations: int
    residual: float
    status: SolveStatus


@njit(cache=True)
def _dot6(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5]


@njit(cache=True)
def _box_contact(jac, m_inv_jt, blocks, bias, mu, lam, v, i, relaxation):
    """Projected Gauss-Seidel on the three rows of contact ``i`` (box friction), in place on ``lam`` and ``v``."""
    for r in range(3):
        u = _dot6(jac[i, r], v) + (bias[i] if r == 0 else 0.0)
        old = lam[i, r]
        new = old - relaxation * u / blocks[i, r, r]
        if r == 0:
            new = max(new, 0.0)
        else:
            bound = mu[i] * lam[i, 0]
            new = min(max(new, -bound), bound)
        if new != old:
            lam[i, r] = new
            for c in range(6):
                v[c] += m_inv_jt[i, r, c] * (new - old)


@njit(cache=True)
def _slip_g(s, a, b, c, d, c1, c2, k, bn, wn1, wn2):
    """``G(s)`` of the slip case (``> 0`` ⇔ ``‖λ_t‖ > μλ_n``, as the engine's bisection tests it) and ``G'(s)``."""
    m11, m22 = s * a + 1.0 - s, s * d + 1.0 - s
    q1, q2 = m22 * c1 - s * b * c2, m11 * c2 - s * c * c1
    p1, p2 = -s * q1, -s * q2
    det = m11 * m22 - s * s * b * c
    dp1 = -q1 - s * ((d - 1.0) * c1 - b * c2)
    dp2 = -q2 - s * ((a - 1.0) * c2 - c * c1)
    ddet = (a - 1.0) * m22 + m11 * (d - 1.0) - 2.0 * s * b * c
    norm = math.hypot(p1, p2)
    dnorm = (p1 * dp1 + p2 * dp2) / norm if norm > 0.0 else math.hypot(dp1, dp2)
    return norm + k * (bn * det + wn1 * p1 + wn2 * p2), dnorm + k * (bn * ddet + wn1 * dp1 + wn2 * dp2)


@njit(cache=True)
def single_contact_newton(w, wi, mu, bn, bt1, bt2):
    """The exact single-contact solve of §III-C (:func:`contactkit.engine._kernels_solve.single_contact`: opening,
    stick, slip) with the slip root ``G(s) = 0`` found by Newton's method safeguarded by the bisection bracket
    ``[lo, hi]`` (``G(lo) ≤ 0 < G(hi)``) instead of 36 bisection steps: 4–8 evaluations (measured: the cone
    solve dominated a sweep, 200 sweeps of 12 contacts cost 5.8 ms against 0.3 ms for box PGS). Stops when a
    step or the bracket is below :data:`SLIP_TOL`. Returns ``(λ_n, λ_t1, λ_t2)`` [N·s]."""
    solved, ln, l1, l2 = stick_or_open(w, wi, mu, bn, bt1, bt2)
    if solved:
        return ln, l1, l2
    c1, c2, a, b, c, d, k = slip_terms(w, mu, bn, bt1, bt2)
    lo, hi, s = 0.0, 1.0, 0.5
    for _ in range(SLIP_MAX_STEPS):
        g, dg = _slip_g(s, a, b, c, d, c1, c2, k, bn, w[0, 1], w[0, 2])
        if g > 0.0:
            hi = s
        else:
            lo = s
        step = g / dg if dg != 0.0 else 0.0
        new = s - step
        if not lo < new < hi:  # Newton left the bracket: bisect
            new = 0.5 * (lo + hi)
        if abs(new - s) <= SLIP_TOL or hi - lo <= SLIP_TOL:
            s = new
            break
        s = new
    return slip_impulse(w, mu, bn, s, a, b, c, d, c1, c2)


@njit(cache=True)
def _cone_contact(jac, m_inv_jt, blocks, inverse, bias, mu, lam, v, i, relaxation):
    """Algorithm 1 lines 4–5 for contact ``i``: exact single-contact solve, relaxation; in place."""
    l0, l1, l2 = lam[i, 0], lam[i, 1], lam[i, 2]
    w = blocks[i]
    f0 = _dot6(jac[i, 0], v) + bias[i] - (w[0, 0] * l0 + w[0, 1] * l1 + w[0, 2] * l2)
    f1 = _dot6(jac[i, 1], v) - (w[1, 0] * l0 + w[1, 1] * l1 + w[1, 2] * l2)
    f2 = _dot6(jac[i, 2], v) - (w[2, 0] * l0 + w[2, 1] * l1 + w[2, 2] * l2)
    s0, s1, s2 = single_contact_newton(w, inverse[i], mu[i], f0, f1, f2)
    d0, d1, d2 = relaxation * (s0 - l0), relaxation * (s1 - l1), relaxation * (s2 - l2)
    if d0 != 0.0 or d1 != 0.0 or d2 != 0.0:
        lam[i, 0], lam[i, 1], lam[i, 2] = l0 + d0, l1 + d1, l2 + d2
        for c in range(6):
            v[c] += m_inv_jt[i, 0, c] * d0 + m_inv_jt[i, 1, c] * d1 + m_inv_jt[i, 2, c] * d2


@njit(cache=True)
def _residual(count, jac, blocks, bias, mu, lam, v, cone, nc, w_cc, c_bias, lam_c):
    """Largest natural-map residual [m/s] (module docstring; as ``reference.solvers.base.residuals``)."""
    worst = 0.0
    for i in range(count):
        un = _dot6(jac[i, 0], v) + bias[i]
        ut1, ut2 = _dot6(jac[i, 1], v), _dot6(jac[i, 2], v)
        worst = max(worst, abs(min(blocks[i, 0, 0] * lam[i, 0], un)))
        bound = mu[i] * max(lam[i, 0], 0.0)
        if cone:
            st = max(blocks[i, 1, 1], blocks[i, 2, 2])
            worst = max(worst, st * max(math.hypot(lam[i, 1], lam[i, 2]) - bound, 0.0))
            lt1, lt2 = st * lam[i, 1], st * lam[i, 2]
            tr1, tr2 = lt1 - ut1, lt2 - ut2
            tn, radius = math.hypot(tr1, tr2), st * bound
            f = radius / tn if tn > radius else 1.0
            worst = max(worst, math.hypot(lt1 - f * tr1, lt2 - f * tr2))
        else:
            for r, ut in ((1, ut1), (2, ut2)):
                st = blocks[i, r, r]
                worst = max(worst, st * max(abs(lam[i, r]) - bound, 0.0))
                lt = st * lam[i, r]
                worst = max(worst, abs(lt - min(max(lt - ut, -st * bound), st * bound)))
    if w_cc > 0.0:
        worst = max(worst, abs(min(w_cc * lam_c[0], _dot6(nc, v) + c_bias)))
    return worst


@njit(cache=True)
def solve_nc_kernel(count, jac, m_inv_jt, blocks, bias, mu, lam, v, nc, m_inv_nc, w_cc, c_bias, lam_c, cone,
                    max_iterations, tol, relaxation):
    """Algorithm 1 (``cone``) or the box PGS baseline, with the optional C-space row, in place.

    Args:
        count: contacts ``K``. jac, m_inv_jt: ``(K, 3, 6)``; blocks: ``(K, 3, 3)`` diagonal blocks of ``W``.
        bias: ``(K,)`` normal velocity bias [m/s]. mu: ``(K,)``. lam: ``(K, 3)`` impulses (start in, solution out;
            ``v`` must then be ``V_free + M⁻¹(Jᵀλ + N_C λ_C)``).
        v: ``(6,)`` ``V_free`` in, ``V⁺`` out. nc: ``(6,)`` unit C-space normal ``N_C``; m_inv_nc: ``M⁻¹N_C``;
        w_cc: ``N_CᵀM⁻¹N_C`` (0: no C-space row). c_bias: the row's velocity bias [m/s] (``v_C + c_bias ≥ 0``).
        lam_c: ``(1,)`` ``λ_C`` (start in, solution out).
        cone: Algorithm 1 (True) or box PGS (False). max_iterations, tol [m/s], relaxation ``α``.

    Returns:
        ``(sweeps, residual [m/s])``.
    """
    inverse = np.empty((count, 3, 3))
    if cone:
        for i in range(count):
            invert3(blocks[i], inverse[i])
    res = 0.0
    for sweep in range(max_iterations):
        for i in range(count):  # lines 3-6
            if cone:
                _cone_contact(jac, m_inv_jt, blocks, inverse, bias, mu, lam, v, i, relaxation)
            else:
                _box_contact(jac, m_inv_jt, blocks, bias, mu, lam, v, i, relaxation)
        if w_cc > 0.0:  # lines 7-13
            v_star = _dot6(nc, v) + c_bias - w_cc * lam_c[0]
            star = -v_star / w_cc if v_star < 0.0 else 0.0
            delta = relaxation * (star - lam_c[0])
            if delta != 0.0:
                lam_c[0] += delta
                for c in range(6):
                    v[c] += m_inv_nc[c] * delta
        res = _residual(count, jac, blocks, bias, mu, lam, v, cone, nc, w_cc, c_bias, lam_c)
        if res <= tol:
            return sweep + 1, res
    return max_iterations, res


def contact_rows(contacts: Contacts) -> np.ndarray:
    """``(K, ROW_WIDTH)`` engine contact rows (:mod:`contactkit.engine.layout`) of world ``contacts``."""
    rows = np.zeros((contacts.count, ROW_WIDTH))
    rows[:, ROW_NORMAL:ROW_NORMAL + 3] = contacts.normals
    rows[:, ROW_POINT:ROW_POINT + 3] = contacts.points
    return rows


def _start(initial: np.ndarray | None, initial_cspace: float, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The solver's starting ``(λ (K, 3), λ_C (1,))``: zero, or the warm start (normals and ``λ_C`` clipped at 0)."""
    if not np.isfinite(initial_cspace):
        raise InvalidInputError(f"initial_cspace must be finite, got {initial_cspace!r}")
    lam_c = np.array([max(float(initial_cspace), 0.0)])
    if initial is None:
        return np.zeros((k, 3)), lam_c
    lam = np.array(initial, dtype=np.float64)
    if lam.shape != (k, 3) or not np.isfinite(lam).all():
        raise InvalidInputError(f"initial impulses must be a finite ({k}, 3) array, got shape {lam.shape}")
    lam[:, 0] = np.maximum(lam[:, 0], 0.0)
    return lam, lam_c


def _check(dt: float, relaxation: float, max_iterations: int, tol: float) -> None:
    if not (np.isfinite(dt) and dt > 0):
        raise InvalidInputError(f"time step dt must be finite and > 0 s, got {dt!r}")
    if not 0.0 < relaxation < 2.0:
        raise InvalidInputError(f"relaxation must lie in (0, 2), got {relaxation!r}")
    if int(max_iterations) < 1 or not (np.isfinite(tol) and tol > 0):
        raise InvalidInputError(f"need max_iterations >= 1 and tol > 0, got {max_iterations!r}, {tol!r}")


def solve_nc(body: RigidBody, state: BodyState, contacts: Contacts, v_free: np.ndarray, dt: float, *,
             cspace_direction: np.ndarray | None = None, cspace_bias: float = 0.0,
             friction: FrictionKind = FrictionKind.CONE,
             m_inv: np.ndarray | None = None, relaxation: float = DEFAULT_RELAXATION,
             max_iterations: int = DEFAULT_MAX_ITERATIONS, tol: float = DEFAULT_TOL,
             initial: np.ndarray | None = None, initial_cspace: float = 0.0) -> NCSolution:
    """Contact impulses of one step by Algorithm 1 (tight-tolerance paper §IV-C) or box PGS (module docstring).

    Args:
        body, state: the tool and its pose at the start of the step (velocities unused).
        contacts: the ``K`` (clustered) contacts, world frame; normal bias ``max(d, 0)/dt`` (eq 2).
        v_free: ``(6,)`` ``V_free = [v_com (world); ω (body)]`` at the end of the step without contact.
        dt: step [s]. cspace_direction: ``(6,)`` unit ``N_C`` (eq 8) or None (no C-space row).
        cspace_bias: ``b_C ≥ 0`` [m/s] of the row ``0 ≤ λ_C ⊥ v_C + b_C ≥ 0`` (0: eq 8; positive: a speculative row
        that lets the tool close a C-space gap within the step, as ``max(d, 0)/dt`` does for a contact, eq 2).
        friction: :class:`FrictionKind`. m_inv: ``(6, 6)`` (effective) inverse mass, ``M⁻¹`` if None.
        relaxation: ``α ∈ (0, 2)``. max_iterations, tol [m/s]: stopping rule.
        initial: None (Algorithm 1 line 1: ``λ = 0``) or ``(K, 3)`` starting impulses [N·s] in the contact frames
            (a warm start, e.g. the previous step's solution of the same clusters); normal parts are clipped at 0.
            initial_cspace: the starting ``λ_C ≥ 0`` (used with a C-space row only).
    """
    _check(dt, relaxation, max_iterations, tol)
    v = np.array(v_free, dtype=np.float64).reshape(-1)
    if v.shape != (6,) or not np.isfinite(v).all():
        raise InvalidInputError(f"v_free must be a finite (6,) array, got {np.shape(v_free)}")
    m_inv = inverse_mass_matrix(body) if m_inv is None else np.ascontiguousarray(m_inv, dtype=np.float64)
    k = contacts.count
    com, rot = com_position(body, state), rotation(state)
    frames, jac = np.empty((k, 3, 3)), np.empty((k, 3, 6))
    m_inv_jt, blocks = np.empty((k, 3, 6)), np.empty((k, 3, 3))
    build_rows(contact_rows(contacts), k, com, np.ascontiguousarray(rot), m_inv, frames, jac, m_inv_jt, blocks)
    nc = np.zeros(6) if cspace_direction is None else np.asarray(cspace_direction, dtype=np.float64).reshape(6)
    m_inv_nc = m_inv @ nc
    w_cc = float(nc @ m_inv_nc)
    lam, lam_c = _start(initial, initial_cspace, k)
    lam_c *= cspace_direction is not None  # no C-space row: λ_C = 0
    v += np.einsum("kr,krc->c", lam, m_inv_jt) + m_inv_nc * lam_c[0]  # V = V_free + M⁻¹(Jᵀλ + N_C λ_C)
    bias = np.maximum(contacts.distances, 0.0) / dt
    sweeps, res = solve_nc_kernel(k, jac, m_inv_jt, blocks, bias, np.ascontiguousarray(contacts.friction), lam, v,
                                  nc, m_inv_nc, w_cc, float(cspace_bias), lam_c, friction is FrictionKind.CONE,
                                  int(max_iterations), float(tol), float(relaxation))
    impulse = np.einsum("kr,krc->c", lam, jac) + nc * lam_c[0]  # generalized impulse Jᵀλ + N_C λ_C
    wrench = wrench_from_generalized(body, state, impulse / dt, com)
    status = SolveStatus.CONVERGED if res <= tol else SolveStatus.ITERATION_LIMIT
    return NCSolution(lam, frames, float(lam_c[0]), v, wrench, int(sweeps), float(res), status)
