"""Exact single-contact Coulomb problem with maximum dissipation (tight-tolerance paper, §III-C).

For one contact ``u = Wλ + b`` (``W`` 3×3, contact frame ``[n, t1, t2]``) find ``λ`` with the velocity-level
Signorini condition ``0 ≤ λ_n ⊥ u_n ≥ 0`` (eq 2), the cone ``‖λ_t‖ ≤ μλ_n`` (eq 3), and maximum
dissipation: ``λ_t`` minimises the end-of-step kinetic energy over the disk, i.e. it opposes the slip
velocity ``u_t`` (eq 7). The three cases of the paper:

* opening: ``b_n ≥ 0`` — no impulse is needed, ``λ = 0``;
* stick: ``λ = -W⁻¹b`` (``u = 0``) when it lies in the cone;
* slip: ``u_n = 0`` and ``λ_t = -α u_t`` for some ``α > 0`` with ``‖λ_t‖ = μλ_n``. Eliminating ``λ_n`` with
  the Schur complement ``W̄ = W_tt - W_tn W_nt / W_nn``, ``b̄ = b_t - W_tn b_n / W_nn`` gives
  ``λ_t(s) = -s (sW̄ + (1-s)I)⁻¹ b̄`` with ``s = α/(1+α) ∈ [0, 1]``, and ``λ_n(s) = -(b_n + W_nt λ_t)/W_nn``.
  ``g(s) = ‖λ_t(s)‖ - μλ_n(s)`` is negative at ``s = 0`` and positive at ``s = 1`` (the stick solution
  left the cone), so bisection on ``s`` finds the slip solution.
"""

from __future__ import annotations

import enum
import math
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
)
from contactkit.errors import InvalidInputError

BISECTION_TOL = 1e-15
"""Bisection stops when the bracket on ``s ∈ [0, 1]`` is narrower than this."""

BISECTION_MAX_STEPS = 64
"""Upper bound on bisection steps (2⁻⁶⁴ is below the float64 resolution of ``s``)."""


class ContactCase(enum.Enum):
    """Which of the three cases of the tight-tolerance paper §III-C a single-contact solution is in."""

    OPENING = "opening"
    STICK = "stick"
    SLIP = "slip"


