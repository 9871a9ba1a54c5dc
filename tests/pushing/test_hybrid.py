"""The hybrid MLCP model of the pushing paper (eqs 1–8, 11–12): Lemke oracle, box bounds, ground closed forms."""

import dataclasses

import numpy as np
import pytest

from contactkit.engine.reference.problem import velocity_after
from contactkit.engine.reference.solvers import BoxPGS, LemkeBoxSolver
from contactkit.errors import InvalidInputError
from contactkit.pushing.arm import Arm, JointPD, pd_from_ee_velocity
from contactkit.pushing.hybrid import N_TIPS, HybridPushWorld, PushState, assemble_problem
from contactkit.pushing.scene import GRAVITY_MPS2, ObjectKind, PushScene, object_polygon

BOUND_TOL = 1e-12
"""Slack [N s] on the box-friction bounds of a solved step."""

TIGHT = BoxPGS(tol=1e-10, max_iterations=20000)
"""PGS run to 1e-10 m/s for the closed-form oracles (the in-loop default stops at 1e-6 m/s)."""


@pytest.fixture(scope="module")
def cube():
    scene = PushScene.for_object(ObjectKind.CUBE)
    return scene, Arm(scene)


def _touching_state(scene, arm, rng, gap=0.0, theta=0.0, y=0.0, noise=0.0):
    """Arm at home (plus noise), the object's -x face ``gap`` [m] in front of the tips, rotated by ``theta``."""
    q = np.array(scene.home_q) + noise * rng.normal(size=7)
    tips = arm.tip_positions(q)
    half = -object_polygon(scene)[:, 0].min()
    x = tips[:, 0].mean() + scene.tip_radius + gap + half / np.cos(theta)
    return PushState(q, 10 * noise * rng.normal(size=7), np.array([x, scene.object_pose[1] + y, theta]),
                     np.zeros(3) if noise == 0 else 4 * noise * rng.normal(size=3))


@pytest.mark.parametrize("kind, seed", [(ObjectKind.CUBE, s) for s in range(5)] + [(ObjectKind.WEDGE, 5)])
def test_pgs_equals_lemke_on_random_contact_configurations(kind, seed):
    scene = PushScene.for_object(kind)
    arm = Arm(scene)
    rng = np.random.default_rng(seed)
    state = _touching_state(scene, arm, rng, gap=rng.uniform(-1e-3, 0.0), theta=rng.uniform(-0.15, 0.15),
                            y=rng.uniform(-0.01, 0.01), noise=5e-3)
    # The object slides into the tips, so that both press.
    state = dataclasses.replace(state, obj_vel=np.array([-0.05, 0.0, 0.0]) + 0.01 * rng.normal(size=3))
    push = sum(jac[0] * f for jac, f in zip(arm.tip_jacobians(state.q), rng.uniform(0.0, 3.0, N_TIPS), strict=True))
    torque = arm.bias(state.q, np.zeros(7)) + push + 0.3 * rng.normal(size=7)
    problem, layout = assemble_problem(scene, arm, state, torque)
    assert layout.tips == (0, 1) and layout.supports == len(object_polygon(scene))
    lemke = LemkeBoxSolver().solve(problem)
    pgs = BoxPGS(tol=1e-8, max_iterations=20000).solve(problem)
    assert lemke.converged and max(lemke.residuals.values()) <= 1e-10
    assert pgs.converged and max(pgs.residuals.values()) <= 1e-8
    k = len(layout.tips)
    assert lemke.impulses[:k, 0].max() > 1e-4  # the tips do press
    # Tip impulses and the velocities after the step are unique; the ground supports' friction split is not.
    assert np.abs(pgs.impulses[:k] - lemke.impulses[:k]).max() <= 1e-6 * max(1.0, np.abs(lemke.impulses).max())
    dv = velocity_after(problem, pgs.stacked) - velocity_after(problem, lemke.stacked)
    assert np.abs(dv[7:10]).max() < 1e-6 and np.abs(dv[:7]).max() < 1e-4


