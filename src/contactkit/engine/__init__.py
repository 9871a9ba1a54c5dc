"""contactkit's rigid-body contact engine: contact problems, solvers and integrators (pure numerics).

Composition of one step (collision detection and the scene-level world are built on top of this):
``free_velocity`` → ``build_problem`` (contacts from collision detection) → ``solve(problem, solver)`` →
``velocity_after`` → ``advance_pose`` → ``correct_position`` (optional) → ``contact_wrench`` (sensing).
:func:`step_rigid_body` strings these together for one floating body.
"""

from contactkit.engine.body import (
    RigidBody,
    com_position,
    generalized_force,
    generalized_velocity,
    inverse_mass_matrix,
    kinetic_energy,
    mass_matrix,
    state_with_velocity,
    wrench_from_generalized,
)
from contactkit.engine.integrators import (
    Integrator,
    PositionCorrection,
    StepResult,
    advance_pose,
    correct_position,
    displace,
    free_velocity,
    step_rigid_body,
)
from contactkit.engine.problem import (
    ContactProblem,
    Contacts,
    body_point_jacobians,
    build_problem,
    build_problem_general,
    contact_frames,
    contact_wrench,
    speculative_bias,
    velocity_after,
    with_unilateral_rows,
)
from contactkit.engine.solvers import (
    BoxPGS,
    ConeSOR,
    ContactSolution,
    ContactSolver,
    FrictionModel,
    LemkeBoxSolver,
    SingleConeSolver,
    SolveStatus,
    solve,
)

__all__ = [
    "BoxPGS",
    "ConeSOR",
    "ContactProblem",
    "ContactSolution",
    "ContactSolver",
    "Contacts",
    "FrictionModel",
    "Integrator",
    "LemkeBoxSolver",
    "PositionCorrection",
    "RigidBody",
    "SingleConeSolver",
    "SolveStatus",
    "StepResult",
    "advance_pose",
    "body_point_jacobians",
    "build_problem",
    "build_problem_general",
    "com_position",
    "contact_frames",
    "contact_wrench",
    "correct_position",
    "displace",
    "free_velocity",
    "generalized_force",
    "generalized_velocity",
    "inverse_mass_matrix",
    "kinetic_energy",
    "mass_matrix",
    "solve",
    "speculative_bias",
    "state_with_velocity",
    "step_rigid_body",
    "velocity_after",
    "with_unilateral_rows",
    "wrench_from_generalized",
]
