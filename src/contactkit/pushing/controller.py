"""The nominal pushing policy π_H of Algorithm 1 and a closed-loop episode runner (pushing paper §II-B, §II-C).

Pipeline per episode: ICR trajectory (§II-B1, :mod:`contactkit.control.icr`) → required wrench (eq 11) → desired
contact forces and pusher placement (eq 13, :mod:`contactkit.control.force_distribution`) → desired pusher
(end-effector) pose and twist → ``v_e = v_e^H + v_e^θ`` (eq 16) → ``q̇_des = J⁺ v_e``, ``q_des = q + q̇_des Δt``
(eq 14, Algorithm 1 line 10) → joint PD (eq 15) stepped in a world (:class:`HybridPushWorld` or
:class:`RealPushWorld`).

π_H tracks the *planned pusher pose* (the tips on the eq-13 contact points of the planned object pose) with a
feed-forward twist and an end-effector pose feedback (:data:`EE_POS_GAIN`, :data:`EE_ROT_GAIN`); the pose it
tracks is shifted by the integral of the residual twists so far, so that the feedback does not undo eq 16's
``v_e^θ`` (without it a constant residual only offsets the pusher by ``v_e^θ / EE_POS_GAIN``). It has no
object-pose feedback: the paper's camera is used only for evaluation (§III-B), π_H(q, q̇, r) sees the arm
state and the nominal contact set only. The object pose enters through the residual policy's observation and
its activation test (Algorithm 1 line 4). A gravity and Coriolis feed-forward ``c(q, q̇)`` of the *nominal* arm
model is added to eq 15 (the Kinova's firmware compensates gravity; without it the pure-velocity PD of
Algorithm 1 sags by millimetres) — stated departure.

Ground friction alignment: eq 11's ``f`` is computed here with the hybrid model's own law
(:mod:`contactkit.pushing.hybrid`): box friction along the object axes at the support points of
:func:`contactkit.pushing.planar.support_points`, each loaded ``m g / V``, sliding along the support-point
velocity sign (the acceleration field's sign at rest). ``force_distribution.required_wrench`` uses isotropic
Coulomb friction over a uniform grid; the two agree for translations along an object axis and differ (box ≥
Coulomb) for oblique sliding, so the plan uses the box law to match the model the policy trains in.

Frames: world z up; the "push frame" is the pushed face's inward normal ``e_n`` and ``e_t = e_z × e_n`` at the
planned object pose. Units SI.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from contactkit.control.force_distribution import (
    PushedFace,
    TwoTipPusher,
    distribute_trajectory,
    polygon_face,
    polygon_object,
    required_wrench,
)
from contactkit.control.icr import AngularProfile, icr_acceleration, icr_trajectory
from contactkit.errors import ContactkitError, InvalidInputError, SimulationDiverged
from contactkit.pushing.arm import Arm, pd_from_ee_velocity, pushing_rotation
from contactkit.pushing.episode_log import EpisodeLog, make_log
from contactkit.pushing.episode_log import episode_errors as episode_errors  # re-exported: ctl.episode_errors
from contactkit.pushing.hybrid import N_TIPS, PushState, PushStep
from contactkit.pushing.observation import empty_history, push_history, with_history
from contactkit.pushing.planar import rotation_2d, support_points
from contactkit.pushing.scene import GRAVITY_MPS2, ObjectKind, PushScene, object_inertia_z, object_polygon, tip_offsets

PUSHED_EDGE = {ObjectKind.CUBE: 3, ObjectKind.WEDGE: 2}
"""Edge of :func:`object_polygon` that is pushed (the cube's −x face, the wedge's 85 mm leg; inward normal +x)."""
KP = 1000.0
"""Joint stiffness ``K_p`` of eq 15 [N m/rad]: the best of the stated grid search of
:mod:`contactkit.pushing.gains` (MODEL world, 12 training-distribution draws of seed ``GAIN_SEARCH_SEED``, 2 per
object × profile, domain-randomised; score = mean of translation and angle error %, failures at 100 %). Measured
(``search_pd_gains()``, 1174 s on the shared 2-core box), score % (translation %, angle %), no failures anywhere:
K_p 1000: K_v 4 → 1.26 (1.82, 0.70), 2 → 1.43 (2.07, 0.79), 1 → 1.54 (2.23, 0.84); K_p 400: 4 → 2.01 (2.96, 1.05),
2 → 2.59 (3.86, 1.33), 1 → 3.07 (4.58, 1.56); K_p 150: 4 → 2.82, 2 → 4.24, 1 → 5.72; K_p 60: 4 → 3.30, 2 → 5.53,
1 → 8.43 (13.3, 3.6). The winner lies at the grid's stiff corner (larger K_p was not tried). The former
K_p = 60, K_v = 1 had been chosen to make PD-only lag like the paper's (13 % translation) — the worst of the grid."""
KV = 4.0
"""Joint damping ``K_v`` of eq 15 [N m s/rad]: the grid search's best (:data:`KP`) on its former grid, which stopped
at 4 a priori because the former "real" world evaluated eq 15 explicitly at 1 kHz on a light wrist (``K_v h / I``
near the explicit stability limit: the pusher tapped the object). That world's joint loop is now integrated
implicitly (:class:`contactkit.pushing.real.DriveLoop`, issue 32) and :mod:`contactkit.pushing.gains`'s grid reaches
K_v 16 and K_p 2500 over the issue-32 randomisation; these values stand until that search is re-run (the first
step of the stored run, docs/pushing.md)."""
EE_POS_GAIN = 5.0
"""π_H's end-effector position feedback [1/s]: ``v += EE_POS_GAIN (p_des − p)``."""
EE_ROT_GAIN = 5.0
"""π_H's end-effector orientation feedback [1/s] on the rotation-vector error."""
ACTION_LIN_SCALE = 0.01
"""Residual action ±1 → end-effector velocity correction ±0.01 m/s along each push-frame axis (eq 16's v_e^θ)."""
ACTION_ANG_SCALE = 0.1
"""Residual action ±1 → yaw-rate correction ±0.1 rad/s."""
ACTION_SPEED_FRACTION = 0.5
"""Relative action scale (:func:`relative_action_scale`, issue 32): action ±1 → ± this fraction of the plan's mean
pusher speed and mean yaw rate. The absolute :data:`ACTION_LIN_SCALE` (0.01 m/s) is 2–3× the nominal push speed
(60–120 mm in 20 s), so exploration noise alone could outrun the plan."""
DEVIATION_POS_TOL = 0.001
"""Object position deviation from the ICR trajectory [m] above which the residual is active (Algorithm 1 line 4;
measured: PD-only in the randomised model keeps 1–2 mm on most episodes, tens of mm when it loses the object)."""
DEVIATION_ANG_TOL = 0.01
"""Object yaw deviation [rad] above which the residual is active."""
FAIL_POS_DEVIATION = 0.05
"""Object position deviation [m] at which an episode is stopped and reported failed (object lost)."""
GROUND_SIGN_TOL = 1e-9
"""Support-point speed [m/s] below which an axis counts as not sliding (box-friction sign of eq 11's f)."""
FORCE_SCALE = 2.0
"""Observation scale of contact forces [N]."""
VEL_SCALE, ANG_VEL_SCALE, POS_SCALE, ANG_SCALE = 0.02, 0.2, 0.01, 0.1
"""Observation scales: EE speed [m/s], EE yaw rate [rad/s], pose deviation [m], yaw deviation [rad]."""
OBS_CLIP = 10.0
"""Observations are clipped to ±OBS_CLIP after scaling."""
OBS_DIM = 15
"""Observation length: λ (4), F_des (4), EE planar twist (3), object pose deviation (3), progress (1)."""


