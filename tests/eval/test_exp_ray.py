"""Experiments on two Ray workers (a local instance on 127.0.0.1) give the serial run's result, exactly."""

import json

from contactkit.estimation.geometry_belief import ParticleFilterConfig
from contactkit.eval import exp_mpc_insertion, exp_pf_tracking, exp_placement
from contactkit.eval.exp_mpc_insertion import InsertionBudget
from contactkit.eval.exp_pf_tracking import TrackingBudget
from contactkit.eval.exp_placement import PlacementConfig
from contactkit.eval.store import narrowing

TINY = PlacementConfig(tasks=("shape",), n_cases=1, repeats=2, steps=10, n_estimates=3,
                       pf=ParticleFilterConfig(n_particles=6), workers=1)


def test_placement_on_two_ray_workers_equals_serial(ray_cluster):
    serial = exp_placement.run(quick=True, seed=3, config=TINY)
    parallel = exp_placement.run(quick=True, seed=3, config=TINY, workers=2)
    assert json.dumps(parallel, sort_keys=True) == json.dumps(serial, sort_keys=True)
    assert len(serial["tasks"]["shape"]["ours"]["errors"]) == 2


def test_workers_and_address_do_not_narrow_a_run():
    assert narrowing(exp_placement, {"workers": 2, "ray_address": "auto"}) == []
    assert narrowing(exp_placement, {"workers": 2, "world": "target"}) == ["--world target"]


def test_pf_tracking_on_two_ray_workers_equals_serial(ray_cluster):
    budget = TrackingBudget(episodes=2, steps=12, calibration_episodes=1)
    serial = exp_pf_tracking.run(quick=True, seed=1, budget=budget, models=("ground-truth",))
    parallel = exp_pf_tracking.run(quick=True, seed=1, budget=budget, models=("ground-truth",), workers=2)
    assert json.dumps(parallel, sort_keys=True) == json.dumps(serial, sort_keys=True)
    assert list(serial["models"]) == ["mujoco-nominal"]  # the ground-truth model, tracked on the workers


TIMINGS = ("wall_s", "replan_s", "replan_s_p90")
"""mpc-insertion's keys that are times (run time, seconds per replan), not outcomes."""


def _without_wall(result: dict) -> dict:
    return {**result, "models": {k: {**v, **dict.fromkeys(TIMINGS)} for k, v in result["models"].items()}}


def test_mpc_insertion_on_two_ray_workers_equals_serial_timings_aside(ray_cluster):
    budget = InsertionBudget(("square", "circle-in-square"), episodes_per_pairing=2, max_steps=5, horizon=3,
                             population=4, iterations=1, replan_every=2)
    serial = exp_mpc_insertion.run(quick=True, seed=2, budget=budget, models=("ground-truth", "engine"))
    parallel = exp_mpc_insertion.run(quick=True, seed=2, budget=budget, models=("ground-truth", "engine"),
                                     workers=2)
    assert json.dumps(_without_wall(parallel), sort_keys=True) == json.dumps(_without_wall(serial), sort_keys=True)
    assert {k: len(v["per_episode"]) for k, v in serial["models"].items()} == {"ground-truth": 4, "engine": 4}
