"""Connector-insertion experiment, smoke run: one socket, one short trial. Checks the result's keys and
ranges, that the same seed reproduces it exactly, and that the two figures are written."""

import dataclasses
import inspect
import json
import math

import pytest

from contactkit.errors import InvalidInputError
from contactkit.eval import exp_connector
from contactkit.eval.exp_connector import QUICK, run_experiment
from contactkit.tasks.connector import SOCKET_VARIANTS

TINY = dataclasses.replace(QUICK, n_trials=1, insert_s=2.2, calib_s=3.0, heldout_s=1.0, window_s=1.0)
KEYS = {
    "socket", "n_trials", "force_reduction", "clip_force_reduction", "success_rate", "clip_success_rate",
    "baseline_success_rate", "fit_err_N", "fit_err_Nm", "lateral_force_scripted_N", "lateral_force_qp_N",
    "lateral_force_clip_N", "lateral_force_noise_floor_N", "qp_solve_ms",
}
TIMING_KEYS = {"qp_solve_ms"}


@pytest.fixture(scope="module")
def tiny_result(tmp_path_factory):
    plots = tmp_path_factory.mktemp("plots")
    return run_experiment(TINY, seed=3, variants=SOCKET_VARIANTS[:1], plots=str(plots)), plots


def test_result_has_the_issue_keys_in_range(tiny_result):
    result, _ = tiny_result
    (socket,) = result["sockets"]
    assert KEYS <= set(socket)
    assert socket["socket"] == SOCKET_VARIANTS[0].name and socket["n_trials"] == 1
    for key in ("force_reduction", "clip_force_reduction"):
        assert math.isfinite(socket[key]) and socket[key] <= 1.0
    for key in ("success_rate", "clip_success_rate", "baseline_success_rate"):
        assert socket[key] in (0.0, 1.0)  # one trial
    for key in ("fit_err_N", "fit_err_Nm", "lateral_force_scripted_N", "lateral_force_qp_N", "qp_solve_ms"):
        assert math.isfinite(socket[key]) and socket[key] >= 0.0
    # the held-out error cannot beat the sensor noise it is measured through, nor be wildly above it
    noise = TINY.world.ft_noise_std
    assert 0.5 * noise[0] < socket["fit_err_N"] < 20 * noise[0]
    assert result["mean_force_reduction"] == pytest.approx(socket["force_reduction"])
    json.dumps(result)  # the harness writes it as JSON


def test_same_seed_same_numbers(tiny_result):
    result, _ = tiny_result
    again = run_experiment(TINY, seed=3, variants=SOCKET_VARIANTS[:1])
    strip = [{k: v for k, v in s.items() if k not in TIMING_KEYS} for s in result["sockets"]]
    assert strip == [{k: v for k, v in s.items() if k not in TIMING_KEYS} for s in again["sockets"]]


def test_figures_are_written(tiny_result):
    result, plots = tiny_result
    names = sorted(p.name for p in plots.iterdir())
    assert names == ["fig3_calibration.png", "fig5_lateral_force.png"]
    assert all((plots / n).stat().st_size > 10_000 for n in names)
    assert len(result["plots"]) == 2


def test_harness_entry_point_signature_and_bad_config():
    params = inspect.signature(exp_connector.run).parameters
    assert list(params)[:3] == ["quick", "seed", "device"] and params["plots"].default is None
    with pytest.raises(InvalidInputError):
        run_experiment(dataclasses.replace(TINY, n_trials=0), seed=0)


def test_tare_removes_a_sensor_offset_from_the_lateral_force():
    """A 2 N lateral offset on the sensor: without tare the scripted run's mean lateral force is off by about
    the offset; with the free-space tare it matches the unbiased sensor's (the same physics, other noise
    draws) to well under the offset."""
    from contactkit.control.tare import TareMode
    from contactkit.eval.exp_connector import run_trial

    tiny = dataclasses.replace(TINY, calib_s=1.0, heldout_s=0.5, window_s=0.5)
    biased = dataclasses.replace(tiny.world, ft_bias=(2.0, 0.0, 1.0, 0.0, 0.0, 0.0))

    def lateral(world, tare):
        cfg = dataclasses.replace(tiny, world=world, tare=tare)
        return float(run_trial(SOCKET_VARIANTS[0], cfg, [5, 0]).lateral["scripted"].mean())

    clean = lateral(tiny.world, TareMode.NONE)
    assert abs(lateral(biased, TareMode.NONE) - clean) > 1.0
    assert abs(lateral(biased, TareMode.FREE_SPACE) - clean) < 0.2
