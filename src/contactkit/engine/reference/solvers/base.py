"""The one interface every contact solver implements, its solution type, and the shared residuals.

A solver takes a :class:`~contactkit.engine.reference.problem.ContactProblem` ``u = Wλ + b`` and returns a
:class:`ContactSolution`: impulses per contact in contact frames [N·s], the impulses of the unilateral
C-space rows, the contact velocities, the iteration count, residuals, and a status that says whether
the tolerance was met; hitting the iteration cap is a status (``ITERATION_LIMIT``), never hidden.

Residuals are natural-map residuals in velocity units [m/s]: an impulse row ``λ_r`` is scaled by the
diagonal ``W_rr`` so that impulse and velocity conditions are comparable. Each is zero exactly at a
solution of the respective model:

* ``signorini``: ``max |min(W_nn λ_n, u_n)|`` (tight-tolerance paper eq 2 / pushing paper eq 8, first line),
* ``friction_bound``: cone ``‖λ_t‖ ≤ μλ_n`` (tight-tolerance paper eq 3) or box ``|λ_tj| ≤ μλ_n`` (pushing paper eq 5),
  amount of violation scaled by ``W_tt``,
* ``max_dissipation``: ``‖sλ_t - P(sλ_t - u_t)‖`` with ``P`` the projection on the disk (cone; the maximum
  dissipation principle, λ_t opposes u_t) or on the box (pushing paper eq 8, second line),
* ``virtual_signorini``: ``max |min(W_CC λ_C, u_C)|`` over the unilateral C-space rows (tight-tolerance paper eq 8).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from contactkit.engine.reference.problem import ContactProblem
from contactkit.errors import InvalidInputError

DEFAULT_TOL = 1e-10
"""Default convergence tolerance on every residual [m/s]."""

DEFAULT_MAX_ITERATIONS = 500
"""Default iteration cap of the iterative solvers (sweeps over all contacts)."""

SCALE_FLOOR = 1e-12
"""Diagonal entries of ``W`` below ``SCALE_FLOOR · max diag(W)`` are replaced by that floor when scaling."""


class FrictionModel(enum.Enum):
    """Which friction law a solver enforces."""

    BOX = "box"  # pushing paper eqs 5, 8: |λ_tj| ≤ μ λ_n per tangent direction
    CONE = "cone"  # tight-tolerance paper eq 3 with maximum dissipation: ‖λ_t‖ ≤ μ λ_n


class SolveStatus(enum.Enum):
    """How a solve ended."""

    CONVERGED = "converged"
    ITERATION_LIMIT = "iteration_limit"
    PIVOT_FAILURE = "pivot_failure"


@dataclass(frozen=True)
class ContactSolution:
    """Result of one contact solve.

    Attributes:
        impulses: ``(K, 3)`` contact impulses ``(λ_n, λ_t1, λ_t2)`` [N·s] in contact frames.
        virtual_impulses: ``(E,)`` impulses of the unilateral C-space rows [N·s or N·m·s, row units].
        velocity: ``(3K+E,)`` contact velocities ``u = Wλ + b`` [m/s] at the end of the step.
        iterations: sweeps (iterative solvers) or pivots (Lemke) performed.
        residuals: name -> value [m/s], see the module docstring.
        status: :class:`SolveStatus`.
        model: the friction model the residuals refer to.
    """

    impulses: np.ndarray
    virtual_impulses: np.ndarray
    velocity: np.ndarray
    iterations: int
    residuals: dict[str, float]
    status: SolveStatus
    model: FrictionModel

    @property
    def converged(self) -> bool:
        """True when every residual met the solver's tolerance."""
        return self.status is SolveStatus.CONVERGED

    @property
    def stacked(self) -> np.ndarray:
        """All impulses stacked as ``(3K+E,)``, the ordering of the problem's rows."""
        return np.concatenate([self.impulses.reshape(-1), self.virtual_impulses])


@runtime_checkable
class ContactSolver(Protocol):
    """Anything with ``solve(problem, initial=None) -> ContactSolution`` and a ``model`` attribute."""

    model: FrictionModel

    def solve(self, problem: ContactProblem, initial: np.ndarray | None = None) -> ContactSolution:
        """Solve ``problem``; ``initial`` ``(3K+E,)`` is an optional warm start [N·s]."""
        ...


def solve(problem: ContactProblem, solver: ContactSolver, initial: np.ndarray | None = None) -> ContactSolution:
    """Solve ``problem`` with ``solver`` (any :class:`ContactSolver`); see :class:`ContactSolution`."""
    return solver.solve(problem, initial)


def row_scales(problem: ContactProblem) -> np.ndarray:
    """``(3K+E,)`` positive diagonal of ``W`` [m/s per N·s], floored (see :data:`SCALE_FLOOR`)."""
    diag = np.diagonal(problem.W).copy()
    if diag.size == 0:
        return diag
    floor = SCALE_FLOOR * max(float(diag.max()), np.finfo(float).tiny)
    return np.maximum(diag, floor)


