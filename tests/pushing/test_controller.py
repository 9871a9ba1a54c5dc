"""The nominal pushing policy π_H and the episode runner (pushing paper Algorithm 1, eqs 11, 13–16)."""

import numpy as np
import pytest

from contactkit.control.icr import AngularProfile, ProfileKind
from contactkit.pushing import controller as ctl
from contactkit.pushing.arm import Arm
from contactkit.pushing.hybrid import HybridPushWorld
from contactkit.pushing.planar import face_distance, mean_radius, support_points, world_polygon
from contactkit.pushing.real import RealPushWorld
from contactkit.pushing.scene import GRAVITY_MPS2, ObjectKind, PushScene, object_polygon

DT = 0.01


@pytest.fixture(scope="module", params=list(ObjectKind))
def setup(request):
    scene = PushScene.for_object(request.param)
    return scene, Arm(scene)


def test_box_ground_wrench_closed_forms(setup):
    """Translation along the object's x: −μ m g along x, no torque; pure spin: −μ m g ρ (the hybrid model's law);
    a diagonal slide saturates both axes (box, not Coulomb): μ m g per axis."""
    scene, _ = setup
    mg = scene.mu_ground * scene.object_mass * GRAVITY_MPS2
    zero = np.zeros((1, 3))
    f = ctl.box_ground_wrench(scene, np.array([[0.03, 0.0, 0.0]]), zero)[0]
    np.testing.assert_allclose(f[:2], [-mg, 0.0], atol=1e-12)
    spin = ctl.box_ground_wrench(scene, np.array([[0.0, 0.0, 0.5]]), zero)[0]
    np.testing.assert_allclose(spin[2], -mg * mean_radius(object_polygon(scene)), rtol=1e-9)
    diag = ctl.box_ground_wrench(scene, np.array([[0.02, -0.02, 0.0]]), zero)[0]
    np.testing.assert_allclose(diag[:2], [-mg, mg], atol=1e-12)
    rest = ctl.box_ground_wrench(scene, zero, np.array([[1.0, 0.0, 0.0]]))[0]
    np.testing.assert_allclose(rest[:2], [-mg, 0.0], atol=1e-12)  # at rest: opposes the impending motion
    assert len(support_points(object_polygon(scene))) >= 3


def test_plan_forces_produce_wrench_and_start_touches_face(setup):
    """Eq 13 forces reproduce the eq 11 wrench where feasible; IK puts both tips on the pushed face at t = 0."""
    scene, arm = setup
    start = np.array(scene.object_pose)
    goal = start + np.array([0.05, 0.0, 0.0])
    plan = ctl.plan_push(scene, start, goal, AngularProfile(ProfileKind.TRAPEZOIDAL), 2.0, DT)
    assert plan.feasible.all() and len(plan.times) == 200
    wrench = np.stack([plan.f_n.sum(1), plan.f_t.sum(1), plan.tau_z.sum(1)], -1)  # face normal = body +x here
    np.testing.assert_allclose(wrench, plan.wrench, atol=1e-5)
    assert (plan.f_n >= 0).all() and (np.abs(plan.f_t) <= scene.mu_contact * plan.f_n + 1e-9).all()
    state = ctl.initial_state(arm, scene, plan)
    poly = world_polygon(object_polygon(scene), state.obj_pose)
    for tip in arm.tip_positions(state.q):
        d = face_distance(poly, tip[:2])
        assert d.distance == pytest.approx(scene.tip_radius, abs=1e-5)
        np.testing.assert_allclose(d.normal, [-1.0, 0.0], atol=1e-6)
        assert tip[2] == pytest.approx(scene.contact_height, abs=1e-5)


def test_residual_twist_scale_and_frame():
    """Action (1, 0, 0) is ACTION_LIN_SCALE along the planned push direction; (0, 0, −1) a yaw rate."""
    scene = PushScene.for_object(ObjectKind.CUBE)
    start = np.array(scene.object_pose)
    plan = ctl.plan_push(scene, start, start + np.array([0.05, 0.02, 0.4]), AngularProfile(), 1.0, DT)
    k = 50
    v = ctl.residual_twist(plan, k, np.array([1.0, 0.0, 0.0]))
    yaw = plan.push_yaw[k]
    np.testing.assert_allclose(v[:2], ctl.ACTION_LIN_SCALE * np.array([np.cos(yaw), np.sin(yaw)]), atol=1e-15)
    np.testing.assert_allclose(ctl.residual_twist(plan, k, np.array([0.0, 0.0, -1.0]))[5], -ctl.ACTION_ANG_SCALE)
    np.testing.assert_allclose(ctl.residual_twist(plan, k, np.array([5.0, 0.0, 0.0])), v)  # clipped to [−1, 1]


