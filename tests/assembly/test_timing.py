"""time_steps: per-stage thread-CPU and wall milliseconds of the simulator step over a short engaged trajectory."""

from __future__ import annotations

import numpy as np
import pytest

from contactkit.assembly import peg_in_hole_task
from contactkit.assembly.kmeans import KMeansClustering
from contactkit.assembly.simulator import STAGES, SimConfig
from contactkit.assembly.timing import time_steps
from contactkit.errors import InvalidInputError


@pytest.fixture(scope="module")
def peg():
    return peg_in_hole_task()


def test_stage_times_add_up_to_the_step(peg):
    r = time_steps(peg, KMeansClustering(), SimConfig(), 3, np.random.default_rng(0))
    assert r["n_steps"] == 3 and r["trajectory_kind"] == "tilt"
    assert set(r["ms_per_stage"]) == set(STAGES) == set(r["wall_ms_per_stage"])
    assert all(v >= 0.0 for v in r["ms_per_stage"].values())
    assert r["ms_per_step_mean"] == pytest.approx(sum(r["ms_per_stage_mean"].values()), rel=1e-12)
    assert 0.0 < r["ms_per_step"] <= 1e3  # thread-CPU of a whole step, never zero
    assert r["n_nodes_median"] > 12 and r["n_clustered_median"] == 12  # engaged: the peg touches its bore


def test_no_steps_is_refused(peg):
    with pytest.raises(InvalidInputError, match="n_steps"):
        time_steps(peg, KMeansClustering(), SimConfig(), 0, np.random.default_rng(0))
