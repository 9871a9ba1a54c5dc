"""Nonlinear block successive over-relaxation for the Coulomb-cone problem (tight-tolerance paper, Algorithm 1).

Each sweep visits the contacts in order. For contact ``i`` the velocity without its own impulse is
``b_i = u_i - W_ii λ_i``; the exact single-contact solution ``λ_i*`` of
:mod:`contactkit.engine.reference.solvers.cone_single` (opening / stick / slip by bisection) is computed for it
(line 4) and relaxed, ``λ_i ← αλ_i* + (1-α)λ_i`` (line 5). Then each unilateral C-space row ``C``
(the virtual constraint of the tight-tolerance paper §IV-B/C, eq 8) gets ``v_C* = u_C - W_CC λ_C`` (line 7), the impulse
``λ_C* = -v_C*/W_CC`` if ``v_C* < 0`` else 0 (lines 8–11), relaxed the same way (line 13). The sweep
repeats until every residual (Signorini complementarity, cone, maximum dissipation, virtual
complementarity) is at most ``tol``, or the iteration cap is reached (reported in the status).
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
from contactkit.engine.reference.solvers.cone_single import SingleContactOperator


def _project_cone(lam: np.ndarray, mu: np.ndarray) -> None:
    """Project a warm start in place onto the cones (radially, keeping ``λ_n``) and ``λ_C ≥ 0``."""
    k = mu.shape[0]
    blocks = lam[: 3 * k].reshape(k, 3)
    blocks[:, 0] = np.maximum(blocks[:, 0], 0.0)
    norm_t = np.linalg.norm(blocks[:, 1:], axis=1)
    bound = mu * blocks[:, 0]
    scale = np.where(norm_t > bound, bound / np.maximum(norm_t, np.finfo(float).tiny), 1.0)
    blocks[:, 1:] *= scale[:, None]
    lam[3 * k :] = np.maximum(lam[3 * k :], 0.0)


@dataclass(frozen=True)
class ConeSOR:
    """Nonlinear block SOR over contacts with relaxation ``α`` (tight-tolerance paper, Algorithm 1).

    Attributes:
        tol: convergence tolerance on every residual [m/s].
        max_iterations: cap on sweeps; reaching it gives status ``ITERATION_LIMIT``.
        relaxation: ``α ∈ (0, 2)`` (``α ≤ 1`` keeps every iterate inside the cones).
    """

    tol: float = DEFAULT_TOL
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    relaxation: float = 1.0
    model: ClassVar[FrictionModel] = FrictionModel.CONE

    def __post_init__(self) -> None:
        check_settings(self.tol, self.max_iterations, self.relaxation)

    def solve(self, problem: ContactProblem, initial: np.ndarray | None = None) -> ContactSolution:
        """Solve the Coulomb-cone problem of ``problem``; ``initial`` ``(3K+E,)`` warm start [N·s]."""
        lam = initial_impulses(problem, initial)
        k, size = problem.n_contacts, problem.W.shape[0]
        if size == 0:
            return make_solution(problem, lam, 0, self.model, self.tol)
        _project_cone(lam, problem.mu)
        W = np.ascontiguousarray(problem.W)  # symmetric: rows are columns
        ops = [
            SingleContactOperator.from_matrix(W[3 * i : 3 * i + 3, 3 * i : 3 * i + 3], problem.mu[i]) for i in range(k)
        ]
        scales = row_scales(problem)
        u = W @ lam + problem.b
        iterations = 0
        while iterations < self.max_iterations:
            iterations += 1
            change = self._sweep(W, ops, scales, lam, u)
            if change <= self.tol and max_residual(problem, lam, self.model) <= self.tol:
                break
        return make_solution(problem, lam, iterations, self.model, self.tol)

    def _sweep(self, W: np.ndarray, ops: list, scales: np.ndarray, lam: np.ndarray, u: np.ndarray) -> float:
        """One sweep of Algorithm 1 in place on ``lam`` and ``u = Wλ + b``; largest scaled change [m/s]."""
        alpha, k = self.relaxation, len(ops)
        change = 0.0
        for i in range(k):  # lines 3-6: exact single-contact solve, then relaxation
            r = 3 * i
            l0, l1, l2 = lam[r], lam[r + 1], lam[r + 2]
            w = ops[i].w
            f0 = u[r] - (w[0] * l0 + w[1] * l1 + w[2] * l2)
            f1 = u[r + 1] - (w[3] * l0 + w[4] * l1 + w[5] * l2)
            f2 = u[r + 2] - (w[6] * l0 + w[7] * l1 + w[8] * l2)
            s0, s1, s2, _ = ops[i].solve(f0, f1, f2)
            d0, d1, d2 = alpha * (s0 - l0), alpha * (s1 - l1), alpha * (s2 - l2)
            if d0 != 0.0 or d1 != 0.0 or d2 != 0.0:
                lam[r], lam[r + 1], lam[r + 2] = l0 + d0, l1 + d1, l2 + d2
                u += d0 * W[r] + d1 * W[r + 1] + d2 * W[r + 2]
                change = max(change, abs(d0) * scales[r], abs(d1) * scales[r + 1], abs(d2) * scales[r + 2])
        for r in range(3 * k, lam.shape[0]):  # lines 7-13: the C-space virtual constraint
            v_star = u[r] - W[r, r] * lam[r]
            star = -v_star / scales[r] if v_star < 0.0 else 0.0
            delta = alpha * (star - lam[r])
            if delta != 0.0:
                lam[r] += delta
                u += W[r] * delta
                change = max(change, abs(delta) * scales[r])
        return change
