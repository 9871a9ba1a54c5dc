"""The replan benchmark with its pairings on two Ray workers (a local instance on 127.0.0.1): the serial run's result
but for the timings, and the run says it was timed in parallel."""

import json

import numpy as np
import pytest

from contactkit.errors import InvalidInputError
from contactkit.eval import bench_replan
from contactkit.eval.exp_mpc_insertion import InsertionBudget

TINY = InsertionBudget(("square", "circle-in-square"), episodes_per_pairing=1, max_steps=6, horizon=3,
                       population=4, iterations=1, replan_every=2, models=("ground-truth", "engine"))
"""Two pairings (two jobs), a 6-step reference episode, the smallest agent."""

TIMINGS = ("replan_s", "replan_s_p90", "vs_ground_truth", "within_goal", "replan_s_by_point", "replan_cpu_s",
           "replan_cpu_s_by_point", "cpu_vs_ground_truth")
"""Per-model keys that are (or follow from) seconds."""

PARALLEL_ONLY = ("workers", "ray_address")
"""Top-level keys only a run on Ray has."""


def _outcomes(result: dict) -> str:
    """``result`` as sorted JSON with the timing fields blanked and the parallel run's record left out."""
    kept = {k: v for k, v in result.items() if k not in PARALLEL_ONLY}
    kept["models"] = {name: {**row, **dict.fromkeys(TIMINGS)} for name, row in result["models"].items()}
    return json.dumps(kept, sort_keys=True)


@pytest.mark.slow
def test_replan_on_two_ray_workers_equals_serial_timings_aside(ray_cluster):
    serial = bench_replan.run(quick=True, seed=1, budget=TINY)
    parallel = bench_replan.run(quick=True, seed=1, budget=TINY, workers=2)
    assert _outcomes(parallel) == _outcomes(serial)
    assert {p["pairing"] for p in serial["points"]} == {"square", "circle-in-square"}
    assert {name: row["replans"] for name, row in serial["models"].items()} == {
        "ground-truth": len(serial["points"]), "engine": len(serial["points"])}
    assert parallel["workers"] == 2 and parallel["ray_address"] is None
    assert not set(PARALLEL_ONLY) & set(serial)
    assert parallel["agent"]["torch_threads"] == 1  # each job a Ray task of one torch thread
    assert "Timed on Ray, 2 pairings at a time: timings under contention" in bench_replan.markdown(parallel)
    assert "Timed on Ray" not in bench_replan.markdown(serial)


@pytest.mark.slow
def test_the_workers_plan_from_the_serial_runs_states(ray_cluster):
    """The reference episodes (deeper than the JSON's step and contact flags): every state of every point equal."""
    _, serial, _, _ = bench_replan.measure(TINY, 2, 4, "cpu")
    _, parallel, _, _ = bench_replan.measure(TINY, 2, 4, "cpu", workers=2)
    assert [(p.pairing, p.step, p.contact) for p in parallel] == [(p.pairing, p.step, p.contact) for p in serial]
    assert len(serial) == 4
    for mine, theirs in zip(parallel, serial, strict=True):
        for field in ("pos", "quat", "lin_vel", "ang_vel"):
            np.testing.assert_array_equal(getattr(mine.states, field), getattr(theirs.states, field))


def test_replan_on_workers_refuses_a_gpu_and_a_budget_without_the_reference():
    with pytest.raises(InvalidInputError, match="CPU workers"):
        bench_replan.run(quick=True, budget=TINY, workers=2, device="cuda")
    with pytest.raises(InvalidInputError, match="ground-truth"):
        bench_replan.measure(InsertionBudget(("square",), 1, 6, models=("engine",)), 1, 0, "cpu", workers=2)
