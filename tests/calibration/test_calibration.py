"""Calibration: the unit-cube map of the parameters, and an oracle — logs of a world whose tool is heavier than the
scene says are replayed best at the true mass, which the search finds."""

import dataclasses

import numpy as np
import pytest

from contactkit.calibration import CalibrationBudget, calibrate, from_unit, param_names, to_unit
from contactkit.calibration.controller import CONTROLLER, apply_controller
from contactkit.calibration.realcell import MODE_CAP_HZ, REALCELL
from contactkit.calibration.space import PAPER_CONTACT, PAPER_FREE, PARAMS, current
from contactkit.data.collect import CollectSpec, collect
from contactkit.data.logged import load_logged
from contactkit.errors import InvalidInputError
from contactkit.mujoco.realcell import compliance_modes
from contactkit.mujoco.world import MujocoWorld
from contactkit.physics import load_world
from contactkit.tasks import peg_in_hole

SCENE = peg_in_hole("hexagon", 1e-3)


def test_unit_cube_round_trips_every_parameter():
    u = np.linspace(0.05, 0.95, len(PAPER_CONTACT) + 1)
    names = PAPER_CONTACT + ("friction_scale",)
    world = from_unit(load_world("nominal"), SCENE, names, u)
    np.testing.assert_allclose(to_unit(world, SCENE, names), u, atol=1e-9)
    values = current(world, SCENE)
    for name in names:
        spec = PARAMS[name]
        lo, hi = (spec.lo * SCENE.tool.mass, spec.hi * SCENE.tool.mass) if spec.relative else (spec.lo, spec.hi)
        assert lo <= values[name] <= hi


def test_nominal_values_sit_inside_the_bounds_and_map_back():
    nominal = load_world("nominal")
    u = to_unit(nominal, SCENE, PAPER_FREE)
    assert np.all((u >= 0) & (u <= 1))
    world = from_unit(nominal, SCENE, PAPER_FREE, u)
    assert world.tool_mass == pytest.approx(SCENE.tool.mass)
    assert world.wrist_armature == pytest.approx(nominal.wrist_armature)
    # no damping lies below the log-scaled range: it maps to the range's floor, a negligible damping
    assert world.linear_damping == pytest.approx(PARAMS["linear_damping"].lo)
    assert world.angular_damping == pytest.approx(PARAMS["angular_damping"].lo)


def test_parameter_sets_and_unknown_names():
    assert param_names("paper") == (PAPER_FREE, PAPER_CONTACT)
    assert param_names("paper+friction")[1][-1] == "friction_scale"
    assert param_names("tool_mass,solref_timeconst") == (("tool_mass",), ("tool_mass", "solref_timeconst"))
    with pytest.raises(InvalidInputError, match="unknown"):
        param_names("mass,banana")


def _logs(root, world, seeds, fit_episodes):
    """``{"fit", "held"}`` dataset paths of random-spline logs in ``world`` (60 steps; one held-out episode)."""
    paths = {}
    for name, seed, episodes in (("fit", seeds[0], fit_episodes), ("held", seeds[1], 1)):
        paths[name] = str(root / f"{name}.h5")
        collect(CollectSpec(policy="random-spline", episodes=episodes, steps=60, seed=seed, world=world), paths[name])
    return paths


@pytest.fixture(scope="module")
def heavy_logs(tmp_path_factory):
    """Logs of the nominal world with a 1.4x heavier tool (the controller compensates the scene's weight)."""
    world = dataclasses.replace(load_world("nominal"), tool_mass=1.4 * SCENE.tool.mass)
    return _logs(tmp_path_factory.mktemp("calibration"), world, (21, 22), 3)


def test_calibration_finds_the_true_mass(heavy_logs):
    fit, held = load_logged([heavy_logs["fit"]]), load_logged([heavy_logs["held"]])
    budget = CalibrationBudget(coarse=8, local=25, segments=24, horizon=8)
    result = calibrate(fit.episodes, held.episodes, load_world("nominal"), (("tool_mass",), ("tool_mass",)),
                       fit.action_mode, budget, np.random.default_rng(0))
    assert result.world.tool_mass == pytest.approx(1.4 * SCENE.tool.mass, rel=0.05)
    for kind in result.held_out.values():
        assert kind["calibrated"]["pos_rmse_m"] < 0.5 * kind["start"]["pos_rmse_m"]


def test_a_world_with_unmodelled_effects_is_refused_as_start(heavy_logs):
    fit = load_logged([heavy_logs["fit"]])
    with pytest.raises(InvalidInputError, match="command_latency"):
        calibrate(fit.episodes, fit.episodes, load_world("target"), (("tool_mass",), ("tool_mass",)),
                  fit.action_mode, CalibrationBudget(), np.random.default_rng(0))


def test_the_full_set_adds_the_real_cell_fields_in_both_stages():
    free, contact = param_names("full")
    assert set(REALCELL) <= set(free) and set(REALCELL) <= set(contact) and set(PAPER_CONTACT) <= set(contact)


