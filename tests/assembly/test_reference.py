"""The 1 ms reference step: a peg pressed on the floor balances the coupling without sinking; no energy gain."""

import numpy as np
import pytest

from contactkit.assembly import peg_in_hole_task
from contactkit.assembly.coupling import CouplingGains, coupled_inverse_mass, default_gains
from contactkit.assembly.reference import PENETRATION_SLOP, REFERENCE_TOL, reference_step
from contactkit.engine.reference import SolveStatus, generalized_velocity, kinetic_energy
from contactkit.state import BodyState

IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])


@pytest.fixture(scope="module")
def peg():
    return peg_in_hole_task(depth_net=None)


def _run(task, state, sp, sq, gains, n):
    out, warm = [], None
    for _ in range(n):
        step = reference_step(task, state, sp, sq, gains, warm)
        out.append(step)
        state, warm = step.state, step.warm
    return out


def test_peg_pressed_on_the_floor_balances_the_coupling(peg):
    gains = default_gains(peg)
    push = 3e-3
    steps = _run(peg, BodyState.at_rest([0.0, 0.0, 2e-4]), np.array([0.0, 0.0, -push]), IDENTITY, gains, 120)
    last = steps[-1]
    assert all(s.status is SolveStatus.CONVERGED for s in steps)
    # at rest on the floor: the contact wrench balances the coupling, which is the spring's k·e
    np.testing.assert_allclose(last.wrench + last.coupling, 0.0, atol=1e-6)
    assert last.wrench[2] == pytest.approx(gains.stiffness * (push + last.state.pos[2]), rel=1e-6)
    assert last.wrench[2] > 25.0
    # no penetration growth: the floor holds the tip within the projection's slop
    pens = np.array([s.max_penetration for s in steps[40:]])
    assert pens.max() <= PENETRATION_SLOP * 1.05 and pens[-1] <= pens[0] + 1e-9
    assert -last.state.pos[2] <= PENETRATION_SLOP * 1.05


def test_energy_never_grows_without_drive(peg):
    free = CouplingGains(0.0, 0.0, 0.0, 0.0)
    start = BodyState.at_rest([0.0, 0.0, 2e-4]).replace(
        lin_vel=np.array([0.0, 0.0, -0.02]), ang_vel=np.array([0.0, 0.0, 3.0]))  # spinning down onto the floor
    steps = _run(peg, start, np.zeros(3), IDENTITY, free, 60)
    energy = [kinetic_energy(peg.body, generalized_velocity(peg.body, start))]
    energy += [kinetic_energy(peg.body, generalized_velocity(peg.body, s.state)) for s in steps]
    assert sum(s.n_contacts > 0 for s in steps) > 10  # it did hit the floor and the wall
    # the solve stops within REFERENCE_TOL [m/s]: energy may be off by about m·tol², not more
    assert np.all(np.diff(energy) <= 1e-12 * energy[0] + peg.body.mass * REFERENCE_TOL**2)
    assert energy[-1] < 0.9 * energy[0]  # the inelastic landing took the fall's energy
    assert 0.0 < steps[-1].state.ang_vel[2] < 2.9  # and its friction impulse slowed the spin (3 rad/s before)
    assert all(s.status is SolveStatus.CONVERGED for s in steps)


def test_contact_impulse_goes_through_the_coupled_effective_mass(peg):
    gains = default_gains(peg)
    m_eff = np.linalg.inv(coupled_inverse_mass(peg.body, gains, 1e-3))
    assert m_eff[0, 0] > peg.body.mass  # the implicit damper and spring stiffen the response
    np.testing.assert_allclose(m_eff, m_eff.T, atol=1e-15)