@dataclass(frozen=True)
class SingleContactOperator:
    """The precomputed 3×3 operator of one contact, reused across SOR sweeps (all fields floats).

    Build with :meth:`from_matrix`; ``W`` must have ``W_nn > 0`` and be invertible.
    """

    mu: float
    w: tuple[float, ...]  # W row-major (9)
    w_inv: tuple[float, ...]  # W⁻¹ row-major (9)
    schur: tuple[float, float, float, float]  # W̄ row-major (2×2)

    @staticmethod
    def from_matrix(W: np.ndarray, mu: float) -> SingleContactOperator:
        """Precompute from ``W`` ``(3, 3)`` [m/s per N·s] and ``μ ≥ 0``."""
        W = np.asarray(W, dtype=np.float64)
        if W.shape != (3, 3) or not np.all(np.isfinite(W)):
            raise InvalidInputError(f"single-contact W must be a finite (3, 3) array, got {W.shape}")
        if not np.isfinite(mu) or mu < 0.0:
            raise InvalidInputError(f"friction coefficient must be finite and >= 0, got {mu!r}")
        if W[0, 0] <= 0.0:
            raise InvalidInputError(f"single-contact W_nn must be > 0, got {W[0, 0]!r}")
        try:
            w_inv = np.linalg.inv(W)
        except np.linalg.LinAlgError as exc:
            raise InvalidInputError("single-contact W is singular") from exc
        schur = W[1:, 1:] - np.outer(W[1:, 0], W[0, 1:]) / W[0, 0]
        return SingleContactOperator(
            float(mu), tuple(W.ravel().tolist()), tuple(w_inv.ravel().tolist()), tuple(schur.ravel().tolist())
        )

    def solve(self, bn: float, bt1: float, bt2: float) -> tuple[float, float, float, ContactCase]:
        """Impulse ``(λ_n, λ_t1, λ_t2)`` [N·s] and case for the free velocity ``b = (bn, bt1, bt2)`` [m/s]."""
        if bn >= 0.0:
            return 0.0, 0.0, 0.0, ContactCase.OPENING
        w, wi, mu = self.w, self.w_inv, self.mu
        ln = -(wi[0] * bn + wi[1] * bt1 + wi[2] * bt2)
        l1 = -(wi[3] * bn + wi[4] * bt1 + wi[5] * bt2)
        l2 = -(wi[6] * bn + wi[7] * bt1 + wi[8] * bt2)
        if ln >= 0.0 and math.hypot(l1, l2) <= mu * ln:
            return ln, l1, l2, ContactCase.STICK
        wnn = w[0]
        if mu == 0.0:
            return -bn / wnn, 0.0, 0.0, ContactCase.SLIP
        return self._slip(bn, bt1 - w[3] * bn / wnn, bt2 - w[6] * bn / wnn)

    def _slip(self, bn: float, c1: float, c2: float) -> tuple[float, float, float, ContactCase]:
        """Bisection on ``s``; ``(c1, c2) = b̄``. Uses ``λ_t = p/det`` with ``det(sW̄ + (1-s)I) > 0``."""
        (a, b, c, d), mu = self.schur, self.mu
        wnn, wn1, wn2 = self.w[0], self.w[1], self.w[2]
        k = mu / wnn
        lo, hi = 0.0, 1.0
        for _ in range(BISECTION_MAX_STEPS):
            s = 0.5 * (lo + hi)
            m11, m22, t = s * a + 1.0 - s, s * d + 1.0 - s, -s
            p1 = t * (m22 * c1 - s * b * c2)
            p2 = t * (m11 * c2 - s * c * c1)
            det = m11 * m22 - s * s * b * c
            # g(s) > 0  ⇔  ‖λ_t‖ > μλ_n  ⇔  ‖p‖ + μ(b_n det + W_nt·p)/W_nn > 0
            if math.hypot(p1, p2) + k * (bn * det + wn1 * p1 + wn2 * p2) > 0.0:
                hi = s
            else:
                lo = s
            if hi - lo <= BISECTION_TOL:
                break
        s = lo
        m11, m22 = s * a + 1.0 - s, s * d + 1.0 - s
        det = m11 * m22 - s * s * b * c
        l1 = -s * (m22 * c1 - s * b * c2) / det
        l2 = -s * (m11 * c2 - s * c * c1) / det
        ln = max(-(bn + wn1 * l1 + wn2 * l2) / wnn, 0.0)
        norm_t = math.hypot(l1, l2)
        if norm_t > 0.0:
            scale = mu * ln / norm_t  # on the cone boundary exactly (bisection leaves ~1e-15 slack)
            l1, l2 = l1 * scale, l2 * scale
        return ln, l1, l2, ContactCase.SLIP


def solve_single_contact(W: np.ndarray, b: np.ndarray, mu: float) -> tuple[np.ndarray, ContactCase]:
    """Exact single-contact Coulomb impulse ``(3,)`` [N·s] and its :class:`ContactCase` (tight-tolerance paper §III-C).

    Args:
        W: ``(3, 3)`` contact-frame Delassus block [m/s per N·s], ``W_nn > 0``, invertible.
        b: ``(3,)`` contact velocity without this contact's impulse [m/s].
        mu: friction coefficient ``≥ 0``.
    """
    b = np.asarray(b, dtype=np.float64)
    if b.shape != (3,) or not np.all(np.isfinite(b)):
        raise InvalidInputError(f"single-contact b must be a finite (3,) array, got {b.shape}")
    ln, l1, l2, case = SingleContactOperator.from_matrix(W, mu).solve(float(b[0]), float(b[1]), float(b[2]))
    return np.array([ln, l1, l2]), case


@dataclass(frozen=True)
class SingleConeSolver:
    """:class:`~contactkit.engine.reference.solvers.base.ContactSolver` for a problem with exactly one contact.

    Attributes:
        tol: tolerance on the residuals [m/s] that decides the reported status.
    """

    tol: float = DEFAULT_TOL
    model: ClassVar[FrictionModel] = FrictionModel.CONE

    def __post_init__(self) -> None:
        check_settings(self.tol, 1)

    def solve(self, problem: ContactProblem, initial: np.ndarray | None = None) -> ContactSolution:
        """Solve a one-contact, no-virtual-row problem exactly; ``initial`` is ignored (direct method)."""
        if problem.n_contacts != 1 or problem.n_virtual != 0:
            raise InvalidInputError(
                f"SingleConeSolver needs exactly 1 contact and no virtual rows, got "
                f"{problem.n_contacts} contacts and {problem.n_virtual} rows (use ConeSOR)"
            )
        lam, _ = solve_single_contact(problem.W, problem.b, float(problem.mu[0]))
        return make_solution(problem, lam, 1, self.model, self.tol)
