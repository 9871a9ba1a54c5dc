"""Collection on Ray workers writes the serial run's file: every dataset and attribute equal (the creation time
aside), and the same bytes outside that attribute; a resumed run continues it; the CLI starts and stops its own
local Ray instance."""

import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import as_completed

import h5py
import numpy as np
import pytest

from contactkit.data.collect import CollectSpec, collect
from contactkit.data.parallel import RayPool, check_workers, uses_ray
from contactkit.errors import InvalidInputError

STEPS = 30
SHUTDOWN_WAIT_S = 20.0


def _contents(path) -> tuple[dict, dict]:
    """``({dataset name: array}, {attribute: value})`` of an HDF5 file, the creation time left out."""
    datasets = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, obj: datasets.__setitem__(name, obj[()]) if isinstance(obj, h5py.Dataset) else None)
        attrs = {k: v for k, v in f.attrs.items() if k != "created"}
    return datasets, attrs


def assert_same_file(a, b) -> None:
    (da, aa), (db, ab) = _contents(a), _contents(b)
    assert da.keys() == db.keys() and len(da) > 0
    for name in da:
        assert da[name].dtype == db[name].dtype and np.array_equal(da[name], db[name]), name
    assert aa.keys() == ab.keys()
    for key in aa:
        assert np.array_equal(aa[key], ab[key]), key
    bytes_a, bytes_b = open(a, "rb").read(), open(b, "rb").read()
    assert len(bytes_a) == len(bytes_b)
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        created_a, created_b = fa.attrs["created"], fb.attrs["created"]
    differing = sum(x != y for x, y in zip(bytes_a, bytes_b, strict=True))
    assert differing <= sum(x != y for x, y in zip(created_a, created_b, strict=True))  # only the creation time


@pytest.mark.parametrize("task", ["peg-in-hole", "random-scene"])
def test_two_ray_workers_write_the_serial_file(tmp_path, ray_cluster, task):
    spec = CollectSpec(task=task, episodes=5, steps=STEPS, seed=7)
    assert collect(spec, str(tmp_path / "serial.h5")) == 5
    done = []
    assert collect(spec, str(tmp_path / "ray.h5"), progress=lambda d, t: done.append(d), workers=2) == 5
    assert done == [0, 1, 2, 3, 4, 5]  # committed in episode order
    assert_same_file(tmp_path / "serial.h5", tmp_path / "ray.h5")


def test_a_parallel_run_resumes_a_serial_one(tmp_path, ray_cluster):
    spec = CollectSpec(episodes=4, steps=STEPS, seed=2)
    collect(spec, str(tmp_path / "serial.h5"))
    collect(CollectSpec(episodes=2, steps=STEPS, seed=2), str(tmp_path / "resumed.h5"))
    assert collect(spec, str(tmp_path / "resumed.h5"), workers=2) == 2
    assert collect(spec, str(tmp_path / "resumed.h5"), workers=2) == 0  # nothing left: no task runs
    assert_same_file(tmp_path / "serial.h5", tmp_path / "resumed.h5")


def test_ray_pool_keeps_the_jobs_order_and_gives_futures(ray_cluster):
    with RayPool(2) as pool:
        assert pool.map(math.sqrt, [float(k * k) for k in range(12)]) == [float(k) for k in range(12)]
        futures = {pool.submit(math.sqrt, float(k * k)): k for k in range(5)}
        assert sorted((f.result(), futures[f]) for f in as_completed(futures)) == [(float(k), k) for k in range(5)]
        first = pool.imap(math.sqrt, [1.0, 4.0, 9.0, 16.0])
        assert next(first) == 1.0
        first.close()  # an abandoned iteration cancels what still runs
    assert ray_cluster.is_initialized()  # the pool leaves an instance it did not start running


def test_bad_worker_counts_and_addresses_are_refused(tmp_path):
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(InvalidInputError, match="--workers"):
            check_workers(bad)
    with pytest.raises(InvalidInputError, match="--ray-address"):
        check_workers(2, " ")
    assert not uses_ray(1) and uses_ray(2) and uses_ray(1, "auto")
    with pytest.raises(InvalidInputError, match="--workers"):
        collect(CollectSpec(episodes=1, steps=2), str(tmp_path / "x.h5"), workers=0)
    with socket.socket() as s:  # a port nothing listens at once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(InvalidInputError, match="no Ray cluster answers"):
        collect(CollectSpec(episodes=1, steps=2), str(tmp_path / "x.h5"), ray_address=f"127.0.0.1:{port}")
    assert not (tmp_path / "x.h5").exists()


