"""The residual-RL pushing environment (pushing paper §II-C, §III-A, §IV-A), a ``gymnasium.Env``.

Each episode draws, from the generator of ``reset(seed)``: the object (cube or wedge), the angular-velocity
profile (constant, trapezoidal, chirp), a goal pose (:func:`sample_goal`) and the domain randomisation of
:class:`DomainSample` (object mass, pusher mass, contact and ground friction within :data:`DR_BOUNDS`). The world
is the hybrid MLCP model (:class:`HybridPushWorld`) of the *randomised* scene; the controller π_H plans with the
*nominal* Table II scene (it does not know the draw).

* observation ``(15,)`` float32: :func:`contactkit.pushing.controller.observe` (actual and desired contact forces,
  EE planar twist, object pose relative to the desired one, progress);
* action ``(3,)`` in [−1, 1]: end-effector velocity correction along the push frame ``e_n``, ``e_t`` (×
  :data:`~contactkit.pushing.controller.ACTION_LIN_SCALE` = 0.01 m/s) and yaw rate (×
  :data:`~contactkit.pushing.controller.ACTION_ANG_SCALE` = 0.1 rad/s), eq 16; applied only while the object
  deviates from the ICR trajectory by more than ``deviation_pos_tol`` [m] or ``deviation_ang_tol`` [rad]
  (Algorithm 1 line 4), otherwise ignored (``info["active"]`` says which);
* reward: eq 17 for the step (:func:`eq17_reward`, from the model's own contact forces, returned in
  ``info["contact_force"]``, ``info["contact_torque"]``); an episode that loses the object ends with
  :func:`failure_penalty`: :data:`FAILURE_PENALTY_PER_STEP` for each step left, discounted by :data:`DISCOUNT`;
* episodes of ``episode_steps`` × ``dt`` (default 2000 × 0.01 s = 20 s, §IV-A).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

from contactkit.control.icr import AngularProfile, ProfileKind
from contactkit.errors import ContactkitError, InvalidInputError
from contactkit.pushing import controller as ctl
from contactkit.pushing.arm import Arm
from contactkit.pushing.hybrid import N_TIPS, HybridPushWorld
from contactkit.pushing.scene import ObjectKind, PushScene

EPISODE_STEPS = 2000
"""Steps per episode (§IV-A: 20 s at 100 Hz)."""
REWARD_WEIGHTS = (1.0, 1.0, 20.0)
"""``(w1 [1/N], w2 [1/N], w3 [1/(N m)])`` of eq 17; w3 ≈ 1/(44 mm lever) puts torque errors on the force scale."""
FAILURE_PENALTY_PER_STEP = 5.0
"""Reward per remaining step charged when the object is lost, so that ending early never pays: twice eq 17's
per-step cost of having no contact at all (``Σ_i w·|desired|``, measured ≤ 2.47 over 30 sampled plans, median
2.03). (Was 1.0, below that cost: losing the object paid.)"""
DISCOUNT = 0.99
"""γ of the DDPG training (:func:`contactkit.pushing.residual.train_residual`): a 1 s horizon at 100 Hz."""
DR_BOUNDS = {
    "object_mass_scale": (0.8, 1.2),
    "pusher_mass_scale": (0.8, 1.2),
    "mu_contact": (0.25, 0.50),
    "mu_ground": (0.20, 0.40),
}
"""Domain-randomisation bounds (uniform): object and pusher mass × scale of Table II, friction coefficients."""
GOAL_DISTANCE = (0.06, 0.12)
"""Goal distance of the centre of mass [m] (uniform)."""
GOAL_ROTATION = (0.10, 0.35)
"""Goal yaw change magnitude ``|Δθ|`` [rad] (uniform, random sign): kept away from 0 so that Table III's angle
error, relative to ``|Δθ|``, stays meaningful."""
GOAL_SIDE_ANGLE = (-0.05, 0.05)
"""Chord direction relative to the body-frame push direction, ``β`` [rad]: the chord points at ``θ0 + Δθ/2 + β``
(β = 0: the object slides straight along its push axis in its own frame, the arc eq 13 can always push)."""


def failure_penalty(steps_left: int, per_step: float = FAILURE_PENALTY_PER_STEP, gamma: float = DISCOUNT) -> float:
    """The reward [−] of losing the object with ``steps_left`` steps to go: ``−c (1 − γⁿ) / (1 − γ)``, the
    discounted sum of ``c`` per remaining step. It is what the learner weighs continuing against, so ending early
    never pays; the undiscounted ``c n`` (up to 10,000 in one transition, against per-step rewards of about 2)
    was a lump that the critic's regression could not fit (it was the reward until this change)."""
    return -per_step * (1.0 - gamma ** max(int(steps_left), 0)) / (1.0 - gamma)


