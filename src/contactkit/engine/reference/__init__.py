"""The reference engine, in numpy: one floating rigid body, given contacts, every step written out plainly.

What it is for: the oracle that the compiled engine (the numba kernels that
:class:`~contactkit.engine.world.EngineWorld` runs, :mod:`contactkit.engine`) is tested against, function by
function (``tests/engine/test_world_kernels.py``, ``tests/engine/test_kernels_vs_reference.py``); the engine for
hand-made problems (contacts given explicitly, analytic oracles, the C-space virtual constraint of the
tight-tolerance paper §IV-B/C, which the kernels do not implement); and the exact pieces the differentiable step
reuses (:class:`~.problem.ContactProblem`, Lemke).
Nothing here runs inside ``EngineWorld``.

Composition of one step: ``free_velocity`` → ``build_problem`` (contacts from collision detection) →
``solve(problem, solver)`` → ``velocity_after`` → ``advance_pose`` → ``correct_position`` (optional) →
``contact_wrench`` (sensing). :func:`~.integrators.step_rigid_body` strings these together.

* :mod:`.body` — the body and the coordinates ``V = [v_com (world); ω (body)]`` of tight-tolerance paper eq 1;
* :mod:`.problem` — the contact problem ``u = Wλ + b`` (dense ``W = J M⁻¹ Jᵀ``);
* :mod:`.integrators` — free velocity, pose update, position correction, the whole step;
* :mod:`.solvers` — every contact solver behind one interface (box PGS, Lemke, single-contact cone, cone SOR).
"""

from contactkit.collision import Contacts, contact_frames
from contactkit.engine.params import Integrator
from contactkit.engine.reference.body import (
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
from contactkit.engine.reference.integrators import (
    PositionCorrection,
    StepResult,
    advance_pose,
    correct_position,
    displace,
    free_velocity,
    step_rigid_body,
)
from contactkit.engine.reference.problem import (
    ContactProblem,
    body_point_jacobians,
    build_problem,
    build_problem_general,
    contact_wrench,
    speculative_bias,
    velocity_after,
    with_unilateral_rows,
)
from contactkit.engine.reference.solvers import (
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