def test_pd_only_straight_push_reaches_goal(setup):
    """PD-only in the model, a 40 mm straight push in 2 s: the default gains (the grid search's best) end within
    2 mm of the goal with both tips pushing; soft gains (60, 1) trail it by a bounded offset and a larger error.
    Torques finite."""
    scene, arm = setup
    start = np.array(scene.object_pose)
    goal = start + np.array([0.04, 0.0, 0.0])
    log = ctl.run_episode(HybridPushWorld(scene, arm=arm), scene, start, goal, AngularProfile(), 2.0, DT, arm=arm)
    assert log.failure is None and len(log.times) == 200 and np.all(np.isfinite(log.joint_torque))
    assert np.hypot(*(log.obj_pose[-1, :2] - goal[:2])) < 0.002
    assert (log.force[50:, :, 0] > 0).all()  # both tips push while moving
    assert not log.active.any() and not log.action.any()  # PD-only: no residual
    soft = ctl.run_episode(HybridPushWorld(scene, arm=arm), scene, start, goal, AngularProfile(), 2.0, DT, arm=arm,
                           kp=60.0, kv=1.0)
    assert soft.failure is None and np.all(np.isfinite(soft.joint_torque))
    lag = goal[0] - soft.obj_pose[-1, 0]
    assert 0.003 < lag < 0.02 and abs(soft.obj_pose[-1, 1] - goal[1]) < 0.002
    err, err_soft = ctl.episode_errors(log, start, goal), ctl.episode_errors(soft, start, goal)
    assert err["translation_pct"] < err_soft["translation_pct"] < 60.0 and np.isnan(err["angle_pct"])


def test_real_world_runs_and_unreachable_start_is_reported():
    """The same runner drives the MuJoCo 'real' world (finite log); a start out of the arm's reach is a
    reported failure with an empty log, not an exception or a NaN torque."""
    scene = PushScene.for_object(ObjectKind.CUBE)
    start = np.array(scene.object_pose)
    log = ctl.run_episode(RealPushWorld(scene), scene, start, start + np.array([0.02, 0.0, 0.05]), AngularProfile(),
                          0.5, DT)
    assert log.failure is None and len(log.times) == 50 and np.isfinite(log.joint_torque).all()
    assert log.obj_pose[-1, 0] > start[0] + 0.002  # it was pushed
    far = np.array([3.0, 0.0, 0.0])
    bad = ctl.run_episode(HybridPushWorld(scene), scene, far, far + np.array([0.05, 0, 0]), AngularProfile(), 0.5, DT)
    assert bad.failure is not None and bad.failure.startswith("start") and len(bad.times) == 0


def test_residual_policy_used_only_when_deviating():
    """With a policy, the runner calls it only where the object deviates (Algorithm 1 line 4)."""
    scene = PushScene.for_object(ObjectKind.CUBE)
    start = np.array(scene.object_pose)
    calls = []

    def policy(obs):
        calls.append(obs)
        assert obs.shape == (ctl.OBS_DIM,) and obs.dtype == np.float32
        return np.array([0.5, 0.0, 0.0])

    goal = start + np.array([0.03, 0.0, 0.0])
    log = ctl.run_episode(HybridPushWorld(scene), scene, start, goal, AngularProfile(), 1.0, DT, policy=policy)
    assert len(calls) == int(log.active.sum())
    np.testing.assert_array_equal(log.action[~log.active], 0.0)
    calls.clear()
    always = ctl.run_episode(HybridPushWorld(scene), scene, start, goal, AngularProfile(), 1.0, DT, policy=policy,
                             deviation_tols=(0.0, 0.0))
    assert always.active[1:].all() and len(calls) >= 99
    np.testing.assert_array_equal(always.action[always.active], [[0.5, 0.0, 0.0]] * int(always.active.sum()))
    pd_only = ctl.run_episode(HybridPushWorld(scene), scene, start, goal, AngularProfile(), 1.0, DT)
    assert always.obj_pose[-1, 0] > pd_only.obj_pose[-1, 0] + 4e-3  # +5 mm/s for 1 s along the push: ~5 mm further
    dev = np.array([0.0015, 0.0, 0.0])
    assert ctl.residual_active(dev) and not ctl.residual_active(dev / 2)
    assert ctl.residual_active(np.array([0.0, 0.0, 1.5 * ctl.DEVIATION_ANG_TOL]))