@dataclass(frozen=True)
class PushPlan:
    """Everything π_H needs, precomputed on the time grid ``t_k = k dt``, ``k = 0 … T−1``.

    Attributes:
        times: ``(T,)`` [s]. poses, twists: ``(T, 3)`` planned object pose / world twist (ICR, §II-B1).
        wrench: ``(T, 3)`` required body-frame force [N] and torque [N m] (eq 11, box ground friction).
        f_n, f_t, tau_z: ``(T, 2)`` desired per-tip forces [N] and torques [N m] (eq 13; tip 0 at −e_t).
        feasible: ``(T,)`` bool, eq 13 produced the wrench.
        ee_pos: ``(T, 3)`` desired pusher-frame origin [m]; ee_vel: ``(T, 3)`` its time derivative [m/s].
        push_yaw: ``(T,)`` world yaw of the push direction ``e_n`` [rad]; its rate is ``twists[:, 2]``.
        face: the pushed face (body frame). goal: ``(3,)`` the planned pose at ``t = T dt``.
    """

    times: np.ndarray
    poses: np.ndarray
    twists: np.ndarray
    wrench: np.ndarray
    f_n: np.ndarray
    f_t: np.ndarray
    tau_z: np.ndarray
    feasible: np.ndarray
    ee_pos: np.ndarray
    ee_vel: np.ndarray
    push_yaw: np.ndarray
    face: PushedFace
    goal: np.ndarray


