"""The tight-assembly experiment's reference cache (issue 17): reuse when the key matches, refusal otherwise."""

import json
import shutil

import numpy as np
import pytest

from contactkit.assembly import reference_data
from contactkit.assembly.task import bolting_task, peg_in_hole_task
from contactkit.errors import DatasetError
from contactkit.eval import tight_assembly_reference as cache

ROWS, TRAJ = 4, 2
"""Two trajectories of two 10 ms rows: the smallest cache worth reusing."""


@pytest.fixture(scope="module")
def peg():
    return peg_in_hole_task(depth_net=None)


@pytest.fixture(scope="module")
def made(peg, tmp_path_factory):
    folder = tmp_path_factory.mktemp("reference")
    episodes, facts = cache.reference_episodes(peg, ROWS, TRAJ, 7, folder)
    return folder, episodes, facts


def _no_simulation(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the reference was simulated again")

    monkeypatch.setattr(reference_data, "reference_episode", refuse)


def test_a_first_run_simulates_the_plan_and_stores_it(peg, made):
    folder, episodes, facts = made
    assert facts["cached_episodes"] == 0 and facts["simulated_episodes"] == 2
    assert [(e.seed, e.n_steps) for e in episodes] == [(s, r) for _, s, r in cache.plan(peg, ROWS, TRAJ, 7)]
    assert sorted(p.suffix for p in folder.iterdir()) == [".h5", ".json"]


def test_a_second_run_with_the_same_key_reads_the_file(peg, made, monkeypatch):
    folder, episodes, _ = made
    _no_simulation(monkeypatch)
    again, facts = cache.reference_episodes(peg, ROWS, TRAJ, 7, folder)
    assert facts == {"cache_file": made[2]["cache_file"], "cached_episodes": 2, "simulated_episodes": 0}
    for a, b in zip(episodes, again, strict=True):
        np.testing.assert_array_equal(a.wrench, b.wrench)
        np.testing.assert_array_equal(a.pos, b.pos)


def test_an_interrupted_file_is_resumed(peg, made, tmp_path):
    folder, episodes, _ = made
    key = cache.cache_key(peg, ROWS, TRAJ, 7)
    partial = cache.cache_path(tmp_path, key)
    reference_data.write_reference(partial, peg, episodes[:1], 7)
    partial.with_suffix(".json").write_text(json.dumps(key))
    again, facts = cache.reference_episodes(peg, ROWS, TRAJ, 7, tmp_path)
    assert (facts["cached_episodes"], facts["simulated_episodes"]) == (1, 1)
    np.testing.assert_array_equal(again[1].wrench, episodes[1].wrench)  # the same plan: the same rows


def test_other_seed_rows_or_code_get_another_file(peg, monkeypatch):
    key = cache.cache_key(peg, ROWS, TRAJ, 7)
    names = {cache.cache_path("f", key), cache.cache_path("f", cache.cache_key(peg, ROWS, TRAJ, 8)),
             cache.cache_path("f", cache.cache_key(peg, ROWS + 2, TRAJ, 7)),
             cache.cache_path("f", cache.cache_key(peg, ROWS, None, 7))}
    monkeypatch.setattr(cache, "code_digest", lambda: "0" * 64)
    names.add(cache.cache_path("f", cache.cache_key(peg, ROWS, TRAJ, 7)))
    assert len(names) == 5


def _plant(made, tmp_path, key, *, with_key=True):
    """The cached file of ``made`` copied to where ``key``'s file would be."""
    src = made[2]["cache_file"]
    dst = cache.cache_path(tmp_path, key)
    shutil.copy(src, dst)
    if with_key:
        dst.with_suffix(".json").write_text(json.dumps(key))
    return dst


def test_a_file_with_another_seed_in_its_meta_is_refused(peg, made, tmp_path, monkeypatch):
    _plant(made, tmp_path, cache.cache_key(peg, ROWS, TRAJ, 8))  # right key file, the file's meta says seed 7
    _no_simulation(monkeypatch)
    with pytest.raises(DatasetError, match="meta differs.*seed"):
        cache.reference_episodes(peg, ROWS, TRAJ, 8, tmp_path)


def test_a_file_whose_key_differs_is_refused(peg, made, tmp_path, monkeypatch):
    key = cache.cache_key(peg, ROWS, TRAJ, 7)
    path = _plant(made, tmp_path, key)
    path.with_suffix(".json").write_text(json.dumps({**key, "code_sha256": "f" * 64}))
    _no_simulation(monkeypatch)
    with pytest.raises(DatasetError, match="code_sha256"):
        cache.reference_episodes(peg, ROWS, TRAJ, 7, tmp_path)
    path.with_suffix(".json").unlink()
    with pytest.raises(DatasetError, match="without its key file"):
        cache.reference_episodes(peg, ROWS, TRAJ, 7, tmp_path)


def test_a_file_of_another_task_is_refused(made, tmp_path, monkeypatch):
    nut = bolting_task(depth_net=None)
    _plant(made, tmp_path, cache.cache_key(nut, ROWS, TRAJ, 7))
    _no_simulation(monkeypatch)
    with pytest.raises(DatasetError, match="another task"):
        cache.reference_episodes(nut, ROWS, TRAJ, 7, tmp_path)


def test_episodes_that_are_not_the_plan_are_refused(peg, made, tmp_path, monkeypatch):
    key = cache.cache_key(peg, ROWS, TRAJ, 7)
    path = _plant(made, tmp_path, key)
    reference_data.write_reference(path, peg, made[1][:1], 7)  # a third episode the plan does not have
    _no_simulation(monkeypatch)
    with pytest.raises(DatasetError, match="not a prefix"):
        cache.reference_episodes(peg, ROWS, TRAJ, 7, tmp_path)