def test_real_cell_values_give_a_world_mujoco_integrates_and_map_back():
    """A real cell in the lower third of every range (no mode reaches the cap): the physics step is shortened for
    the coupling (control period kept), the latency is whole sub-steps within half a sub-step of the value, and the
    values map back (the latency to its rounding)."""
    nominal = load_world("nominal")
    u = np.full(len(REALCELL), 0.3)
    world = from_unit(nominal, SCENE, REALCELL, u)
    assert compliance_modes(SCENE, world).max() / (2 * np.pi) < MODE_CAP_HZ
    assert world.control_dt == pytest.approx(nominal.control_dt)
    assert world.timestep < nominal.timestep and world.compliant and world.ft_filter_hz > 0
    MujocoWorld(SCENE, world)  # refuses a coupling its step cannot integrate
    values = current(world, SCENE)
    latency = PARAMS["command_latency_s"].lo + 0.3 * (PARAMS["command_latency_s"].hi - PARAMS["command_latency_s"].lo)
    assert abs(values["command_latency_s"] - latency) <= 0.5 * world.timestep + 1e-12
    back = to_unit(world, SCENE, REALCELL)
    np.testing.assert_allclose(np.delete(back, REALCELL.index("command_latency_s")), 0.3, atol=1e-9)


def test_the_stiffest_coupling_is_softened_to_the_mode_cap():
    world = from_unit(load_world("nominal"), SCENE, REALCELL, np.ones(len(REALCELL)))
    modes = compliance_modes(SCENE, world) / (2 * np.pi)
    assert modes.max() == pytest.approx(MODE_CAP_HZ, rel=1e-6)
    MujocoWorld(SCENE, world)


@pytest.fixture(scope="module")
def late_logs(tmp_path_factory):
    """Logs of the nominal world whose commands arrive 30 ms late (15 of its 2 ms sub-steps)."""
    world = dataclasses.replace(load_world("nominal"), command_latency_substeps=15)
    return _logs(tmp_path_factory.mktemp("calibration-late"), world, (31, 32), 2)


def test_calibration_finds_the_latency(late_logs):
    """Oracle: the replay error is smallest at the logs' latency; the search over the latency alone finds it."""
    fit, held = load_logged([late_logs["fit"]]), load_logged([late_logs["held"]])
    budget = CalibrationBudget(coarse=8, local=20, segments=16, horizon=6)
    names = ("command_latency_s",)
    result = calibrate(fit.episodes, held.episodes, load_world("nominal"), (names, names), fit.action_mode, budget,
                       np.random.default_rng(1))
    assert result.world.command_latency_substeps == pytest.approx(15, abs=1)
    for kind in result.held_out.values():
        assert kind["calibrated"]["pos_rmse_m"] < 0.5 * kind["start"]["pos_rmse_m"]


def test_parameter_sets_combine_with_names():
    free, contact = param_names("paper,controller")
    assert set(CONTROLLER) <= set(free) and set(CONTROLLER) <= set(contact) and set(PAPER_CONTACT) <= set(contact)
    assert param_names("controller") == (CONTROLLER, CONTROLLER)
    with pytest.raises(InvalidInputError, match="unknown"):
        param_names("paper,controllers")


@pytest.fixture(scope="module")
def stiff_cell_logs(tmp_path_factory):
    """Logs of a cell whose controller is twice as stiff as the scene says (the world is nominal)."""
    gains = SCENE.controller
    cell = dataclasses.replace(SCENE, controller=dataclasses.replace(
        gains, stiffness_pos=gains.stiffness_pos * 2, stiffness_rot=gains.stiffness_rot * 2))
    root = tmp_path_factory.mktemp("calibration-controller")
    paths = {}
    for name, seed, episodes in (("fit", 41, 2), ("held", 42, 1)):
        paths[name] = str(root / f"{name}.h5")
        collect(CollectSpec(policy="random-spline", episodes=episodes, steps=60, seed=seed, fixed_scene=cell),
                paths[name])
    return paths


def test_calibration_finds_the_controllers_stiffness(stiff_cell_logs):
    """Oracle: replayed with the scene's nominal controller the logs of a twice-as-stiff cell fit best at scale 2;
    the calibrated controller is reported and applies to the scene."""
    as_told = lambda logs: [dataclasses.replace(ep, scene=SCENE) for ep in logs.episodes]  # noqa: E731
    fit, held = as_told(load_logged([stiff_cell_logs["fit"]])), as_told(load_logged([stiff_cell_logs["held"]]))
    names, mode = ("controller_stiffness_scale",), load_logged([stiff_cell_logs["fit"]]).action_mode
    result = calibrate(fit, held, load_world("nominal"), (names, names), mode,
                       CalibrationBudget(coarse=8, local=20, segments=16, horizon=6), np.random.default_rng(2))
    assert result.controller["controller_stiffness_scale"] == pytest.approx(2.0, rel=0.05)
    fitted = apply_controller(SCENE.controller, result.controller)
    np.testing.assert_allclose(fitted.stiffness_pos, 2 * SCENE.controller.stiffness_pos, rtol=0.05)
    for kind in result.held_out.values():
        assert kind["calibrated"]["pos_rmse_m"] < 0.5 * kind["start"]["pos_rmse_m"]