def box_ground_wrench(scene: PushScene, twist_b: np.ndarray, accel_b: np.ndarray) -> np.ndarray:
    """Eq 11's ground friction ``f`` ``(T, 3)`` [N, N, N m] with the hybrid model's box law (module doc).

    Args:
        scene: object mass, plan and ``mu_ground``. twist_b, accel_b: ``(T, 3)`` body-frame ``(v, ω)`` and
            ``(v̇, ω̇)``; where no support point slides the acceleration field gives the sign (impending motion).
    """
    pts = support_points(object_polygon(scene))
    load = scene.mu_ground * scene.object_mass * GRAVITY_MPS2 / len(pts)
    jz = np.stack([-pts[:, 1], pts[:, 0]], -1)
    u = twist_b[:, None, :2] + twist_b[:, None, 2:3] * jz[None]
    ua = accel_b[:, None, :2] + accel_b[:, None, 2:3] * jz[None]
    still = (np.abs(u) <= GROUND_SIGN_TOL).all(axis=(1, 2))
    u = np.where(still[:, None, None], ua, u)
    fp = -load * np.where(np.abs(u) > GROUND_SIGN_TOL, np.sign(u), 0.0)
    tau = (pts[None, :, 0] * fp[..., 1] - pts[None, :, 1] * fp[..., 0]).sum(-1)
    return np.concatenate([fp.sum(1), tau[:, None]], -1)


def _body(poses: np.ndarray, vec_w: np.ndarray) -> np.ndarray:
    c, s = np.cos(poses[:, 2]), np.sin(poses[:, 2])
    return np.stack([c * vec_w[:, 0] + s * vec_w[:, 1], -s * vec_w[:, 0] + c * vec_w[:, 1], vec_w[:, 2]], -1)


def plan_push(scene: PushScene, start, goal, profile: AngularProfile, duration: float, dt: float) -> PushPlan:
    """The ICR plan, eq 11 wrench and eq 13 forces/placement and the pusher pose along it.

    Args:
        scene: nominal scene (what the controller believes). start, goal: ``(3,)`` object poses [m, m, rad].
        profile: angular-velocity profile (§III). duration: [s] a whole number of ``dt`` [s].

    Returns:
        :class:`PushPlan` with ``T = duration/dt`` steps (the last grid point, the goal, is not a step).
    """
    poses, twists = icr_trajectory(start, goal, profile, duration, dt)
    accels = icr_acceleration(start, goal, profile, duration, dt)
    final = poses[-1].copy()
    poses, twists, accels = poses[:-1], twists[:-1], accels[:-1]
    obj = polygon_object(scene.object_mass, object_inertia_z(scene), object_polygon(scene))
    inertial = required_wrench(obj, 0.0, poses, twists, accels)
    omega = twists[:, 2]
    v_b = _body(poses, twists)
    a_b = _body(poses, accels)
    a_b[:, :2] -= omega[:, None] * np.stack([-v_b[:, 1], v_b[:, 0]], -1)
    wrench = inertial - box_ground_wrench(scene, v_b, a_b)
    face = polygon_face(object_polygon(scene), PUSHED_EDGE[scene.object_kind])
    dists = distribute_trajectory(wrench, face, TwoTipPusher(scene.tip_separation), scene.mu_contact)
    f_n = np.array([d.f_n for d in dists])
    f_t = np.array([d.f_t for d in dists])
    tau = np.array([d.tau_z for d in dists])
    centre = np.array([d.centre for d in dists])
    mid_b = (face.offset - scene.tip_radius) * face.e_n[None] + centre[:, None] * face.e_t[None]
    mid_w = poses[:, :2] + np.einsum("tij,tj->ti", np.stack([rotation_2d(th) for th in poses[:, 2]]), mid_b)
    push_yaw = poses[:, 2] + face.normal_angle
    reach = tip_offsets(scene)[:, 1:].mean(0)  # (front, reach) of the tip midpoint in the pusher frame
    ee = np.zeros((len(poses), 3))
    for k, yaw in enumerate(push_yaw):
        off = pushing_rotation(yaw) @ np.array([0.0, reach[0], reach[1]])
        ee[k] = np.array([mid_w[k, 0], mid_w[k, 1], scene.contact_height]) - off
    ee_vel = np.gradient(ee, dt, axis=0) if len(ee) > 1 else np.zeros_like(ee)
    feasible = np.array([d.feasible for d in dists])
    return PushPlan(np.arange(len(poses)) * dt, poses, twists, wrench, f_n, f_t, tau, feasible, ee, ee_vel,
                    push_yaw, face, final)


