"""Solver + integrator end to end on hand-made box-on-plane contact sets (no collision detection).

Oracles: a block on an incline sticks iff tan θ ≤ μ and otherwise slides at g(sin θ - μ cos θ); a block
sliding on a flat plane decelerates at μg; a resting block's contact wrench is its weight; a dropped block
comes to rest on the plane without sinking into it.
"""

from __future__ import annotations

import numpy as np
import pytest

from contactkit.engine.reference import (
    BoxPGS,
    ConeSOR,
    Integrator,
    LemkeBoxSolver,
    PositionCorrection,
    generalized_velocity,
    kinetic_energy,
    step_rigid_body,
)
from contactkit.rotations import rotvec_to_quat
from contactkit.state import BodyState

from ._scenes import box_body, box_corners, incline, plane_contacts, resting_box_on_incline

G = 9.81
GRAVITY = np.array([0.0, 0.0, -G])
HALF = np.array([0.1, 0.08, 0.03])
MU = 0.4


def _simulate(body, state, contacts_of, solver, steps, dt, method=Integrator.PASSIVE_MIDPOINT, correction=None):
    """Step ``steps`` times, warm-starting each solve from the previous impulses; returns states, wrenches."""
    states, wrenches, warm = [state], [], None
    for _ in range(steps):
        contacts = contacts_of(state)
        start = warm if warm is not None and warm.shape[0] == 3 * contacts.count else None
        out = step_rigid_body(
            body, state, contacts, dt, solver, method, gravity=GRAVITY, correction=correction, initial=start
        )
        assert out.solution.converged, out.solution.residuals
        warm, state = out.solution.stacked, out.state
        states.append(state)
        wrenches.append(out.wrench)
    return states, np.array(wrenches)


@pytest.mark.parametrize(
    "solver, ratio",
    [
        (ConeSOR(max_iterations=2000), 0.5),
        (ConeSOR(max_iterations=2000), 0.99),
        (ConeSOR(max_iterations=2000), 1.01),
        (ConeSOR(max_iterations=2000), 1.5),
        (BoxPGS(), 0.99),
        (BoxPGS(), 1.0),
        (BoxPGS(), 1.01),
        (LemkeBoxSolver(), 0.99),
        (LemkeBoxSolver(), 1.01),
    ],
)
def test_block_on_incline_sticks_iff_tan_theta_le_mu(solver, ratio):
    theta = np.arctan(ratio * MU)
    normal, down, _ = incline(theta)
    body, state = resting_box_on_incline(theta, HALF)
    steps, dt = 40, 2e-3

    def contacts_of(s):
        return plane_contacts(box_corners(HALF, s), normal, 0.0, MU, tangent=down)

    states, _ = _simulate(body, state, contacts_of, solver, steps, dt)
    travel = (states[-1].pos - state.pos) @ down
    if ratio <= 1.0:
        assert abs(travel) < 1e-9 and np.linalg.norm(states[-1].lin_vel) < 1e-8
    else:
        accel = states[-1].lin_vel @ down / (steps * dt)
        expected = G * (np.sin(theta) - MU * np.cos(theta))
        assert accel == pytest.approx(expected, rel=1e-2)
        assert travel == pytest.approx(0.5 * expected * (steps * dt) ** 2, rel=1e-2)
    assert np.linalg.norm(states[-1].ang_vel) < 1e-8  # neither tips nor yaws


