"""Rigid-body quantities of the 7-DoF arm from MuJoCo (pushing paper eqs 1–2, 14).

``M(q)`` (``mj_fullM``), the bias ``c(q, q̇)`` (``mj_rne`` with zero acceleration: Coriolis, centrifugal and
gravity), point Jacobians of the pusher tips and the 6-D end-effector Jacobian (``mj_jac``), and forward
kinematics, all from one MuJoCo model of the arm and pusher (:func:`contactkit.pushing.scene.build_mjcf`
with ``with_object=False``). MuJoCo, not Pinocchio: MuJoCo is already a dependency and the "real" world
runs the same MJCF, so both worlds share one kinematic and inertial description; Pinocchio is not a
dependency of contactkit.

Frames: world (z up); joint-space quantities in the order joint1 … joint7. Units SI.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from contactkit.errors import InvalidInputError
from contactkit.pushing.scene import N_ARM_JOINTS, PUSHER_BODY, TIP_SITES, PushScene, apply_joint_params, build_mjcf

SINGULAR_VALUE_TOL = 1e-3
"""Smallest accepted singular value of a task Jacobian [m/rad]; below it the arm is treated as singular."""

IK_TOL = 1e-6
"""Position [m] and orientation [rad] error at which :meth:`Arm.solve_ik` stops."""

IK_MAX_ITERATIONS = 300
"""Iteration cap of :meth:`Arm.solve_ik`."""

IK_DAMPING = 1e-3
"""Damping ``λ`` of the damped least-squares IK step ``Jᵀ (J Jᵀ + λ² I)⁻¹ e``."""


class ArmSingularityError(InvalidInputError):
    """The task Jacobian's smallest singular value is below :data:`SINGULAR_VALUE_TOL`."""


def check_singularity(jacobian: np.ndarray, tol: float = SINGULAR_VALUE_TOL) -> float:
    """Raise :class:`ArmSingularityError` if ``jacobian`` ``(m, 7)`` has a singular value below ``tol``.

    Returns:
        The smallest singular value (of the ``m ≤ 7`` task directions).
    """
    jac = np.asarray(jacobian, dtype=np.float64)
    if jac.ndim != 2 or not np.all(np.isfinite(jac)):
        raise InvalidInputError(f"jacobian must be a finite 2-D array, got shape {jac.shape}")
    sigma = float(np.linalg.svd(jac, compute_uv=False).min())
    if sigma < tol:
        raise ArmSingularityError(f"arm at a singular configuration: smallest singular value {sigma:.3g} < {tol:g}")
    return sigma