def _rotation_error(target: np.ndarray, current: np.ndarray) -> np.ndarray:
    """``(3,)`` world rotation-vector error ``½ Σ_i c_i × t_i`` (small-angle) from ``current`` to ``target``."""
    c, t = current, target  # Σ_i c_i × t_i over the columns, written out (np.cross costs 10 % of a training step)
    return 0.5 * np.array([c[1] @ t[2] - c[2] @ t[1], c[2] @ t[0] - c[0] @ t[2], c[0] @ t[1] - c[1] @ t[0]])


def push_frame(plan: PushPlan, k: int) -> np.ndarray:
    """``(2, 2)`` rows ``e_n, e_t`` (world) of the planned push frame at step ``k``."""
    yaw = plan.push_yaw[k]
    return np.array([[np.cos(yaw), np.sin(yaw)], [-np.sin(yaw), np.cos(yaw)]])


def nominal_twist(arm: Arm, plan: PushPlan, k: int, q: np.ndarray, offset: np.ndarray | None = None) -> np.ndarray:
    """π_H (Algorithm 1 line 3): ``(6,)`` end-effector twist [m/s, rad/s], world: feed-forward + pose feedback.

    ``offset`` ``(4,)``: ``(dx, dy, dz [m], dyaw [rad])`` added to the planned pusher pose, the integral of the
    residual twists so far (:func:`integrate_offset`): the pose feedback then keeps, instead of undoing, what
    the residual velocity of eq 16 moved.
    """
    off = np.zeros(4) if offset is None else np.asarray(offset, dtype=np.float64)
    pos, rot = arm.ee_pose(q)
    v = plan.ee_vel[k] + EE_POS_GAIN * (plan.ee_pos[k] + off[:3] - pos)
    target = pushing_rotation(plan.push_yaw[k] + off[3])
    w = np.array([0.0, 0.0, plan.twists[k, 2]]) + EE_ROT_GAIN * _rotation_error(target, rot)
    return np.concatenate([v, w])


def integrate_offset(offset: np.ndarray, v_res: np.ndarray, dt: float) -> np.ndarray:
    """``(4,)`` reference offset after one step of the residual twist ``v_res`` ``(6,)`` over ``dt`` [s]."""
    return np.asarray(offset, dtype=np.float64) + dt * np.asarray(v_res, dtype=np.float64)[[0, 1, 2, 5]]


def relative_action_scale(plan: PushPlan, fraction: float = ACTION_SPEED_FRACTION) -> tuple[float, float]:
    """``(linear [m/s], yaw rate [rad/s])`` of action ±1: ``fraction`` × the plan's mean pusher speed and mean
    ``|ω|``."""
    return (float(fraction * np.linalg.norm(plan.ee_vel[:, :2], axis=1).mean()),
            float(fraction * np.abs(plan.twists[:, 2]).mean()))