def test_box_friction_bounds_hold_along_a_push(cube):
    scene, arm = cube
    world = HybridPushWorld(scene, arm=arm)
    for _ in range(60):
        s = world.state
        pd = pd_from_ee_velocity(arm, s.q, np.array([0.04, 0.0, 0.0, 0.0, 0.0, 0.3]), scene.dt, 400.0, 20.0)
        step = world.step_pd(pd, arm.bias(s.q, np.zeros(7)))
        lam = world.last_solution.impulses
        assert np.all(lam[:, 0] >= 0.0)
        assert np.all(np.abs(lam[:, 1:]) <= world.last_problem.mu[:, None] * lam[:, :1] + BOUND_TOL)
        mu = scene.mu_contact
        assert np.all(step.contact_force[:, 0] >= 0.0)
        assert np.all(np.abs(step.contact_force[:, 1]) <= mu * step.contact_force[:, 0] + BOUND_TOL / scene.dt)
    assert step.in_contact.any() and world.state.obj_pose[0] > scene.object_pose[0]


def _free_object_world(scene, arm, obj_vel, yaw=0.0):
    world = HybridPushWorld(scene, arm=arm, solver=TIGHT)
    q = np.array(scene.home_q)
    world.reset(PushState(q, np.zeros(7), np.array([0.75, 0.2, yaw]), np.asarray(obj_vel, dtype=float)))
    return world


def test_sliding_object_decelerates_at_mu_g_per_axis(cube):
    """Eqs 11–12 with box ground friction: each planar velocity component loses μ g h per step until it stops."""
    scene, arm = cube
    v0 = np.array([0.20, -0.12, 0.0])
    world = _free_object_world(scene, arm, v0)
    dv = scene.mu_ground * GRAVITY_MPS2 * scene.dt
    for k in range(1, 12):
        world.step(arm.bias(world.state.q, np.zeros(7)))
        expect = np.sign(v0[:2]) * np.maximum(np.abs(v0[:2]) - k * dv, 0.0)
        assert world.state.obj_vel[:2] == pytest.approx(expect, abs=1e-9)


@pytest.mark.parametrize("yaw", [0.0, 0.7])
def test_spinning_cube_decelerates_at_the_uniform_pressure_friction_torque(cube, yaw):
    """Pure spin: ω̇ = -μ m g ρ / I_z with ρ = a (√2 + ln(1 + √2)) / 6 for a square base (Coulomb, uniform
    pressure), whatever the cube's yaw (friction boxes along the object's axes)."""
    scene, arm = cube
    world = _free_object_world(scene, arm, [0.0, 0.0, 3.0], yaw)
    world.step(arm.bias(world.state.q, np.zeros(7)))
    a, m = scene.object_size[0], scene.object_mass
    rho = a * (np.sqrt(2.0) + np.log(1.0 + np.sqrt(2.0))) / 6.0
    expect = 3.0 - scene.mu_ground * m * GRAVITY_MPS2 * rho / (m * a * a / 6.0) * scene.dt
    assert world.state.obj_vel[2] == pytest.approx(expect, abs=1e-9)


@pytest.mark.parametrize("ratio, moves", [(0.5, False), (2.0, True)])
def test_push_below_static_friction_holds_and_above_slides(cube, ratio, moves):
    """A pusher pressing with total force F: still for F < μ_ground m g, sliding for F > μ_ground m g (eq 11)."""
    scene, arm = cube
    world = HybridPushWorld(scene, arm=arm, solver=TIGHT)
    start = _touching_state(scene, arm, np.random.default_rng(0))
    world.reset(start)
    force = ratio * scene.mu_ground * scene.object_mass * GRAVITY_MPS2 / N_TIPS
    for _ in range(20):
        q, qd = world.state.q, world.state.qd
        push = sum(jac[0] * force for jac in arm.tip_jacobians(q))  # J_iᵀ (F e_x) per tip
        world.step(arm.bias(q, qd) + push)
    moved = world.state.obj_pose[0] - start.obj_pose[0]
    if moves:
        assert moved > 1e-3
    else:
        assert abs(moved) < 1e-9 and np.abs(world.state.obj_vel).max() < 1e-9


def test_bad_torque_is_refused(cube):
    scene, arm = cube
    with pytest.raises(InvalidInputError, match="torque"):
        HybridPushWorld(scene, arm=arm).step(np.full(7, np.nan))


