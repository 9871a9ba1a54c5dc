"""Per-episode scenes: exact round trip, shared copies, mixing with meta.scene, resume and trimming,
corruption, and files written before per-episode scenes existed."""

import h5py
import numpy as np
import pytest

from contactkit.data.reader import open_dataset
from contactkit.data.schema import (
    INDEX_FIELDS,
    SCENE_BYTES,
    SCENE_INDEX_FIELDS,
    SOURCE_INDEX_FIELDS,
    STATE_FIELDS,
    STEP_FIELDS,
)
from contactkit.data.writer import LOCK_SUFFIX, TMP_SUFFIX, DatasetWriter
from contactkit.errors import DatasetError, InvalidInputError
from contactkit.scene import Scene
from contactkit.tasks.scenes import random_training_scene


def _write(path, meta, episodes, fsync=True):
    with DatasetWriter(path, meta=meta, fsync=fsync) as w:
        for ep in episodes:
            w.append_episode(ep)
    return path


def _strip_scene_storage(path):
    """Turn a file into the layout written before per-episode scenes (no scenes/, no scene index)."""
    with h5py.File(path, "r+") as f:
        del f["scenes"]
        for key in SCENE_INDEX_FIELDS:
            del f[f"episodes/{key}"]
        del f["sources"]  # per-episode provenance came later still
        for key in SOURCE_INDEX_FIELDS:
            del f[f"episodes/{key}"]
        names = []
        f.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
    old_index = [k for k in INDEX_FIELDS if k not in SCENE_INDEX_FIELDS]
    expected = [f"episodes/{k}" for k in old_index] + [f"states/{k}" for k in STATE_FIELDS]
    assert sorted(names) == sorted(expected + [f"steps/{k}" for k in STEP_FIELDS])
    return path


def test_round_trip_of_training_scenes_is_exact(tmp_path, rng, make_episode, make_meta, assert_identical):
    scenes = [random_training_scene(np.random.default_rng([3, i, 1])).to_json() for i in range(4)]
    scenes[2] = None
    eps = [make_episode(rng, 5 + i, seed=i, scene=s) for i, s in enumerate(scenes)]
    meta = make_meta()
    path = _write(tmp_path / "d.h5", meta, eps)
    with open_dataset(path) as ds:
        assert ds.has_episode_scenes and len(ds) == 4
        for i, ep in enumerate(eps):
            assert_identical(ds.episode(i), ep)
            assert ds.scene_json(i) == (scenes[i] if scenes[i] is not None else meta.scene)
        for a, b in zip(ds.all_episodes(), eps, strict=True):
            assert_identical(a, b)
        assert ds.scene_json(-1) == scenes[3]
        assert ds.summary()["episode_scenes"] == 3
        geometry = Scene.from_json(ds.scene_json(1))  # the actual geometry of that episode comes back
    assert geometry.to_json() == scenes[1]
    assert len({s for s in scenes if s}) == 3  # the drawn scenes really differ


def test_identical_consecutive_scenes_share_one_copy(tmp_path, rng, make_episode, make_scene, make_meta,
                                                     assert_identical):
    a, b = make_scene(rng), make_scene(rng, 6)
    scenes = [a, a, None, a, b, a, None, None, b]
    eps = [make_episode(rng, 3, scene=s) for s in scenes]
    path = _write(tmp_path / "d.h5", make_meta(), eps)
    ba, bb = a.encode("utf-8"), b.encode("utf-8")
    assert len(ba) > len(a)  # multi-byte UTF-8 characters are stored
    la, lb = len(ba), len(bb)
    with h5py.File(path, "r") as f:
        # a stored once for episodes 0, 1, 3 (None in between does not break sharing); b; a again after
        # b (only the last stored scene is shared); b again after a.
        assert f[SCENE_BYTES][:].tobytes() == ba + bb + ba + bb
        assert f["episodes/scene_start"][:].tolist() == [0, 0, -1, 0, la, la + lb, -1, -1, 2 * la + lb]
        assert f["episodes/scene_length"][:].tolist() == [la, la, 0, la, lb, la, 0, 0, lb]
    with open_dataset(path) as ds:
        for got, ep in zip(ds.all_episodes(), eps, strict=True):
            assert_identical(got, ep)
        assert ds.index.n_scene_bytes == 2 * (la + lb)


