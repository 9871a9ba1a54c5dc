"""The "real" world of the pushing paper (§III-B, part 7 of issue 18): MuJoCo on the same scene, other physics.

The policy trains in the hybrid model (:mod:`contactkit.pushing.hybrid`) and is deployed here without
adaptation, as the paper deploys on the robot. This world differs from the model in ways the policy never
sees (:class:`RealWorldParams`): friction, masses, contact softness (soft MuJoCo contacts vs the model's hard
MLCP), joint damping, rotor armature, the elliptic friction cone, a 3-D object that may tip, and a 1 kHz
inner loop. Same step API as :class:`contactkit.pushing.hybrid.HybridPushWorld`: joint torques (or the joint
PD of eq 15, recomputed at every 1 ms substep like the robot's joint controllers) in, :class:`PushStep` out.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import mujoco
import numpy as np

from contactkit.errors import InvalidInputError, SimulationDiverged
from contactkit.pushing.arm import JointPD, pd_torque
from contactkit.pushing.hybrid import N_TIPS, PushState, PushStep
from contactkit.pushing.planar import face_distance, world_polygon
from contactkit.pushing.scene import (
    N_ARM_JOINTS,
    OBJECT_BODY,
    OBJECT_GEOM,
    TIP_GEOMS,
    PushScene,
    build_mjcf,
    object_polygon,
)


@dataclass(frozen=True)
class RealWorldParams:
    """How the "real" world departs from the scene the model sees (all stated, none seen by the policy).

    Attributes:
        mu_contact_scale: pusher–object friction × this (default 1.25: rougher PLA than assumed).
        mu_ground_scale: object–table friction × this (default 0.80: a smoother table).
        object_mass_scale: object mass × this (default 1.10: infill heavier than nominal).
        pusher_mass_scale: pusher mass × this (default 1.15: screws and adapter).
        damping_scale: joint damping × this (default 1.5).
        armature: rotor inertia added to every joint [kg m²] (default 0.002; the model has none).
        solref: MuJoCo contact ``(timeconst [s], dampratio)`` of every geom (default soft: 0.01 s, 1.0).
        solimp: MuJoCo contact impedance ``(d0, dwidth, width [m], midpoint, power)``.
        substeps: MuJoCo steps per control step (default 10: 1 kHz inner loop at the 100 Hz control period).
    """

    mu_contact_scale: float = 1.25
    mu_ground_scale: float = 0.80
    object_mass_scale: float = 1.10
    pusher_mass_scale: float = 1.15
    damping_scale: float = 1.5
    armature: float = 0.002
    solref: tuple[float, float] = (0.01, 1.0)
    solimp: tuple[float, float, float, float, float] = (0.9, 0.95, 0.001, 0.5, 2.0)
    substeps: int = 10

    def __post_init__(self) -> None:
        for f in ("mu_contact_scale", "mu_ground_scale", "object_mass_scale", "pusher_mass_scale", "damping_scale"):
            value = getattr(self, f)
            if not (math.isfinite(value) and value > 0.0):
                raise InvalidInputError(f"RealWorldParams.{f} must be finite and > 0, got {value!r}")
        if not (math.isfinite(self.armature) and self.armature >= 0.0):
            raise InvalidInputError(f"RealWorldParams.armature must be >= 0, got {self.armature!r}")
        if int(self.substeps) < 1:
            raise InvalidInputError(f"RealWorldParams.substeps must be >= 1, got {self.substeps!r}")
        if len(self.solref) != 2 or len(self.solimp) != 5:
            raise InvalidInputError(f"solref needs 2 and solimp 5 numbers, got {self.solref}, {self.solimp}")


def real_scene(scene: PushScene, params: RealWorldParams) -> PushScene:
    """The scene with the real world's masses and frictions."""
    return dataclasses.replace(
        scene, object_mass=scene.object_mass * params.object_mass_scale,
        pusher_mass=scene.pusher_mass * params.pusher_mass_scale,
        mu_contact=scene.mu_contact * params.mu_contact_scale, mu_ground=scene.mu_ground * params.mu_ground_scale)