class Arm:
    """The arm and pusher of a :class:`PushScene` as a MuJoCo model (holds its own ``MjData``).

    Every method sets ``q`` (and ``q̇``) first, so calls are independent of each other. Not thread safe.
    """

    def __init__(self, scene: PushScene):
        self.scene = scene
        self.model = mujoco.MjModel.from_xml_string(build_mjcf(scene, with_object=False))
        apply_joint_params(self.model, scene)
        self.data = mujoco.MjData(self.model)
        self._tips = [self.model.site(name).id for name in TIP_SITES]
        self._pusher = self.model.body(PUSHER_BODY).id
        self.torque_limit = self.model.actuator_ctrlrange[:, 1].copy()
        """``(7,)`` peak joint torques [N m] (Kinova KA-75+/KA-58 datasheet, see the MJCF)."""
        self.damping = self.model.dof_damping[:N_ARM_JOINTS].copy()
        """``(7,)`` viscous joint damping [N m s/rad]."""

    def _set(self, q: np.ndarray, qd: np.ndarray | None = None) -> None:
        q = np.asarray(q, dtype=np.float64)
        if q.shape != (N_ARM_JOINTS,) or not np.all(np.isfinite(q)):
            raise InvalidInputError(f"q must be 7 finite joint angles [rad], got {q!r}")
        self.data.qpos[:] = q
        if qd is None:
            self.data.qvel[:] = 0.0
        else:
            qd = np.asarray(qd, dtype=np.float64)
            if qd.shape != (N_ARM_JOINTS,) or not np.all(np.isfinite(qd)):
                raise InvalidInputError(f"qd must be 7 finite joint velocities [rad/s], got {qd!r}")
            self.data.qvel[:] = qd
        mujoco.mj_kinematics(self.model, self.data)
        mujoco.mj_comPos(self.model, self.data)

    def mass_matrix(self, q: np.ndarray) -> np.ndarray:
        """Joint-space mass matrix ``M(q)`` ``(7, 7)`` [kg m²] of eq 1 (``mj_crb`` + ``mj_fullM``; with the scene's
        ``joint_armature`` on the diagonal, 0 in the nominal scene)."""
        self._set(q)
        mujoco.mj_crb(self.model, self.data)
        out = np.zeros((N_ARM_JOINTS, N_ARM_JOINTS))
        mujoco.mj_fullM(self.model, self.data, out)
        return out

    def bias(self, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
        """``c(q, q̇)`` ``(7,)`` [N m] of eq 1: Coriolis, centrifugal and gravity (``mj_rne`` at zero q̈)."""
        self._set(q, qd)
        mujoco.mj_comVel(self.model, self.data)
        out = np.zeros(N_ARM_JOINTS)
        mujoco.mj_rne(self.model, self.data, 0, out)
        return out

    def inverse_dynamics(self, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
        """``M(q) q̈ + c(q, q̇)`` ``(7,)`` [N m] by ``mj_rne`` (the finite-difference oracle of ``M``)."""
        self._set(q, qd)
        mujoco.mj_comVel(self.model, self.data)
        self.data.qacc[:] = np.asarray(qdd, dtype=np.float64)
        out = np.zeros(N_ARM_JOINTS)
        mujoco.mj_rne(self.model, self.data, 1, out)
        return out

    def tip_positions(self, q: np.ndarray) -> np.ndarray:
        """``(2, 3)`` world positions of the two pusher tip-sphere centres [m]."""
        self._set(q)
        return self.data.site_xpos[self._tips].copy()

    def tip_jacobians(self, q: np.ndarray) -> np.ndarray:
        """``(2, 3, 7)`` world linear velocity of each tip centre per joint velocity [m/rad] (``mj_jacSite``)."""
        self._set(q)
        out = np.zeros((2, 3, N_ARM_JOINTS))
        for i, site in enumerate(self._tips):
            mujoco.mj_jacSite(self.model, self.data, out[i], None, site)
        return out

    def ee_pose(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pusher (end-effector) frame: world position ``(3,)`` [m] and rotation ``(3, 3)`` (columns = axes)."""
        self._set(q)
        return self.data.xpos[self._pusher].copy(), self.data.xmat[self._pusher].reshape(3, 3).copy()

    def ee_jacobian(self, q: np.ndarray) -> np.ndarray:
        """``(6, 7)`` Jacobian of the pusher frame origin: rows linear [m/rad] then angular [1], world frame."""
        self._set(q)
        jp, jr = np.zeros((3, N_ARM_JOINTS)), np.zeros((3, N_ARM_JOINTS))
        mujoco.mj_jacBody(self.model, self.data, jp, jr, self._pusher)
        return np.vstack([jp, jr])

    def ik_velocity(self, q: np.ndarray, v_ee: np.ndarray) -> np.ndarray:
        """``q̇_des = J⁺ v_e`` ``(7,)`` [rad/s] of eq 14 (Moore–Penrose, null space unused).

        Args:
            q: ``(7,)`` joint angles [rad].
            v_ee: ``(6,)`` desired pusher-frame twist, world frame: linear [m/s], angular [rad/s].

        Raises:
            ArmSingularityError: when ``J`` is within :data:`SINGULAR_VALUE_TOL` of singular.
        """
        jac = self.ee_jacobian(q)
        check_singularity(jac)
        v_ee = np.asarray(v_ee, dtype=np.float64)
        if v_ee.shape != (6,) or not np.all(np.isfinite(v_ee)):
            raise InvalidInputError(f"v_ee must be a finite (6,) twist, got {v_ee!r}")
        return np.linalg.pinv(jac) @ v_ee

    def solve_ik(self, q0: np.ndarray, position: np.ndarray, rotation: np.ndarray) -> np.ndarray:
        """Joint angles ``(7,)`` putting the pusher frame at ``position`` ``(3,)`` with ``rotation`` ``(3, 3)``.

        Damped least squares from ``q0`` (:data:`IK_DAMPING`), at most :data:`IK_MAX_ITERATIONS` steps.

        Raises:
            InvalidInputError: the target is not reached within :data:`IK_TOL` (out of reach or blocked by
                joint limits).
        """
        q = np.array(q0, dtype=np.float64)
        target_p = np.asarray(position, dtype=np.float64)
        target_r = np.asarray(rotation, dtype=np.float64)
        lo, hi = self.model.jnt_range[:, 0], self.model.jnt_range[:, 1]
        limited = self.model.jnt_limited.astype(bool)
        for _ in range(IK_MAX_ITERATIONS):
            pos, rot = self.ee_pose(q)
            err = np.concatenate([target_p - pos, _rotation_error(target_r, rot)])
            if np.abs(err).max() < IK_TOL:
                return q
            jac = self.ee_jacobian(q)
            step = jac.T @ np.linalg.solve(jac @ jac.T + IK_DAMPING**2 * np.eye(6), err)
            q = q + step
            q[limited] = np.clip(q[limited], lo[limited], hi[limited])
        raise InvalidInputError(
            f"IK did not reach the pusher target {target_p.tolist()} (error {np.abs(err).max():.3g} after "
            f"{IK_MAX_ITERATIONS} iterations): out of reach or at a joint limit"
        )


def _rotation_error(target: np.ndarray, current: np.ndarray) -> np.ndarray:
    """World-frame rotation vector ``(3,)`` taking ``current`` to ``target`` (both ``(3, 3)``)."""
    rel = target @ current.T
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, rel.reshape(-1))
    vec = np.zeros(3)
    mujoco.mju_quat2Vel(vec, quat, 1.0)
    return vec


def pushing_rotation(push_angle: float) -> np.ndarray:
    """``(3, 3)`` pusher orientation with z pointing down and the push direction (+y) at ``push_angle``.

    ``push_angle`` [rad] is the world yaw of the push direction; the tip bar (x) is horizontal.
    """
    c, s = np.cos(push_angle), np.sin(push_angle)
    return np.array([[-s, c, 0.0], [c, s, 0.0], [0.0, 0.0, -1.0]])  # columns y × z, y, z (z down)


@dataclass(frozen=True)
class JointPD:
    """Joint PD of eq 15 with its targets: ``τ = K_p(q_des - q) + K_v(q̇_des - q̇)``.

    Attributes:
        kp: ``(7,)`` stiffness [N m/rad]. kv: ``(7,)`` damping [N m s/rad] (both ≥ 0: diagonal, so positive
            definite when > 0). q_des: ``(7,)`` [rad]. qd_des: ``(7,)`` [rad/s].
    """

    kp: np.ndarray
    kv: np.ndarray
    q_des: np.ndarray
    qd_des: np.ndarray

    def __post_init__(self) -> None:
        for name in ("kp", "kv", "q_des", "qd_des"):
            arr = np.asarray(getattr(self, name), dtype=np.float64)
            if arr.shape != (N_ARM_JOINTS,) or not np.all(np.isfinite(arr)):
                raise InvalidInputError(f"JointPD.{name} must be 7 finite numbers, got {getattr(self, name)!r}")
            object.__setattr__(self, name, arr)
        if np.any(self.kp < 0.0) or np.any(self.kv < 0.0):
            raise InvalidInputError(f"JointPD gains must be >= 0, got kp={self.kp}, kv={self.kv}")


def pd_torque(pd: JointPD, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """Eq 15 evaluated explicitly: ``(7,)`` [N m]."""
    return pd.kp * (pd.q_des - np.asarray(q)) + pd.kv * (pd.qd_des - np.asarray(qd))


def pd_from_ee_velocity(arm: Arm, q: np.ndarray, v_ee: np.ndarray, dt: float, kp, kv) -> JointPD:
    """Algorithm 1 line 10: ``q̇_des = J⁺ v_e`` (eq 14), ``q_des = q + q̇_des Δt``, as a :class:`JointPD`.

    Args:
        arm: the arm. q: ``(7,)`` [rad]. v_ee: ``(6,)`` desired pusher twist, world [m/s, rad/s].
        dt: control period Δt [s]. kp, kv: ``(7,)`` gains (or scalars broadcast to 7).

    Raises:
        ArmSingularityError: at a singular configuration (never a NaN torque).
    """
    qd_des = arm.ik_velocity(q, v_ee)
    ones = np.ones(N_ARM_JOINTS)
    return JointPD(kp * ones, kv * ones, np.asarray(q, dtype=np.float64) + qd_des * dt, qd_des)