def test_resume_at_every_split_equals_uninterrupted(tmp_path, rng, make_episode, make_scene, make_meta,
                                                   assert_same_file):
    a, b = make_scene(rng), make_scene(rng)
    scenes = [None, a, a, None, a, b, b, None, a]
    eps = [make_episode(rng, 2, seed=i, scene=s) for i, s in enumerate(scenes)]
    meta = make_meta()
    reference = _write(tmp_path / "reference.h5", meta, eps)
    for k in range(len(eps) + 1):  # fsync only makes the file durable; it does not change its bytes
        path = _write(tmp_path / f"split{k}.h5", meta, eps[:k], fsync=False)
        with DatasetWriter(path, meta=meta, fsync=False) as w:
            assert w.n_committed == k
            for ep in eps[k:]:
                w.append_episode(ep)
        assert_same_file(path, reference)


def test_stray_scene_bytes_of_an_interrupted_append_are_ignored_then_trimmed(tmp_path, rng, make_episode,
                                                                             make_scene, make_meta,
                                                                             assert_identical, assert_same_file):
    s0 = make_scene(rng)
    eps = [make_episode(rng, 3, scene=s0), make_episode(rng, 4), make_episode(rng, 2, scene=s0)]
    meta = make_meta()
    path = _write(tmp_path / "d.h5", meta, eps[:1])
    with h5py.File(path, "r+") as f:  # rows, scene bytes and part of the index of an uncommitted episode
        ds = f[SCENE_BYTES]
        n = ds.shape[0]
        ds.resize((n + 50,))
        ds[n:] = np.frombuffer(b"\xff" * 50, dtype=np.uint8)
        for key in ("state_start", "step_start", "seed", "scene_start", "scene_length"):
            f[f"episodes/{key}"].resize((2,))
            f[f"episodes/{key}"][1] = 12345
    with open_dataset(path) as ds:
        assert len(ds) == 1 and ds.index.n_scene_bytes == n
        assert_identical(ds.episode(0), eps[0])
    with DatasetWriter(path, meta=meta) as w:
        for ep in eps[1:]:  # the last one shares episode 0's scene: no scene bytes are written after resume
            w.append_episode(ep)
    assert_same_file(path, _write(tmp_path / "reference.h5", meta, eps))


def test_invalid_scene_is_refused_and_writer_stays_usable(tmp_path, rng, make_episode, make_scene, make_meta):
    path = tmp_path / "d.h5"
    good = make_episode(rng, 3, scene=make_scene(rng))
    with DatasetWriter(path, meta=make_meta()) as w:
        with pytest.raises(InvalidInputError, match=r"episode\.scene must be a JSON object, got list"):
            w.append_episode(make_episode(rng, 3, scene="[1, 2]"))
        assert w.n_committed == 0
        w.append_episode(good)
    with open_dataset(path) as ds:
        assert len(ds) == 1 and ds.episode(0).scene == good.scene


@pytest.fixture
def scene_file(tmp_path, rng, make_episode, make_scene, make_meta):
    """Three episodes with three different scenes; returns (path, episodes)."""
    eps = [make_episode(rng, 3, seed=i, scene=make_scene(rng, 2 + i)) for i in range(3)]
    return _write(tmp_path / "d.h5", make_meta(), eps), eps


def _overwrite_scene(path, i, edit):
    """Replace the stored bytes of episode i's scene by ``edit(bytes)`` (same length); returns its start."""
    with h5py.File(path, "r+") as f:
        a, m = int(f["episodes/scene_start"][i]), int(f["episodes/scene_length"][i])
        new = edit(f[SCENE_BYTES][a:a + m].tobytes())
        assert len(new) == m
        f[SCENE_BYTES][a:a + m] = np.frombuffer(new, dtype=np.uint8)
    return a


def test_scene_bytes_that_are_not_utf8_name_file_episode_and_byte(scene_file, assert_identical):
    path, eps = scene_file
    start = _overwrite_scene(path, 1, lambda raw: raw[:3] + b"\xff" + raw[4:])  # inside the ASCII '"name"'
    message = rf"episode 1\.scene is not valid UTF-8 \(invalid start byte at byte {start + 3} of scenes/bytes\)"
    with open_dataset(path) as ds:
        assert_identical(ds.episode(0), eps[0])
        assert ds.scene_json(2) == eps[2].scene
        for read in (lambda: ds.episode(1), lambda: ds.scene_json(1), ds.all_episodes, ds.summary):
            with pytest.raises(DatasetError, match=message) as info:
                read()
            assert str(path) in str(info.value)