@dataclass(frozen=True)
class DomainSample:
    """One episode's draw: object, profile, goal and randomised physics (all SI)."""

    object_kind: ObjectKind
    profile: ProfileKind
    goal_offset: tuple[float, float, float]
    object_mass: float
    pusher_mass: float
    mu_contact: float
    mu_ground: float


def sample_goal(rng: np.random.Generator, start) -> np.ndarray:
    """``(3,)`` goal pose from ``start`` ``(3,)``: distance in :data:`GOAL_DISTANCE`, ``|Δθ|`` in :data:`GOAL_ROTATION`
    (either sign), chord at ``θ0 + Δθ/2 + β`` with β in :data:`GOAL_SIDE_ANGLE`."""
    start = np.asarray(start, dtype=np.float64)
    d, dth, beta = rng.uniform(*GOAL_DISTANCE), rng.uniform(*GOAL_ROTATION), rng.uniform(*GOAL_SIDE_ANGLE)
    dth = dth if rng.random() < 0.5 else -dth
    ang = start[2] + 0.5 * dth + beta
    return start + np.array([d * np.cos(ang), d * np.sin(ang), dth])


def sample_domain(rng: np.random.Generator) -> DomainSample:
    """Draw object, profile, goal offset and physics from ``rng`` (uniform within the module bounds)."""
    kind = list(ObjectKind)[int(rng.integers(len(ObjectKind)))]
    profile = list(ProfileKind)[int(rng.integers(len(ProfileKind)))]
    nominal = PushScene.for_object(kind)
    goal = sample_goal(rng, np.zeros(3))
    draws = {name: rng.uniform(*bounds) for name, bounds in DR_BOUNDS.items()}
    return DomainSample(kind, profile, tuple(float(x) for x in goal),
                        nominal.object_mass * draws["object_mass_scale"],
                        nominal.pusher_mass * draws["pusher_mass_scale"], draws["mu_contact"], draws["mu_ground"])


def randomised_scene(sample: DomainSample) -> PushScene:
    """The world's scene for ``sample`` (Table II geometry, randomised masses and frictions)."""
    return dataclasses.replace(PushScene.for_object(sample.object_kind), object_mass=sample.object_mass,
                               pusher_mass=sample.pusher_mass, mu_contact=sample.mu_contact,
                               mu_ground=sample.mu_ground)


def eq17_reward(force, force_des, torque, torque_des, weights=REWARD_WEIGHTS) -> float:
    """Eq 17 for one time step: ``−Σ_i [w1 |F_n,des − λ_n| + w2 |F_t,des − λ_t| + w3 |τ_z,des − τ_z|]``.

    Args:
        force, force_des: ``(k, 2)`` actual and desired ``(normal, tangential)`` per contact [N].
        torque, torque_des: ``(k,)`` actual and desired z-torques about the centre of mass [N m].
        weights: ``(w1, w2, w3)``.
    """
    f, fd = np.asarray(force, dtype=np.float64), np.asarray(force_des, dtype=np.float64)
    t, td = np.asarray(torque, dtype=np.float64), np.asarray(torque_des, dtype=np.float64)
    if f.shape != fd.shape or f.ndim != 2 or f.shape[1] != 2 or t.shape != td.shape or t.shape != f.shape[:1]:
        raise InvalidInputError(f"eq 17 needs (k, 2) forces and (k,) torques, got {f.shape}, {fd.shape}, "
                                f"{t.shape}, {td.shape}")
    w1, w2, w3 = weights
    return -float((w1 * np.abs(fd[:, 0] - f[:, 0]) + w2 * np.abs(fd[:, 1] - f[:, 1]) + w3 * np.abs(td - t)).sum())