def _processes_naming(text: str) -> list[int]:
    """Ids of the processes whose command line contains ``text``."""
    pids = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if text.encode() in f.read():
                    pids.append(int(entry))
        except OSError:
            continue
    return pids


def test_cli_collect_on_its_own_local_ray_instance_matches_serial_and_leaves_no_process(tmp_path):
    collect(CollectSpec(episodes=3, steps=STEPS, seed=4), str(tmp_path / "serial.h5"))
    ray_dir = tempfile.mkdtemp(prefix="ckray", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    try:
        run = subprocess.run([sys.executable, "-m", "contactkit", "collect", "--episodes", "3", "--steps",
                              str(STEPS), "--seed", "4", "--out", str(tmp_path / "ray.h5"), "--workers", "2"],
                             capture_output=True, text=True, timeout=300,
                             env={**os.environ, "OMP_NUM_THREADS": "1", "RAY_TMPDIR": ray_dir})
        assert run.returncode == 0, run.stderr[-2000:]
        assert_same_file(tmp_path / "serial.h5", tmp_path / "ray.h5")
        assert os.listdir(ray_dir)  # the instance did live there
        deadline = time.monotonic() + SHUTDOWN_WAIT_S
        while _processes_naming(ray_dir) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not _processes_naming(ray_dir)  # every process of its instance (gcs, raylet, workers) is gone
    finally:
        shutil.rmtree(ray_dir, ignore_errors=True)


def _crash_on(index: int):
    """A collection job that kills its worker process on episode ``index`` (every retry too), else collects it; a
    lambda, so Ray ships it by value."""
    from contactkit.data.collect import collect_episode

    return lambda job: os._exit(3) if job[1] == index else collect_episode(*job)


def test_a_worker_lost_beyond_retries_is_one_clear_error_and_the_episodes_before_it_are_kept(
        tmp_path, ray_cluster, monkeypatch):
    """Issue 35 part 6: Ray's WorkerCrashedError (a worker killed on every retry) becomes WorkerLost naming the job;
    the episodes before it are committed and the same command resumes to the serial run's file."""
    import contactkit.data.collect as collect_module
    from contactkit.data.reader import open_dataset
    from contactkit.errors import WorkerLost

    spec = CollectSpec(episodes=4, steps=STEPS, seed=5)
    collect(spec, str(tmp_path / "serial.h5"))
    monkeypatch.setattr(collect_module, "_episode_job", _crash_on(2))
    with pytest.raises(WorkerLost, match=r"job 2 \(in submission order\) was lost: its Ray worker died .*"
                                         r"WorkerCrashedError.* the 2 job\(s\) before it were delivered"):
        collect(spec, str(tmp_path / "parallel.h5"), workers=2)
    with open_dataset(tmp_path / "parallel.h5") as ds:
        assert len(ds) == 2
    monkeypatch.undo()
    assert collect(spec, str(tmp_path / "parallel.h5"), workers=2) == 2
    assert_same_file(tmp_path / "serial.h5", tmp_path / "parallel.h5")


def _die_on(index: int):
    """A job function that kills its worker process on job ``index`` (every retry too), else squares the job."""
    return lambda job: os._exit(3) if job == index else job * job


def test_a_submitted_job_lost_beyond_retries_is_worker_lost_and_the_other_futures_keep_their_results(ray_cluster):
    """Issue 35: a future of RayPool.submit whose worker died on every retry ends in WorkerLost (one line naming the
    job), not in Ray's WorkerCrashedError; the other jobs' futures hold their results."""
    from concurrent.futures import as_completed

    from contactkit.errors import WorkerLost

    with RayPool(2) as pool:
        futures = [pool.submit(_die_on(1), j) for j in range(4)]
        done = list(as_completed(futures, timeout=120))
    assert len(done) == 4
    assert [f.result() for k, f in enumerate(futures) if k != 1] == [0, 4, 9]
    with pytest.raises(WorkerLost, match=r"^job 1 \(in submission order\) was lost: its Ray worker died beyond Ray's "
                                         r"retries \(WorkerCrashedError: .*the results of the other jobs are kept$"):
        futures[1].result()
    assert "\n" not in str(futures[1].exception())
