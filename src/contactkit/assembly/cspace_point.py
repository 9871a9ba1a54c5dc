"""The C-space row of one step: ``h(q)`` and its gradient at ONE configuration in numba, and the damped SQP.

:func:`point_surface` is the function of :func:`contactkit.assembly.cspace.evaluate` (batched numpy, used for
training and accuracy) written with scalar loops, so that one call costs microseconds instead of the ~0.3 ms of
numpy's per-call overhead on ``(1, ·)`` arrays. Features and Jacobians as :func:`contactkit.assembly.cspace.
feature_map` (``∂R/∂φ_i = S(k_i) R``).

:func:`cspace_row` is the C-space normal of §IV-B (``min ½VᵀMV`` s.t. ``h(q + G V) = 0`` by SQP, normal
``∝ Gᵀ∇h`` at the nearest surface point) as
:func:`contactkit.engine.reference.solvers.virtual_constraint.cspace_normal` computes it, with one change: the
step is relaxed, ``V ← V + β (V* - V)``, with ``β`` halved whenever ``|h|`` does not shrink. The undamped
iteration 2-cycles on learned surfaces (measured: 97 of 98 active peg steps hit its 50-iteration cap, ``|h|``
alternating between two values) and converges with ``β = 1/2`` (24 iterations to ``|h| < 1e-12``).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from contactkit.engine.reference import RigidBody, inverse_mass_matrix
from contactkit.engine.reference.solvers.virtual_constraint import (
    CSpaceConstraint,
    SurfaceFunction,
    configuration,
    velocity_to_rate,
)
from contactkit.errors import InvalidInputError
from contactkit.state import BodyState

KIND_CONFIGURATION, KIND_PEG_AXIS, KIND_SCREW = 0, 1, 2
"""Kernel codes of :class:`contactkit.assembly.cspace.CSpaceFeatures`."""
SQP_TOL = 1e-9
"""SQP stops when ``|h(q + G V)|`` is below this (``h`` in ``q`` units, [m] or [rad], for a normalised surface)."""
SQP_MAX_ITERATIONS = 40
"""Cap on SQP iterations; reaching it is reported (``CSpaceConstraint.converged`` False)."""
MIN_RELAXATION = 0.125
"""Smallest SQP relaxation ``β``."""


@njit(cache=True)
def _cross(a, b, out):
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@njit(cache=True)
def _matvec(m, v, out, transpose):
    """``out = m v`` (or ``mᵀ v``) by plain loops (numba's ``@`` calls BLAS, whose threads cost more than these
    small products on a shared machine: see :func:`contactkit.engine._kernels_mlp._product`)."""
    out[:] = 0.0
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            if transpose:
                out[j] += m[i, j] * v[i]
            else:
                out[i] += m[i, j] * v[j]


@njit(cache=True)
def _rotation(phi, rot, k):
    """``R = Rx Ry Rz`` ``(3, 3)`` and the world axes ``k (3, 3)`` (row ``i``: axis of ``φ_i``), written."""
    c1, s1, c2, s2, c3, s3 = math.cos(phi[0]), math.sin(phi[0]), math.cos(phi[1]), math.sin(phi[1]), \
        math.cos(phi[2]), math.sin(phi[2])
    rot[0, 0], rot[0, 1], rot[0, 2] = c2 * c3, -c2 * s3, s2
    rot[1, 0], rot[1, 1], rot[1, 2] = c1 * s3 + s1 * s2 * c3, c1 * c3 - s1 * s2 * s3, -s1 * c2
    rot[2, 0], rot[2, 1], rot[2, 2] = s1 * s3 - c1 * s2 * c3, s1 * c3 + c1 * s2 * s3, c1 * c2
    k[0, 0], k[0, 1], k[0, 2] = 1.0, 0.0, 0.0
    k[1, 0], k[1, 1], k[1, 2] = 0.0, c1, s1
    k[2, 0], k[2, 1], k[2, 2] = s2, -s1 * c2, c1 * c2


@njit(cache=True)
def _peg(q, height, com, f, jac):
    rot, k, t = np.empty((3, 3)), np.empty((3, 3)), np.empty(3)
    _rotation(q[3:], rot, k)
    rb = np.empty(3)
    _matvec(rot, com, rb, False)
    a = rot[:, 2].copy()
    tip = q[:3] - rb
    dtip, da = np.zeros((3, 6)), np.zeros((3, 3))
    for i in range(3):
        dtip[i, i] = 1.0
        _cross(k[i], rb, t)
        dtip[:, 3 + i] = -t
        _cross(k[i], a, t)
        da[:, i] = t
    s = (height - tip[2]) / a[2]
    ds = -dtip[2] / a[2]
    ds[3:] -= s / a[2] * da[2]
    for r in range(5):
        axis = (0, 1, 0, 1, 2)[r]
        f[r] = tip[axis]
        jac[r] = dtip[axis]
        if r == 2 or r == 3:  # the axis point in the opening's plane
            f[r] += s * a[axis]
            jac[r] += a[axis] * ds
            jac[r, 3:] += s * da[axis]


@njit(cache=True)
def _screw(q, pitch, hand, f, jac):
    rot, k, t = np.empty((3, 3)), np.empty((3, 3)), np.empty(3)
    _rotation(q[3:], rot, k)
    u, a = rot[:, 0].copy(), rot[:, 2].copy()
    du, da = np.empty((3, 3)), np.empty((3, 3))  # row i: ∂/∂φ_i
    for i in range(3):
        _cross(k[i], u, t)
        du[i] = t
        _cross(k[i], a, t)
        da[i] = t
    psi = math.atan2(u[1], u[0])
    dpsi = (u[0] * du[:, 1] - u[1] * du[:, 0]) / (u[0] ** 2 + u[1] ** 2)
    cp, sp = math.cos(psi), math.sin(psi)
    wave = 2.0 * math.pi / pitch
    chi = wave * q[2] - hand * psi
    f[0], f[1], f[2] = cp * q[0] + sp * q[1], -sp * q[0] + cp * q[1], q[2]
    f[3], f[4] = cp * a[0] + sp * a[1], -sp * a[0] + cp * a[1]
    f[5], f[6] = math.cos(chi), math.sin(chi)
    jac[:] = 0.0
    jac[0, 0], jac[0, 1], jac[0, 3:] = cp, sp, f[1] * dpsi
    jac[1, 0], jac[1, 1], jac[1, 3:] = -sp, cp, -f[0] * dpsi
    jac[2, 2] = 1.0
    jac[3, 3:] = cp * da[:, 0] + sp * da[:, 1] + f[4] * dpsi
    jac[4, 3:] = -sp * da[:, 0] + cp * da[:, 1] - f[3] * dpsi
    jac[5, 2], jac[5, 3:] = -f[6] * wave, f[6] * hand * dpsi
    jac[6, 2], jac[6, 3:] = f[5] * wave, -f[5] * hand * dpsi


@njit(cache=True)
def point_surface(kind, pitch, hand, height, com, lo, hi, w0, b0, w1, b1, w2, b2, q, logit, grad):
    """``h(q)`` (``2σ - 1``, or the logit when ``logit``) of one configuration ``q (6,)``; ``grad (6,)`` written.

    Args: the feature kind code, pitch [m], handedness, opening height [m], COM in the body frame ``com (3,)``,
    the input range ``lo, hi (F,)`` and the §V-B weights (``w2`` ``(1, 64)``, ``b2`` ``(1,)``).
    """
    nf = lo.shape[0]
    f, jac = np.empty(nf), np.empty((nf, 6))
    if kind == KIND_CONFIGURATION:
        f[:] = q
        jac[:] = np.eye(6)
    elif kind == KIND_PEG_AXIS:
        _peg(q, height, com, f, jac)
    else:
        _screw(q, pitch, hand, f, jac)
    x = 2.0 * (f - lo) / (hi - lo) - 1.0
    n_hidden = b0.shape[0]
    a1, a2, g1, gx = np.empty(n_hidden), np.empty(n_hidden), np.empty(n_hidden), np.empty(nf)
    _matvec(w0, x, a1, False)
    a1 = np.tanh(a1 + b0)
    _matvec(w1, a1, a2, False)
    a2 = np.tanh(a2 + b1)
    z = b2[0]
    for j in range(a2.shape[0]):
        z += w2[0, j] * a2[j]
    p = 0.5 * (1.0 + math.tanh(0.5 * z))
    outer = 1.0 if logit else 2.0 * p * (1.0 - p)
    g2 = outer * w2[0] * (1.0 - a2 * a2)
    _matvec(w1, g2, g1, True)
    g1 *= 1.0 - a1 * a1
    _matvec(w0, g1, gx, True)
    gx *= 2.0 / (hi - lo)
    _matvec(jac, gx, grad, True)
    return z if logit else 2.0 * p - 1.0


def cspace_row(body: RigidBody, state: BodyState, surface: SurfaceFunction, *, tol: float = SQP_TOL,
               max_iterations: int = SQP_MAX_ITERATIONS) -> CSpaceConstraint:
    """C-space normal ``N_C`` (§IV-B) of ``state`` by the damped SQP of the module docstring.

    Args:
        body, state: the tool and its pose (``q`` = :func:`configuration`, ``G`` = :func:`velocity_to_rate`).
        surface: ``h`` with its gradient. tol: on ``|h|`` at the SQP iterate. max_iterations: cap.

    Returns:
        :class:`CSpaceConstraint` (unit ``N_C`` in ``V = [v_com; ω_body]`` coordinates, ``h(q)``, ``V_C``,
        iterations, converged).
    """
    q = configuration(body, state)
    G, m_inv = velocity_to_rate(q), inverse_mass_matrix(body)
    h0, grad = float(surface.value(q)), np.asarray(surface.gradient(q), dtype=np.float64)
    V, h, beta, it = np.zeros(6), h0, 1.0, 0
    while abs(h) > tol and it < max_iterations:
        a = G.T @ grad
        denom = float(a @ m_inv @ a)
        if not denom > 0.0:
            raise InvalidInputError("surface gradient vanishes: the C-space normal is undefined")
        target = m_inv @ a * (float(a @ V) - h) / denom
        trial = V + beta * (target - V)
        h_new = float(surface.value(q + G @ trial))
        if abs(h_new) >= abs(h) and beta > MIN_RELAXATION:
            beta *= 0.5
        V, h, grad, it = trial, h_new, np.asarray(surface.gradient(q + G @ trial), dtype=np.float64), it + 1
    direction = G.T @ grad
    norm = float(np.linalg.norm(direction))
    if norm == 0.0:
        raise InvalidInputError("surface gradient vanishes: the C-space normal is undefined")
    return CSpaceConstraint(direction / norm, h0, V, it, bool(abs(h) <= tol))


@njit(cache=True)
def _sqp(args_kind, pitch, hand, height, com, lo, hi, w0, b0, w1, b1, w2, b2, q, G, m_inv, scale, tol,
         max_iterations, V, direction):
    """The damped SQP of :func:`cspace_row` on ``scale · logit`` (numba; arguments of :func:`point_surface`, then
    ``q (6,)``, ``G (6, 6)``, ``m_inv (6, 6)``). Writes ``V (6,)`` and the unit ``direction (6,)``; returns
    ``(iterations, |h| at the end)``, iterations ``-1`` where the gradient vanishes."""
    grad, a, ma, trial, qt = np.empty(6), np.empty(6), np.empty(6), np.empty(6), np.empty(6)
    h = scale * point_surface(args_kind, pitch, hand, height, com, lo, hi, w0, b0, w1, b1, w2, b2, q, True, grad)
    grad *= scale
    V[:] = 0.0
    beta, it = 1.0, 0
    while abs(h) > tol and it < max_iterations:
        _matvec(G, grad, a, True)
        _matvec(m_inv, a, ma, False)
        denom, a_v = 0.0, 0.0
        for c in range(6):
            denom += a[c] * ma[c]
            a_v += a[c] * V[c]
        if not denom > 0.0:
            return -1, abs(h)
        for c in range(6):
            trial[c] = V[c] + beta * (ma[c] * (a_v - h) / denom - V[c])
        _matvec(G, trial, qt, False)
        qt += q
        h_new = scale * point_surface(args_kind, pitch, hand, height, com, lo, hi, w0, b0, w1, b1, w2, b2, qt, True,
                                      grad)
        grad *= scale
        if abs(h_new) >= abs(h) and beta > MIN_RELAXATION:
            beta *= 0.5
        V[:] = trial
        h, it = h_new, it + 1
    _matvec(G, grad, direction, True)
    norm = math.sqrt(np.sum(direction * direction))
    if norm == 0.0:
        return -1, abs(h)
    direction /= norm
    return it, abs(h)


def model_arguments(model) -> tuple:
    """The leading arguments of :func:`point_surface` for a :class:`~contactkit.assembly.cspace.CSpaceModel`."""
    from contactkit.assembly.cspace import CSpaceFeatures

    spec = model.spec
    code = {CSpaceFeatures.CONFIGURATION: KIND_CONFIGURATION, CSpaceFeatures.PEG_AXIS: KIND_PEG_AXIS,
            CSpaceFeatures.SCREW: KIND_SCREW}[spec.kind]
    return (code, float(spec.pitch), float(spec.handedness), float(spec.axis_height),
            np.asarray(spec.com_body, np.float64), np.ascontiguousarray(model.lo, np.float64),
            np.ascontiguousarray(model.hi, np.float64),
            *(np.ascontiguousarray(w, dtype=np.float64) for w in model.weights))


def model_row(model, body: RigidBody, state: BodyState, activation: float = 0.0, *, distance: float | None = None,
              tol: float = SQP_TOL, max_iterations: int = SQP_MAX_ITERATIONS) -> tuple[CSpaceConstraint | None, float]:
    """``(C-space row or None, h(q) = 2σ - 1)`` of a learned model at ``state``: the row (§IV-B, damped SQP of
    :func:`cspace_row`, in numba) where ``h(q) ≤ activation`` (or, given ``distance``, where the first-order
    distance to the surface, the normalised logit, is at most ``distance`` [m or rad]). The SQP runs on the logit
    divided by its gradient
    norm at ``q`` (same zero set and normal; a first-order distance in ``q`` units, so ``tol`` is [m] or [rad]).
    Where the network is saturated (the gradient vanishes) the row has a zero direction (no constraint) and
    ``converged`` False: reported, not raised, so that a simulation goes on."""
    args = model_arguments(model)
    q = configuration(body, state)
    grad = np.empty(6)
    z = point_surface(*args, q, True, grad)
    h = math.tanh(0.5 * z)
    scale = 1.0 / max(float(np.linalg.norm(grad)), 1e-300)
    if (h > activation) if distance is None else (scale * z > distance):
        return None, h
    G = velocity_to_rate(q)
    V, direction = np.empty(6), np.empty(6)
    it, last = _sqp(*args, q, G, inverse_mass_matrix(body), scale, tol, int(max_iterations), V, direction)
    if it < 0:  # a saturated network: no normal; a zero row (no constraint), reported as not converged
        return CSpaceConstraint(np.zeros(6), scale * z, V, 0, False), h
    return CSpaceConstraint(direction, scale * z, V, int(it), bool(last <= tol)), h
