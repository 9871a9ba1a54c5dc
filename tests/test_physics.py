"""World parameters and the nominal/target presets."""

import json

import numpy as np
import pytest

from contactkit.errors import InvalidInputError
from contactkit.physics import WorldParams, load_world


def test_presets_load_and_round_trip():
    for name in ("nominal", "target"):
        params = load_world(name)
        assert WorldParams.from_dict(params.to_dict()) == params


def test_target_is_as_far_from_nominal_as_a_calibrated_lab():
    """Issue 5 bounds: friction ±30 %, mass ±10 %, contact time constant within 3x, F/T noise of tenths of a N."""
    nominal, target = load_world("nominal"), load_world("target")
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


@pytest.mark.parametrize("kwargs", [{"timestep": 0.0}, {"timestep": -1e-3}, {"n_substeps": 0},
                                    {"friction_scale": float("nan")}, {"ft_noise_std": (1.0,) * 5},
                                    {"integrator": "verlet"}])
def test_bad_parameters_are_refused(kwargs):
    with pytest.raises(InvalidInputError):
        WorldParams(**kwargs)


def test_unknown_preset_or_missing_file():
    with pytest.raises(InvalidInputError, match="preset"):
        load_world("lab-7")


def test_control_period():
    assert WorldParams(timestep=0.002, n_substeps=25).control_dt == pytest.approx(0.05)
    assert np.isfinite(load_world(None).control_dt)
