"""open_dataset: every broken file is a DatasetError naming the file and the problem; summary is exact."""

import h5py
import numpy as np
import pytest

from contactkit.data.reader import open_dataset
from contactkit.data.schema import STATE_FIELDS, STEP_FIELDS
from contactkit.data.writer import DatasetWriter
from contactkit.errors import DatasetError


@pytest.fixture
def dataset(tmp_path, rng, make_episode, make_meta):
    """A valid file with three episodes; returns (path, episodes)."""
    eps = [make_episode(rng, T, seed=i) for i, T in enumerate([4, 2, 5])]
    path = tmp_path / "d.h5"
    with DatasetWriter(path, meta=make_meta()) as w:
        for ep in eps:
            w.append_episode(ep)
    return path, eps


@pytest.mark.parametrize("name,problem", [
    ("zero_bytes.h5", r"empty file \(0 bytes\)"),
    ("random_bytes.h5", "not an HDF5 file"),
    ("truncated.h5", "truncated HDF5 file"),
    ("unrelated_valid.h5", "not a contactkit dataset"),
    ("log_ok.csv", "not an HDF5 file"),
])
def test_bad_input_files(files_dir, name, problem):
    with pytest.raises(DatasetError, match=problem) as info:
        open_dataset(files_dir / name)
    assert str(files_dir / name) in str(info.value)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(DatasetError, match="no such dataset file"):
        open_dataset(tmp_path / "absent.h5")
    with pytest.raises(DatasetError, match="is a directory"):
        open_dataset(tmp_path)


def _tampered(path, edit):
    with h5py.File(path, "r+") as f:
        edit(f)
    return path


def _set_attr(key, value):
    def edit(f):
        f.attrs[key] = value
    return edit


def _delete(name):
    def edit(f):
        del f[name]
    return edit


def _shrink(name, rows):
    def edit(f):
        f[name].resize(rows, axis=0)
    return edit


def _set_value(name, index, value):
    def edit(f):
        f[name][index] = value
    return edit


@pytest.mark.parametrize("edit,problem", [
    (_set_attr("schema_version", 99), r"schema_version 99 is not supported; this contactkit reads "
                                      r"schema_version 1"),
    (_set_attr("format", "something.else"), "not a contactkit dataset"),
    (_set_attr("action_mode", "teleport"), r"invalid root attribute: meta\.action_mode"),
    (lambda f: f.attrs.__delitem__("scene"), r"root attribute\(s\) \['scene'\] missing"),
    (_delete("steps/wrench"), "dataset 'steps/wrench' is missing"),
    (_shrink("states/quat", 9), r"index points past the data: the 3 committed episodes need 14 rows but "
                                r"states/quat has 9"),
    (_shrink("steps/action", 10), "index points past the data.*steps/action has 10"),
    (_set_value("episodes/length", 0, 3), r"mismatched lengths: episodes/step_start\[1\] = 4"),
    (_set_value("episodes/state_start", 2, 7), r"mismatched lengths: episodes/state_start\[2\] = 7"),
    (_set_value("episodes/length", 1, 0), "episode 1 has length 0"),
    (_shrink("episodes/seed", 2), "mismatched lengths: episodes/seed has 2 entries"),
])
def test_corrupt_structure(dataset, edit, problem):
    path, _ = dataset
    _tampered(path, edit)
    with pytest.raises(DatasetError, match=problem) as info:
        open_dataset(path)
    assert str(path) in str(info.value)


def test_wrong_dtype_is_named(dataset):
    path, _ = dataset
    def edit(f):
        del f["states/pos"]
        f.create_dataset("states/pos", data=np.zeros((14, 3), dtype=np.int32))
    _tampered(path, edit)
    with pytest.raises(DatasetError, match="dataset 'states/pos' has dtype int32"):
        open_dataset(path)


@pytest.mark.parametrize("group,field,row,episode,step", [("states", "pos", 6, 1, 1),
                                                          ("steps", "wrench", 4, 1, 0),
                                                          ("states", "time", 13, 2, 5)])
def test_nan_inside_names_episode_field_and_step(dataset, assert_identical, group, field, row, episode, step):
    path, eps = dataset
    _tampered(path, _set_value(f"{group}/{field}", row, np.nan))
    with open_dataset(path) as ds:
        assert_identical(ds.episode(0), eps[0])
        message = rf"episode {episode}\.{field} is NaN or Inf at step {step}"
        with pytest.raises(DatasetError, match=message) as info:
            ds.episode(episode)
        assert str(path) in str(info.value)
        with pytest.raises(DatasetError, match=rf"episode {episode}\.{field}"):
            ds.summary()


def test_episode_index_out_of_range(dataset):
    path, _ = dataset
    with open_dataset(path) as ds:
        with pytest.raises(DatasetError, match=r"episode 3 out of range \(the file has 3 episodes\)"):
            ds.episode(3)
        with pytest.raises(DatasetError, match="out of range"):
            ds.episode(-4)


def test_summary_matches_the_episodes(dataset, make_meta):
    path, eps = dataset
    with open_dataset(path) as ds:
        s = ds.summary()
        assert [e.seed for e in ds.episodes()] == [0, 1, 2]
    assert s["episodes"] == 3 and s["steps"] == sum(e.n_steps for e in eps)
    assert s["episode_length"] == {"min": 2, "max": 5, "mean": np.mean([4, 2, 5])}
    assert s["meta"] == make_meta().to_dict() | {"created": s["meta"]["created"]}
    assert s["closed_cleanly"] is True
    for key in (*STATE_FIELDS, *STEP_FIELDS):
        values = np.concatenate([getattr(e, key) for e in eps])
        assert s["ranges"][key]["min"] == np.min(values, axis=0).tolist()
        assert s["ranges"][key]["max"] == np.max(values, axis=0).tolist()


def test_empty_dataset_opens_with_zero_episodes(tmp_path, make_meta):
    path = tmp_path / "empty.h5"
    with DatasetWriter(path, meta=make_meta()):
        pass
    with open_dataset(path) as ds:
        assert len(ds) == 0 and ds.all_episodes() == []
        assert ds.summary()["steps"] == 0



def test_any_truncation_is_a_dataset_error(dataset, tmp_path):
    path, _ = dataset
    data = path.read_bytes()
    cut = tmp_path / "cut.h5"
    for size in np.random.default_rng(1).integers(1, len(data), size=25):
        cut.write_bytes(data[:size])
        with pytest.raises(DatasetError, match=str(cut)):
            with open_dataset(cut) as ds:
                ds.summary()


def test_corrupted_bytes_give_a_dataset_error_or_valid_data(dataset, tmp_path):
    """Random byte damage never escapes as an h5py/numpy exception (it is caught or it is harmless)."""
    path, _ = dataset
    data = path.read_bytes()
    rng = np.random.default_rng(2)
    bad = tmp_path / "bad.h5"
    outcomes = set()
    for _ in range(40):
        damaged = bytearray(data)
        positions = np.concatenate([rng.integers(0, 4096, size=4), rng.integers(0, len(data), size=8)])
        for pos in positions:  # hit the superblock and object headers as well as raw data
            damaged[pos] = int(rng.integers(0, 256))
        bad.write_bytes(bytes(damaged))
        try:
            with open_dataset(bad) as ds:
                ds.summary()
            outcomes.add("readable")
        except DatasetError as exc:
            assert str(bad) in str(exc)
            outcomes.add("refused")
    assert "refused" in outcomes