class PushingResidualEnv(gym.Env):
    """Residual-RL environment of Algorithm 1 in the hybrid model (module doc).

    Args:
        episode_steps: steps per episode (default 2000; fewer for tests). dt: control period [s].
        deviation_pos_tol, deviation_ang_tol: residual activation thresholds [m], [rad].
        randomise: False keeps Table II physics (the draw still picks object, profile and goal).
        kp, kv: eq 15 joint gains [N m/rad], [N m s/rad] (default the controller's :data:`~contactkit.pushing.
            controller.KP`, ``KV``: the residual is trained on top of the PD it will be deployed with).
    """

    metadata = {"render_modes": []}

    def __init__(self, episode_steps: int = EPISODE_STEPS, dt: float = 0.01,
                 deviation_pos_tol: float = ctl.DEVIATION_POS_TOL, deviation_ang_tol: float = ctl.DEVIATION_ANG_TOL,
                 randomise: bool = True, kp: float = ctl.KP, kv: float = ctl.KV):
        if int(episode_steps) < 2 or not (np.isfinite(dt) and dt > 0):
            raise InvalidInputError(f"episode_steps must be >= 2 and dt > 0, got {episode_steps!r}, {dt!r}")
        if not (deviation_pos_tol >= 0 and deviation_ang_tol >= 0):
            raise InvalidInputError(f"deviation thresholds must be >= 0, got {deviation_pos_tol}, {deviation_ang_tol}")
        if not (np.isfinite(kp) and kp > 0 and np.isfinite(kv) and kv >= 0):
            raise InvalidInputError(f"PD gains must be finite, kp > 0 and kv >= 0, got {kp!r}, {kv!r}")
        self.episode_steps, self.dt, self.kp, self.kv = int(episode_steps), float(dt), float(kp), float(kv)
        self.pos_tol, self.ang_tol, self.randomise = float(deviation_pos_tol), float(deviation_ang_tol), randomise
        self.observation_space = gym.spaces.Box(-ctl.OBS_CLIP, ctl.OBS_CLIP, (ctl.OBS_DIM,), np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
        self._arms: dict[ObjectKind, Arm] = {}
        self.sample: DomainSample | None = None
        self.world: HybridPushWorld | None = None

    def _arm(self, kind: ObjectKind) -> Arm:
        if kind not in self._arms:
            self._arms[kind] = Arm(PushScene.for_object(kind))
        return self._arms[kind]

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        for _ in range(10):
            sample = sample_domain(self.np_random)
            if not self.randomise:
                nominal = PushScene.for_object(sample.object_kind)
                sample = dataclasses.replace(sample, object_mass=nominal.object_mass, pusher_mass=nominal.pusher_mass,
                                             mu_contact=nominal.mu_contact, mu_ground=nominal.mu_ground)
            self.scene = PushScene.for_object(sample.object_kind)
            start = np.array(self.scene.object_pose)
            self.goal = start + np.array(sample.goal_offset)
            self.plan = ctl.plan_push(self.scene, start, self.goal, AngularProfile(sample.profile),
                                      self.episode_steps * self.dt, self.dt)
            try:
                state = ctl.initial_state(self._arm(sample.object_kind), self.scene, self.plan)
                break
            except ContactkitError:
                continue
        else:
            raise InvalidInputError("no reachable start pose in 10 draws")
        self.sample, self.k = sample, 0
        self.world = HybridPushWorld(randomised_scene(sample))
        self.world.reset(state)
        self._err = np.zeros(3)
        self._offset = np.zeros(4)
        obs = ctl.observe(self.plan, 0, np.zeros((N_TIPS, 2)), np.zeros(6), self.world.state.obj_pose)
        return obs, {"sample": sample}

    def step(self, action):
        if self.world is None:
            raise InvalidInputError("step() before reset()")
        arm, plan, k = self._arm(self.sample.object_kind), self.plan, self.k
        dev = ctl.deviation(plan, k, self.world.state.obj_pose)
        active = ctl.residual_active(dev, self.pos_tol, self.ang_tol)
        act = np.asarray(action, dtype=np.float64) if active else np.zeros(3)
        info = {"active": active, "failure": None}
        try:
            v_res = ctl.residual_twist(plan, k, act)
            v_e = ctl.nominal_twist(arm, plan, k, self.world.state.q, self._offset) + v_res
            step = ctl.control_step(self.world, arm, plan, k, v_e, self.dt, self.kp, self.kv)
            self._offset = ctl.integrate_offset(self._offset, v_res, self.dt)
        except ContactkitError as exc:
            return self._fail(f"step {k}: {exc}", info)
        des = np.stack([plan.f_n[k], plan.f_t[k]], -1)
        reward = eq17_reward(step.contact_force, des, step.contact_torque, plan.tau_z[k])
        self._err += [np.abs(des[:, 0] - step.contact_force[:, 0]).mean(),
                      np.abs(des[:, 1] - step.contact_force[:, 1]).mean(),
                      np.abs(plan.tau_z[k] - step.contact_torque).mean()]
        info.update(contact_force=step.contact_force, contact_torque=step.contact_torque)
        self.k += 1
        ee_twist = arm.ee_jacobian(step.state.q) @ step.state.qd
        obs = ctl.observe(plan, self.k, step.contact_force, ee_twist, step.state.obj_pose)
        if np.hypot(*ctl.deviation(plan, k, step.state.obj_pose)[:2]) > ctl.FAIL_POS_DEVIATION:
            info = self._finish(info)
            info["failure"] = f"step {k}: object lost"
            return obs, reward + failure_penalty(self.episode_steps - self.k), True, False, info
        truncated = self.k >= self.episode_steps
        return obs, reward, False, truncated, self._finish(info) if truncated else info

    def _finish(self, info: dict) -> dict:
        n = max(self.k, 1)
        info["errors"] = {"normal_N": self._err[0] / n, "tangential_N": self._err[1] / n, "torque_Nm": self._err[2] / n}
        return info

    def _fail(self, why: str, info: dict):
        info = self._finish(info)
        info["failure"] = why
        penalty = failure_penalty(self.episode_steps - self.k)
        self.k = self.episode_steps
        return np.zeros(ctl.OBS_DIM, dtype=np.float32), penalty, True, False, info