def residual_twist(plan: PushPlan, k: int, action: np.ndarray,
                   scale: tuple[float, float] = (ACTION_LIN_SCALE, ACTION_ANG_SCALE)) -> np.ndarray:
    """Eq 16's ``v_e^θ`` ``(6,)``: action ``(3,)`` in [−1, 1] (push-frame ``n``, ``t``, yaw rate) scaled by
    ``scale`` = ``(linear [m/s], yaw rate [rad/s])`` (default the absolute :data:`ACTION_LIN_SCALE`,
    :data:`ACTION_ANG_SCALE`; :func:`relative_action_scale` for issue 32's), rotated to the world."""
    a = np.clip(np.asarray(action, dtype=np.float64), -1.0, 1.0)
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise InvalidInputError(f"residual action must be 3 finite numbers in [-1, 1], got {action!r}")
    lin = push_frame(plan, k).T @ (scale[0] * a[:2])
    return np.array([lin[0], lin[1], 0.0, 0.0, 0.0, scale[1] * a[2]])


def deviation(plan: PushPlan, k: int, obj_pose: np.ndarray) -> np.ndarray:
    """``(3,)`` object pose relative to the planned one, in the planned push frame ``(d_n, d_t [m], dθ [rad])``."""
    d = push_frame(plan, k) @ (np.asarray(obj_pose)[:2] - plan.poses[k, :2])
    dth = (obj_pose[2] - plan.poses[k, 2] + np.pi) % (2 * np.pi) - np.pi
    return np.array([d[0], d[1], dth])


def residual_active(dev: np.ndarray, pos_tol: float = DEVIATION_POS_TOL, ang_tol: float = DEVIATION_ANG_TOL) -> bool:
    """Algorithm 1 line 4: the object deviates from the ICR trajectory (position > ``pos_tol`` [m] or yaw >
    ``ang_tol`` [rad])."""
    return bool(np.hypot(dev[0], dev[1]) > pos_tol or abs(dev[2]) > ang_tol)


def observe(plan: PushPlan, k: int, step_force: np.ndarray, ee_twist: np.ndarray, obj_pose: np.ndarray) -> np.ndarray:
    """The residual policy's observation ``(OBS_DIM,)`` float32 (§III-A: actual and desired contact forces, EE
    velocity, object pose relative to the desired), scaled and clipped to ±:data:`OBS_CLIP`.

    Args:
        plan, k: plan and step. step_force: ``(2, 2)`` actual ``(λ_n, λ_t)`` per tip [N]. ee_twist: ``(6,)`` actual
            EE twist, world [m/s, rad/s]. obj_pose: ``(3,)`` actual object pose.
    """
    kk = min(k, len(plan.times) - 1)
    lin = push_frame(plan, kk) @ ee_twist[:2]
    des = np.stack([plan.f_n[kk], plan.f_t[kk]], -1)
    dev = deviation(plan, kk, obj_pose)
    obs = np.concatenate([np.asarray(step_force).reshape(-1) / FORCE_SCALE, des.reshape(-1) / FORCE_SCALE,
                          [lin[0] / VEL_SCALE, lin[1] / VEL_SCALE, ee_twist[5] / ANG_VEL_SCALE],
                          [dev[0] / POS_SCALE, dev[1] / POS_SCALE, dev[2] / ANG_SCALE], [k / len(plan.times)]])
    return np.clip(obs, -OBS_CLIP, OBS_CLIP).astype(np.float32)


def initial_state(arm: Arm, scene: PushScene, plan: PushPlan) -> PushState:
    """Pre-contact placement (§III-A): IK puts the pusher on the planned contact points; object at rest at
    ``plan.poses[0]``. Raises :class:`InvalidInputError` when the pose is out of reach."""
    q0 = arm.solve_ik(np.array(scene.home_q), plan.ee_pos[0], pushing_rotation(plan.push_yaw[0]))
    return PushState(q0, np.zeros(7), plan.poses[0].copy(), np.zeros(3))


