"""contactkit's rigid-body contact engine: one physics, three copies, each for one job.

**What** :class:`~contactkit.engine.world.EngineWorld` **runs** (and
:class:`~contactkit.engine.model.EngineContactModel`, a batch of the same): only the numba kernels, one compiled
call per control period, :func:`._kernels_step.advance`. Each of its ``ceil(control_dt / EngineParams.max_step)``
steps runs

1. :func:`._kernels_dynamics.free_velocity` — the impedance law (damping implicit), gravity, viscous damping, the
   wrist armature and the gyroscopic term in passive-midpoint form (tight-tolerance paper eq 1);
2. :func:`._kernels_contacts.node_contacts` — tool vertices against environment pieces and back, speculative margins
   (static planes and grids precomputed once by :func:`._kernels_geometry.contact_geometry`), and the tool's surface
   nodes against the learned depth network of every static that has one (``StaticBody.depth_model``, tight-tolerance
   paper §III-A: :func:`._kernels_depthnet.depth_contacts`, set up by :mod:`.depth_contacts`), then
   :func:`._kernels_edges.edge_contacts` — the sharp edges of either side's pieces against the other's pieces
   (edge–face and edge–edge contacts no vertex sees; only piece pairs no face plane separates,
   :mod:`._kernels_pairs`), then
   :func:`._kernels_reduce.reduce_contacts` — canonical order and clustering — and the warm start by feature key;
3. :mod:`._kernels_solve` — matrix-free problem rows and :func:`~._kernels_solve.solve_box` (``SolverKind.BOX_PGS``)
   or :func:`~._kernels_solve.solve_cone` (``SolverKind.CONE_SOR``);
4. :func:`.sensing.contact_ft` — the F/T reading of the step's impulses;
5. the pose update (``Integrator``) with :func:`._kernels_dynamics.rotate_body`, and the split-impulse position
   projection :func:`._kernels_solve.project_positions`.

The kernels share the array layouts of :mod:`.layout` (contact rows, the ``(13,)`` state) and the quaternion maths
of :mod:`contactkit.rotations.numba`; their settings are :class:`~.params.EngineParams` (:class:`~.params.SolverKind`,
:class:`~.params.Integrator`).

**The reference** (:mod:`contactkit.engine.reference`, numpy): the same physics for one body and given contacts,
written plainly — ``step_rigid_body``, the contact problem, the solvers (``BoxPGS``, ``ConeSOR``, ``LemkeBoxSolver``).
It is not called by ``EngineWorld``: it is the oracle every kernel is tested against (``tests/engine/
test_world_kernels.py``, ``test_kernels_vs_reference.py``) and the engine for hand-made problems. Where the two
differ on purpose: the kernels always treat the gyroscopic term in passive-midpoint form (the reference's
semi-implicit Euler treats it explicitly), add damping and armature (the reference has neither), and their position
projection is Gauss-Seidel letting a contact shallower than the slop close up to its gap, where the reference solves
it exactly (Lemke) and lets no listed contact close.

**The differentiable model** (:mod:`contactkit.engine.diff`, torch): the F/T reading as a function of pose, action
and geometry θ with gradients, for the estimators of the placement paper (:mod:`contactkit.estimation`). It is
its own model (spatial inertia about the tool origin, stiffness integrated implicitly, Baumgarte and a compliance,
a step split at the time of impact), not a copy of the kernel step; it reuses the reference's
:class:`~.reference.problem.ContactProblem` and Lemke as the exact fallback of its LCP, and its active-set guess
(``lcp_grad._pgs``) is the reference's box PGS (tested iterate for iterate).

This package imports only :mod:`.params`; ``EngineWorld`` and ``EngineContactModel`` load (with numba and the
collision geometry) on first use.
"""

from contactkit.engine.params import EngineParams, Integrator, SolverKind

_LAZY = {"EngineWorld": "contactkit.engine.world", "EngineContactModel": "contactkit.engine.model"}

__all__ = ["EngineContactModel", "EngineParams", "EngineWorld", "Integrator", "SolverKind"]


def __getattr__(name: str):
    """``EngineWorld`` and ``EngineContactModel``, imported when first asked for (PEP 562)."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'contactkit.engine' has no attribute {name!r}")
