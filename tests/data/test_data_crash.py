"""Crash safety: a writer killed with SIGKILL loses at most the episode in progress, and resuming gives
the same file as an uninterrupted run — per-episode scenes (stored, shared and absent) included."""

import json
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from contactkit.data.reader import open_dataset
from contactkit.data.schema import STATE_FIELDS, STEP_FIELDS, DatasetMeta, Episode
from contactkit.data.writer import LOCK_SUFFIX, TMP_SUFFIX, DatasetWriter

FIELDS = (*STATE_FIELDS, *STEP_FIELDS)

CHILD = r"""
import json, sys, time
import numpy as np
from contactkit.data.schema import DatasetMeta, Episode
from contactkit.data.writer import DatasetWriter
src, out, delay = sys.argv[1], sys.argv[2], float(sys.argv[3])
data = np.load(src)
fields = str(data["fields"]).split()
meta = DatasetMeta.from_json(str(data["meta"]))
scenes = json.loads(str(data["scenes"]))
with DatasetWriter(out, meta=meta) as w:
    for i in range(w.n_committed, int(data["n"])):
        w.append_episode(Episode(**{k: data[f"e{i}_{k}"] for k in fields}, seed=int(data[f"e{i}_seed"]),
                                 scene=scenes[i]))
        print("committed", i, flush=True)
        time.sleep(delay)
print("closed", flush=True)
time.sleep(600)  # stay alive: the parent's SIGKILL must find the process (on a fast machine it may be done)
"""


def _save(path, meta: DatasetMeta, episodes) -> None:
    arrays = {f"e{i}_{k}": getattr(ep, k) for i, ep in enumerate(episodes) for k in FIELDS}
    arrays.update({f"e{i}_seed": ep.seed for i, ep in enumerate(episodes)})
    scenes = json.dumps([ep.scene for ep in episodes])
    np.savez(path, meta=meta.to_json(), n=len(episodes), fields=" ".join(FIELDS), scenes=scenes, **arrays)


def _scene_pattern(rng, make_scene, n, n_obstacles=4):
    """Per-episode scenes mixing absent (None), repeated (shared copy) and new scenes, fixed per index."""
    scenes, last = [], None
    for i in range(n):
        if i % 4 == 1:
            scenes.append(None)
        elif i % 3 == 2 and last is not None:
            scenes.append(last)
        else:
            last = make_scene(rng, n_obstacles)
            scenes.append(last)
    return scenes


CHILD_TIMEOUT_S = 60.0
"""Longest wait for the writer child to report its commits."""


def _start_child(src, out, delay, log):
    with open(log, "w") as f:
        return subprocess.Popen([sys.executable, "-c", CHILD, str(src), str(out), str(delay)], stdout=f,
                                stderr=subprocess.STDOUT, text=True)


def _wait_commits(proc, log, k):
    """Poll the child's log file until it reports ``k`` commits."""
    deadline = time.monotonic() + CHILD_TIMEOUT_S
    while time.monotonic() < deadline:
        text = open(log).read()
        if text.count("committed") >= k:
            return
        if proc.poll() is not None:
            break
        time.sleep(0.01)
    proc.kill()
    raise AssertionError(f"writer child did not report {k} commits: {text}")


def _kill(proc):
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL


def _reference(tmp_path, meta, episodes):
    path = tmp_path / "reference.h5"
    with DatasetWriter(path, meta=meta) as w:
        for ep in episodes:
            w.append_episode(ep)
    return path


def _resume(path, meta, episodes):
    with DatasetWriter(path, meta=meta) as w:
        start = w.n_committed
        for ep in episodes[start:]:
            w.append_episode(ep)
    return start


