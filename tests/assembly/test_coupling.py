"""Virtual coupling (§V-A): closed forms of the implicit spring-damper on a free tool, passivity, frames."""

import numpy as np
import pytest

from contactkit.assembly.coupling import (
    CouplingGains,
    coupled_free_velocity,
    coupling_wrench,
    critical_gains,
    default_gains,
    pose_error,
)
from contactkit.assembly.task import REFERENCE_DT, SIM_DT
from contactkit.engine.params import Integrator
from contactkit.engine.reference import RigidBody, advance_pose, generalized_velocity, kinetic_energy
from contactkit.errors import InvalidInputError
from contactkit.rotations import quat_to_mat, rotvec_to_quat
from contactkit.state import BodyState

BODY = RigidBody(0.32, np.diag([1.45e-4, 1.45e-4, 0.99e-4]), np.array([0.0, 0.0, 0.03]))


def _run(body, state, sp_pos, sp_quat, gains, dt, n, method=Integrator.PASSIVE_MIDPOINT):
    out = [state]
    for _ in range(n):
        v, _ = coupled_free_velocity(body, state, sp_pos, sp_quat, gains, dt, method)
        state = advance_pose(body, state, v, dt, method)
        out.append(state)
    return out


def test_one_step_matches_the_trapezoidal_closed_form():
    gains = CouplingGains(1e4, 2.0, 30.0, 0.05)
    state = BodyState.at_rest([0.001, -0.002, 0.05]).replace(lin_vel=np.array([0.01, 0.0, -0.02]))
    sp = np.array([0.0, 0.0, 0.04])
    v, w = coupled_free_velocity(BODY, state, sp, np.array([1.0, 0, 0, 0]), gains, SIM_DT)
    e = sp - np.asarray(state.pos)  # identity orientation: COM error = origin error
    m, h, k = BODY.mass, SIM_DT, gains.stiffness
    c = k * h / 2 + gains.damping
    expected = ((m - h * c / 2) * np.asarray(state.lin_vel) + h * k * e) / (m + h * c / 2)
    np.testing.assert_allclose(v[:3], expected, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(w[:3], m * (expected - state.lin_vel) / h, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(v[3:], 0.0, atol=1e-15)


@pytest.mark.parametrize("dt", [REFERENCE_DT, SIM_DT])
def test_critically_damped_free_tool_converges_without_overshoot(dt):
    """1-D oracle: x(t) = x0 (1 + ωt) e^{-ωt}; the discrete trajectory stays on one side of the setpoint."""
    gains = critical_gains(BODY, 1e4, 2.0)
    x0 = 0.004
    traj = _run(BODY, BodyState.at_rest([x0, 0.0, 0.0]), np.zeros(3), np.array([1.0, 0, 0, 0]), gains, dt,
                int(round(0.1 / dt)))
    x = np.array([s.pos[0] for s in traj])
    assert np.all(x >= -1e-12), f"overshoot {x.min()}"
    assert np.all(np.diff(x) <= 1e-15)
    omega = np.sqrt(1e4 / BODY.mass)
    t = np.arange(len(x)) * dt
    closed = x0 * (1 + omega * t) * np.exp(-omega * t)
    tol = 0.02 * x0 if dt == REFERENCE_DT else 0.3 * x0  # O((hω)²) of the trapezoidal rule
    assert np.abs(x - closed).max() < tol
    assert abs(x[-1]) < 1e-6


def test_rotation_converges_without_overshoot_about_the_com():
    gains = critical_gains(BODY, 1e4, 2.0)
    q0 = rotvec_to_quat(np.array([0.0, 0.1, 0.0]))
    com_sp = np.zeros(3) + BODY.com_body
    traj = _run(BODY, BodyState.at_rest(com_sp - quat_to_mat(q0) @ BODY.com_body, q0), np.zeros(3),
                np.array([1.0, 0, 0, 0]), gains, REFERENCE_DT, 150)
    angles = [pose_error(BODY, s, np.zeros(3), np.array([1.0, 0, 0, 0]))[1][1] for s in traj]
    coms = [np.asarray(s.pos) + quat_to_mat(s.quat) @ BODY.com_body for s in traj]
    assert np.all(np.array(angles) <= 1e-12) and abs(angles[-1]) < 1e-4
    np.testing.assert_allclose(coms, np.broadcast_to(com_sp, (len(coms), 3)), atol=1e-12)  # pure torque


def test_undamped_coupling_conserves_energy_and_damping_dissipates_it():
    def energy(gains, s):
        e, phi = pose_error(BODY, s, np.zeros(3), np.array([1.0, 0, 0, 0]))
        v = generalized_velocity(BODY, s)
        return kinetic_energy(BODY, v) + 0.5 * gains.stiffness * e @ e + 0.5 * gains.angular_stiffness * phi @ phi

    start = BodyState.at_rest([0.003, -0.001, 0.002]).replace(lin_vel=np.array([0.0, 0.05, 0.0]))
    free = CouplingGains(1e4, 0.0, 0.0, 0.0)
    e = [energy(free, s) for s in _run(BODY, start, np.zeros(3), np.array([1.0, 0, 0, 0]), free, SIM_DT, 200)]
    np.testing.assert_allclose(e, e[0], rtol=1e-9)
    damped = critical_gains(BODY, 1e4, 2.0)
    e = [energy(damped, s) for s in _run(BODY, start, np.zeros(3), np.array([1.0, 0, 0, 0]), damped, SIM_DT, 50)]
    assert np.all(np.diff(e) <= 1e-15)


def test_explicit_wrench_is_the_spring_damper_law():
    gains = CouplingGains(100.0, 3.0, 5.0, 0.2)
    q = rotvec_to_quat(np.array([0.0, 0.0, 0.2]))
    state = BodyState.at_rest([0.0, 0.0, 0.01], q).replace(ang_vel=np.array([0.0, 0.0, 1.0]))
    w = coupling_wrench(BODY, state, np.zeros(3), np.array([1.0, 0, 0, 0]), gains)
    np.testing.assert_allclose(w[3:], [0.0, 0.0, 3.0 * -0.2 - 0.2 * 1.0], atol=1e-12)
    np.testing.assert_allclose(w[:3], [0.0, 0.0, 100.0 * -0.01], atol=1e-12)


def test_bad_input_is_refused():
    with pytest.raises(InvalidInputError, match="damping"):
        CouplingGains(1.0, 1.0, -1.0, 0.0)
    with pytest.raises(InvalidInputError, match="setpoint_quat"):
        coupled_free_velocity(BODY, BodyState.at_rest([0, 0, 0.0]), np.zeros(3), np.array([2.0, 0, 0, 0]),
                              CouplingGains(1, 1, 1, 1), 1e-3)


def test_default_gains_are_critically_damped_and_stable_at_sim_dt():
    from contactkit.assembly import bolting_task, peg_in_hole_task

    for task in (peg_in_hole_task(depth_net=None), bolting_task(depth_net=None)):
        g = default_gains(task)
        assert SIM_DT * np.sqrt(g.stiffness / task.body.mass) < 2.0
        assert g.damping == pytest.approx(2 * np.sqrt(g.stiffness * task.body.mass))


@pytest.mark.parametrize("method", [Integrator.PASSIVE_MIDPOINT, Integrator.SEMI_IMPLICIT_EULER])
def test_contact_impulse_through_the_effective_mass_satisfies_the_coupled_step(method):
    """V⁺ = V_free + M_eff⁻¹ p solves M(V⁺ - V)/h = coupling(V⁺) + p/h (translation, with an impulse p)."""
    from contactkit.assembly.coupling import applied_coupling_wrench, coupled_inverse_mass

    gains = critical_gains(BODY, 1e4, 2.0)
    state = BodyState.at_rest([0.001, 0.0, 0.002]).replace(lin_vel=np.array([0.0, 0.02, -0.05]))
    sp, sq, h = np.zeros(3), np.array([1.0, 0, 0, 0]), SIM_DT
    v_free, _ = coupled_free_velocity(BODY, state, sp, sq, gains, h, method)
    impulse = np.array([0.0, 0.01, 0.3, 0.0, 0.0, 0.0])  # [N·s], through the COM
    v_next = v_free + coupled_inverse_mass(BODY, gains, h, method) @ impulse
    force = applied_coupling_wrench(BODY, state, v_next, sp, sq, gains, h, method)[:3]
    np.testing.assert_allclose(BODY.mass * (v_next[:3] - state.lin_vel) / h, force + impulse[:3] / h, rtol=1e-12)
    # a resting contact holds the spring: V = V⁺ = 0 needs the impulse h·k·e and the coupling reads k·e
    rest = BodyState.at_rest([0.0, 0.0, 0.003])
    v_free, _ = coupled_free_velocity(BODY, rest, sp, sq, gains, h, method)
    hold = -np.linalg.solve(coupled_inverse_mass(BODY, gains, h, method), v_free)
    np.testing.assert_allclose(hold[:3], [0.0, 0.0, h * 1e4 * 0.003], rtol=1e-12)
    np.testing.assert_allclose(applied_coupling_wrench(BODY, rest, np.zeros(6), sp, sq, gains, h, method),
                               [0.0, 0.0, -30.0, 0.0, 0.0, 0.0], atol=1e-12)