class RealPushWorld:
    """MuJoCo simulation of ``scene`` under :class:`RealWorldParams`; ``reset``, ``step``, ``step_pd``."""

    def __init__(self, scene: PushScene, params: RealWorldParams = RealWorldParams()):
        self.scene, self.params = scene, params
        self.true_scene = real_scene(scene, params)
        self.model = mujoco.MjModel.from_xml_string(build_mjcf(self.true_scene))
        m = self.model
        m.opt.timestep = scene.dt / params.substeps
        m.opt.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
        m.dof_damping[:N_ARM_JOINTS] *= params.damping_scale
        m.dof_armature[:N_ARM_JOINTS] = params.armature
        m.geom_solref[:] = params.solref
        m.geom_solimp[:] = params.solimp
        self.data = mujoco.MjData(m)
        self.torque_limit = m.actuator_ctrlrange[:, 1].copy()
        self._tips = [m.geom(name).id for name in TIP_GEOMS]
        self._object_geom = m.geom(OBJECT_GEOM).id
        self._object = m.body(OBJECT_BODY).id
        self._polygon = object_polygon(self.true_scene)
        self.state = self.reset()

    def reset(self, state: PushState | None = None) -> PushState:
        """Reset the arm and the object (object on the table, upright, at ``state.obj_pose``)."""
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
        """One control step: joint torques ``(7,)`` [N m] held over ``params.substeps`` MuJoCo steps."""
        tau = np.asarray(torque, dtype=np.float64)
        if tau.shape != (N_ARM_JOINTS,) or not np.all(np.isfinite(tau)):
            raise InvalidInputError(f"torque must be 7 finite numbers [N m], got {torque!r}")
        return self._advance(lambda: tau)

    def step_pd(self, pd: JointPD, torque_ff: np.ndarray | None = None) -> PushStep:
        """One control step of the joint PD of eq 15 (+ feed-forward), re-evaluated at every substep."""
        ff = np.zeros(N_ARM_JOINTS) if torque_ff is None else np.asarray(torque_ff, dtype=np.float64)
        d = self.data
        return self._advance(lambda: ff + pd_torque(pd, d.qpos[:N_ARM_JOINTS], d.qvel[:N_ARM_JOINTS]))

    def _advance(self, law) -> PushStep:
        d, n = self.data, self.params.substeps
        forces, applied = np.zeros((N_TIPS, 3)), np.zeros(N_ARM_JOINTS)
        for _ in range(n):
            d.ctrl[:] = np.clip(law(), -self.torque_limit, self.torque_limit)
            applied += d.ctrl / n
            mujoco.mj_step(self.model, d)
            forces += self._tip_world_forces() / n
        if not (np.all(np.isfinite(d.qpos)) and np.all(np.isfinite(d.qvel))):
            raise SimulationDiverged("MuJoCo pushing world produced non-finite state")
        self.state = self._read_state()
        return self._report(forces, applied)

    def _report(self, forces: np.ndarray, applied: np.ndarray) -> PushStep:
        """Project the world tip forces on each tip's nearest face (same convention as the model)."""
        poly = world_polygon(self._polygon, self.state.obj_pose)
        tips = np.array([self.data.geom_xpos[g] for g in self._tips])
        contact, world, torque = np.zeros((N_TIPS, 2)), forces[:, :2].copy(), np.zeros(N_TIPS)
        for i in range(N_TIPS):
            inward = -face_distance(poly, tips[i, :2]).normal
            e_t = np.array([-inward[1], inward[0]])
            contact[i] = (world[i] @ inward, world[i] @ e_t)
            r = tips[i, :2] + self.true_scene.tip_radius * inward - self.state.obj_pose[:2]
            torque[i] = r[0] * world[i, 1] - r[1] * world[i, 0]
        return PushStep(self.state, contact, world, torque, np.linalg.norm(world, axis=1) > 0.0, applied)
