"""Time-step stability of the impedance controller: the step maps' spectral radius crosses 1 exactly at the
closed-form bounds of semi-implicit Euler, and the check refuses what cannot be stable and nothing the presets use."""

import dataclasses
import math

import numpy as np
import pytest

from contactkit.control.stability import StepScheme, check_timestep, step_map, unstable_axes
from contactkit.errors import InvalidInputError
from contactkit.physics import WorldParams, load_world
from contactkit.tasks import peg_in_hole, random_training_scene

BOUND_RTOL = 1e-6
"""Steps this far (relative) on either side of a closed-form bound are stable / unstable."""


def radius(h, m, k, d, scheme):
    return float(np.abs(np.linalg.eigvals(step_map(h, m, k, d, scheme))).max())


@pytest.mark.parametrize("m, k, d", [(0.3, 400.0, 21.9), (1.5e-5, 4.0, 0.038), (2.0, 1.0, 0.0), (0.1, 0.0, 3.0)])
@pytest.mark.parametrize("scheme", [StepScheme.IMPLICIT_DAMPING, StepScheme.EXPLICIT_DAMPING])
def test_spectral_radius_crosses_one_at_the_closed_form_bound(m, k, d, scheme):
    """Implicit damping: stable iff h² K < 4 M + 2 h D; explicit: iff h² K + 2 h D < 4 M (module docstring)."""
    root = math.sqrt(d * d + 4.0 * k * m)
    if scheme is StepScheme.IMPLICIT_DAMPING:
        if k == 0.0:
            assert radius(1e3, m, k, d, scheme) <= 1.0 + 1e-12  # pure implicit damping: unconditionally stable
            return
        bound = (d + root) / k
    else:
        bound = 4.0 * m / (d + root)
    assert radius(bound * (1 - BOUND_RTOL), m, k, d, scheme) <= 1.0 + 1e-9
    assert radius(bound * (1 + BOUND_RTOL), m, k, d, scheme) > 1.0 + 1e-9


def test_rk4_undamped_oscillator_bound_is_2_sqrt_2():
    omega = 50.0
    bound = 2.0 * math.sqrt(2.0) / omega
    assert radius(bound * (1 - 1e-6), 1.0, omega**2, 0.0, StepScheme.RK4) <= 1.0
    assert radius(bound * (1 + 1e-6), 1.0, omega**2, 0.0, StepScheme.RK4) > 1.0


def test_step_map_matches_one_step_of_the_scheme():
    h, m, k, d, x, v = 0.01, 0.5, 30.0, 2.0, 0.2, -0.3
    v_imp = (v - h * k / m * x) / (1 + h * d / m)
    assert step_map(h, m, k, d, StepScheme.IMPLICIT_DAMPING) @ [x, v] == pytest.approx([x + h * v_imp, v_imp])
    v_exp = v - h * (k * x + d * v) / m
    assert step_map(h, m, k, d, StepScheme.EXPLICIT_DAMPING) @ [x, v] == pytest.approx([x + h * v_exp, v_exp])


@pytest.mark.parametrize("preset", ["nominal", "target", "target-parametric"])
@pytest.mark.parametrize("integrator", ["implicitfast", "implicit", "Euler", "RK4"])
def test_presets_pass_and_a_long_step_is_refused(preset, integrator):
    params = dataclasses.replace(load_world(preset), integrator=integrator)
    for scene in (peg_in_hole("hexagon", 1e-3), random_training_scene(np.random.default_rng(0))):
        check_timestep(scene, params, "here")
        with pytest.raises(InvalidInputError, match="here: world.timestep 0.5 s cannot be stable"):
            check_timestep(scene, dataclasses.replace(params, timestep=0.5), "here")


def test_euler_without_armature_twists_the_peg_unstably():
    """Euler's explicit actuator damping on the bare peg's twist (D / I_zz ≈ 2500 1/s) needs h < 0.8 ms."""
    params = WorldParams(wrist_armature=0.0, integrator="Euler")
    assert [name for name, _ in unstable_axes(peg_in_hole(), params)] == ["rx", "ry", "rz"]
    assert unstable_axes(peg_in_hole(), dataclasses.replace(params, timestep=5e-4)) == []
    assert unstable_axes(peg_in_hole(), dataclasses.replace(params, integrator="implicitfast")) == []
