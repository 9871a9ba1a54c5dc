"""Matrix-free contact problem and solvers of one floating body (numba): the hot loops of the engine.

The problem is that of :mod:`contactkit.engine.reference.problem` (``u = Wλ + b``, ``W = J M⁻¹ Jᵀ``, contact frames
``[n; t1; t2]`` with ``n`` from the environment into the tool), but ``W`` is never formed: a single body
has six velocities, so each solver keeps the body velocity ``v = v_free + M⁻¹Jᵀλ`` and reads a contact's
velocity as ``J_i v``. A sweep over ``K`` contacts costs ``O(K)`` instead of ``O(K²)``. The algorithms are
those of the reference solvers (tested against them):

* :func:`solve_box` — projected Gauss-Seidel on the box-friction MLCP (pushing paper eqs 5, 7, 8), as
  :class:`contactkit.engine.reference.solvers.BoxPGS`;
* :func:`solve_cone` — nonlinear block SOR with the exact single-contact Coulomb solve (opening, stick, slip
  by bisection; tight-tolerance paper §III-C, Algorithm 1 lines 3–6), as
  :class:`contactkit.engine.reference.solvers.ConeSOR`;
* :func:`project_positions` — the split-impulse position projection of
  :func:`contactkit.engine.reference.integrators.correct_position` by Gauss-Seidel on the normal rows.

Generalized velocity ``V = [v_com (world); ω (body)]`` (tight-tolerance paper eq 1). Both solvers stop when a sweep
changes the velocity of no contact point by more than ``tol`` (bounded by ``|Δv| + |Δω|·lever`` with
``lever`` the largest distance of a contact from the centre of mass), or after ``max_iterations`` sweeps.
Velocity, not impulse, is what converges: on redundant contacts (four corners on a plane) Gauss-Seidel
keeps redistributing impulses along the null space of ``Jᵀ`` long after ``V⁺`` — and with it the net
contact wrench that the F/T sensor reads — has settled.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from contactkit.engine.layout import ROW_NORMAL, ROW_POINT

BISECTION_STEPS = 36
"""Bisection steps on ``s ∈ [0, 1]`` in the slip case (2⁻³⁶ ≈ 1.5e-11; the result is then put exactly on
the cone's boundary, so only the slip direction carries this error)."""


@njit(cache=True)
def contact_frame(nx, ny, nz, frame):
    """Rows ``[n; t1; t2]`` of ``frame (3, 3)`` (written): the branchless basis of Duff et al. (2017) of
    :func:`contactkit.engine.reference.problem.contact_frames`."""
    sign = 1.0 if nz >= 0.0 else -1.0
    a = -1.0 / (sign + nz)
    bxy = nx * ny * a
    t1x, t1y, t1z = 1.0 + sign * nx * nx * a, sign * bxy, -sign * nx
    frame[0, 0], frame[0, 1], frame[0, 2] = nx, ny, nz
    frame[1, 0], frame[1, 1], frame[1, 2] = t1x, t1y, t1z
    frame[2, 0], frame[2, 1], frame[2, 2] = ny * t1z - nz * t1y, nz * t1x - nx * t1z, nx * t1y - ny * t1x


@njit(cache=True)
def build_rows(contacts, count, com, rot, m_inv, frames, jac, m_inv_jt, blocks):
    """Contact frames, Jacobian rows, ``M⁻¹Jᵀ`` columns and ``W`` diagonal blocks of ``count`` contacts.

    Args:
        contacts: ``(≥ count, ROW_WIDTH)`` contact rows (:mod:`contactkit.engine.layout`).
        com: ``(3,)`` world centre of mass [m].
        rot: ``(3, 3)`` body → world. m_inv: ``(6, 6)`` inverse (effective) mass for ``V = [v; ω_body]``.
        frames ``(K, 3, 3)``, jac ``(K, 3, 6)``, m_inv_jt ``(K, 3, 6)``, blocks ``(K, 3, 3)``: written.

    The row of direction ``e`` at the point ``p`` is ``[eᵀ, (Rᵀ (r × e))ᵀ]`` with ``r = p - com``
    (:func:`contactkit.engine.reference.problem.body_point_jacobians`).
    """
    for i in range(count):
        contact_frame(contacts[i, ROW_NORMAL], contacts[i, ROW_NORMAL + 1], contacts[i, ROW_NORMAL + 2], frames[i])
        rx = contacts[i, ROW_POINT] - com[0]
        ry = contacts[i, ROW_POINT + 1] - com[1]
        rz = contacts[i, ROW_POINT + 2] - com[2]
        for r in range(3):
            ex, ey, ez = frames[i, r, 0], frames[i, r, 1], frames[i, r, 2]
            cx, cy, cz = ry * ez - rz * ey, rz * ex - rx * ez, rx * ey - ry * ex
            jac[i, r, 0], jac[i, r, 1], jac[i, r, 2] = ex, ey, ez
            for c in range(3):
                jac[i, r, 3 + c] = rot[0, c] * cx + rot[1, c] * cy + rot[2, c] * cz
            for c in range(6):
                acc = 0.0
                for q in range(6):
                    acc += m_inv[c, q] * jac[i, r, q]
                m_inv_jt[i, r, c] = acc
        for r in range(3):
            for s in range(3):
                acc = 0.0
                for q in range(6):
                    acc += jac[i, r, q] * m_inv_jt[i, s, q]
                blocks[i, r, s] = acc


@njit(cache=True)
def _row_velocity(jac, i, r, v):
    return (jac[i, r, 0] * v[0] + jac[i, r, 1] * v[1] + jac[i, r, 2] * v[2] + jac[i, r, 3] * v[3]
            + jac[i, r, 4] * v[4] + jac[i, r, 5] * v[5])


@njit(cache=True)
def _velocity_change(v, before, lever):
    """Bound [m/s] on the change of any contact point's velocity: ``|Δv| + |Δω|·lever``."""
    lin = math.sqrt((v[0] - before[0]) ** 2 + (v[1] - before[1]) ** 2 + (v[2] - before[2]) ** 2)
    ang = math.sqrt((v[3] - before[3]) ** 2 + (v[4] - before[4]) ** 2 + (v[5] - before[5]) ** 2)
    return lin + ang * lever


@njit(cache=True)
def _apply(m_inv_jt, i, r, delta, v):
    for c in range(6):
        v[c] += m_inv_jt[i, r, c] * delta


@njit(cache=True)
def solve_box(count, jac, m_inv_jt, blocks, bias, mu, lam, v, max_iterations, tol, relaxation, lever):
    """Projected Gauss-Seidel on the box MLCP (pushing paper eqs 7–8), warm-started from ``lam``.

    Args:
        count: contacts ``K``. jac, m_inv_jt: ``(K, 3, 6)``. blocks: ``(K, 3, 3)`` diagonal blocks of ``W``.
        bias: ``(K,)`` normal velocity bias [m/s] (speculative ``max(d, 0)/h``). mu: ``(K,)``.
        lam: ``(K, 3)`` impulses [N·s], start value in, solution out.
        v: ``(6,)`` velocity; ``v_free + M⁻¹Jᵀλ`` of the start ``lam`` in, ``v⁺`` out.
        max_iterations, tol [m/s], relaxation ``ω``, lever [m] (module docstring).

    Returns:
        ``(sweeps, last sweep's velocity change [m/s])``.
    """
    change = 0.0
    before = np.empty(6)
    for sweep in range(max_iterations):
        before[:] = v
        for i in range(count):
            for r in range(3):
                u = _row_velocity(jac, i, r, v) + (bias[i] if r == 0 else 0.0)
                old = lam[i, r]
                new = old - relaxation * u / blocks[i, r, r]
                if r == 0:
                    new = max(new, 0.0)
                else:
                    bound = mu[i] * lam[i, 0]
                    new = min(max(new, -bound), bound)
                if new != old:
                    lam[i, r] = new
                    _apply(m_inv_jt, i, r, new - old, v)
        change = _velocity_change(v, before, lever)
        if change <= tol:
            return sweep + 1, change
    return max_iterations, change


@njit(cache=True)
def invert3(w, out):
    """Inverse ``out (3, 3)`` (written) of a symmetric positive-definite ``w (3, 3)`` by cofactors."""
    c00 = w[1, 1] * w[2, 2] - w[1, 2] * w[2, 1]
    c01 = w[1, 2] * w[2, 0] - w[1, 0] * w[2, 2]
    c02 = w[1, 0] * w[2, 1] - w[1, 1] * w[2, 0]
    det = w[0, 0] * c00 + w[0, 1] * c01 + w[0, 2] * c02
    out[0, 0], out[1, 0], out[2, 0] = c00 / det, c01 / det, c02 / det
    out[0, 1] = (w[0, 2] * w[2, 1] - w[0, 1] * w[2, 2]) / det
    out[1, 1] = (w[0, 0] * w[2, 2] - w[0, 2] * w[2, 0]) / det
    out[2, 1] = (w[0, 1] * w[2, 0] - w[0, 0] * w[2, 1]) / det
    out[0, 2] = (w[0, 1] * w[1, 2] - w[0, 2] * w[1, 1]) / det
    out[1, 2] = (w[0, 2] * w[1, 0] - w[0, 0] * w[1, 2]) / det
    out[2, 2] = (w[0, 0] * w[1, 1] - w[0, 1] * w[1, 0]) / det


@njit(cache=True)
def stick_or_open(w, wi, mu, bn, bt1, bt2):
    """The cases of the exact single-contact solve that need no root: opening (``b_n ≥ 0``: no impulse), stick
    (``λ = -W⁻¹b`` inside the cone) and frictionless (``μ = 0``). Returns ``(solved, λ_n, λ_t1, λ_t2)``; when
    ``solved`` is False the contact slips (:func:`slip_terms`, :func:`slip_impulse`)."""
    if bn >= 0.0:
        return True, 0.0, 0.0, 0.0
    ln = -(wi[0, 0] * bn + wi[0, 1] * bt1 + wi[0, 2] * bt2)
    l1 = -(wi[1, 0] * bn + wi[1, 1] * bt1 + wi[1, 2] * bt2)
    l2 = -(wi[2, 0] * bn + wi[2, 1] * bt1 + wi[2, 2] * bt2)
    if ln >= 0.0 and math.hypot(l1, l2) <= mu * ln:
        return True, ln, l1, l2
    if mu == 0.0:
        return True, -bn / w[0, 0], 0.0, 0.0
    return False, 0.0, 0.0, 0.0


@njit(cache=True)
def slip_terms(w, mu, bn, bt1, bt2):
    """Schur-complement terms of the slip case: ``(c1, c2, a, b, c, d, k)`` with the tangential block
    ``[[a, b], [c, d]]``, the reduced free velocity ``(c1, c2)`` and ``k = μ / W_nn``."""
    wnn = w[0, 0]
    c1, c2 = bt1 - w[1, 0] * bn / wnn, bt2 - w[2, 0] * bn / wnn
    a, b = w[1, 1] - w[1, 0] * w[0, 1] / wnn, w[1, 2] - w[1, 0] * w[0, 2] / wnn
    c, d = w[2, 1] - w[2, 0] * w[0, 1] / wnn, w[2, 2] - w[2, 0] * w[0, 2] / wnn
    return c1, c2, a, b, c, d, mu / wnn


@njit(cache=True)
def slip_impulse(w, mu, bn, s, a, b, c, d, c1, c2):
    """The slip impulse ``(λ_n, λ_t1, λ_t2)`` at the root ``s`` of the slip equation, projected onto the cone's
    surface ``|λ_t| = μ λ_n``."""
    m11, m22 = s * a + 1.0 - s, s * d + 1.0 - s
    det = m11 * m22 - s * s * b * c
    l1 = -s * (m22 * c1 - s * b * c2) / det
    l2 = -s * (m11 * c2 - s * c * c1) / det
    ln = max(-(bn + w[0, 1] * l1 + w[0, 2] * l2) / w[0, 0], 0.0)
    norm_t = math.hypot(l1, l2)
    if norm_t > 0.0:
        scale = mu * ln / norm_t
        l1, l2 = l1 * scale, l2 * scale
    return ln, l1, l2


@njit(cache=True)
def single_contact(w, wi, mu, bn, bt1, bt2):
    """Exact single-contact Coulomb impulse (tight-tolerance paper §III-C) for ``W = w (3, 3)`` and free velocity ``b``.

    The algorithm of :class:`contactkit.engine.reference.solvers.cone_single.SingleContactOperator`: opening
    (``b_n ≥ 0``), stick (``λ = -W⁻¹b`` inside the cone), slip (bisection on ``s`` with the Schur complement).
    ``wi`` is ``W⁻¹`` (:func:`invert3`). Returns ``(λ_n, λ_t1, λ_t2)`` [N·s].
    """
    solved, ln, l1, l2 = stick_or_open(w, wi, mu, bn, bt1, bt2)
    if solved:
        return ln, l1, l2
    c1, c2, a, b, c, d, k = slip_terms(w, mu, bn, bt1, bt2)
    lo, hi = 0.0, 1.0
    for _ in range(BISECTION_STEPS):
        s = 0.5 * (lo + hi)
        m11, m22 = s * a + 1.0 - s, s * d + 1.0 - s
        p1 = -s * (m22 * c1 - s * b * c2)
        p2 = -s * (m11 * c2 - s * c * c1)
        det = m11 * m22 - s * s * b * c
        if math.hypot(p1, p2) + k * (bn * det + w[0, 1] * p1 + w[0, 2] * p2) > 0.0:
            hi = s
        else:
            lo = s
    return slip_impulse(w, mu, bn, lo, a, b, c, d, c1, c2)


@njit(cache=True)
def solve_cone(count, jac, m_inv_jt, blocks, bias, mu, lam, v, max_iterations, tol, relaxation, lever):
    """Nonlinear block SOR over contacts (tight-tolerance paper Algorithm 1, lines 2–6), warm-started from ``lam``.

    Arguments and returns as :func:`solve_box`; ``relaxation`` is ``α``. The warm start is first projected
    onto the cones (radially), keeping ``v`` consistent.
    """
    inverse = np.empty((count, 3, 3))
    for i in range(count):
        invert3(blocks[i], inverse[i])
    for i in range(count):
        n0, t1, t2 = lam[i, 0], lam[i, 1], lam[i, 2]
        ln = max(n0, 0.0)
        norm_t = math.hypot(t1, t2)
        scale = min(1.0, mu[i] * ln / norm_t) if norm_t > 0.0 else 1.0
        for r, new in ((0, ln), (1, t1 * scale), (2, t2 * scale)):
            if new != lam[i, r]:
                _apply(m_inv_jt, i, r, new - lam[i, r], v)
                lam[i, r] = new
    change = 0.0
    before = np.empty(6)
    for sweep in range(max_iterations):
        before[:] = v
        for i in range(count):
            l0, l1, l2 = lam[i, 0], lam[i, 1], lam[i, 2]
            w = blocks[i]
            f0 = _row_velocity(jac, i, 0, v) + bias[i] - (w[0, 0] * l0 + w[0, 1] * l1 + w[0, 2] * l2)
            f1 = _row_velocity(jac, i, 1, v) - (w[1, 0] * l0 + w[1, 1] * l1 + w[1, 2] * l2)
            f2 = _row_velocity(jac, i, 2, v) - (w[2, 0] * l0 + w[2, 1] * l1 + w[2, 2] * l2)
            s0, s1, s2 = single_contact(w, inverse[i], mu[i], f0, f1, f2)
            d0, d1, d2 = relaxation * (s0 - l0), relaxation * (s1 - l1), relaxation * (s2 - l2)
            if d0 != 0.0 or d1 != 0.0 or d2 != 0.0:
                lam[i, 0], lam[i, 1], lam[i, 2] = l0 + d0, l1 + d1, l2 + d2
                for c in range(6):
                    v[c] += m_inv_jt[i, 0, c] * d0 + m_inv_jt[i, 1, c] * d1 + m_inv_jt[i, 2, c] * d2
        change = _velocity_change(v, before, lever)
        if change <= tol:
            return sweep + 1, change
    return max_iterations, change


@njit(cache=True)
def project_positions(count, normal_rows, m_inv, target, max_iterations, tol, shift):
    """Split-impulse projection: ``0 ≤ λ ⊥ J_n M⁻¹J_nᵀ λ - c ≥ 0`` by Gauss-Seidel; ``shift = M⁻¹J_nᵀλ``.

    Args:
        count: contacts. normal_rows: ``(K, 6)`` normal Jacobian rows ``J_n`` at the pose to correct.
        m_inv: ``(6, 6)`` inverse mass (the physical one: the correction is a least-action displacement).
        target: ``(K,)`` required normal pseudo-velocities ``c`` [m/s] (negative: the gap may close that much).
        max_iterations, tol [m/s].
        shift: ``(6,)`` pseudo-velocity ``[v; ω_body]`` (written); the pose moves by ``h · shift``.

    Returns:
        Sweeps performed.
    """
    shift[:] = 0.0
    cols = np.empty((count, 6))
    diag = np.empty(count)
    for i in range(count):
        for c in range(6):
            acc = 0.0
            for q in range(6):
                acc += m_inv[c, q] * normal_rows[i, q]
            cols[i, c] = acc
        diag[i] = 0.0
        for q in range(6):
            diag[i] += normal_rows[i, q] * cols[i, q]
    lam = np.zeros(count)
    for sweep in range(max_iterations):
        change = 0.0
        for i in range(count):
            u = 0.0
            for q in range(6):
                u += normal_rows[i, q] * shift[q]
            new = max(lam[i] - (u - target[i]) / diag[i], 0.0)
            if new != lam[i]:
                for c in range(6):
                    shift[c] += cols[i, c] * (new - lam[i])
                change = max(change, abs(new - lam[i]) * diag[i])
                lam[i] = new
        if change <= tol:
            return sweep + 1
    return max_iterations
