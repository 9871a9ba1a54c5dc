"""Box-friction LCP of a batch of contact problems: exact solution and implicit differentiation at its active set.

The problem is the reference engine's (:mod:`contactkit.engine.reference.problem`, pushing paper eqs 5, 7, 8):
``u = Wλ + b`` with,
per contact, ``0 ≤ λ_n ⊥ u_n ≥ 0`` and per tangent direction ``λ_tj ∈ [-μλ_n, μλ_n]`` opposing ``u_tj`` (differentiable
contact paper §IV-B: ``λ = LCP(A, b)``). A solution is characterised by its *active set*, one status per row
(:class:`RowStatus`), and then solves the square linear system (:func:`active_set_system`)

* ``ZERO``: ``λ_r = 0`` (a separating contact's rows),
* ``EQUAL``: ``u_r = (Wλ + b)_r = 0`` (a closed contact; a sticking tangent),
* ``UPPER`` / ``LOWER``: ``λ_t ∓ μλ_n = 0`` (a sliding tangent at a bound of the box).

Forward (:func:`solve_batch`, numpy): projected Gauss–Seidel sweeps over the whole batch guess the active set, the
system is solved exactly and checked against every complementarity condition; violated rows switch status (a few
rounds of a primal–dual active-set method), and a problem that still fails is solved by the engine's Lemke pivoting
(:func:`contactkit.engine.reference.solvers.lemke.lemke`) and polished at Lemke's active set.

Backward (:func:`active_set_solve`, torch): the same system built from torch ``W`` and ``b`` and solved with
``torch.linalg.solve``. Its derivative is the implicit-function-theorem derivative of the LCP solution wherever the
active set is locally constant (strict complementarity), i.e. ``∂λ/∂W`` and ``∂λ/∂b`` of the placement paper §IV-D.
"""

from __future__ import annotations

import enum

import numpy as np
import torch
from numba import njit

from contactkit.engine.reference.problem import ContactProblem
from contactkit.engine.reference.solvers.lemke import LemkeBoxSolver

PGS_SWEEPS = 40
"""Projected Gauss–Seidel sweeps that guess the active set (the polish makes the solution exact)."""

ACTIVE_SET_ROUNDS = 20
"""Status corrections tried (after the PGS guess, and again after a long PGS retry) before falling back to Lemke."""

RETRY_SWEEPS = 2000
"""PGS sweeps of the retry for the problems whose active-set rounds did not settle (degenerate sliding)."""

COMPLEMENTARITY_RTOL = 1e-9
"""Relative tolerance of the complementarity checks (on impulses: of ``max|λ|``; on velocities: of ``max|b|``)."""

SLIDING_RTOL = 1e-6
"""A PGS tangent impulse within this fraction of ``μλ_n`` of a box bound starts as sliding."""


class RowStatus(enum.IntEnum):
    """Status of one LCP row at a solution (module docstring)."""

    ZERO = 0
    EQUAL = 1
    UPPER = 2
    LOWER = 3


