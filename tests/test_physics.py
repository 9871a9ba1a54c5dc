"""World parameters and the nominal/target presets."""

import json

import numpy as np
import pytest

from contactkit import physics
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


MISTYPED = [("gravity", "false", "world.gravity must be true or false"),
            ("linear_damping", "0.02", r"world.linear_damping must be a number \[N s/m\], got '0.02'"),
            ("timestep", True, r"world.timestep must be a number \[s\], got True"),
            ("n_substeps", True, r"world.n_substeps must be an integer"),
            ("n_substeps", 2.0, r"world.n_substeps must be an integer"),
            ("solref", ["0.02", 1.0], "world.solref must be a list of 2 finite numbers"),
            ("ft_bias", "000000", "world.ft_bias must be a list of 6 finite numbers"),
            ("tool_mass", "1", r"world.tool_mass must be a number \[kg\]")]
"""``(field, value of the wrong type, expected message)``: each refused with the field named, none converted."""


@pytest.mark.parametrize("name,value,message", MISTYPED, ids=[f"{n}={v!r}" for n, v, _ in MISTYPED])
def test_world_fields_of_the_wrong_type_are_refused_naming_the_field(name, value, message):
    with pytest.raises(InvalidInputError, match=message):
        WorldParams.from_dict({name: value})


ABSURD = [("timestep", 1e308, r"world.timestep = 1e\+308 \[s\] is out of range: must be > 0 and <= 1 "),
          ("timestep", float("inf"), r"world.timestep must be a finite number \[s\], got inf"),
          ("linear_damping", 1e308, "glued, not damped"),
          ("angular_damping", physics.MAX_ANGULAR_DAMPING * 1.01, "glued, not damped"),
          ("mass_scale", 1e308, "another object"), ("mass_scale", 1e-4, "another object"),
          ("friction_scale", 1e3, "dry-contact"),
          ("tool_mass", 1e308, "payload of the largest industrial arms"),
          ("tool_mass", 1e-20, "from a milligram"),
          ("n_substeps", physics.MAX_SUBSTEPS + 1, r"integer in \[1, 100000\]"),
          ("ft_bias", [1e308, 0, 0, 0, 0, 0], r"world.ft_bias\[0\] = 1e\+308 N is beyond 100000 N"),
          ("ft_noise_std", [0, 0, 0, 0, 0, 2e4], r"world.ft_noise_std\[5\] = 20000 N m is beyond 10000 N m"),
          ("compliance_mass", 1e5, "payload"),
          ("tool_inertia", [1e5, 1e5, 1e5, 0, 0, 0], "principal moment 100000 is beyond 10000")]
"""``(field, finite or infinite but absurd value, expected message)``: the reason is in the message."""


@pytest.mark.parametrize("name,value,message", ABSURD, ids=[f"{n}={v!r}" for n, v, _ in ABSURD])
def test_absurd_world_values_are_refused_with_the_physical_reason(name, value, message):
    with pytest.raises(InvalidInputError, match=message):
        WorldParams.from_dict({name: value})


def test_values_at_the_bounds_are_accepted_and_kept_bit_for_bit():
    p = WorldParams(timestep=physics.MAX_TIMESTEP_S, mass_scale=physics.MASS_SCALE_RANGE[1],
                    linear_damping=physics.MAX_LINEAR_DAMPING, ft_bias=(physics.MAX_FT_FORCE_N, 0, 0, 0, 0,
                                                                        -physics.MAX_FT_TORQUE_NM))
    assert (p.timestep, p.mass_scale, p.linear_damping) == (1.0, 1e3, 1e4)
    assert p.ft_bias == (1e5, 0.0, 0.0, 0.0, 0.0, -1e4)
    assert WorldParams.from_dict(p.to_dict()) == p
