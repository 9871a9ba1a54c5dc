"""Benchmark ``scale``: ``collect`` and the placement experiment on 1 and ``workers`` Ray workers (issue 21 part 5).

Times are wall-clock seconds (``time.perf_counter``: a parallel speed-up is about elapsed time), so other load on
the machine biases them; the load average before and after each measurement is recorded beside it. Collection is
timed ``repeats`` times each way (after a short warm-up run each way: one-off loads and compilations): serially
in this process, and on a Ray instance whose worker processes are
already started and warm (``warm``); ``cold_s`` is one run that starts its own local instance, as
``contactkit collect --workers N`` does. Every parallel file is checked equal to the serial one, and the placement
result to the serial result (``identical``).

``projection``: what a run would take on ``N`` machines of this machine's cores, computed from the measured cost
of one job (a collected episode; a placement episode, which includes its share of the driver's gradient checks, so
an upper bound) and the measured start of a Ray instance: ``start_s + ceil(jobs / (N × cores)) × job_s``, which
assumes jobs of equal cost and no transfer time (a job ships a few kB; an episode returns ~0.3 MB).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import h5py
import numpy as np

from contactkit.data.collect import CollectSpec, collect
from contactkit.data.parallel import RayPool, check_workers
from contactkit.estimation.geometry_belief import ParticleFilterConfig
from contactkit.eval import exp_placement, progress

QUICK = {"episodes": 4, "steps": 100, "repeats": 1, "placement_cases": 1, "placement_steps": 10}
FULL = {"episodes": 24, "steps": 400, "repeats": 3, "placement_cases": 2, "placement_steps": 50}
PLACEMENT_OPTIONS: frozenset[str] = frozenset()
"""Options that never narrow a run (:func:`contactkit.eval.store.narrowing`): none here. The speed-ups depend on
the workers and the cluster, so only the default (2 local workers) is stored."""
PROJECTED_MACHINES = (1, 2, 4, 8, 16, 64)
PROJECTED_COLLECT_EPISODES = 1000
"""Episodes of the projected collection (400 control steps each in a full run)."""


def _load() -> float:
    return os.getloadavg()[0]


def _timed(fn) -> dict:
    """``{"s", "load_before", "load_after"}`` of one call of ``fn``."""
    before, started = _load(), time.perf_counter()
    fn()
    return {"s": time.perf_counter() - started, "load_before": before, "load_after": _load()}


def same_datasets(a: str | Path, b: str | Path) -> bool:
    """Whether two HDF5 files hold the same datasets (names, dtypes, values) and attributes, ``created`` aside."""
    def contents(path):
        datasets = {}
        with h5py.File(path, "r") as f:
            f.visititems(lambda n, o: datasets.__setitem__(n, o[()]) if isinstance(o, h5py.Dataset) else None)
            return datasets, {k: v for k, v in f.attrs.items() if k != "created"}

    (da, aa), (db, ab) = contents(a), contents(b)
    return (da.keys() == db.keys() and aa.keys() == ab.keys()
            and all(da[k].dtype == db[k].dtype and np.array_equal(da[k], db[k]) for k in da)
            and all(np.array_equal(aa[k], ab[k]) for k in aa))


def _collect_runs(spec: CollectSpec, budget: dict, workers: int, ray_address: str | None, tmp: Path,
                  advance) -> dict:
    """Serial, warm-Ray and cold-Ray collection times; whether every file equals the serial one."""
    serial = tmp / "serial.h5"
    runs = {"serial": [], "warm": []}
    collect(replace(spec, episodes=1, steps=5), str(tmp / "warmup-serial.h5"))  # one-off loads of this process
    for r in range(budget["repeats"]):
        path = serial if r == 0 else tmp / f"serial{r}.h5"
        runs["serial"].append(_timed(lambda p=path: collect(spec, str(p))))
        advance()
    files = []
    started = time.perf_counter()
    with RayPool(workers, ray_address):
        collect(replace(spec, episodes=workers, steps=2), str(tmp / "warmup.h5"), workers=workers)  # start workers
        start_s = time.perf_counter() - started
        for r in range(budget["repeats"]):
            files.append(tmp / f"warm{r}.h5")
            runs["warm"].append(_timed(lambda p=files[-1]: collect(spec, str(p), workers=workers,
                                                                   ray_address=ray_address)))
            advance()
    cold = None
    if ray_address is None:
        files.append(tmp / "cold.h5")
        cold = _timed(lambda: collect(spec, str(files[-1]), workers=workers))
    advance()
    serial_s, warm_s = (float(np.median([t["s"] for t in runs[k]])) for k in ("serial", "warm"))
    return {"serial": runs["serial"], "warm": runs["warm"], "cold": cold, "ray_start_s": start_s,
            "median_serial_s": serial_s, "median_warm_s": warm_s, "speedup_warm": serial_s / warm_s,
            "speedup_cold": None if cold is None else serial_s / cold["s"],
            "episode_s": serial_s / spec.episodes, "identical": all(same_datasets(serial, f) for f in files)}


def _placement_runs(budget: dict, seed: int, workers: int, ray_address: str | None, advance) -> dict:
    """The placement experiment (one task, every method) serially and on ``workers`` workers of a running instance."""
    config = replace(exp_placement.FULL, tasks=("shape",), n_cases=budget["placement_cases"], repeats=1,
                     steps=budget["placement_steps"], pf=ParticleFilterConfig(n_particles=10), workers=1)
    out = {}
    exp_placement.run(True, seed, config=replace(config, n_cases=1, steps=2))  # one-off loads of this process
    serial = _timed(lambda: out.__setitem__("serial", exp_placement.run(True, seed, config=config)))
    advance()
    with RayPool(workers, ray_address):
        exp_placement.run(True, seed, config=replace(config, n_cases=1, steps=2), workers=workers)  # warm workers
        parallel = _timed(lambda: out.__setitem__("parallel", exp_placement.run(
            True, seed, config=config, workers=workers, ray_address=ray_address)))
    advance()
    episodes = len(config.methods) * config.n_cases
    return {"episodes": episodes, "steps": config.steps, "serial": serial, "parallel": parallel,
            "speedup": serial["s"] / parallel["s"], "episode_s": serial["s"] / episodes,
            "identical": json.dumps(out["serial"], sort_keys=True) == json.dumps(out["parallel"], sort_keys=True)}


def projection(jobs: dict[str, tuple[int, float]], start_s: float, cores: int,
               machines: tuple[int, ...] = PROJECTED_MACHINES) -> list[dict]:
    """Projected wall seconds of each run ``name: (jobs, seconds per job)`` on each number of machines of ``cores``
    workers: ``start_s + ceil(jobs / (machines × cores)) × job_s`` (module docstring)."""
    return [{"run": name, "jobs": n, "job_s": job_s,
             "seconds": {str(m): start_s + math.ceil(n / (m * cores)) * job_s for m in machines}}
            for name, (n, job_s) in jobs.items()]


def run(quick: bool, seed: int = 0, device: str = "cpu", workers: int = 2, ray_address: str | None = None) -> dict:
    """Measure (module docstring); ``workers`` (default 2) and ``ray_address`` (a running cluster; default: a local
    one) are what is measured, so other values narrow the run (:data:`PLACEMENT_OPTIONS`: not stored)."""
    del device  # MuJoCo and the placement estimators run on the CPU
    check_workers(workers, ray_address)
    budget = QUICK if quick else FULL
    spec = CollectSpec(episodes=budget["episodes"], steps=budget["steps"], seed=seed)
    with tempfile.TemporaryDirectory(prefix="ck-scale-") as tmp, \
            progress.task("collect runs, then placement runs", total=2 * budget["repeats"] + 3) as advance:
        collect_result = _collect_runs(spec, budget, workers, ray_address, Path(tmp), advance)
        placement = _placement_runs(budget, seed, workers, ray_address, advance)
    cores = os.cpu_count() or 1
    full = exp_placement.FULL
    jobs = {f"collect {PROJECTED_COLLECT_EPISODES} × {spec.steps}-step episodes":
            (PROJECTED_COLLECT_EPISODES, collect_result["episode_s"]),
            "placement, full run": (len(full.tasks) * len(full.methods) * full.n_cases * full.repeats,
                                    placement["episode_s"] * full.steps / placement["steps"])}
    return {"workers": workers, "ray_address": ray_address, "cores": cores, "budget": budget,
            "collect": collect_result, "placement": placement,
            "identical": bool(collect_result["identical"] and placement["identical"]),
            "projection": projection(jobs, collect_result["ray_start_s"], cores)}


def markdown(result: dict) -> str:
    """Speed-ups and the projection table."""
    c, p = result["collect"], result["placement"]
    lines = [f"| run | serial [s] | {result['workers']} workers [s] | speed-up | identical |",
             "|---|---:|---:|---:|---|",
             f"| collect, warm Ray (median) | {c['median_serial_s']:.1f} | {c['median_warm_s']:.1f} | "
             f"{c['speedup_warm']:.2f} | {c['identical']} |"]
    if c["cold"] is not None:
        lines.append(f"| collect, starting Ray | {c['median_serial_s']:.1f} | {c['cold']['s']:.1f} | "
                     f"{c['speedup_cold']:.2f} | {c['identical']} |")
    lines.append(f"| placement ({p['episodes']} episodes) | {p['serial']['s']:.1f} | {p['parallel']['s']:.1f} | "
                 f"{p['speedup']:.2f} | {p['identical']} |")
    machines = list(result["projection"][0]["seconds"])
    lines += ["", f"Projected wall time [s] on N machines of {result['cores']} cores (Ray start "
                  f"{c['ray_start_s']:.1f} s included):", "",
              "| run | jobs | s/job | " + " | ".join(f"N={m}" for m in machines) + " |",
              "|---|---:|---:|" + "---:|" * len(machines)]
    for row in result["projection"]:
        lines.append(f"| {row['run']} | {row['jobs']} | {row['job_s']:.2f} | "
                     + " | ".join(f"{row['seconds'][m]:.0f}" for m in machines) + " |")
    return "\n".join(lines) + "\n"
