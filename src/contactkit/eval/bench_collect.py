"""Benchmark ``collect``: control steps per second against a bare MuJoCo loop on the same scene.

Times are CPU seconds of this process (``time.process_time``); both loops run single-threaded here.
The bare loop is what a MuJoCo-plus-scripts user writes: set the impedance target (mocap bodies) from
the same policy actions and call ``mj_step`` for the control period's sub-steps — no F/T sensing, no
applied-wrench bookkeeping, no dataset. ``overhead_ratio = bare steps/s ÷ collect steps/s`` (goal ≤ 2).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import mujoco
import numpy as np

from contactkit.control.impedance import pose_target
from contactkit.data.collect import CollectSpec, collect, make_world
from contactkit.data.reader import open_dataset
from contactkit.data.writer import DatasetWriter
from contactkit.eval import paper_quotes, progress

PAPER = paper_quotes.COLLECT
"""The paper's numbers beside ours in the report (:mod:`contactkit.eval.paper_quotes`)."""


def _bare_loop(spec: CollectSpec, commands: np.ndarray) -> float:
    """Seconds a bare mj_step loop takes to replay ``commands`` (T, 6) as impedance targets."""
    scene = spec.scene()
    world = make_world(spec.backend, scene, spec.world, np.random.default_rng(0))
    m, d = world.model, world.data
    mp, mr = world._mocap_pos, world._mocap_rot
    n = spec.world.n_substeps
    started = time.process_time()
    for command in commands:
        tpos, tquat = pose_target(d.qpos[0:3], d.qpos[3:7], command, scene.controller)
        d.mocap_pos[mp] = tpos
        d.mocap_pos[mr] = tpos
        d.mocap_quat[mr] = tquat
        mujoco.mj_step(m, d, nstep=n)
    return time.process_time() - started


def _write_rate(path: Path, meta, episodes: list) -> dict:
    """Steps and megabytes per second of appending ``episodes`` to a fresh dataset."""
    started = time.perf_counter()
    with DatasetWriter(str(path), meta=meta, resume=False) as writer:
        for ep in episodes:
            writer.append_episode(ep)
    elapsed = time.perf_counter() - started
    steps = sum(ep.n_steps for ep in episodes)
    return {
        "hdf5_write_steps_per_s": steps / elapsed,
        "hdf5_write_mb_per_s": path.stat().st_size / 1e6 / elapsed,
    }


def run(quick: bool, seed: int = 0, device: str = "cpu", scene: str | Path | None = None) -> dict:
    """Measure collect vs bare MuJoCo in steady state; the full run also measures the HDF5 write rate.

    A one-episode warm-up first loads the compiled sub-step kernel (a one-off cost per process); then one
    ``collect`` call writes all episodes and the bare loop replays their commands. Times are CPU seconds
    of this process, so load from other processes does not bias the ratio. ``scene``: a Scene JSON file
    (``contactkit scene``) to collect on instead of the hexagonal peg-in-hole (a narrowed run: not stored).
    """
    episodes, steps = (3, 200) if quick else (10, 400)
    fixed = None
    if scene is not None:
        from contactkit.scene import load_scene

        fixed = load_scene(scene)
    spec = CollectSpec(task="peg-in-hole", shape="hexagon", clearance=1e-3, policy="random-spline",
                       episodes=episodes, steps=steps, seed=seed, fixed_scene=fixed)
    with tempfile.TemporaryDirectory() as tmp, progress.task("collect, then the bare loop", total=2) as advance:
        collect(CollectSpec(**{**spec.__dict__, "episodes": 1, "steps": 5}), str(Path(tmp) / "warmup.h5"))
        out = Path(tmp) / "bench.h5"
        started = time.process_time()
        collect(spec, str(out))
        collect_s = time.process_time() - started
        advance()
        with open_dataset(out) as ds:
            eps = ds.all_episodes()
            meta = ds.meta
        _bare_loop(spec, eps[0].command[:5])
        bare_s = sum(_bare_loop(spec, ep.command) for ep in eps)  # each times itself: no progress inside
        advance()
        total = episodes * steps
        result = {
            "scene": spec.scene().name, "episodes": episodes, "steps_per_episode": steps,
            "substeps_per_step": spec.world.n_substeps,
            "collect_steps_per_s": total / collect_s,
            "mujoco_steps_per_s": total / bare_s,
            "overhead_ratio": collect_s / bare_s,
        }
        if not quick:
            result.update(_write_rate(Path(tmp) / "rate.h5", meta, eps * 5))
    return result
