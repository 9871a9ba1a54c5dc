"""Contact solvers behind one interface: ``solver.solve(problem, initial=None) -> ContactSolution``.

* :class:`BoxPGS` — projected Gauss-Seidel, box friction MLCP (pushing paper eqs 7–8).
* :class:`LemkeBoxSolver` — Lemke pivoting on the same MLCP, a direct reference for small problems.
* :class:`SingleConeSolver` / :func:`solve_single_contact` — exact single-contact Coulomb cone with
  maximum dissipation: opening / stick / slip (bisection) (tight-tolerance paper §III-C).
* :class:`ConeSOR` — nonlinear block SOR with relaxation α over contacts (tight-tolerance paper Algorithm 1).
* :mod:`.virtual_constraint` — the C-space virtual constraint (tight-tolerance paper §IV-B/C) as an extra row.
"""

from contactkit.engine.reference.solvers.base import (
    DEFAULT_MAX_ITERATIONS,
    DEFAULT_TOL,
    ContactSolution,
    ContactSolver,
    FrictionModel,
    SolveStatus,
    residuals,
    solve,
)
from contactkit.engine.reference.solvers.box_pgs import BoxPGS
from contactkit.engine.reference.solvers.cone_single import ContactCase, SingleConeSolver, solve_single_contact
from contactkit.engine.reference.solvers.cone_sor import ConeSOR
from contactkit.engine.reference.solvers.lemke import LemkeBoxSolver, LemkeResult, box_friction_lcp, lemke
from contactkit.engine.reference.solvers.virtual_constraint import (
    CSpaceConstraint,
    SurfaceFunction,
    add_virtual_constraint,
    configuration,
    cspace_normal,
    euler_rate_matrix,
    euler_xyz,
    velocity_to_rate,
)

__all__ = [
    "DEFAULT_MAX_ITERATIONS",
    "DEFAULT_TOL",
    "BoxPGS",
    "CSpaceConstraint",
    "ConeSOR",
    "ContactCase",
    "ContactSolution",
    "ContactSolver",
    "FrictionModel",
    "LemkeBoxSolver",
    "LemkeResult",
    "SingleConeSolver",
    "SolveStatus",
    "SurfaceFunction",
    "add_virtual_constraint",
    "box_friction_lcp",
    "configuration",
    "cspace_normal",
    "euler_rate_matrix",
    "euler_xyz",
    "lemke",
    "residuals",
    "solve",
    "solve_single_contact",
    "velocity_to_rate",
]