@pytest.mark.parametrize("edit,problem", [
    (lambda raw: b"x" + raw[1:], r"episode 1\.scene is not valid JSON"),
    (lambda raw: b'"' + b"a" * (len(raw) - 2) + b'"', r"episode 1\.scene must be a JSON object, got str"),
])
def test_scene_that_is_not_a_json_object_is_named(scene_file, edit, problem):
    path, _ = scene_file
    _overwrite_scene(path, 1, edit)
    with open_dataset(path) as ds:
        for read in (lambda: ds.episode(1), lambda: ds.scene_json(1), ds.all_episodes):
            with pytest.raises(DatasetError, match=problem) as info:
                read()
            assert str(path) in str(info.value)


def _set(name, index, value):
    def edit(f):
        f[name][index] = value
    return edit


def _shrink_scene_bytes(f):
    f[SCENE_BYTES].resize((int(f["episodes/scene_start"][2]) + 5,))


def _float_scene_bytes(f):
    n = f[SCENE_BYTES].shape[0]
    del f[SCENE_BYTES]
    f.create_dataset(SCENE_BYTES, data=np.zeros(n))


@pytest.mark.parametrize("edit,problem", [
    (_shrink_scene_bytes, r"episode 2's scene points past the scene bytes: it needs bytes \d+:\d+ but "
                          r"scenes/bytes has \d+"),
    (_set("episodes/scene_start", 0, -1), r"episode 0 has an invalid scene index \(scene_start -1, "
                                          r"scene_length \d+\)"),
    (_set("episodes/scene_length", 1, 0), r"episode 1 has an invalid scene index"),
    (_set("episodes/scene_start", 2, 1), r"mismatched scene index: episode 2's scene starts at byte 1 but the "
                                         r"scenes before it end at byte \d+"),
    (lambda f: f.__delitem__("episodes/scene_length"), r"per-episode scene storage is incomplete: "
                                                       r"dataset\(s\) \['episodes/scene_length'\] missing"),
    (lambda f: f["episodes/scene_start"].resize((2,)), r"mismatched lengths: episodes/scene_start has 2 entries"),
    (_float_scene_bytes, r"dataset 'scenes/bytes' has dtype float64 and shape \(\d+,\); expected 1-D uint8"),
])
def test_corrupt_scene_index_is_refused_at_open(scene_file, edit, problem):
    path, _ = scene_file
    with h5py.File(path, "r+") as f:
        edit(f)
    with pytest.raises(DatasetError, match=problem) as info:
        open_dataset(path)
    assert str(path) in str(info.value)


def test_scene_json_out_of_range(scene_file):
    path, _ = scene_file
    with open_dataset(path) as ds, pytest.raises(DatasetError, match=r"episode 3 out of range"):
        ds.scene_json(3)


def test_file_without_scene_storage_reads_with_the_file_scene(tmp_path, rng, make_episode, make_meta,
                                                              assert_identical):
    eps = [make_episode(rng, T, seed=T) for T in (3, 5)]
    meta = make_meta()
    path = _strip_scene_storage(_write(tmp_path / "old.h5", meta, eps))
    with open_dataset(path) as ds:
        assert not ds.has_episode_scenes and ds.closed_cleanly
        for got, ep in zip(ds.all_episodes(), eps, strict=True):
            assert_identical(got, ep)
        assert_identical(ds.episode(1), eps[1])
        assert [ds.scene_json(i) for i in range(2)] == [meta.scene, meta.scene]
        assert ds.index.scene_start.tolist() == [-1, -1] and ds.index.n_scene_bytes == 0
        assert ds.summary()["episode_scenes"] == 0


def test_resuming_a_file_without_scene_storage_upgrades_it(tmp_path, rng, make_episode, make_scene, make_meta,
                                                           assert_same_file):
    scene = make_scene(rng)
    eps = [make_episode(rng, 3, seed=0), make_episode(rng, 4, seed=1), make_episode(rng, 2, seed=2, scene=scene)]
    meta = make_meta()
    path = _strip_scene_storage(_write(tmp_path / "old.h5", meta, eps[:2]))
    with DatasetWriter(path, meta=meta) as w:
        assert w.n_committed == 2
        w.append_episode(eps[2])
    assert not (tmp_path / ("old.h5" + TMP_SUFFIX)).exists()
    assert not (tmp_path / ("old.h5" + LOCK_SUFFIX)).exists()
    with open_dataset(path) as ds:
        assert ds.has_episode_scenes and [e.scene for e in ds.episodes()] == [None, None, scene]
    assert_same_file(path, _write(tmp_path / "reference.h5", meta, eps))