def control_step(world, arm: Arm, plan: PushPlan, k: int, v_e: np.ndarray, dt: float,
                 kp: float = KP, kv: float = KV) -> PushStep:
    """Algorithm 1 lines 10–12: IK (eq 14) and joint PD (eq 15, + nominal ``c(q, q̇)``) stepped in ``world``.

    Raises:
        ArmSingularityError: singular Jacobian. SimulationDiverged: non-finite torque or state.
    """
    s = world.state
    pd = pd_from_ee_velocity(arm, s.q, v_e, dt, kp, kv)
    ff = arm.bias(s.q, s.qd)
    if not (np.all(np.isfinite(pd.q_des)) and np.all(np.isfinite(ff))):
        raise SimulationDiverged(f"non-finite PD target or feed-forward at step {k}")
    return world.step_pd(pd, ff)


Policy = Callable[[np.ndarray], np.ndarray]
"""Residual policy: observation ``(OBS_DIM,)`` → action ``(3,)`` in [−1, 1]."""


def run_episode(world, scene: PushScene, start, goal, profile: AngularProfile, duration: float, dt: float,
                policy: Policy | None = None, rng: np.random.Generator | None = None, arm: Arm | None = None,
                kp: float = KP, kv: float = KV,
                deviation_tols: tuple[float, float] = (DEVIATION_POS_TOL, DEVIATION_ANG_TOL)) -> EpisodeLog:
    """Run Algorithm 1 in ``world`` (:class:`HybridPushWorld` or :class:`RealPushWorld`) from ``start`` to ``goal``.

    Args:
        world: any world with ``reset(PushState)``, ``state`` and ``step_pd``. scene: the *nominal* scene the
            controller plans with. start, goal: ``(3,)`` object poses. profile, duration [s], dt [s]: timing.
        policy: residual policy (None: PD-only); one whose ``obs_dim`` is
            :data:`~contactkit.pushing.observation.HISTORY_DIM` gets the observation with history, one with an
            ``action_scale(plan)`` method its own action scale (:func:`residual_twist`). rng: unused by the
            deterministic controller; accepted so callers pass one generator through. arm: nominal arm model.
        kp, kv: eq 15 gains. deviation_tols: residual activation thresholds ``(position [m], yaw [rad])``.

    Returns:
        :class:`EpisodeLog`; failures (unreachable start, singularity, eq-13 infeasibility at the start, object
        lost, diverged simulation) stop the episode and are reported, never a NaN torque.
    """
    del rng
    arm = arm if arm is not None else Arm(scene)
    plan = plan_push(scene, start, goal, profile, duration, dt)
    rows, failure = [], None
    try:
        world.reset(initial_state(arm, scene, plan))
    except ContactkitError as exc:
        return make_log(plan, [], f"start: {exc}")
    history = getattr(policy, "obs_dim", OBS_DIM) != OBS_DIM
    scale = policy.action_scale(plan) if hasattr(policy, "action_scale") else (ACTION_LIN_SCALE, ACTION_ANG_SCALE)
    base, buffer = observe(plan, 0, np.zeros((N_TIPS, 2)), np.zeros(6), world.state.obj_pose), empty_history()
    offset = np.zeros(4)
    for k in range(len(plan.times)):
        obs = with_history(base, buffer) if history else base
        dev = deviation(plan, k, world.state.obj_pose)
        active = policy is not None and residual_active(dev, *deviation_tols)
        action = np.clip(np.asarray(policy(obs), dtype=np.float64), -1, 1) if active else np.zeros(3)
        try:
            v_res = residual_twist(plan, k, action, scale)
            v_e = nominal_twist(arm, plan, k, world.state.q, offset) + v_res
            step = control_step(world, arm, plan, k, v_e, dt, kp, kv)
            offset = integrate_offset(offset, v_res, dt)
        except ContactkitError as exc:
            failure = f"step {k}: {exc}"
            break
        ee_twist = arm.ee_jacobian(step.state.q) @ step.state.qd
        rows.append((step, ee_twist, action, active))
        buffer = push_history(buffer, base)
        base = observe(plan, k + 1, step.contact_force, ee_twist, step.state.obj_pose)
        if np.hypot(*deviation(plan, k, step.state.obj_pose)[:2]) > FAIL_POS_DEVIATION:
            failure = f"step {k}: object deviates more than {FAIL_POS_DEVIATION} m from the ICR trajectory"
            break
    return make_log(plan, rows, failure)