def test_unconverged_pgs_steps_fall_back_to_lemke(cube):
    scene, arm = cube
    state = _touching_state(scene, arm, np.random.default_rng(3))
    state = dataclasses.replace(state, obj_vel=np.array([-0.05, 0.0, 0.0]))
    capped = HybridPushWorld(scene, arm=arm, solver=BoxPGS(tol=1e-12, max_iterations=1))
    exact = HybridPushWorld(scene, arm=arm, solver=LemkeBoxSolver())
    capped.reset(state)
    exact.reset(state)
    a, b = capped.step(arm.bias(state.q, state.qd)), exact.step(arm.bias(state.q, state.qd))
    assert capped.fallbacks == 1 and a.contact_force[:, 0].max() > 0.0
    assert a.contact_force == pytest.approx(b.contact_force, abs=1e-12)


def test_saturating_pd_is_clipped_to_the_torque_limits(cube):
    scene, arm = cube
    world = HybridPushWorld(scene, arm=arm)
    q = np.array(scene.home_q)
    pd = JointPD(np.full(7, 1e4), np.full(7, 10.0), q + 0.5, np.zeros(7))
    step = world.step_pd(pd)
    assert np.abs(step.torque).max() == pytest.approx(arm.torque_limit.max())
    assert np.all(np.abs(step.torque) <= arm.torque_limit)
    assert world.steps == 1


def test_uniform_friction_patches_scale_the_ground_friction(cube):
    """A patch grid of scale 0.5 under the whole path is a table of 0.5 μ_ground: each planar velocity component
    loses 0.5 μ g h per step (the closed form above, at the patched coefficient)."""
    from contactkit.pushing.patches import FrictionPatches

    scene, _ = cube
    patched = dataclasses.replace(scene, friction_patches=FrictionPatches((0.5, 0.0), 0.1, ((0.5,) * 4,) * 5))
    arm = Arm(patched)
    v0 = np.array([0.20, -0.12, 0.0])
    world = _free_object_world(patched, arm, v0)
    dv = 0.5 * scene.mu_ground * GRAVITY_MPS2 * scene.dt
    for k in range(1, 8):
        world.step(arm.bias(world.state.q, np.zeros(7)))
        expect = np.sign(v0[:2]) * np.maximum(np.abs(v0[:2]) - k * dv, 0.0)
        assert world.state.obj_vel[:2] == pytest.approx(expect, abs=1e-9)


def _push_straight(scene, steps=60):
    arm = Arm(scene)
    world = HybridPushWorld(scene, arm=arm)
    for _ in range(steps):
        s = world.state
        pd = pd_from_ee_velocity(arm, s.q, np.array([0.04, 0.0, 0.0, 0.0, 0.0, 0.0]), scene.dt, 400.0, 20.0)
        world.step_pd(pd, arm.bias(s.q, np.zeros(7)))
    return world.state


def test_centre_of_mass_offset_turns_a_straight_push():
    """Two tips pushing along +x on the face's centre: relative to the push with the centre of mass at the geometric
    centre, an offset to +y turns the object counter-clockwise and one to −y clockwise (τ = c_y F_x about the centre
    of mass), by about the same amount; the tips' friction and the ground hold most of it. At rest, the reported
    (frame) pose is the reset one (frame → centre of mass → frame)."""
    scene = PushScene.for_object(ObjectKind.CUBE)
    yaw = {c: _push_straight(dataclasses.replace(scene, com_offset=(0.0, c))).obj_pose[2] for c in (-0.005, 0.0, 0.005)}
    up, down = yaw[0.005] - yaw[0.0], yaw[-0.005] - yaw[0.0]
    assert up > 2e-5 and down < -2e-5 and up == pytest.approx(-down, rel=0.5)
    offset = dataclasses.replace(scene, com_offset=(0.004, -0.003))
    world = HybridPushWorld(offset)
    start = PushState(np.array(scene.home_q), np.zeros(7), np.array([0.75, 0.2, 0.4]), np.zeros(3))
    world.reset(start)
    world.step(world.arm.bias(start.q, np.zeros(7)))
    assert world.state.obj_pose == pytest.approx(start.obj_pose, abs=1e-12)
