"""The residual-RL pushing environment (pushing paper §II-C, §III-A, §IV-A), a ``gymnasium.Env``.

Each episode draws, from the generator of ``reset(seed)``: the object (cube or wedge), the angular-velocity
profile (constant, trapezoidal, chirp), a goal pose (:func:`sample_goal`) and the domain randomisation of
:class:`DomainSample` (object mass, pusher mass, contact and ground friction within :data:`DR_BOUNDS`; friction
patches, centre-of-mass offset, tips' calibration offset, joint damping and armature within :data:`DR_PHYSICS`). The
world is the hybrid MLCP model (:class:`HybridPushWorld`) of the *randomised* scene; the controller π_H plans with
the *nominal* Table II scene (it does not know the draw).

* observation ``(43,)`` float32 (default; ``history=False``: the former ``(15,)``):
  :func:`contactkit.pushing.controller.observe` (actual and desired contact forces, EE planar twist, object pose
  relative to the desired one, progress) and the short history of forces and pose deviations of
  :mod:`contactkit.pushing.observation`;
* action ``(3,)`` in [−1, 1]: end-effector velocity correction along the push frame ``e_n``, ``e_t`` and yaw rate,
  eq 16, scaled by :func:`~contactkit.pushing.controller.relative_action_scale` (half the plan's mean pusher speed
  and yaw rate; ``relative_action=False``: the absolute 0.01 m/s and 0.1 rad/s); applied only while the object
  deviates from the ICR trajectory by more than ``deviation_pos_tol`` [m] or ``deviation_ang_tol`` [rad]
  (Algorithm 1 line 4), otherwise ignored (``info["active"]`` says which);
* reward: eq 17 for the step (:func:`eq17_reward`, from the model's own contact forces, returned in
  ``info["contact_force"]``, ``info["contact_torque"]``) plus the pose-tracking term :func:`pose_reward` (a
  stated departure; ``reward=RewardKind.EQ17``: eq 17 alone, the ablation); an episode that loses the object ends
  with :func:`failure_penalty`: :data:`FAILURE_PENALTY_PER_STEP` (+ :data:`POSE_COST_CAP` with the pose term) for
  each step left, discounted by :data:`DISCOUNT`;
* episodes of ``episode_steps`` × ``dt`` (default 2000 × 0.01 s = 20 s, §IV-A).
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

from contactkit.control.icr import AngularProfile, ProfileKind
from contactkit.errors import ContactkitError, InvalidInputError
from contactkit.pushing import controller as ctl
from contactkit.pushing.arm import Arm
from contactkit.pushing.hybrid import N_TIPS, HybridPushWorld
from contactkit.pushing.mismatch import PhysicsDraw, PhysicsRanges, apply_draw, draw_physics
from contactkit.pushing.observation import HISTORY_DIM, empty_history, push_history, with_history
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
    "pusher_mass_scale": (0.8, 1.3),
    "mu_contact": (0.25, 0.50),
    "mu_ground": (0.20, 0.40),
}
"""Domain-randomisation bounds (uniform): object and pusher mass × scale of Table II, friction coefficients. Each
covers the "real" range of :data:`contactkit.pushing.mismatch.REAL_RANGES` (pusher mass widened from ×1.2 to ×1.3
for that, issue 32, before any real draw was looked at)."""
DR_PHYSICS = PhysicsRanges(object_mass_scale=(1.0, 1.0), pusher_mass_scale=(1.0, 1.0), mu_contact_scale=(1.0, 1.0),
                           mu_ground_scale=(1.0, 1.0), patch_scale=(0.80, 1.20), patch_cell_m=0.05, com_offset_m=0.005,
                           tip_offset_m=(0.002, 0.002, 0.002), damping_scale=(0.5, 2.0), armature_scale=(0.5, 2.0))
"""Domain randomisation of the families issue 32 added (uniform; masses and frictions stay in :data:`DR_BOUNDS`):
friction patches × [0.8, 1.2] per 5 cm, centre-of-mass offset ±5 mm per object axis, tips' calibration offset ±2 mm
per pusher axis, joint damping × [0.5, 2] and armature × [0.5, 2] of
:data:`~contactkit.pushing.mismatch.NOMINAL_ARMATURE` per joint. Fixed, with the "real" ranges of
:mod:`contactkit.pushing.mismatch`, before any "real" draw was looked at: each range equals the real one (the
policy must meet every real world inside its training distribution, and learn which one it is in from the
observation's history)."""
POSE_WEIGHTS = (100.0, 20.0)
"""``(w_p [1/m], w_θ [1/rad])`` of the pose-tracking term :func:`pose_reward` (1 cm or 0.05 rad of deviation cost
1 per step, the order of eq 17's per-step cost)."""
POSE_COST_CAP = 5.0
"""Largest per-step cost of :func:`pose_reward` (the position term at the 5 cm loss threshold). With the pose term
on, losing the object costs :data:`FAILURE_PENALTY_PER_STEP` + this per remaining step, more than continuing can
ever cost (eq 17 ≤ 2.47 per step, pose ≤ this), so ending early never pays."""
GOAL_DISTANCE = (0.06, 0.12)
"""Goal distance of the centre of mass [m] (uniform)."""
GOAL_ROTATION = (0.10, 0.35)
"""Goal yaw change magnitude ``|Δθ|`` [rad] (uniform, random sign): kept away from 0 so that Table III's angle
error, relative to ``|Δθ|``, stays meaningful."""
GOAL_SIDE_ANGLE = (-0.05, 0.05)
"""Chord direction relative to the body-frame push direction, ``β`` [rad]: the chord points at ``θ0 + Δθ/2 + β``
(β = 0: the object slides straight along its push axis in its own frame, the arc eq 13 can always push)."""


class RewardKind(str, enum.Enum):
    """The training reward: eq 17 alone (the paper's, kept as the ablation) or eq 17 plus :func:`pose_reward`."""

    EQ17 = "eq17"
    EQ17_POSE = "eq17+pose"


def pose_reward(dev, weights=POSE_WEIGHTS, cap: float = POSE_COST_CAP) -> float:
    """Pose-tracking term (issue 32, a stated departure from eq 17): ``−min(cap, w_p |d_pos| + w_θ |dθ|)`` for the
    object's deviation ``dev`` ``(3,)`` = ``(d_n, d_t [m], dθ [rad])`` from the ICR plan. Eq 17 alone rewards
    following the desired forces, which come from the nominal mass and friction: in a randomised world following
    them drifts off the trajectory (issue 32 measured 0.17–0.19 N of force error from ground sliding alone, and
    actors that lowered eq 17's cost lost the object in 4–5 of 12 validation episodes)."""
    d = np.asarray(dev, dtype=np.float64)
    return -float(min(cap, weights[0] * np.hypot(d[0], d[1]) + weights[1] * abs(d[2])))


def failure_penalty(steps_left: int, per_step: float = FAILURE_PENALTY_PER_STEP, gamma: float = DISCOUNT) -> float:
    """The reward [−] of losing the object with ``steps_left`` steps to go: ``−c (1 − γⁿ) / (1 − γ)``, the
    discounted sum of ``c`` per remaining step. It is what the learner weighs continuing against, so ending early
    never pays; the undiscounted ``c n`` (up to 10,000 in one transition, against per-step rewards of about 2)
    was a lump that the critic's regression could not fit (it was the reward until this change)."""
    return -per_step * (1.0 - gamma ** max(int(steps_left), 0)) / (1.0 - gamma)


@dataclass(frozen=True)
class DomainSample:
    """One episode's draw: object, profile, goal and randomised physics (all SI); ``physics`` carries the families
    of :data:`DR_PHYSICS` (its mass and friction scales are 1: those are the fields above), None for none."""

    object_kind: ObjectKind
    profile: ProfileKind
    goal_offset: tuple[float, float, float]
    object_mass: float
    pusher_mass: float
    mu_contact: float
    mu_ground: float
    physics: PhysicsDraw | None = None


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
    goal = sample_goal(rng, np.zeros(3))
    return draw_sample(rng, kind, profile, goal)


def draw_sample(rng: np.random.Generator, kind: ObjectKind, profile: ProfileKind, goal_offset) -> DomainSample:
    """The randomised physics of one episode of ``kind``, ``profile``, ``goal_offset`` ``(3,)``: :data:`DR_BOUNDS`
    then :data:`DR_PHYSICS`, drawn in that order from ``rng``."""
    nominal = PushScene.for_object(kind)
    draws = {name: rng.uniform(*bounds) for name, bounds in DR_BOUNDS.items()}
    return DomainSample(kind, profile, tuple(float(x) for x in goal_offset),
                        nominal.object_mass * draws["object_mass_scale"],
                        nominal.pusher_mass * draws["pusher_mass_scale"], draws["mu_contact"], draws["mu_ground"],
                        draw_physics(rng, DR_PHYSICS))


def randomised_scene(sample: DomainSample) -> PushScene:
    """The world's scene for ``sample`` (Table II geometry, randomised masses and frictions, and the families of
    ``sample.physics`` when given)."""
    scene = dataclasses.replace(PushScene.for_object(sample.object_kind), object_mass=sample.object_mass,
                                pusher_mass=sample.pusher_mass, mu_contact=sample.mu_contact,
                                mu_ground=sample.mu_ground)
    return scene if sample.physics is None else apply_draw(scene, sample.physics)


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
        history: observation with the short history of :mod:`contactkit.pushing.observation` (``(43,)``; False:
            the former ``(15,)``). reward: :class:`RewardKind` (eq 17 + pose term, or eq 17 alone: the ablation).
        relative_action: action ±1 = a fraction of the plan's speeds (:func:`~contactkit.pushing.controller.
            relative_action_scale`; False: the absolute 0.01 m/s, 0.1 rad/s).
    """

    metadata = {"render_modes": []}

    def __init__(self, episode_steps: int = EPISODE_STEPS, dt: float = 0.01,
                 deviation_pos_tol: float = ctl.DEVIATION_POS_TOL, deviation_ang_tol: float = ctl.DEVIATION_ANG_TOL,
                 randomise: bool = True, kp: float = ctl.KP, kv: float = ctl.KV, history: bool = True,
                 reward: RewardKind = RewardKind.EQ17_POSE, relative_action: bool = True):
        if int(episode_steps) < 2 or not (np.isfinite(dt) and dt > 0):
            raise InvalidInputError(f"episode_steps must be >= 2 and dt > 0, got {episode_steps!r}, {dt!r}")
        if not (deviation_pos_tol >= 0 and deviation_ang_tol >= 0):
            raise InvalidInputError(f"deviation thresholds must be >= 0, got {deviation_pos_tol}, {deviation_ang_tol}")
        if not (np.isfinite(kp) and kp > 0 and np.isfinite(kv) and kv >= 0):
            raise InvalidInputError(f"PD gains must be finite, kp > 0 and kv >= 0, got {kp!r}, {kv!r}")
        self.episode_steps, self.dt, self.kp, self.kv = int(episode_steps), float(dt), float(kp), float(kv)
        self.pos_tol, self.ang_tol, self.randomise = float(deviation_pos_tol), float(deviation_ang_tol), randomise
        self.history, self.reward_kind, self.relative_action = bool(history), RewardKind(reward), bool(relative_action)
        self.obs_dim = HISTORY_DIM if self.history else ctl.OBS_DIM
        self.penalty_per_step = FAILURE_PENALTY_PER_STEP + (POSE_COST_CAP if self.reward_kind is RewardKind.EQ17_POSE
                                                            else 0.0)
        self.observation_space = gym.spaces.Box(-ctl.OBS_CLIP, ctl.OBS_CLIP, (self.obs_dim,), np.float32)
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
                                             mu_contact=nominal.mu_contact, mu_ground=nominal.mu_ground, physics=None)
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
        self._scale = (ctl.relative_action_scale(self.plan) if self.relative_action
                       else (ctl.ACTION_LIN_SCALE, ctl.ACTION_ANG_SCALE))
        self._buffer = empty_history()
        self._base = ctl.observe(self.plan, 0, np.zeros((N_TIPS, 2)), np.zeros(6), self.world.state.obj_pose)
        return self._obs(), {"sample": sample}

    def _obs(self) -> np.ndarray:
        return with_history(self._base, self._buffer) if self.history else self._base

    def step(self, action):
        if self.world is None:
            raise InvalidInputError("step() before reset()")
        arm, plan, k = self._arm(self.sample.object_kind), self.plan, self.k
        dev = ctl.deviation(plan, k, self.world.state.obj_pose)
        active = ctl.residual_active(dev, self.pos_tol, self.ang_tol)
        act = np.asarray(action, dtype=np.float64) if active else np.zeros(3)
        info = {"active": active, "failure": None}
        try:
            v_res = ctl.residual_twist(plan, k, act, self._scale)
            v_e = ctl.nominal_twist(arm, plan, k, self.world.state.q, self._offset) + v_res
            step = ctl.control_step(self.world, arm, plan, k, v_e, self.dt, self.kp, self.kv)
            self._offset = ctl.integrate_offset(self._offset, v_res, self.dt)
        except ContactkitError as exc:
            return self._fail(f"step {k}: {exc}", info)
        des = np.stack([plan.f_n[k], plan.f_t[k]], -1)
        reward = eq17_reward(step.contact_force, des, step.contact_torque, plan.tau_z[k])
        dev_after = ctl.deviation(plan, k, step.state.obj_pose)
        if self.reward_kind is RewardKind.EQ17_POSE:
            reward += pose_reward(dev_after)
        self._err += [np.abs(des[:, 0] - step.contact_force[:, 0]).mean(),
                      np.abs(des[:, 1] - step.contact_force[:, 1]).mean(),
                      np.abs(plan.tau_z[k] - step.contact_torque).mean()]
        info.update(contact_force=step.contact_force, contact_torque=step.contact_torque)
        self.k += 1
        ee_twist = arm.ee_jacobian(step.state.q) @ step.state.qd
        self._buffer = push_history(self._buffer, self._base)
        self._base = ctl.observe(plan, self.k, step.contact_force, ee_twist, step.state.obj_pose)
        obs = self._obs()
        if np.hypot(*dev_after[:2]) > ctl.FAIL_POS_DEVIATION:
            info = self._finish(info)
            info["failure"] = f"step {k}: object lost"
            return obs, reward + failure_penalty(self.episode_steps - self.k, self.penalty_per_step), True, False, info
        truncated = self.k >= self.episode_steps
        return obs, reward, False, truncated, self._finish(info) if truncated else info

    def _finish(self, info: dict) -> dict:
        n = max(self.k, 1)
        info["errors"] = {"normal_N": self._err[0] / n, "tangential_N": self._err[1] / n, "torque_Nm": self._err[2] / n}
        return info

    def _fail(self, why: str, info: dict):
        info = self._finish(info)
        info["failure"] = why
        penalty = failure_penalty(self.episode_steps - self.k, self.penalty_per_step)
        self.k = self.episode_steps
        return np.zeros(self.obs_dim, dtype=np.float32), penalty, True, False, info
