"""DatasetWriter: exact round trip, layout, resume rules, and refusal to touch foreign files."""

import dataclasses
import shutil

import h5py
import numpy as np
import pytest

from contactkit.data.reader import open_dataset
from contactkit.data.schema import (
    FORMAT_NAME,
    INDEX_FIELDS,
    SCENE_BYTES,
    SCHEMA_VERSION,
    STATE_FIELDS,
    STEP_FIELDS,
)
from contactkit.data.writer import CHUNK_ROWS, LOCK_SUFFIX, SCENE_CHUNK_BYTES, TMP_SUFFIX, DatasetWriter
from contactkit.errors import DatasetError, InvalidInputError


def _write(path, meta, episodes, **kw):
    with DatasetWriter(path, meta=meta, **kw) as w:
        for ep in episodes:
            w.append_episode(ep)
        return w.n_committed


def _episodes(make_episode, rng, lengths):
    return [make_episode(rng, T, seed=None if i == 1 else 100 + i) for i, T in enumerate(lengths)]


def test_round_trip_is_bitwise_exact(tmp_path, rng, make_episode, make_meta, assert_identical):
    eps = _episodes(make_episode, rng, [5, 1, 9, 3])
    meta = make_meta()
    path = tmp_path / "d.h5"
    assert _write(path, meta, eps) == 4
    with open_dataset(path) as ds:
        assert len(ds) == 4 and ds.meta == meta and ds.closed_cleanly
        for i, ep in enumerate(eps):
            assert_identical(ds.episode(i), ep)
        for a, b in zip(ds.all_episodes(), eps, strict=True):
            assert_identical(a, b)
        assert_identical(ds.episode(-1), eps[-1])
    assert not (tmp_path / ("d.h5" + LOCK_SUFFIX)).exists()
    assert not (tmp_path / ("d.h5" + TMP_SUFFIX)).exists()


def test_layout_dtypes_chunks_and_attributes(tmp_path, rng, make_episode, make_meta):
    eps = _episodes(make_episode, rng, [4, 6])
    path = tmp_path / "d.h5"
    _write(path, make_meta(), eps)
    with h5py.File(path, "r") as f:
        assert f.attrs["format"] == FORMAT_NAME and f.attrs["schema_version"] == SCHEMA_VERSION
        for group, fields, rows in (("states", STATE_FIELDS, 4 + 6 + 2), ("steps", STEP_FIELDS, 4 + 6)):
            for key, trailing in fields.items():
                ds = f[f"{group}/{key}"]
                assert ds.dtype == np.float64 and ds.shape == (rows, *trailing)
                assert ds.chunks == (CHUNK_ROWS, *trailing) and ds.maxshape[0] is None
        scenes = f[SCENE_BYTES]
        assert scenes.dtype == np.uint8 and scenes.shape == (0,) and scenes.chunks == (SCENE_CHUNK_BYTES,)
        index = {k: f[f"episodes/{k}"][:] for k in INDEX_FIELDS}
    assert index["length"].tolist() == [4, 6]
    assert index["step_start"].tolist() == [0, 4]
    assert index["state_start"].tolist() == [0, 5]
    assert index["seed"].tolist() == [100, -1]
    assert index["scene_start"].tolist() == [-1, -1] and index["scene_length"].tolist() == [0, 0]


def test_same_data_gives_identical_arrays(tmp_path, rng, make_episode, make_meta):
    eps = _episodes(make_episode, rng, [3, 7, 2])
    meta = make_meta()
    for name in ("a.h5", "b.h5"):
        _write(tmp_path / name, meta, eps)
    with h5py.File(tmp_path / "a.h5", "r") as fa, h5py.File(tmp_path / "b.h5", "r") as fb:
        names = []
        fa.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
        # + scenes/bytes, + sources/bytes and its index
        assert len(names) == len(STATE_FIELDS) + len(STEP_FIELDS) + len(INDEX_FIELDS) + 1 + 1 + 2
        for n in names:
            assert fa[n][()].tobytes() == fb[n][()].tobytes(), n
        assert dict(fa.attrs) == dict(fb.attrs)


def test_resume_appends_after_committed_episodes(tmp_path, rng, make_episode, make_meta, assert_identical):
    eps = _episodes(make_episode, rng, [2, 3, 4, 5])
    path = tmp_path / "d.h5"
    meta = make_meta()
    _write(path, meta, eps[:2])
    later = dataclasses.replace(meta, created="2999-01-01T00:00:00+00:00", contactkit_version="9.9")
    with DatasetWriter(path, meta=later) as w:
        assert w.n_committed == 2 and w.meta == meta  # the stored meta is kept
        assert w.append_episode(eps[2]) == 2
        w.append_episode(eps[3])
    with open_dataset(path) as ds:
        assert ds.meta == meta
        assert len(ds) == 4
        for i, ep in enumerate(eps):
            assert_identical(ds.episode(i), ep)


