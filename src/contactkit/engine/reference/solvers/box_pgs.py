"""Projected Gauss-Seidel for the box-friction MLCP (pushing paper, eqs 5, 7, 8).

The MLCP in contact space is ``u = Wλ + b`` with, per contact ``i``,
``0 ≤ λ_n ⊥ u_n ≥ 0`` and, for each tangent direction ``j``, ``λ_tj ∈ [-μλ_n, μλ_n]`` with ``u_tj ≥ 0``
at the lower bound, ``u_tj ≤ 0`` at the upper bound and ``u_tj = 0`` inside (eq 8). Unilateral C-space
rows (tight-tolerance paper eq 8) are rows with bounds ``[0, ∞)``.

Each sweep visits the rows in order (normal, t1, t2 of contact 0, then contact 1, …, then the unilateral
rows) and sets ``λ_r ← clip(λ_r - ω u_r / W_rr, lo_r, hi_r)``, updating ``u`` incrementally by the column
``W[:, r]``; the friction bounds use the current ``λ_n``. Convergence is judged after every sweep on the
residuals of :mod:`contactkit.engine.reference.solvers.base` (box model).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from contactkit.engine.reference.problem import ContactProblem
from contactkit.engine.reference.solvers.base import (
    DEFAULT_MAX_ITERATIONS,
    DEFAULT_TOL,
    ContactSolution,
    FrictionModel,
    check_settings,
    initial_impulses,
    make_solution,
    max_residual,
    row_scales,
)


@dataclass(frozen=True)
class BoxPGS:
    """Projected Gauss-Seidel (successive over-relaxation with ``relaxation`` ω) for box friction.

    Attributes:
        tol: convergence tolerance on every residual [m/s].
        max_iterations: cap on sweeps; reaching it gives status ``ITERATION_LIMIT``.
        relaxation: ω in ``(0, 2)``; 1 is plain Gauss-Seidel.
    """

    tol: float = DEFAULT_TOL
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    relaxation: float = 1.0
    model: ClassVar[FrictionModel] = FrictionModel.BOX

    def __post_init__(self) -> None:
        check_settings(self.tol, self.max_iterations, self.relaxation)

    def solve(self, problem: ContactProblem, initial: np.ndarray | None = None) -> ContactSolution:
        """Solve the box MLCP of ``problem`` (pushing paper eqs 7–8); ``initial`` ``(3K+E,)`` warm start [N·s]."""
        lam = initial_impulses(problem, initial)
        k = problem.n_contacts
        size = lam.shape[0]
        if size == 0:
            return make_solution(problem, lam, 0, self.model, self.tol)
        mu = problem.mu
        lam[: 3 * k : 3] = np.maximum(lam[: 3 * k : 3], 0.0)
        lam[3 * k :] = np.maximum(lam[3 * k :], 0.0)
        for i in range(k):
            bound = mu[i] * lam[3 * i]
            lam[3 * i + 1 : 3 * i + 3] = np.clip(lam[3 * i + 1 : 3 * i + 3], -bound, bound)
        W_rows = np.ascontiguousarray(problem.W)  # symmetric: row r is column r
        scales = row_scales(problem)
        u = problem.W @ lam + problem.b
        iterations = 0
        while iterations < self.max_iterations:
            iterations += 1
            change = self._sweep(W_rows, scales, mu, 3 * k, lam, u)
            if change <= self.tol and max_residual(problem, lam, self.model) <= self.tol:
                break
        return make_solution(problem, lam, iterations, self.model, self.tol)

    def _sweep(self, W: np.ndarray, scales: np.ndarray, mu: np.ndarray, n_rows: int, lam, u) -> float:
        """One projected Gauss-Seidel sweep in place on ``lam`` and ``u``; largest scaled change [m/s]."""
        omega = self.relaxation
        change = 0.0
        for r in range(lam.shape[0]):
            old = lam[r]
            trial = old - omega * u[r] / scales[r]
            if r < n_rows and r % 3:
                bound = mu[r // 3] * lam[r - r % 3]
                new = min(max(trial, -bound), bound)
            else:
                new = trial if trial > 0.0 else 0.0
            if new != old:
                lam[r] = new
                u += W[r] * (new - old)
                change = max(change, abs(new - old) * scales[r])
        return change
