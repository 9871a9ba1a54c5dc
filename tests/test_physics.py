"""World parameters and the nominal/target presets."""

import json

import numpy as np
import pytest

from contactkit.errors import InvalidInputError
from contactkit.physics import PRESET_NAMES, WorldParams, load_world


def test_presets_load_and_round_trip():
    for name in PRESET_NAMES:
        params = load_world(name)
        assert WorldParams.from_dict(params.to_dict()) == params


@pytest.mark.parametrize("name", ["target", "target-parametric"])
def test_target_is_as_far_from_nominal_as_a_calibrated_lab(name):
    """Issue 5 bounds: friction ±30 %, mass ±10 %, contact time constant within 3x, F/T noise of tenths of a N."""
    nominal, target = load_world("nominal"), load_world(name)
    assert abs(target.friction_scale / nominal.friction_scale - 1) <= 0.30
    assert abs(target.mass_scale / nominal.mass_scale - 1) <= 0.10
    assert 1 / 3 <= target.solref[0] / nominal.solref[0] <= 3
    assert 0.05 <= max(target.ft_noise_std[:3]) <= 0.5
    assert target != nominal


def test_world_file_with_unknown_key_names_it(tmp_path):
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"timestep": 0.001, "frictoin_scale": 1.2}))
    with pytest.raises(InvalidInputError, match="frictoin_scale"):
        load_world(str(path))


@pytest.mark.parametrize(("kwargs", "named"), [
    ({"timestep": 0.0}, "timestep"), ({"timestep": -1e-3}, "timestep"), ({"n_substeps": 0}, "n_substeps"),
    ({"friction_scale": float("nan")}, "friction_scale"), ({"ft_noise_std": (1.0,) * 5}, "ft_noise_std"),
    ({"integrator": "verlet"}, "integrator"), ({"tool_mass": 0.0}, "tool_mass"), ({"tool_mass": True}, "tool_mass"),
    ({"tool_mass": 0.4, "mass_scale": 1.1}, "mass_scale"),
    ({"tool_inertia": (1e-4, 1e-4, 3e-4, 0, 0, 0)}, "tool_inertia"), ({"tool_inertia": (1e-4,) * 3}, "tool_inertia"),
    ({"ft_mount_quat": (1.0, 0.5, 0.0, 0.0)}, "ft_mount_quat"), ({"ft_mount_pos": (0.0, float("inf"), 0.0)},
                                                                  "ft_mount_pos"),
    ({"command_latency_substeps": -1}, "command_latency_substeps"),
    ({"command_latency_substeps": 2.0}, "command_latency_substeps"),
    ({"command_latency_substeps": 10**9}, "command_latency_substeps"), ({"tool_inertia": "abc"}, "tool_inertia"),
    ({"compliance_stiffness": 5.0}, "compliance_stiffness"), ({"ft_mount_quat": (0.0,) * 4}, "ft_mount_quat"),
    ({"compliance_stiffness": (1e5, 1e5, 0.0, 1.0, 1.0, 1.0)}, "compliance_stiffness"),
    ({"compliance_damping": (-1.0,) + (0.0,) * 5}, "compliance_damping"),
    ({"compliance_stiffness": (1e5,) * 6, "compliance_mass": 0.0}, "compliance_mass"),
    ({"ft_filter_hz": -5.0}, "ft_filter_hz")])
def test_bad_parameters_are_refused_by_name(kwargs, named):
    with pytest.raises(InvalidInputError, match=named):
        WorldParams(**kwargs)


def test_real_cell_parameters_round_trip_through_a_file(tmp_path):
    params = WorldParams(tool_mass=0.5, tool_inertia=(1e-4, 1e-4, 5e-5, 0.0, 0.0, 0.0),
                         ft_mount_pos=(0.0, 0.0, 0.01), ft_mount_quat=(0.0, 0.0, 0.0, 1.0), command_latency_substeps=4,
                         compliance_stiffness=(1e5,) * 3 + (300.0,) * 3, compliance_damping=(10.0,) * 6,
                         ft_filter_hz=25.0)
    path = tmp_path / "lab.json"
    path.write_text(params.to_json())
    assert load_world(str(path)) == params
    assert params.unmodelled_effects() == ["command_latency_substeps", "compliance_stiffness", "ft_filter_hz"]


def test_defaults_are_the_nominal_simulator():
    """A world file written before these parameters existed means the same world: every new one is off."""
    params = WorldParams()
    assert params.unmodelled_effects() == [] and not params.compliant
    mass, inertia = params.tool_mass_properties(0.3, np.diag([1e-4, 1e-4, 2e-5]))
    assert mass == 0.3 and np.array_equal(inertia, np.diag([1e-4, 1e-4, 2e-5]))
    pos, quat = params.sensor_frame(np.array([0.0, 0.0, 0.06]), np.array([0.6, 0.8, 0.0, 0.0]))
    assert np.array_equal(pos, [0.0, 0.0, 0.06]) and np.array_equal(quat, [0.6, 0.8, 0.0, 0.0])


def test_unknown_preset_or_missing_file():
    with pytest.raises(InvalidInputError, match="preset"):
        load_world("lab-7")


def test_control_period():
    assert WorldParams(timestep=0.002, n_substeps=25).control_dt == pytest.approx(0.05)
    assert np.isfinite(load_world(None).control_dt)
