"""The "real" world of the pushing paper (§III-B; issue 18 part 7, issue 32 parts 1–2): MuJoCo, other physics.

The policy trains in the hybrid model (:mod:`contactkit.pushing.hybrid`) and is deployed here without adaptation,
as the paper deploys on the robot. This world differs from the model in ways the policy never sees: a
:class:`~contactkit.pushing.mismatch.PhysicsDraw` (masses, frictions, friction patches over the table, the object's
centre-of-mass offset, the tips' calibration offset, joint damping and armature; ranges and sources in
:mod:`contactkit.pushing.mismatch`), soft MuJoCo contacts instead of the model's hard MLCP, the elliptic friction
cone and a 3-D object that may tip. Same step API as :class:`~contactkit.pushing.hybrid.HybridPushWorld`.

Parameters and their sources:

==================  =====================================  =========================================================
parameter           value                                  source / status
==================  =====================================  =========================================================
arm kinematics,     ``assets/kinova_gen2_7dof.xml``        every number cited there (Kinova's URDF and actuator
inertia, torques                                           datasheet [K1]–[K4]; link COMs and flange CHOSEN)
joint armature      :data:`~contactkit.pushing.mismatch.    reflected rotor inertia; ASSUMPTION (see there), drawn
                    NOMINAL_ARMATURE` × draw                ×[0.5, 2] per joint
joint loop          eq 15 at :data:`SUBSTEPS` × 100 Hz,     §III-B gives the 100 Hz command loop only; the drives'
                    :attr:`DriveLoop.IMPLICIT`               own loop rate is not published: 1 kHz is an ASSUMPTION.
                                                           Integrated implicitly (below), so its stability does not
                                                           hinge on K_v·h/I
contact softness    ``solref`` (0.01 s, 1.0), ``solimp``    MuJoCo's soft-contact model; PLA stiffness not measured:
                    (0.9, 0.95, 1 mm, 0.5, 2)               time constant 10 substeps (MuJoCo's advice: ≥ 2 steps),
                                                           critically damped. ASSUMPTION
friction cone       elliptic                               MuJoCo's closest to isotropic Coulomb (the model's box
                                                           friction is the departure, stated in the paper)
table friction      ``mu_ground`` × the patch under the    :mod:`contactkit.pushing.patches`; per control step the
                    object                                 mean scale under the object's base support points
==================  =====================================  =========================================================

**Joint loop.** :attr:`DriveLoop.EXPLICIT` evaluates eq 15 once per substep from the substep's start state (the
former world): with a light wrist (joint 7: 8·10⁻⁵ kg m² at the home posture) ``K_p h²/I`` and ``K_v h/I`` sit
beyond the explicit stability limit unless the armature is large, and the pusher chatters against the object, a
numerical artefact. :attr:`DriveLoop.IMPLICIT` gives each joint an actuator with force ``c − K_p q − (K_v + h K_p)
q̇`` (``c = τ_ff + K_p q_des + K_v q̇_des``), whose velocity term MuJoCo's ``implicitfast`` integrator treats
implicitly: backward Euler on the whole PD (``K_p (q_des − q − h q̇⁺)`` is the spring at the end of the substep), as
the hybrid model integrates it, stable for any gains while the torques stay within their limits. A joint whose PD
torque exceeds its limit at a substep's start holds the limit torque for that substep (a saturated drive, as the
hybrid model's ``step_pd``; that switch is explicit).
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field

import mujoco
import numpy as np

from contactkit.errors import InvalidInputError, SimulationDiverged
from contactkit.pushing.arm import JointPD, pd_torque
from contactkit.pushing.hybrid import N_TIPS, PushState, PushStep
from contactkit.pushing.mismatch import PhysicsDraw, apply_draw
from contactkit.pushing.planar import face_distance, support_points, world_polygon
from contactkit.pushing.scene import (
    N_ARM_JOINTS,
    OBJECT_BODY,
    OBJECT_GEOM,
    TABLE_GEOM,
    TIP_GEOMS,
    PushScene,
    apply_joint_params,
    build_mjcf,
    object_polygon,
)

SUBSTEPS = 10
"""MuJoCo steps per 10 ms control step: a 1 kHz joint loop (ASSUMPTION, module table)."""
SOLREF = (0.01, 1.0)
"""MuJoCo contact ``(timeconst [s], dampratio)`` of every geom (module table)."""
SOLIMP = (0.9, 0.95, 0.001, 0.5, 2.0)
"""MuJoCo contact impedance ``(d0, dwidth, width [m], midpoint, power)`` (module table)."""


class DriveLoop(str, enum.Enum):
    """How the joint PD of eq 15 is integrated at the substeps (module doc)."""

    IMPLICIT = "implicit"
    EXPLICIT = "explicit"


@dataclass(frozen=True)
class RealWorldParams:
    """How the "real" world departs from the scene the model sees (none of it seen by the policy).

    Attributes:
        physics: the mismatch draw (:func:`contactkit.pushing.mismatch.real_draw`; default: none, the nominal scene
            with :data:`~contactkit.pushing.mismatch.NOMINAL_ARMATURE`).
        solref, solimp: MuJoCo contact parameters (:data:`SOLREF`, :data:`SOLIMP`).
        substeps: MuJoCo steps per control step (:data:`SUBSTEPS`). drive: the joint loop's integration.
    """

    physics: PhysicsDraw = field(default_factory=PhysicsDraw)
    solref: tuple[float, float] = SOLREF
    solimp: tuple[float, float, float, float, float] = SOLIMP
    substeps: int = SUBSTEPS
    drive: DriveLoop = DriveLoop.IMPLICIT

    def __post_init__(self) -> None:
        if int(self.substeps) < 1:
            raise InvalidInputError(f"RealWorldParams.substeps must be >= 1, got {self.substeps!r}")
        if len(self.solref) != 2 or len(self.solimp) != 5:
            raise InvalidInputError(f"solref needs 2 and solimp 5 numbers, got {self.solref}, {self.solimp}")
        if not isinstance(self.physics, PhysicsDraw) or not isinstance(self.drive, DriveLoop):
            raise InvalidInputError(f"RealWorldParams needs a PhysicsDraw and a DriveLoop, got "
                                    f"{type(self.physics).__name__}, {self.drive!r}")


def real_scene(scene: PushScene, params: RealWorldParams) -> PushScene:
    """The scene of the "real" world: ``scene`` under ``params.physics``."""
    return apply_draw(scene, params.physics)


class RealPushWorld:
    """MuJoCo simulation of ``scene`` under :class:`RealWorldParams`; ``reset``, ``step``, ``step_pd``."""

    def __init__(self, scene: PushScene, params: RealWorldParams = RealWorldParams()):
        self.scene, self.params = scene, params
        self.true_scene = real_scene(scene, params)
        self.model = mujoco.MjModel.from_xml_string(build_mjcf(self.true_scene))
        m = self.model
        m.opt.timestep = scene.dt / params.substeps
        m.opt.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
        m.opt.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
        apply_joint_params(m, self.true_scene)
        m.geom_solref[:] = params.solref
        m.geom_solimp[:] = params.solimp
        self._object = m.body(OBJECT_BODY).id
        m.body_ipos[self._object, :2] += np.asarray(self.true_scene.com_offset)  # inertia about the COM kept
        self._object_geom = m.geom(OBJECT_GEOM).id
        self._table = m.geom(TABLE_GEOM).id
        m.geom_friction[self._object_geom, 0] = 0.0  # pairs take the larger: tips and table carry their own
        self.torque_limit = m.actuator_ctrlrange[:, 1].copy()
        m.actuator_ctrllimited[:] = 0  # the joints' actuatorfrcrange limits the torque (PD targets are not torques)
        m.actuator_biastype[:] = mujoco.mjtBias.mjBIAS_AFFINE
        self.data = mujoco.MjData(m)
        self._tips = [m.geom(name).id for name in TIP_GEOMS]
        self._polygon = object_polygon(self.true_scene)
        self._supports = support_points(self._polygon)
        self.state = self.reset()

    def reset(self, state: PushState | None = None) -> PushState:
        """Reset the arm and the object (object on the table, upright, its frame at ``state.obj_pose``)."""
        mujoco.mj_resetData(self.model, self.data)
        if state is None:
            state = PushState(np.array(self.scene.home_q), np.zeros(7), np.array(self.scene.object_pose),
                              np.zeros(3))
        d = self.data
        d.qpos[:N_ARM_JOINTS], d.qvel[:N_ARM_JOINTS] = state.q, state.qd
        x, y, th = state.obj_pose
        d.qpos[N_ARM_JOINTS:N_ARM_JOINTS + 7] = [x, y, 0.5 * self.true_scene.object_size[2],
                                                 math.cos(th / 2), 0.0, 0.0, math.sin(th / 2)]
        d.qvel[N_ARM_JOINTS:N_ARM_JOINTS + 6] = [state.obj_vel[0], state.obj_vel[1], 0.0, 0.0, 0.0, state.obj_vel[2]]
        mujoco.mj_forward(self.model, d)
        self.state = self._read_state()
        return self.state

    def _read_state(self) -> PushState:
        d = self.data
        quat = d.qpos[N_ARM_JOINTS + 3:N_ARM_JOINTS + 7]
        yaw = math.atan2(2.0 * (quat[0] * quat[3] + quat[1] * quat[2]), 1.0 - 2.0 * (quat[2] ** 2 + quat[3] ** 2))
        pose = np.array([d.qpos[N_ARM_JOINTS], d.qpos[N_ARM_JOINTS + 1], yaw])
        vel = np.array([d.qvel[N_ARM_JOINTS], d.qvel[N_ARM_JOINTS + 1], d.qvel[N_ARM_JOINTS + 5]])
        return PushState(d.qpos[:N_ARM_JOINTS].copy(), d.qvel[:N_ARM_JOINTS].copy(), pose, vel)

    def _set_table_friction(self) -> None:
        """The table's coefficient: ``mu_ground`` × the mean patch scale under the object's support points."""
        patches = self.true_scene.friction_patches
        scale = 1.0 if patches is None else float(
            patches.scale_at(world_polygon(self._supports, self.state.obj_pose)).mean())
        self.model.geom_friction[self._table, 0] = self.true_scene.mu_ground * scale

    def _tip_world_forces(self) -> np.ndarray:
        """``(2, 3)`` world force each tip exerts on the object now [N]."""
        out = np.zeros((N_TIPS, 3))
        wrench = np.zeros(6)
        for j in range(self.data.ncon):
            c = self.data.contact[j]
            pair = (int(c.geom1), int(c.geom2))
            for i, tip in enumerate(self._tips):
                if set(pair) == {tip, self._object_geom}:
                    mujoco.mj_contactForce(self.model, self.data, j, wrench)
                    world = c.frame.reshape(3, 3).T @ wrench[:3]  # force on geom2 by geom1, world frame
                    out[i] += world if pair[1] == self._object_geom else -world
        return out

    def step(self, torque: np.ndarray) -> PushStep:
        """One control step: joint torques ``(7,)`` [N m] (clipped to the limits) held over the substeps."""
        tau = np.asarray(torque, dtype=np.float64)
        if tau.shape != (N_ARM_JOINTS,) or not np.all(np.isfinite(tau)):
            raise InvalidInputError(f"torque must be 7 finite numbers [N m], got {torque!r}")
        self.model.actuator_biasprm[:, :3] = 0.0
        tau = np.clip(tau, -self.torque_limit, self.torque_limit)
        return self._advance(lambda: tau)

    def step_pd(self, pd: JointPD, torque_ff: np.ndarray | None = None) -> PushStep:
        """One control step of the joint PD of eq 15 (+ feed-forward ``(7,)`` [N m]) at every substep, integrated as
        ``params.drive`` says (module doc)."""
        ff = np.zeros(N_ARM_JOINTS) if torque_ff is None else np.asarray(torque_ff, dtype=np.float64)
        m, d = self.model, self.data
        if self.params.drive is DriveLoop.EXPLICIT:
            m.actuator_biasprm[:, :3] = 0.0
            return self._advance(lambda: ff + pd_torque(pd, d.qpos[:N_ARM_JOINTS], d.qvel[:N_ARM_JOINTS]))
        kd = pd.kv + m.opt.timestep * pd.kp
        ctrl = ff + pd.kp * pd.q_des + pd.kv * pd.qd_des

        def law() -> np.ndarray:
            # a saturated joint holds its limit torque for the substep (no PD term left to integrate implicitly)
            force = ctrl - pd.kp * d.qpos[:N_ARM_JOINTS] - kd * d.qvel[:N_ARM_JOINTS]
            free = np.abs(force) <= self.torque_limit
            m.actuator_biasprm[:, 0] = 0.0
            m.actuator_biasprm[:, 1] = np.where(free, -pd.kp, 0.0)
            m.actuator_biasprm[:, 2] = np.where(free, -kd, 0.0)
            return np.where(free, ctrl, np.clip(force, -self.torque_limit, self.torque_limit))

        return self._advance(law)

    def _advance(self, law) -> PushStep:
        d, n = self.data, self.params.substeps
        self._set_table_friction()
        forces, applied = np.zeros((N_TIPS, 3)), np.zeros(N_ARM_JOINTS)
        for _ in range(n):
            d.ctrl[:] = law()
            mujoco.mj_step(self.model, d)
            applied += d.qfrc_actuator[:N_ARM_JOINTS] / n
            forces += self._tip_world_forces() / n
        if not (np.all(np.isfinite(d.qpos)) and np.all(np.isfinite(d.qvel))):
            raise SimulationDiverged("MuJoCo pushing world produced non-finite state")
        self.state = self._read_state()
        return self._report(forces, applied)

    def _report(self, forces: np.ndarray, applied: np.ndarray) -> PushStep:
        """Project the world tip forces on each tip's nearest face (same convention as the model); torques about
        the true centre of mass."""
        poly = world_polygon(self._polygon, self.state.obj_pose)
        tips = np.array([self.data.geom_xpos[g] for g in self._tips])
        com = self.data.xipos[self._object, :2]
        contact, world, torque = np.zeros((N_TIPS, 2)), forces[:, :2].copy(), np.zeros(N_TIPS)
        for i in range(N_TIPS):
            inward = -face_distance(poly, tips[i, :2]).normal
            e_t = np.array([-inward[1], inward[0]])
            contact[i] = (world[i] @ inward, world[i] @ e_t)
            r = tips[i, :2] + self.true_scene.tip_radius * inward - com
            torque[i] = r[0] * world[i, 1] - r[1] * world[i, 0]
        return PushStep(self.state, contact, world, torque, np.linalg.norm(world, axis=1) > 0.0, applied)
