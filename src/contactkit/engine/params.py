"""Engine-only physics settings of :class:`contactkit.engine.world.EngineWorld` (a frozen config).

The engine reads the fields of :class:`contactkit.physics.WorldParams` that mean the same for every
simulator — the control period ``timestep · n_substeps``, ``friction_scale``, ``mass_scale``, ``gravity``,
``linear_damping``, ``angular_damping``, ``wrist_armature`` and the F/T ``ft_noise_std`` / ``ft_bias`` —
and ignores MuJoCo's soft-contact fields (``solref``, ``solimp``, ``cone``, ``impratio``, ``integrator``).
Everything only the engine needs lives in :class:`EngineParams`.

Engine step. The engine splits each control period into ``ceil(control_dt / max_step)`` equal steps
(``max_step=None``: exactly ``WorldParams.timestep``, ``n_substeps`` times). :data:`DEFAULT_MAX_STEP` = 2.5 ms
was chosen by measurement: :func:`contactkit.eval.bench_tight_insertion.step_size_study` (10, 5, 2.5 and
1.25 ms engine steps; the energy error of the undamped impedance spring over 1 s, and the four 0.065 mm
insertions' penetrations and CPU time), stored with every full run of ``contactkit benchmark tight-insertion``
under ``"step_size_study"`` (docs/results/tight-insertion.json, table in docs/RESULTS.md).

In that study penetration (all four insert at every step) does not limit the step: velocity-level
Signorini contacts with speculative margins and position projection stay near the projection's 1 µm slop even at the
tight-tolerance paper's 10 ms. What does is the explicit impedance spring: the stiffest mode of the 50 mm peg under the
default gains without wrist armature (twist about its axis, ω = sqrt(K_r/I_zz) ≈ 206 rad/s) is unstable at 10 ms and
badly resolved at 5 ms; 2.5 ms keeps ω h ≈ 0.5 at a cost within the 1 ms budget.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

from contactkit.errors import InvalidInputError

DEFAULT_MAX_STEP = 2.5e-3
"""Longest engine step [s] (see the module docstring for how it was chosen)."""


class Integrator(enum.Enum):
    """Time integrator of the pose: the pose moves with the end-of-step velocity (semi-implicit Euler) or with the
    mean of the start and end velocities (passive midpoint, tight-tolerance paper eq 1). Read by the kernels
    (``EngineParams.integrator``) and by the reference's :func:`contactkit.engine.reference.integrators.free_velocity`
    / ``advance_pose`` (where Euler also treats the gyroscopic term explicitly; the kernels never do)."""

    SEMI_IMPLICIT_EULER = "semi_implicit_euler"
    PASSIVE_MIDPOINT = "passive_midpoint"


class SolverKind(enum.Enum):
    """Which contact solver the engine runs (both matrix-free numba kernels, warm-started).

    * ``BOX_PGS``: projected Gauss-Seidel on the box-friction MLCP (pushing paper eqs 5, 7, 8), as
      :class:`contactkit.engine.reference.solvers.BoxPGS`. Cheapest; friction is anisotropic (a box in the contact
      frame), so a sliding direction between the tangent axes sees up to ``√2·μ``.
    * ``CONE_SOR``: nonlinear block SOR with the exact single-contact Coulomb-cone solve (opening /
      stick / slip by bisection, maximum dissipation; tight-tolerance paper §III-C and Algorithm 1), as
      :class:`contactkit.engine.reference.solvers.ConeSOR`. Isotropic friction like MuJoCo's elliptic cones.
    """

    BOX_PGS = "box_pgs"
    CONE_SOR = "cone_sor"


@dataclass(frozen=True)
class EngineParams:
    """Engine-only settings (the shared ones are in :class:`contactkit.physics.WorldParams`).

    Attributes:
        solver: contact solver (:class:`SolverKind`).
        integrator: pose update; semi-implicit Euler moves the pose with the end-of-step velocity on which
            the Signorini condition is imposed (no penetration to first order), passive midpoint (tight-tolerance paper
            eq 1) with the mean of the start and end velocities (penetrates by ``h·|u_n|/2`` on impact,
            which the position projection then removes). Either way the velocity update treats the
            gyroscopic term in the passive-midpoint form (energy-conserving).
        max_step: longest engine step [s]; ``None`` uses ``WorldParams.timestep`` as the step.
        max_iterations: cap on solver sweeps per step.
        tolerance: the solver stops when no impulse changed by more than this, in velocity units [m/s].
        relaxation: SOR relaxation ``α`` (``ω`` for PGS) in ``(0, 2)``.
        contact_margin: contacts within this gap [m] always enter the problem (speculative contacts).
        speculative_factor: the margin grows by this factor times the largest displacement a tool point
            can make in one step (from the start and free end-of-step velocities) [-].
        max_margin: upper bound of the margin [m]; also the growth of the static broad-phase grid.
        max_contacts: contacts solved per step; when more are found they are reduced by normal
            clustering (tight-tolerance paper §III-B's role) to at most ``points_per_cluster`` per cluster.
        cluster_angle: contacts whose normals differ by less than this angle [rad] share a cluster.
        points_per_cluster: points kept per cluster (the deepest, then farthest-point sampling).
        correction_fraction: share of the penetration beyond ``correction_slop`` removed per step by the
            position projection, in ``(0, 1]``.
        correction_slop: penetration [m] the projection leaves (keeps resting contacts in the margin).
        correction_iterations: Gauss-Seidel sweeps of the position projection.
        max_initial_penetration: :meth:`EngineWorld.set_state` refuses a pose penetrating deeper [m];
            shallower penetration is projected out by the first step without adding velocity.
        warm_start: start each solve from the previous step's impulses of the same contact features.
    """

    solver: SolverKind = SolverKind.CONE_SOR
    integrator: Integrator = Integrator.SEMI_IMPLICIT_EULER
    max_step: float | None = DEFAULT_MAX_STEP
    max_iterations: int = 60
    tolerance: float = 1e-6
    relaxation: float = 1.0
    contact_margin: float = 2e-5
    speculative_factor: float = 2.0
    max_margin: float = 2e-3
    max_contacts: int = 48
    cluster_angle: float = math.radians(20.0)
    points_per_cluster: int = 4
    correction_fraction: float = 1.0
    correction_slop: float = 1e-6
    correction_iterations: int = 20
    max_initial_penetration: float = 1e-3
    warm_start: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "solver", _enum(SolverKind, self.solver, "solver"))
        object.__setattr__(self, "integrator", _enum(Integrator, self.integrator, "integrator"))
        if self.max_step is not None:
            _positive("max_step", self.max_step)
        for name in ("tolerance", "max_margin", "cluster_angle"):
            _positive(name, getattr(self, name))
        for name in ("contact_margin", "speculative_factor", "correction_slop", "max_initial_penetration"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0.0):
                raise InvalidInputError(f"engine.{name} must be a finite number >= 0, got {value!r}")
        if self.contact_margin > self.max_margin:
            raise InvalidInputError(
                f"engine.contact_margin {self.contact_margin} must not exceed max_margin {self.max_margin}"
            )
        for name in ("max_iterations", "max_contacts", "points_per_cluster", "correction_iterations"):
            value = getattr(self, name)
            if not (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
                raise InvalidInputError(f"engine.{name} must be an integer >= 1, got {value!r}")
        if not 0.0 < self.relaxation < 2.0:
            raise InvalidInputError(f"engine.relaxation must lie in (0, 2), got {self.relaxation!r}")
        if not 0.0 < self.correction_fraction <= 1.0:
            raise InvalidInputError(f"engine.correction_fraction must lie in (0, 1], got {self.correction_fraction!r}")

    def steps_per_control(self, control_dt: float, timestep: float) -> tuple[int, float]:
        """``(n, h)``: engine steps per control period ``control_dt`` [s] and their length ``h`` [s].

        ``timestep`` [s] is ``WorldParams.timestep``, used as the step when ``max_step`` is ``None``.
        """
        _positive("control_dt", control_dt)
        step = timestep if self.max_step is None else self.max_step
        _positive("step", step)
        n = max(1, math.ceil(control_dt / step - 1e-9))
        return n, control_dt / n


def _positive(name: str, value) -> None:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0.0):
        raise InvalidInputError(f"engine.{name} must be a finite number > 0, got {value!r}")


def _enum(kind: type[enum.Enum], value, name: str):
    try:
        return kind(value)
    except ValueError:
        valid = [m.value for m in kind]
        raise InvalidInputError(f"engine.{name} {value!r} is not one of {valid}") from None
