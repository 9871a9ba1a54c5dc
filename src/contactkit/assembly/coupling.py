"""Virtual coupling between a commanded setpoint and the tool (data-driven simulation paper §V-A).

The paper's operator teleoperates the tool "through a standard virtual coupling": a spring-damper that pulls the
tool toward the setpoint pose. Here the spring acts between the centre of mass of the tool and the point where the
COM would be at the setpoint pose (so the force causes no torque about the COM), and the rotational spring acts on
the rotation vector of ``q_sp ⊗ q⁻¹`` (world frame). With ``e = com_sp - com`` [m], ``φ = log(q_sp q⁻¹)`` [rad]:

    F = k (e - h/2 · v̄) - d v̄,        τ = k_r (φ - h/2 · ω̄) - d_r ω̄        (world, about the COM)

where ``v̄ = (v⁺ + v)/2`` and ``ω̄`` are the step's midpoint velocities: the spring is read at the midpoint of the
step's displacement and the damper at the midpoint velocity (trapezoidal rule). Both terms contain the unknown
end-of-step velocity, so the coupling is solved implicitly together with the passive midpoint step (paper eq 1):
the step is A-stable (a critically damped free tool converges without overshoot for ``h·√(k/m) < 2``, and without
divergence for any step), and with no contact it is exactly passive: kinetic + spring energy decreases by exactly
the damper's ``h·d·|v̄|²`` per step (translation; exact for the linear part).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contactkit.assembly.task import AssemblyKind, AssemblyTask
from contactkit.engine.params import Integrator
from contactkit.engine.reference import RigidBody, com_position, generalized_velocity
from contactkit.errors import InvalidInputError
from contactkit.rotations import quat_conj, quat_mul, quat_normalize, quat_to_mat, quat_to_rotvec
from contactkit.state import BodyState

PEG_STIFFNESS = 1.0e4
"""[N/m] peg coupling: a setpoint 3 mm inside the floor presses with 30 N (paper Fig. 7/8 force levels)."""
PEG_ANGULAR_STIFFNESS = 2.0
"""[N·m/rad] peg coupling: 0.05 rad of commanded tilt presses with 0.1 N·m (a few N at the peg's rim)."""
NUT_STIFFNESS = 1.0e4
"""[N/m] nut coupling (infinite-turn gripper of §V-A)."""
NUT_ANGULAR_STIFFNESS = 10.0
"""[N·m/rad] nut coupling: 0.1 rad of lag turns the nut with 1 N·m (thread friction under tens of N is ~0.1 N·m)."""


@dataclass(frozen=True)
class CouplingGains:
    """Spring-damper gains of the virtual coupling (§V-A; module docstring for the law).

    Attributes:
        stiffness: ``k`` [N/m]; angular_stiffness: ``k_r`` [N·m/rad];
        damping: ``d`` [N·s/m]; angular_damping: ``d_r`` [N·m·s/rad]. All finite and ``>= 0``.
    """

    stiffness: float
    angular_stiffness: float
    damping: float
    angular_damping: float

    def __post_init__(self) -> None:
        for name in ("stiffness", "angular_stiffness", "damping", "angular_damping"):
            value = float(getattr(self, name))
            if not np.isfinite(value) or value < 0.0:
                raise InvalidInputError(f"CouplingGains.{name} must be finite and >= 0, got {value!r}")
            object.__setattr__(self, name, value)


def critical_gains(body: RigidBody, stiffness: float, angular_stiffness: float) -> CouplingGains:
    """Gains with critical damping: ``d = 2√(k m)``, ``d_r = 2√(k_r J_max)`` (``J_max`` the largest principal
    moment about the COM [kg·m²]; the other axes are then over-damped, never under-damped)."""
    j_max = float(np.linalg.eigvalsh(body.inertia_body)[-1])
    return CouplingGains(stiffness, angular_stiffness, 2.0 * np.sqrt(stiffness * body.mass),
                         2.0 * np.sqrt(angular_stiffness * j_max))


def default_gains(task: AssemblyTask) -> CouplingGains:
    """Critically damped gains of ``task`` (module constants): contact forces of tens of N for a setpoint a few
    mm into contact, stable at :data:`~contactkit.assembly.task.SIM_DT` (``h√(k/m)`` = 1.8 peg, 1.0 nut)."""
    if task.kind is AssemblyKind.PEG_IN_HOLE:
        return critical_gains(task.body, PEG_STIFFNESS, PEG_ANGULAR_STIFFNESS)
    return critical_gains(task.body, NUT_STIFFNESS, NUT_ANGULAR_STIFFNESS)


def _setpoint(setpoint_pos, setpoint_quat) -> tuple[np.ndarray, np.ndarray]:
    pos = np.asarray(setpoint_pos, dtype=np.float64)
    quat = np.asarray(setpoint_quat, dtype=np.float64)
    if pos.shape != (3,) or not np.all(np.isfinite(pos)):
        raise InvalidInputError(f"setpoint_pos must be a finite (3,) array, got {pos!r}")
    if quat.shape != (4,) or not np.all(np.isfinite(quat)) or abs(np.linalg.norm(quat) - 1.0) > 1e-6:
        raise InvalidInputError(f"setpoint_quat must be a finite unit (4,) quaternion wxyz, got {quat!r}")
    return pos, quat


def pose_error(body: RigidBody, state: BodyState, setpoint_pos, setpoint_quat) -> tuple[np.ndarray, np.ndarray]:
    """``(e, φ)``: COM error ``com_sp - com`` ``(3,)`` [m] and rotation vector of ``q_sp ⊗ q⁻¹`` ``(3,)`` [rad],
    world frame, shortest rotation (angle in ``[0, π]``)."""
    pos, quat = _setpoint(setpoint_pos, setpoint_quat)
    e = pos + quat_to_mat(quat) @ body.com_body - com_position(body, state)
    dq = quat_normalize(quat_mul(quat, quat_conj(np.asarray(state.quat, dtype=np.float64))))
    if dq[0] < 0.0:
        dq = -dq
    return e, quat_to_rotvec(dq)


def coupling_wrench(body: RigidBody, state: BodyState, setpoint_pos, setpoint_quat,
                    gains: CouplingGains) -> np.ndarray:
    """Instantaneous (explicit) coupling wrench ``(6,)`` ``(F, τ)`` world, about the COM [N, N·m]:
    ``F = k e - d v_com``, ``τ = k_r φ - d_r ω`` (§V-A virtual coupling, read at ``state``)."""
    e, phi = pose_error(body, state, setpoint_pos, setpoint_quat)
    v = generalized_velocity(body, state)
    omega_w = quat_to_mat(np.asarray(state.quat, dtype=np.float64)) @ v[3:]
    return np.concatenate([gains.stiffness * e - gains.damping * v[:3],
                           gains.angular_stiffness * phi - gains.angular_damping * omega_w])


def _skew(a: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def _implicit_terms(gains: CouplingGains, dt: float, method: Integrator) -> tuple[float, float, float, float]:
    """``(c, c_r, a, a_r)``: the velocity coefficients of the coupling law (``F = k e - c·v_eval``) and the
    effective-mass additions ``a = h·c/2`` (PMI, ``v_eval = v̄``) or ``h·c`` (Euler, ``v_eval = v⁺``)."""
    dt = float(dt)
    if not np.isfinite(dt) or dt <= 0.0:
        raise InvalidInputError(f"time step dt must be finite and > 0 s, got {dt!r}")
    if method is Integrator.PASSIVE_MIDPOINT:
        c, cr = 0.5 * gains.stiffness * dt + gains.damping, 0.5 * gains.angular_stiffness * dt + gains.angular_damping
        return c, cr, 0.5 * dt * c, 0.5 * dt * cr
    if method is Integrator.SEMI_IMPLICIT_EULER:
        c, cr = gains.stiffness * dt + gains.damping, gains.angular_stiffness * dt + gains.angular_damping
        return c, cr, dt * c, dt * cr
    raise InvalidInputError(f"unknown integrator {method!r}")


def coupled_inverse_mass(body: RigidBody, gains: CouplingGains, dt: float,
                         method: Integrator = Integrator.PASSIVE_MIDPOINT) -> np.ndarray:
    """``(6, 6)`` inverse effective mass through which a contact impulse changes ``V⁺`` under the implicit coupling.

    The coupling's velocity terms are implicit in ``V⁺``, so ``V⁺ = V_free + M_eff⁻¹ Jᵀλ`` with
    ``M_eff = diag((m + a) I₃, J + a_r I₃)`` (``a = h c/2`` PMI, ``h c`` Euler; module docstring); the gyroscopic
    skew term is left out of ``M_eff`` (``O(h|ω|)``) so that it stays symmetric positive definite. Using ``M⁻¹``
    instead would make a resting contact carry ``k e / (1 + a/m)`` instead of the spring's ``k e``: a force that
    depends on the step.
    """
    _, _, a, ar = _implicit_terms(gains, dt, method)
    m_inv = np.zeros((6, 6))
    m_inv[:3, :3] = np.eye(3) / (body.mass + a)
    m_inv[3:, 3:] = np.linalg.inv(body.inertia_body + ar * np.eye(3))
    return m_inv


def applied_coupling_wrench(body: RigidBody, state: BodyState, v_next: np.ndarray, setpoint_pos, setpoint_quat,
                            gains: CouplingGains, dt: float, method: Integrator = Integrator.PASSIVE_MIDPOINT
                            ) -> np.ndarray:
    """Mean coupling wrench ``(6,)`` world, about the COM [N, N·m] over a step that ended with ``v_next`` ``(6,)``
    ``[v_com world; ω body]`` (contact included): ``F = k e - c v̄``, ``τ = R(k_r Rᵀφ - c_r ω̄)`` (PMI, ``v̄`` the
    midpoint velocity) or the same at ``V⁺`` (Euler); with ``v_next = V_free`` it is :func:`coupled_free_velocity`'s."""
    c, cr, _, _ = _implicit_terms(gains, dt, method)
    e, phi = pose_error(body, state, setpoint_pos, setpoint_quat)
    rot = quat_to_mat(np.asarray(state.quat, dtype=np.float64))
    v_next = np.asarray(v_next, dtype=np.float64)
    v_eval = 0.5 * (v_next + generalized_velocity(body, state)) if method is Integrator.PASSIVE_MIDPOINT else v_next
    force = gains.stiffness * e - c * v_eval[:3]
    torque_b = gains.angular_stiffness * (rot.T @ phi) - cr * v_eval[3:]
    return np.concatenate([force, rot @ torque_b])


def coupled_free_velocity(body: RigidBody, state: BodyState, setpoint_pos, setpoint_quat, gains: CouplingGains,
                          dt: float, method: Integrator = Integrator.PASSIVE_MIDPOINT
                          ) -> tuple[np.ndarray, np.ndarray]:
    """End-of-step velocity without contact under the implicit virtual coupling, and the wrench it applied.

    PMI (paper eq 1 with the coupling as ``Q``; module docstring): with ``c = k h/2 + d``, ``c_r = k_r h/2 + d_r``,
    ``(m + h c/2) v⁺ = (m - h c/2) v + h k e`` and, in the body frame,
    ``(J - h/2 S(Jω) + h c_r/2 I) ω⁺ = (J + h/2 S(Jω) - h c_r/2 I) ω + h k_r Rᵀφ``.
    Semi-implicit Euler: backward Euler in the coupling (spring at ``e - h v⁺``, damper at ``v⁺``), gyroscopic
    term explicit. With contact, add the impulses through :func:`coupled_inverse_mass` and take the wrench the
    coupling really applied from :func:`applied_coupling_wrench`.

    Args:
        body, state: the tool and its state at the start of the step.
        setpoint_pos: ``(3,)`` [m], setpoint_quat: ``(4,)`` wxyz — commanded pose of the tool's body frame, world.
        gains: :class:`CouplingGains`. dt: step ``h > 0`` [s]. method: the integrator.

    Returns:
        ``V_free`` ``(6,)`` = ``[v_com world; ω body]`` at the end of the step, and the mean coupling wrench
        ``(6,)`` it applied over the step, world, torque about the COM [N, N·m].
    """
    c, cr, a, ar = _implicit_terms(gains, dt, method)
    e, phi = pose_error(body, state, setpoint_pos, setpoint_quat)
    rot = quat_to_mat(np.asarray(state.quat, dtype=np.float64))
    v = generalized_velocity(body, state)
    lin, omega = v[:3], v[3:]
    inertia, m, k, kr = body.inertia_body, body.mass, gains.stiffness, gains.angular_stiffness
    eye = np.eye(3)
    if method is Integrator.PASSIVE_MIDPOINT:
        lin_next = ((m - a) * lin + dt * k * e) / (m + a)
        s = _skew(inertia @ omega) * (0.5 * dt)
        ang_next = np.linalg.solve(inertia - s + ar * eye, (inertia + s - ar * eye) @ omega + dt * kr * (rot.T @ phi))
    else:
        lin_next = (m * lin + dt * k * e) / (m + a)
        gyro = np.cross(omega, inertia @ omega)
        ang_next = np.linalg.solve(inertia + ar * eye, inertia @ omega + dt * (kr * (rot.T @ phi) - gyro))
    v_next = np.concatenate([lin_next, ang_next])
    return v_next, applied_coupling_wrench(body, state, v_next, setpoint_pos, setpoint_quat, gains, dt, method)