@pytest.mark.parametrize("key,value", [("scene", '{"name": "slot"}'), ("world", "{}"),
                                       ("policy", '{"name": "icem"}'), ("seed", 8),
                                       ("action_mode", "pose-delta"), ("control_dt", 0.02)])
def test_resume_with_different_meta_names_the_key(tmp_path, rng, make_episode, make_meta, sha256, key, value):
    path = tmp_path / "d.h5"
    _write(path, make_meta(), [make_episode(rng, 3)])
    before = sha256(path)
    with pytest.raises(DatasetError, match=rf"meta differs in \['{key}'\]"):
        DatasetWriter(path, meta=make_meta(**{key: value}))
    assert sha256(path) == before


def test_existing_dataset_without_resume_is_refused(tmp_path, rng, make_episode, make_meta, sha256):
    path = tmp_path / "d.h5"
    _write(path, make_meta(), [make_episode(rng, 3)])
    before = sha256(path)
    with pytest.raises(DatasetError, match="resume=True"):
        DatasetWriter(path, meta=make_meta(), resume=False)
    assert sha256(path) == before


@pytest.mark.parametrize("name", ["unrelated_valid.h5", "random_bytes.h5", "zero_bytes.h5", "truncated.h5",
                                  "log_ok.csv"])
def test_foreign_file_is_never_touched(tmp_path, files_dir, make_meta, sha256, name):
    path = tmp_path / "user.h5"
    shutil.copyfile(files_dir / name, path)
    before = sha256(path)
    for resume in (True, False):
        with pytest.raises(DatasetError, match="refusing to write"):
            DatasetWriter(path, meta=make_meta(), resume=resume)
    assert sha256(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["user.h5"]


def test_second_writer_is_refused_while_first_writes(tmp_path, rng, make_episode, make_meta,
                                                     assert_identical):
    path = tmp_path / "d.h5"
    eps = _episodes(make_episode, rng, [2, 3])
    with DatasetWriter(path, meta=make_meta()) as w:
        w.append_episode(eps[0])
        with pytest.raises(DatasetError, match="another writer"):
            DatasetWriter(path, meta=make_meta())
        w.append_episode(eps[1])
    with open_dataset(path) as ds:
        assert len(ds) == 2
        assert_identical(ds.episode(1), eps[1])


def test_invalid_episode_is_refused_and_writer_stays_usable(tmp_path, rng, make_episode, make_meta):
    path = tmp_path / "d.h5"
    good = make_episode(rng, 3)
    bad = dataclasses.replace(good, wrench=np.full((3, 6), np.nan))
    with DatasetWriter(path, meta=make_meta()) as w:
        with pytest.raises(InvalidInputError, match=r"wrench is NaN or Inf at step 0"):
            w.append_episode(bad)
        assert w.n_committed == 0
        w.append_episode(good)
    with open_dataset(path) as ds:
        assert len(ds) == 1


def test_rows_beyond_the_index_are_ignored_then_trimmed(tmp_path, rng, make_episode, make_meta,
                                                        assert_identical):
    path = tmp_path / "d.h5"
    eps = _episodes(make_episode, rng, [3, 4])
    _write(path, make_meta(), eps[:1])
    with h5py.File(path, "r+") as f:  # what a writer interrupted between rows and index leaves behind
        for group, fields in (("states", STATE_FIELDS), ("steps", STEP_FIELDS)):
            for key in fields:
                ds = f[f"{group}/{key}"]
                ds.resize(ds.shape[0] + 7, axis=0)
                ds[-7:] = 99.0
        f["episodes/seed"].resize((2,))
    with open_dataset(path) as ds:
        assert len(ds) == 1
        assert_identical(ds.episode(0), eps[0])
    with DatasetWriter(path, meta=make_meta()) as w:
        assert w.n_committed == 1
        w.append_episode(eps[1])
    with open_dataset(path) as ds, h5py.File(path, "r", swmr=False) as f:
        assert len(ds) == 2
        assert_identical(ds.episode(1), eps[1])
        assert f["states/pos"].shape[0] == 3 + 4 + 2 and f["episodes/seed"].shape == (2,)


def test_bad_writer_arguments(tmp_path, rng, make_episode, make_meta):
    with pytest.raises(InvalidInputError, match="meta must be a DatasetMeta"):
        DatasetWriter(tmp_path / "d.h5", meta={"scene": "{}"})
    with pytest.raises(InvalidInputError, match="chunk_rows"):
        DatasetWriter(tmp_path / "d.h5", meta=make_meta(), chunk_rows=0)
    with pytest.raises(DatasetError, match="cannot create the writer lock"):
        DatasetWriter(tmp_path / "no_such_dir" / "d.h5", meta=make_meta())
    with DatasetWriter(tmp_path / "d.h5", meta=make_meta()) as w:
        with pytest.raises(InvalidInputError, match="needs an Episode"):
            w.append_episode(make_episode(rng, 2).arrays())
    with pytest.raises(DatasetError, match="writer is closed"):
        w.append_episode(make_episode(rng, 2))
