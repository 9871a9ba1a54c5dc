"""Run a named benchmark or experiment, attach provenance, and store full runs under docs/results/.

A measurement module exposes ``run(quick: bool, seed: int, device: str) -> dict``. The harness adds the
command line, seed, package versions and machine, writes ``--json`` when asked, and for a full run (not
``--quick``) stores ``docs/results/NAME.json`` from which ``contactkit results`` builds docs/RESULTS.md. A
result that says ``"partial": true`` (a run restricted by options, e.g. mpc-insertion's ``--episodes``) is not
a full run: it goes to ``--json`` only, so it never replaces the stored full run.
A module may also expose ``markdown(result) -> str``, its own table of the result: the harness then writes it
next to every JSON it writes (``NAME.md``), and ``contactkit results`` shows it instead of the generic tables.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import platform
import sys
import time
from importlib import metadata
from pathlib import Path

from contactkit.errors import InvalidInputError

BENCHMARKS = {
    "collect": "contactkit.eval.bench_collect",
    "replan": "contactkit.eval.bench_replan",
    "lml": "contactkit.eval.bench_lml",
    "tight-insertion": "contactkit.eval.bench_tight_insertion",
}
"""``contactkit benchmark NAME`` → module with ``run``."""

EXPERIMENTS: dict[str, str] = {
    "connector-insertion": "contactkit.eval.exp_connector",
    "mpc-insertion": "contactkit.eval.exp_mpc_insertion",
    "pf-tracking": "contactkit.eval.exp_pf_tracking",
    "placement": "contactkit.eval.exp_placement",
    "prediction-accuracy": "contactkit.eval.exp_prediction",
}
"""``contactkit experiment NAME`` → module with ``run``."""

PACKAGES = ("numpy", "scipy", "torch", "mujoco", "coal", "h5py", "trimesh")


def provenance(seed: int, quick: bool) -> dict:
    """Command line, seed, versions and machine of this run."""
    versions = {}
    for name in ("contactkit", *PACKAGES):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "command": " ".join(["contactkit", *sys.argv[1:]]) if sys.argv else "",
        "seed": seed,
        "quick": quick,
        "versions": versions,
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
        },
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and ``os.replace`` (never a half-written file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def atomic_write_json(path: Path, payload: dict) -> None:
    """Write JSON to ``path`` atomically (:func:`atomic_write_text`)."""
    atomic_write_text(path, json.dumps(payload, indent=2, sort_keys=False) + "\n")


def run_measurement(
    kind: str,
    name: str,
    *,
    quick: bool,
    seed: int = 0,
    device: str = "cpu",
    json_path: str | None = None,
    results_dir: str | Path = "docs/results",
    plots: str | None = None,
    options: dict | None = None,
) -> dict:
    """Run benchmark/experiment ``name`` and return its result with provenance.

    ``plots`` (a folder) is passed to measurements that draw figures; ``options`` (keyword arguments of the
    module's ``run``, e.g. ``models`` or ``checkpoint``) to measurements that take them.

    Raises:
        InvalidInputError: unknown name (the message lists the known ones), or an option the measurement does
            not take.
    """
    registry = BENCHMARKS if kind == "benchmark" else EXPERIMENTS
    if name not in registry:
        raise InvalidInputError(f"unknown {kind} {name!r}; available: {sorted(registry)}")
    module = importlib.import_module(registry[name])
    started = time.perf_counter()
    extra = {"plots": plots} if plots else {}
    options = {k: v for k, v in (options or {}).items() if v is not None}
    accepted = inspect.signature(module.run).parameters
    refused = sorted(k for k in options if k not in accepted)
    if refused:
        raise InvalidInputError(f"{kind} {name!r} takes no option {refused}")
    extra.update(options)
    result = module.run(quick=quick, seed=seed, device=device, **extra)
    result = {
        "name": name,
        "kind": kind,
        **result,
        "provenance": {**provenance(seed, quick), "wall_s": time.perf_counter() - started},
    }
    table = markdown_of(result)
    full = not quick and not result.get("partial", False)
    targets = ([Path(json_path)] if json_path else []) + ([Path(results_dir) / f"{name}.json"] if full else [])
    for path in targets:
        atomic_write_json(path, result)
        if table is not None:
            atomic_write_text(path.with_suffix(".md"), table)
    return result


def markdown_of(result: dict) -> str | None:
    """The measurement's own markdown table of ``result`` (its module's ``markdown``), or None if it has none."""
    registry = BENCHMARKS if result.get("kind") == "benchmark" else EXPERIMENTS
    module_name = registry.get(result.get("name", ""))
    render = getattr(importlib.import_module(module_name), "markdown", None) if module_name else None
    return render(result) if render is not None else None
