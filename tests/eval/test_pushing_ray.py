"""Experiment ``pushing`` with its trials on two Ray workers (a local instance on 127.0.0.1) gives the serial run's
JSON, exactly (the experiment records no timings)."""

import json

import pytest

from contactkit.eval import exp_pushing
from contactkit.eval.exp_pushing import PushingConfig

SHORT = PushingConfig(trials=1, duration=2.0)
"""One goal per case, 2 s episodes: 24 trials (6 cases × PD/RL × model/"real"), every case completed (seed 0)."""


@pytest.mark.slow
def test_pushing_on_two_ray_workers_equals_serial(ray_cluster):
    serial = exp_pushing.run(quick=True, seed=0, config=SHORT)
    parallel = exp_pushing.run(quick=True, seed=0, config=SHORT, workers=2)
    assert json.dumps(parallel, sort_keys=True) == json.dumps(serial, sort_keys=True)
    assert len(serial["cases"]) == 6
    assert all(sum(case["completed"].values()) == len(exp_pushing.RUNS) for case in serial["cases"])
    assert all(case["rl_translation_err_pct_real"] is not None for case in serial["cases"])
    assert serial["config"]["trials"] == 1  # the worker count is not part of the result