@njit(cache=True)
def _pgs(W: np.ndarray, b: np.ndarray, mu: np.ndarray, sweeps: int) -> np.ndarray:
    """Projected Gauss–Seidel on ``B`` box-friction problems: impulses ``(B, 3K)`` (compiled; a measured hot loop)."""
    n_batch, m = b.shape
    lam = np.zeros((n_batch, m))
    for i in range(n_batch):
        u = b[i].copy()
        for _ in range(sweeps):
            for r in range(m):
                trial = lam[i, r] - u[r] / max(W[i, r, r], 1e-300)
                if r % 3 == 0:
                    new = max(trial, 0.0)
                else:
                    bound = mu[i, r // 3] * lam[i, r - r % 3]
                    new = min(max(trial, -bound), bound)
                delta = new - lam[i, r]
                if delta != 0.0:
                    lam[i, r] = new
                    for j in range(m):
                        u[j] += W[i, j, r] * delta
    return lam


def _initial_status(lam: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """Statuses ``(B, 3K)`` read off an approximate solution ``lam (B, 3K)``."""
    n_batch, m = lam.shape
    lam3 = lam.reshape(n_batch, -1, 3)
    scale = np.maximum(np.abs(lam).max(axis=1, keepdims=True), 1e-300)
    active = lam3[:, :, 0] > 1e-6 * scale
    bound = (mu * lam3[:, :, 0])[..., None]
    tang = np.where(lam3[:, :, 1:] >= bound * (1 - SLIDING_RTOL), RowStatus.UPPER,
                    np.where(lam3[:, :, 1:] <= -bound * (1 - SLIDING_RTOL), RowStatus.LOWER, RowStatus.EQUAL))
    status = np.concatenate([np.full((*active.shape, 1), RowStatus.EQUAL), tang], axis=-1)
    return np.where(active[..., None], status, RowStatus.ZERO).reshape(n_batch, m)


def active_set_system(W, b, mu, status: np.ndarray, lib=np):
    """The square system ``A λ = r`` of an active set (module docstring), numpy or torch (``lib``).

    Args:
        W: ``(B, 3K, 3K)`` Delassus operators. b: ``(B, 3K)`` free contact velocities. mu: ``(B, K)`` friction.
        status: ``(B, 3K)`` :class:`RowStatus` values (numpy).

    Returns:
        ``(A (B, 3K, 3K), r (B, 3K))`` in the type of ``W``.
    """
    n_batch, m = status.shape
    eye = np.eye(m)
    equal = (status == RowStatus.EQUAL)[..., None]
    coupling = np.zeros((n_batch, m, m))
    rows = np.arange(m)
    normal_col = rows - rows % 3
    sign = np.where(status == RowStatus.UPPER, -1.0, np.where(status == RowStatus.LOWER, 1.0, 0.0))
    if lib is np:
        mu_rows = np.repeat(mu, 3, axis=1)
        coupling[:, rows, normal_col] = sign * mu_rows
        A = np.where(equal, W, eye) + coupling
        return A, np.where(equal[..., 0], -b, 0.0)
    mu_rows = torch.repeat_interleave(mu, 3, dim=1)
    select = torch.zeros((n_batch, m, m), dtype=W.dtype)
    select[:, rows, normal_col] = 1.0
    coupling = select * (torch.as_tensor(sign, dtype=W.dtype) * mu_rows)[..., None]
    eq = torch.as_tensor(equal)
    A = torch.where(eq, W, torch.as_tensor(eye, dtype=W.dtype)) + coupling
    return A, torch.where(eq[..., 0], -b, torch.zeros_like(b))


def _violations(lam: np.ndarray, u: np.ndarray, mu: np.ndarray, status: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Corrected statuses ``(B, 3K)``; equal to ``status`` where every condition holds."""
    n_batch, m = status.shape
    tol_l = COMPLEMENTARITY_RTOL * np.maximum(np.abs(lam).max(axis=1, keepdims=True), 1e-300)
    tol_u = COMPLEMENTARITY_RTOL * np.maximum(np.abs(b).max(axis=1, keepdims=True), 1e-300)
    new = status.copy().reshape(n_batch, -1, 3)
    l3, u3 = lam.reshape(n_batch, -1, 3), u.reshape(n_batch, -1, 3)
    tl, tu = tol_l[..., None], tol_u[..., None]
    bound = (mu * l3[:, :, 0])[..., None]
    st = new[:, :, 1:]
    st = np.where((st == RowStatus.EQUAL) & (l3[:, :, 1:] > bound + tl), RowStatus.UPPER, st)
    st = np.where((st == RowStatus.EQUAL) & (l3[:, :, 1:] < -bound - tl), RowStatus.LOWER, st)
    empty = bound <= tl  # a box of zero width (no friction, or no normal impulse): λ_t = 0 at either bound
    st = np.where((st == RowStatus.UPPER) & (u3[:, :, 1:] > tu), np.where(empty, RowStatus.LOWER, RowStatus.EQUAL), st)
    st = np.where((st == RowStatus.LOWER) & (u3[:, :, 1:] < -tu), np.where(empty, RowStatus.UPPER, RowStatus.EQUAL), st)
    new[:, :, 1:] = st
    drop = (new[:, :, 0] == RowStatus.EQUAL) & (l3[:, :, 0] < -tl[..., 0])
    add = (new[:, :, 0] == RowStatus.ZERO) & (u3[:, :, 0] < -tu[..., 0])
    new[drop] = RowStatus.ZERO
    new[add] = RowStatus.EQUAL
    return new.reshape(n_batch, m)


def _lemke(W: np.ndarray, b: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """One problem by the engine's Lemke solver (box friction): impulses ``(3K,)``."""
    k = mu.shape[0]
    problem = ContactProblem(J=np.zeros((3 * k, 0)), M_inv=np.zeros((0, 0)), W=W, v_free=np.zeros(0), b=b, mu=mu,
                             frames=np.tile(np.eye(3), (k, 1, 1)), points=np.zeros((k, 3)), dt=1.0)
    return LemkeBoxSolver(tol=1e-9).solve(problem).stacked


def _solve(A: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Batched ``A⁻¹ r`` ``(B, m)`` through torch (whose thread pool, unlike numpy's BLAS, can be set at run time)."""
    return torch.linalg.solve(torch.from_numpy(A), torch.from_numpy(r)[..., None])[..., 0].numpy()


def _active_set_rounds(W: np.ndarray, b: np.ndarray, mu: np.ndarray, status: np.ndarray):
    """Polish at ``status`` and switch violated rows, up to :data:`ACTIVE_SET_ROUNDS` times (each round only on the
    problems not yet settled): ``(lam, status, ok)``."""
    ok = np.zeros(len(b), dtype=bool)
    lam = np.zeros_like(b)
    status = status.copy()
    todo = np.arange(len(b))
    for _ in range(ACTIVE_SET_ROUNDS):
        A, r = active_set_system(W[todo], b[todo], mu[todo], status[todo])
        lam[todo] = _solve(A, r)
        new = _violations(lam[todo], np.einsum("bij,bj->bi", W[todo], lam[todo]) + b[todo], mu[todo], status[todo],
                          b[todo])
        settled = np.all(new == status[todo], axis=1)
        ok[todo[settled]] = True
        status[todo[~settled]] = new[~settled]
        todo = todo[~settled]
        if not todo.size:
            break
    return lam, status, ok


def solve_batch(W: np.ndarray, b: np.ndarray, mu: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Solve ``B`` box-friction LCPs exactly (module docstring).

    Args:
        W: ``(B, 3K, 3K)`` symmetric positive definite Delassus operators [m/s per N·s] (regularised).
        b: ``(B, 3K)`` free contact velocities [m/s]. mu: ``(B, K)`` friction coefficients.

    Returns:
        ``(lam (B, 3K) [N·s], status (B, 3K) RowStatus, ok (B,) bool)``; ``ok`` is False for a problem whose final
        active set still violates a condition beyond :data:`COMPLEMENTARITY_RTOL` (reported, never hidden).
    """
    lam, status, ok = _active_set_rounds(W, b, mu, _initial_status(_pgs(W, b, mu, PGS_SWEEPS), mu))
    retry = np.flatnonzero(~ok)
    if retry.size:
        sub = (W[retry], b[retry], mu[retry])
        lam[retry], status[retry], ok[retry] = _active_set_rounds(*sub, _initial_status(_pgs(*sub, RETRY_SWEEPS),
                                                                                          mu[retry]))
    for i in np.flatnonzero(~ok):
        exact = _lemke(W[i], b[i], mu[i])
        status[i] = _initial_status(exact[None], mu[i : i + 1])[0]
        A, r = active_set_system(W[i : i + 1], b[i : i + 1], mu[i : i + 1], status[i : i + 1])
        lam[i] = _solve(A, r)[0]
        u = W[i] @ lam[i] + b[i]
        ok[i] = np.all(_violations(lam[i : i + 1], u[None], mu[i : i + 1], status[i : i + 1], b[i : i + 1])
                       == status[i : i + 1])
    return lam, status, ok


def active_set_solve(W: torch.Tensor, b: torch.Tensor, mu: torch.Tensor, status: np.ndarray) -> torch.Tensor:
    """Impulses ``(B, 3K)`` [N·s] of the active set ``status`` as a differentiable function of ``W``, ``b``, ``μ``.

    The value equals :func:`solve_batch`'s; the gradient is the implicit derivative of the LCP at that active set.
    """
    A, r = active_set_system(W, b, mu, status, lib=torch)
    return torch.linalg.solve(A, r[..., None])[..., 0]
