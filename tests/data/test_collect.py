"""Collection: determinism, resume after SIGKILL through the real command, meta recorded."""

import json
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from contactkit.data.collect import CollectSpec, collect, dataset_meta, set_aside_if_stale
from contactkit.data.reader import open_dataset
from contactkit.errors import ContactkitError

SMALL = {"episodes": 3, "steps": 30}


def _arrays(path):
    with open_dataset(path) as ds:
        return [ep.arrays() for ep in ds.episodes()]


def _equal(a, b):
    return len(a) == len(b) and all(
        all(np.array_equal(x[k], y[k]) for k in x) for x, y in zip(a, b, strict=True))


def test_same_seed_same_dataset(tmp_path):
    spec = CollectSpec(**SMALL, seed=7)
    collect(spec, str(tmp_path / "a.h5"))
    collect(spec, str(tmp_path / "b.h5"))
    assert _equal(_arrays(tmp_path / "a.h5"), _arrays(tmp_path / "b.h5"))
    collect(CollectSpec(**SMALL, seed=8), str(tmp_path / "c.h5"))
    assert not _equal(_arrays(tmp_path / "a.h5"), _arrays(tmp_path / "c.h5"))


def test_meta_records_scene_world_policy_seed(tmp_path):
    spec = CollectSpec(**SMALL, seed=3, shape="square", clearance=5e-3)
    collect(spec, str(tmp_path / "a.h5"))
    with open_dataset(tmp_path / "a.h5") as ds:
        assert ds.meta.seed == 3
        assert json.loads(ds.meta.scene)["meta"]["clearance"] == 5e-3
        assert json.loads(ds.meta.policy)["name"] == "random-spline"
        assert json.loads(ds.meta.world)["n_substeps"] == spec.world.n_substeps
        assert ds.meta.control_dt == pytest.approx(spec.world.control_dt)


def test_rerun_with_other_settings_is_refused_and_file_kept(tmp_path):
    path = tmp_path / "a.h5"
    collect(CollectSpec(**SMALL, seed=1), str(path))
    before = _arrays(path)
    with pytest.raises(ContactkitError, match="seed"):
        collect(CollectSpec(**SMALL, seed=2), str(path))
    assert _equal(before, _arrays(path))


def test_sigkill_mid_collection_then_resume_equals_uninterrupted(tmp_path):
    """Kill `contactkit collect` after some episodes; re-running the same command completes it exactly."""
    episodes = 16  # long enough that the reader sees two committed episodes before the end, even on a loaded machine
    args = ["--episodes", str(episodes), "--steps", "60", "--seed", "4", "--policy", "random-spline"]
    path = tmp_path / "killed.h5"
    cmd = [sys.executable, "-m", "contactkit.cli", "collect", "--out", str(path), *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    committed = 0
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
        try:
            with open_dataset(path) as ds:
                committed = len(ds)
        except ContactkitError:
            continue
        if committed >= 2:
            break
    proc.kill()  # SIGKILL; nothing if the process has already ended and been reaped
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the collection ended before the test could kill it"
    assert committed >= 2, "the collection committed fewer than two episodes before the deadline"
    with open_dataset(path) as ds:
        survivors = len(ds)
        assert survivors >= committed
        first = [ep.arrays() for ep in ds.episodes()]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    reference = tmp_path / "clean.h5"
    subprocess.run([sys.executable, "-m", "contactkit.cli", "collect", "--out", str(reference), *args], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    resumed, clean = _arrays(path), _arrays(reference)
    assert len(resumed) == episodes
    assert _equal(resumed, clean)
    assert _equal(first, clean[:survivors])


def test_random_scene_collection_stores_each_episode_scene(tmp_path):
    from contactkit.scene import Scene

    path = tmp_path / "r.h5"
    collect(CollectSpec(task="random-scene", episodes=3, steps=10, seed=2), str(path))
    with open_dataset(path) as ds:
        scenes = [Scene.from_json(ds.scene_json(i)) for i in range(len(ds))]
    assert len({s.to_json() for s in scenes}) == 3
    assert all(3 <= len(s.statics) - 1 <= 6 for s in scenes)


def test_a_demo_dataset_from_other_settings_is_kept_aside_not_resumed(tmp_path):
    """An out/demo left by an earlier version cannot be resumed (its meta differs): the demo keeps it as
    touch.stale-1.h5 and collects afresh; a dataset with the same meta stays to be resumed."""
    old, new = (CollectSpec(episodes=1, steps=5, seed=seed) for seed in (1, 2))
    path = tmp_path / "touch.h5"
    collect(old, str(path))
    before = path.read_bytes()
    assert set_aside_if_stale(path, dataset_meta(old)) is None and path.exists()
    assert set_aside_if_stale(path, dataset_meta(new)) == tmp_path / "touch.stale-1.h5"
    assert not path.exists() and (tmp_path / "touch.stale-1.h5").read_bytes() == before
    collect(new, str(path))
    assert set_aside_if_stale(path, dataset_meta(old)) == tmp_path / "touch.stale-2.h5"
    assert set_aside_if_stale(tmp_path / "absent.h5", dataset_meta(old)) is None


def test_a_refused_collect_writes_nothing_and_keeps_what_was_there(tmp_path):
    """Issue 35 part 8: a world that cannot be built (a 0.5 s step the controller cannot survive) is refused before
    any episode: the new file and the folders made for it are gone, so the corrected command starts afresh; a
    dataset that already held episodes is kept as it was."""
    from contactkit.physics import WorldParams

    bad = CollectSpec(episodes=1, steps=2, world=WorldParams(timestep=0.5))
    out = tmp_path / "new" / "deeper" / "d.h5"
    with pytest.raises(ContactkitError, match="cannot be stable"):
        collect(bad, str(out))
    assert list(tmp_path.iterdir()) == []
    good = CollectSpec(episodes=1, steps=2)
    assert collect(good, str(out)) == 1
    before = out.read_bytes()
    with pytest.raises(ContactkitError, match="cannot be stable"):
        collect(bad, str(tmp_path / "new" / "deeper" / "e.h5"))  # a folder that existed is kept
    assert sorted(p.name for p in out.parent.iterdir()) == ["d.h5"] and out.read_bytes() == before
    with pytest.raises(ContactkitError, match="meta differs"):
        collect(bad, str(out))  # an existing dataset of another world is refused and kept
    assert out.read_bytes() == before
