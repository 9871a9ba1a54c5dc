"""The scale benchmark's projection (ceil of jobs over the machines' workers, plus the start) and file comparison."""

import math
import shutil

import h5py

from contactkit.data.collect import CollectSpec, collect
from contactkit.eval.bench_scale import projection, same_datasets


def test_projection_is_start_plus_rounds_of_jobs():
    rows = projection({"a": (10, 2.0)}, start_s=5.0, cores=2, machines=(1, 3, 100))
    assert rows[0]["seconds"] == {"1": 5.0 + 5 * 2.0, "3": 5.0 + math.ceil(10 / 6) * 2.0, "100": 5.0 + 2.0}


def test_same_datasets_sees_a_different_episode(tmp_path):
    collect(CollectSpec(episodes=2, steps=3, seed=0), str(tmp_path / "a.h5"))
    collect(CollectSpec(episodes=2, steps=3, seed=0), str(tmp_path / "b.h5"))
    assert same_datasets(tmp_path / "a.h5", tmp_path / "b.h5")  # created at other times: that attribute aside
    shutil.copy(tmp_path / "a.h5", tmp_path / "c.h5")
    with h5py.File(tmp_path / "c.h5", "r+") as f:
        name = sorted(n for n in f["states"])[0]
        f["states"][name][0, 0] += 1e-12  # one value, one ulp-scale change
    assert not same_datasets(tmp_path / "a.h5", tmp_path / "c.h5")