def test_sigkill_between_episodes_then_resume(tmp_path, rng, make_episode, make_meta, make_scene,
                                              assert_identical, assert_same_file):
    meta = make_meta()
    scenes = _scene_pattern(rng, make_scene, 8)
    episodes = [make_episode(rng, 40, seed=i, scene=scenes[i]) for i in range(8)]
    _save(tmp_path / "src.npz", meta, episodes)
    out = tmp_path / "out.h5"
    proc = _start_child(tmp_path / "src.npz", out, 0.3, tmp_path / "child.log")
    k = 3
    try:
        _wait_commits(proc, tmp_path / "child.log", k)
        with open_dataset(out) as live:  # a reader may open the file while it is being written
            assert not live.closed_cleanly and len(live) >= k
            for i in range(k):
                assert live.scene_json(i) == (scenes[i] or meta.scene)
    finally:
        _kill(proc)
    with open_dataset(out) as ds:
        assert not ds.closed_cleanly
        n = len(ds)
        assert k <= n < len(episodes)
        for i in range(n):
            assert_identical(ds.episode(i), episodes[i])
            assert ds.scene_json(i) == (scenes[i] or meta.scene)
    assert _resume(out, meta, episodes) == n
    assert not (tmp_path / ("out.h5" + TMP_SUFFIX)).exists()
    assert not (tmp_path / ("out.h5" + LOCK_SUFFIX)).exists()
    with open_dataset(out) as ds:
        assert ds.closed_cleanly and len(ds) == len(episodes)
        for i, ep in enumerate(episodes):
            assert_identical(ds.episode(i), ep)
    assert_same_file(out, _reference(tmp_path, meta, episodes))


@pytest.mark.parametrize("kill_after_s", [0.03, 0.1])
def test_sigkill_mid_write_loses_at_most_the_episode_in_progress(tmp_path, make_episode, make_meta, make_scene,
                                                                 assert_identical, assert_same_file,
                                                                 kill_after_s):
    """Long episodes (and scenes of ~100 kB) written back to back: the kill lands while an episode is
    being written."""
    rng = np.random.default_rng(99)
    meta = make_meta()
    scenes = _scene_pattern(rng, make_scene, 12, n_obstacles=2000)
    episodes = [make_episode(rng, 6000, seed=i, scene=scenes[i]) for i in range(12)]
    _save(tmp_path / "src.npz", meta, episodes)
    out = tmp_path / "out.h5"
    proc = _start_child(tmp_path / "src.npz", out, 0.0, tmp_path / "child.log")
    try:
        _wait_commits(proc, tmp_path / "child.log", 1)
        time.sleep(kill_after_s)
    finally:
        _kill(proc)
    with open_dataset(out) as ds:
        n = len(ds)
        assert 1 <= n <= len(episodes)
        for i in range(n):
            assert_identical(ds.episode(i), episodes[i])
    _resume(out, meta, episodes)
    with open_dataset(out) as ds:
        assert [ds.episode(i).scene for i in range(len(ds))] == scenes
    assert_same_file(out, _reference(tmp_path, meta, episodes))


def test_resumed_episodes_are_the_source_episodes(tmp_path, rng, make_episode, make_meta, make_scene,
                                                   assert_identical):
    """Episode objects rebuilt from the npz hand-off equal the originals (guards the test harness)."""
    meta = make_meta()
    scenes = _scene_pattern(rng, make_scene, 4)
    assert scenes[1] is None and scenes[2] == scenes[0] and scenes[3] not in scenes[:3]
    episodes = [make_episode(rng, 3, seed=i, scene=scenes[i]) for i in range(4)]
    _save(tmp_path / "src.npz", meta, episodes)
    data = np.load(tmp_path / "src.npz")
    rebuilt_scenes = json.loads(str(data["scenes"]))
    for i, ep in enumerate(episodes):
        assert_identical(Episode(**{k: data[f"e{i}_{k}"] for k in FIELDS}, seed=int(data[f"e{i}_seed"]),
                                 scene=rebuilt_scenes[i]), ep)
    assert DatasetMeta.from_json(str(data["meta"])) == meta
