"""Lemke's complementary pivoting: a direct reference solver for small box-friction problems.

The box-friction MLCP of the pushing paper (eqs 5, 7, 8) is rewritten as a standard LCP ``w = Mz + q``,
``0 ≤ z ⊥ w ≥ 0`` (the construction of Stewart & Trinkle, with one slack per tangent direction). Per
contact ``i`` and tangent direction ``j``: ``λ_tj = β⁺_j - β⁻_j`` and

* ``w_n  = u_n``               ``⊥ λ_n``,
* ``w⁺_j = u_tj + γ_j``        ``⊥ β⁺_j``,
* ``w⁻_j = -u_tj + γ_j``       ``⊥ β⁻_j``,
* ``w_γj = μλ_n - β⁺_j - β⁻_j`` ``⊥ γ_j``,

plus ``w_C = u_C ⊥ λ_C`` for each unilateral C-space row. With ``γ_j > 0`` the friction sits on a box
face opposing ``u_tj``; with ``γ_j = 0`` the tangent velocity is zero — exactly eq 8. The LCP is solved
by Lemke's algorithm with a covering vector of ones and a lexicographic ratio test (no cycling).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from contactkit.engine.reference.problem import ContactProblem
from contactkit.engine.reference.solvers.base import (
    DEFAULT_TOL,
    ContactSolution,
    FrictionModel,
    check_settings,
    make_solution,
    max_residual,
)
from contactkit.errors import InvalidInputError

PIVOT_TOL = 1e-9
"""Column entries at or below this (relative to the column's largest entry) are not pivot candidates:
round-off leaves ~1e-11 entries where degenerate (coplanar, resting) contacts have exact zeros, and
pivoting on them destroys the tableau."""

RATIO_TIE_TOL = 1e-12
"""Relative tolerance under which two ratios of the minimum-ratio test are treated as tied."""

PIVOTS_PER_VARIABLE = 50
"""Default pivot cap is this times the LCP size."""


@dataclass(frozen=True)
class LemkeResult:
    """Solution of an LCP ``w = Mz + q``, ``0 ≤ z ⊥ w ≥ 0``.

    Attributes:
        z: ``(m,)`` solution (meaningless unless ``solved``).
        pivots: pivots performed.
        solved: False on ray termination or on reaching the pivot cap.
        ray_termination: True when the algorithm ended on a secondary ray (no solution found).
    """

    z: np.ndarray
    pivots: int
    solved: bool
    ray_termination: bool = False


def _leaving_row(column: np.ndarray, rhs: np.ndarray, b_inv: np.ndarray, basis: np.ndarray, m: int) -> int | None:
    """Lexicographic minimum-ratio test; prefers the artificial variable among ties (then done)."""
    scale = max(float(np.abs(column).max()), np.finfo(float).tiny)
    rows = np.flatnonzero(column > PIVOT_TOL * scale)
    if rows.size == 0:
        return None
    ratios = rhs[rows] / column[rows]
    best = ratios.min()
    ties = rows[ratios <= best + RATIO_TIE_TOL * max(1.0, abs(best))]
    if ties.size == 1:
        return int(ties[0])
    artificial = ties[basis[ties] == 2 * m]
    if artificial.size:
        return int(artificial[0])
    # Lexicographic rule on the rows of B⁻¹ divided by the pivot column (no cycling).
    keys = b_inv[ties] / column[ties, None]
    order = np.lexsort(keys.T[::-1])
    return int(ties[order[0]])


def lemke(M: np.ndarray, q: np.ndarray, max_pivots: int | None = None) -> LemkeResult:
    """Solve ``w = Mz + q``, ``z, w ≥ 0``, ``zᵀw = 0`` by Lemke's algorithm (covering vector ``e = 1``).

    Revised form: each pivot refactorises the basis ``B`` from the original columns of ``[I, -M, -e]``
    (``O(m³)``, fine for the small problems this reference is for), so round-off does not accumulate
    in a tableau over degenerate pivots.

    Args:
        M: ``(m, m)`` LCP matrix (copositive, e.g. the box-friction LCP with ``W`` PSD).
        q: ``(m,)`` LCP vector.
        max_pivots: cap on pivots (default ``PIVOTS_PER_VARIABLE · m``).
    """
    M = np.asarray(M, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    m = q.shape[0]
    if M.shape != (m, m) or not (np.all(np.isfinite(M)) and np.all(np.isfinite(q))):
        raise InvalidInputError(f"LCP needs a finite (m, m) matrix and (m,) vector, got {M.shape}, {q.shape}")
    if m == 0 or q.min() >= 0.0:
        return LemkeResult(np.zeros(m), 0, True)
    cap = PIVOTS_PER_VARIABLE * m if max_pivots is None else int(max_pivots)
    columns = np.hstack([np.eye(m), -M, -np.ones((m, 1))])  # w (0..m-1), z (m..2m-1), z0 (2m)
    basis = np.arange(m)
    row = int(np.argmin(q))
    leaving, basis[row] = int(basis[row]), 2 * m
    for pivots in range(1, cap + 1):
        try:
            b_inv = np.linalg.inv(columns[:, basis])
        except np.linalg.LinAlgError:
            return LemkeResult(np.zeros(m), pivots, False, ray_termination=True)
        entering = leaving + m if leaving < m else leaving - m
        row = _leaving_row(b_inv @ columns[:, entering], b_inv @ q, b_inv, basis, m)
        if row is None:
            return LemkeResult(np.zeros(m), pivots, False, ray_termination=True)
        leaving, basis[row] = int(basis[row]), entering
        if leaving == 2 * m:
            values = np.linalg.solve(columns[:, basis], q)
            z = np.zeros(m)
            in_z = (basis >= m) & (basis < 2 * m)
            z[basis[in_z] - m] = np.maximum(values[in_z], 0.0)
            return LemkeResult(z, pivots + 1, True)
    return LemkeResult(np.zeros(m), cap, False)


def box_friction_lcp(problem: ContactProblem) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The LCP ``(M, q)`` of the box-friction problem and the map ``D`` with ``λ = D z``.

    Variable order ``z = [λ_n (K), β⁺ (2K), β⁻ (2K), γ (2K), λ_C (E)]``; sizes ``7K+E``.
    """
    k, e = problem.n_contacts, problem.n_virtual
    size = 3 * k + e
    idx_n = np.arange(k) * 3
    idx_t = (np.arange(k)[:, None] * 3 + np.array([1, 2])).reshape(-1)
    idx_c = 3 * k + np.arange(e)
    m = 7 * k + e
    D = np.zeros((size, m))
    D[idx_n, np.arange(k)] = 1.0
    D[idx_t, k + np.arange(2 * k)] = 1.0
    D[idx_t, 3 * k + np.arange(2 * k)] = -1.0
    D[idx_c, 7 * k + np.arange(e)] = 1.0
    WD = problem.W @ D
    M = np.zeros((m, m))
    q = np.zeros(m)
    M[:k] = WD[idx_n]
    q[:k] = problem.b[idx_n]
    gamma = np.zeros((2 * k, m))
    gamma[np.arange(2 * k), 5 * k + np.arange(2 * k)] = 1.0
    M[k : 3 * k] = WD[idx_t] + gamma
    q[k : 3 * k] = problem.b[idx_t]
    M[3 * k : 5 * k] = -WD[idx_t] + gamma
    q[3 * k : 5 * k] = -problem.b[idx_t]
    rows = 5 * k + np.arange(2 * k)
    M[rows, np.repeat(np.arange(k), 2)] = np.repeat(problem.mu, 2)
    M[rows, k + np.arange(2 * k)] = -1.0
    M[rows, 3 * k + np.arange(2 * k)] = -1.0
    M[7 * k :] = WD[idx_c]
    q[7 * k :] = problem.b[idx_c]
    return M, q, D


@dataclass(frozen=True)
class LemkeBoxSolver:
    """Direct pivoting reference for the box-friction MLCP (small problems: the LCP has ``7K+E`` rows).

    Attributes:
        tol: tolerance on the residuals [m/s] that decides the reported status.
        max_pivots: pivot cap (``None``: :data:`PIVOTS_PER_VARIABLE` times the LCP size).
    """

    tol: float = DEFAULT_TOL
    max_pivots: int | None = None
    model: ClassVar[FrictionModel] = FrictionModel.BOX

    def __post_init__(self) -> None:
        check_settings(self.tol, 1 if self.max_pivots is None else self.max_pivots)

    def solve(self, problem: ContactProblem, initial: np.ndarray | None = None) -> ContactSolution:
        """Solve the box MLCP exactly by pivoting; ``initial`` is accepted and ignored (direct method).

        Ray termination, or a terminal basis whose solution misses ``tol`` (round-off in a degenerate
        tableau), gives status ``PIVOT_FAILURE``; reaching the pivot cap gives ``ITERATION_LIMIT``.
        """
        M, q, D = box_friction_lcp(problem)
        result = lemke(M, q, self.max_pivots)
        lam = D @ result.z
        inaccurate = result.solved and max_residual(problem, lam, self.model) > self.tol
        failed = result.ray_termination or inaccurate
        return make_solution(problem, lam, result.pivots, self.model, self.tol, failed=failed)