def initial_impulses(problem: ContactProblem, initial: np.ndarray | None) -> np.ndarray:
    """A writable ``(3K+E,)`` start vector: zeros, or a checked copy of ``initial``."""
    size = problem.W.shape[0]
    if initial is None:
        return np.zeros(size)
    start = np.array(initial, dtype=np.float64).reshape(-1)
    if start.shape != (size,) or not np.all(np.isfinite(start)):
        raise InvalidInputError(f"initial impulses must be a finite ({size},) array, got {np.shape(initial)}")
    return start


def residuals(problem: ContactProblem, lam: np.ndarray, model: FrictionModel) -> dict[str, float]:
    """Natural-map residuals [m/s] of stacked impulses ``lam`` ``(3K+E,)`` (see the module docstring)."""
    k = problem.n_contacts
    u = problem.W @ lam + problem.b
    s = row_scales(problem)
    out = {"signorini": 0.0, "friction_bound": 0.0, "max_dissipation": 0.0}
    if k:
        lam_c = lam[: 3 * k].reshape(k, 3)
        u_c = u[: 3 * k].reshape(k, 3)
        s_c = s[: 3 * k].reshape(k, 3)
        out["signorini"] = float(np.abs(np.minimum(s_c[:, 0] * lam_c[:, 0], u_c[:, 0])).max())
        bound = problem.mu * np.maximum(lam_c[:, 0], 0.0)
        if model is FrictionModel.CONE:
            st = s_c[:, 1:].max(axis=1)
            lt = lam_c[:, 1:] * st[:, None]
            norm_t = np.linalg.norm(lam_c[:, 1:], axis=1)
            out["friction_bound"] = float((st * np.maximum(norm_t - bound, 0.0)).max())
            trial = lt - u_c[:, 1:]
            tn = np.linalg.norm(trial, axis=1)
            radius = st * bound
            factor = np.where(tn > radius, radius / np.maximum(tn, np.finfo(float).tiny), 1.0)
            out["max_dissipation"] = float(np.linalg.norm(lt - trial * factor[:, None], axis=1).max())
        else:
            st = s_c[:, 1:]
            lt = lam_c[:, 1:] * st
            over = np.maximum(np.abs(lam_c[:, 1:]) - bound[:, None], 0.0)
            out["friction_bound"] = float((st * over).max())
            radius = st * bound[:, None]
            proj = np.clip(lt - u_c[:, 1:], -radius, radius)
            out["max_dissipation"] = float(np.abs(lt - proj).max())
    if problem.n_virtual:
        sv = s[3 * k :]
        out["virtual_signorini"] = float(np.abs(np.minimum(sv * lam[3 * k :], u[3 * k :])).max())
    return out


def make_solution(
    problem: ContactProblem,
    lam: np.ndarray,
    iterations: int,
    model: FrictionModel,
    tol: float,
    failed: bool = False,
) -> ContactSolution:
    """Package stacked impulses ``lam`` ``(3K+E,)`` as a :class:`ContactSolution`.

    The status is ``CONVERGED`` when no residual exceeds ``tol`` [m/s], else ``ITERATION_LIMIT``
    (``PIVOT_FAILURE`` when ``failed``).
    """
    k = problem.n_contacts
    res = residuals(problem, lam, model)
    if failed:
        status = SolveStatus.PIVOT_FAILURE
    elif max(res.values(), default=0.0) <= tol:
        status = SolveStatus.CONVERGED
    else:
        status = SolveStatus.ITERATION_LIMIT
    lam = lam.copy()
    return ContactSolution(
        impulses=lam[: 3 * k].reshape(k, 3),
        virtual_impulses=lam[3 * k :],
        velocity=problem.W @ lam + problem.b,
        iterations=int(iterations),
        residuals=res,
        status=status,
        model=model,
    )


def max_residual(problem: ContactProblem, lam: np.ndarray, model: FrictionModel) -> float:
    """Largest of :func:`residuals` [m/s]."""
    return max(residuals(problem, lam, model).values(), default=0.0)


def check_settings(tol: float, max_iterations: int, relaxation: float | None = None) -> None:
    """Validate common solver settings (``tol > 0``, ``max_iterations ≥ 1``, ``0 < relaxation < 2``)."""
    if not np.isfinite(tol) or tol <= 0.0:
        raise InvalidInputError(f"solver tol must be finite and > 0, got {tol!r}")
    if int(max_iterations) < 1:
        raise InvalidInputError(f"solver max_iterations must be >= 1, got {max_iterations!r}")
    if relaxation is not None and not 0.0 < relaxation < 2.0:
        raise InvalidInputError(f"relaxation must lie in (0, 2), got {relaxation!r}")