@pytest.mark.parametrize("method", [Integrator.PASSIVE_MIDPOINT, Integrator.SEMI_IMPLICIT_EULER])
@pytest.mark.parametrize("solver", [ConeSOR(), BoxPGS()], ids=["cone_sor", "box_pgs"])
def test_sliding_block_decelerates_at_mu_g(solver, method):
    heading = np.array([np.cos(0.7), np.sin(0.7), 0.0])  # not along a box edge or a tangent axis
    body = box_body(1.5, HALF)
    state = BodyState(np.array([0.0, 0.0, HALF[2]]), np.array([1.0, 0, 0, 0]), 1.2 * heading, np.zeros(3))
    steps, dt = 50, 2e-3

    def contacts_of(s):
        return plane_contacts(box_corners(HALF, s), [0.0, 0.0, 1.0], 0.0, MU, tangent=heading)

    states, wrenches = _simulate(body, state, contacts_of, solver, steps, dt, method)
    decel = (1.2 - states[-1].lin_vel @ heading) / (steps * dt)
    assert decel == pytest.approx(MU * G, rel=1e-2)
    assert np.linalg.norm(np.cross(states[-1].lin_vel, heading)) < 1e-9  # keeps its heading
    assert np.allclose(wrenches[:, :2] @ heading[:2], -MU * body.mass * G, rtol=1e-6)  # friction = μmg


def test_resting_block_reads_its_weight():
    body = box_body(2.0, HALF)
    state = BodyState.at_rest([0.0, 0.0, HALF[2]], rotvec_to_quat(np.array([0.0, 0.0, 0.4])))

    def contacts_of(s):
        return plane_contacts(box_corners(HALF, s), [0.0, 0.0, 1.0], 0.0, MU)

    states, wrenches = _simulate(body, state, contacts_of, ConeSOR(), 10, 1e-3)
    assert np.allclose(wrenches, [0.0, 0.0, body.mass * G, 0.0, 0.0, 0.0], atol=1e-6)
    assert np.allclose(states[-1].pos, state.pos, atol=1e-12)


# An impact that rocks the box onto an edge is a degenerate (rank-deficient) problem on which Gauss-Seidel
# converges sublinearly; the practical tolerance of 1e-6 m/s [2 nm of travel per step] is met within the cap.
@pytest.mark.parametrize(
    "solver", [ConeSOR(tol=1e-6, max_iterations=2000), LemkeBoxSolver()], ids=["cone_sor", "lemke"]
)
def test_dropped_block_settles_without_sinking_or_gaining_energy(solver):
    body = box_body(1.0, HALF)
    tilt = rotvec_to_quat(np.array([0.15, -0.1, 0.3]))
    low = box_corners(HALF, BodyState.at_rest(np.zeros(3), tilt))[:, 2].min()
    state = BodyState(np.array([0.0, 0.0, 5e-3 - low]), tilt, np.array([0.2, 0.0, 0.0]), np.array([0.0, 0.0, 1.0]))
    steps, dt, warm = 250, 2e-3, None
    energy = kinetic_energy(body, generalized_velocity(body, state)) + body.mass * G * state.pos[2]
    lowest = np.inf
    for _ in range(steps):
        contacts = plane_contacts(box_corners(HALF, state), [0.0, 0.0, 1.0], 0.0, MU, margin=0.02)
        start = warm if warm is not None and warm.shape[0] == 3 * contacts.count else None
        out = step_rigid_body(
            body, state, contacts, dt, solver, gravity=GRAVITY, correction=PositionCorrection(), initial=start
        )
        assert out.solution.converged, out.solution.residuals
        state, warm = out.state, out.solution.stacked
        new = kinetic_energy(body, generalized_velocity(body, state)) + body.mass * G * state.pos[2]
        # Exact solutions dissipate (ΔE ≤ 0); a solve to tolerance tol [m/s] may err by at most tol·Σ|λ| [J].
        assert new - energy <= 1e-12 + solver.tol * np.abs(warm).sum()
        energy = new
        lowest = min(lowest, box_corners(HALF, state)[:, 2].min())
    assert lowest > -PositionCorrection().slop - 1e-9  # never deeper than the correction's slop
    assert np.linalg.norm(state.lin_vel) < 1e-6 and np.linalg.norm(state.ang_vel) < 1e-5
    assert abs(box_corners(HALF, state)[:, 2].min()) <= PositionCorrection().slop + 1e-9  # resting, not hovering
