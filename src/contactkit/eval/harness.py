"""Run a named benchmark or experiment, attach provenance, and store full runs under docs/results/.

A measurement module exposes ``run(quick: bool, seed: int, device: str) -> dict``. The harness adds the
command (argv), seed, package versions, git commit, machine and the sha256 of every checkpoint used, and writes
the result to ``--json`` when asked, and only there. An unrestricted full run (no ``--quick``, no ``--json``, no
option that narrows it, not ``"partial"``) is stored as ``docs/results/NAME.json`` of the source checkout, from
which ``contactkit results`` builds docs/RESULTS.md; the rules a stored result meets are in
:mod:`contactkit.eval.store`. A module that loads checkpoints names them in its result (``checkpoint``: a path or
None, or ``checkpoints``: a list); one that decides itself which options narrow it exposes ``narrowing(options)``.
A module may also expose ``markdown(result) -> str``, its own table of the result: the harness then writes it
next to every JSON it writes (``NAME.md``), and ``contactkit results`` shows it instead of the generic tables.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import platform
import shlex
import tempfile
import time
from importlib import metadata
from pathlib import Path

from contactkit.errors import InvalidInputError, ResultStoreError
from contactkit.eval.store import (
    checkpoint_record,
    committed_checkpoint,
    default_results_dir,
    git_state,
    narrowing,
    source_root,
)
from contactkit.files import write_atomic

BENCHMARKS = {
    "collect": "contactkit.eval.bench_collect",
    "replan": "contactkit.eval.bench_replan",
    "lml": "contactkit.eval.bench_lml",
    "tight-insertion": "contactkit.eval.bench_tight_insertion",
    "contact-detection": "contactkit.eval.bench_contact_detection",
    "scale": "contactkit.eval.bench_scale",
}
"""``contactkit benchmark NAME`` → module with ``run``."""

EXPERIMENTS: dict[str, str] = {
    "connector-insertion": "contactkit.eval.exp_connector",
    "mpc-insertion": "contactkit.eval.exp_mpc_insertion",
    "pf-tracking": "contactkit.eval.exp_pf_tracking",
    "placement": "contactkit.eval.exp_placement",
    "prediction-accuracy": "contactkit.eval.exp_prediction",
    "pushing": "contactkit.eval.exp_pushing",
    "tight-assembly": "contactkit.eval.exp_tight_assembly",
}
"""``contactkit experiment NAME`` → module with ``run``."""

STDOUT = "-"
"""``json_path`` that asks for the result on the command's standard output: no file is written, nothing stored."""

PACKAGES = ("numpy", "scipy", "torch", "mujoco", "coal", "h5py", "trimesh", "safetensors")
"""Packages whose versions every result records (with contactkit's own)."""


def versions() -> dict[str, str | None]:
    """Version of contactkit and of each of :data:`PACKAGES`: the installed distribution's, else the imported
    module's ``__version__`` (a source tree on ``PYTHONPATH``), else None (not importable here)."""
    found: dict[str, str | None] = {}
    for name in ("contactkit", *PACKAGES):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            try:
                found[name] = str(importlib.import_module(name).__version__)
            except (ImportError, AttributeError):
                found[name] = None
    return found


def command_of(argv: list[str] | None) -> str | None:
    """The shell command line of a ``contactkit`` invocation whose ``sys.argv`` is ``argv`` (None: not a command)."""
    return None if argv is None else shlex.join(["contactkit", *argv[1:]])


OUTSIDE_REPOSITORY = "<outside the repository>"
"""Stands for the folder of an absolute path outside the source checkout in a recorded command line."""


def portable_argv(argv: list[str], root: Path | None) -> list[str]:
    """``argv`` as a result records it: ``contactkit`` for the program, absolute paths inside the source checkout
    ``root`` made repository-relative, others reduced to ``<outside the repository>/NAME`` — never a machine's path."""
    def arg(a: str) -> str:
        if not os.path.isabs(a):
            return a
        path = Path(a)
        if root is not None and path.is_relative_to(root):
            return path.relative_to(root).as_posix()
        return f"{OUTSIDE_REPOSITORY}/{path.name}"

    return ["contactkit", *(arg(a) for a in argv[1:])]


def provenance(seed: int, quick: bool, argv: list[str] | None = None) -> dict:
    """Command (``argv`` as :func:`portable_argv` records it, and as a command line), seed, versions, git commit of
    the source checkout (if any) and machine of this run."""
    try:
        root = source_root()
        git = git_state(root)
    except ResultStoreError:
        root, git = None, {"commit": None, "dirty": None}
    argv = None if argv is None else portable_argv(list(argv), root)
    return {
        "command": command_of(argv),
        "argv": argv,
        "seed": seed,
        "quick": quick,
        "versions": versions(),
        "git": git,
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
    write_atomic(path, text)


def atomic_write_json(path: Path, payload: dict) -> None:
    """Write JSON to ``path`` atomically (:func:`atomic_write_text`)."""
    atomic_write_text(path, json.dumps(payload, indent=2, sort_keys=False) + "\n")


def _write(path: Path, result: dict) -> None:
    """``result`` as JSON at ``path``, and the measurement's own table next to it (``.md``) if it has one."""
    atomic_write_json(path, result)
    table = markdown_of(result)
    if table is not None:
        atomic_write_text(path.with_suffix(".md"), table)


def checkpoints_used(result: dict, options: dict) -> list[str]:
    """Checkpoint files a run used: its ``checkpoint`` option and what its result names under ``checkpoint``
    (one path or None) or ``checkpoints`` (a list), in order, without repeats."""
    named = [options.get("checkpoint"), result.get("checkpoint"), *(result.get("checkpoints") or [])]
    return list(dict.fromkeys(str(p) for p in named if p is not None))


def _storable(argv: list[str] | None) -> None:
    """Raise when a run cannot be stored whatever its result: no command line, or a package version unknown."""
    if argv is None:
        raise ResultStoreError("a stored result needs the contactkit command that made it: run it as "
                               "`contactkit benchmark|experiment ...` (run_measurement got no argv)")
    unknown = sorted(name for name, version in versions().items() if version is None)
    if unknown:
        raise ResultStoreError(f"versions of {unknown} are unknown in this environment: install contactkit with "
                               "its dependencies (pip install -e .) before storing a full run")


def _store(name: str, result: dict, used: list[str], target: Path) -> None:
    """Check the checkpoints ``used`` against the repository holding ``target`` and write ``result`` there (their
    records repo-relative); when refused, write it to a temporary file that the error names (hours of work are
    not thrown away)."""
    try:
        result["provenance"]["checkpoints"] = [committed_checkpoint(p, target.parent) for p in used]
    except ResultStoreError as exc:
        kept = Path(tempfile.gettempdir()) / f"contactkit-unstored-{name}.json"
        _write(kept, result)
        raise ResultStoreError(f"{exc}; {target} not written, the result is in {kept}") from exc
    _write(target, result)


def run_measurement(
    kind: str,
    name: str,
    *,
    quick: bool,
    seed: int = 0,
    device: str = "cpu",
    json_path: str | None = None,
    results_dir: str | Path | None = None,
    plots: str | None = None,
    options: dict | None = None,
    argv: list[str] | None = None,
) -> dict:
    """Run benchmark/experiment ``name`` and return its result with provenance.

    ``plots`` (a folder) is passed to measurements that draw figures; ``options`` (keyword arguments of the
    module's ``run``, e.g. ``models`` or ``checkpoint``) to measurements that take them. ``argv`` is the
    process's ``sys.argv`` when called by the ``contactkit`` command (recorded exactly; None from Python).

    Where the result goes: ``json_path`` if given (:data:`STDOUT`: only the returned result, for the caller to
    print), and nothing else. Otherwise a full run (not ``quick``, not
    ``"partial"``, not narrowed by its options, :func:`contactkit.eval.store.narrowing`) is stored as
    ``results_dir/NAME.json`` (default: the source checkout's ``docs/results``), with every checkpoint it used
    committed (:func:`contactkit.eval.store.committed_checkpoint`). The returned result's ``stored`` names that
    file; ``provenance.not_stored`` lists why a run was not stored.

    Raises:
        InvalidInputError: unknown name (the message lists the known ones), or an option the measurement does
            not take.
        ResultStoreError: a full run that cannot be stored (checked before the run where possible: no argv,
            unknown versions, no results folder, an uncommitted ``checkpoint`` option; after it, a checkpoint the
            result names that is not committed: the result is then kept in a temporary file the error names).
    """
    registry = BENCHMARKS if kind == "benchmark" else EXPERIMENTS
    if name not in registry:
        raise InvalidInputError(f"unknown {kind} {name!r}; available: {sorted(registry)}")
    module = importlib.import_module(registry[name])
    options = {k: v for k, v in (options or {}).items() if v is not None}
    accepted = inspect.signature(module.run).parameters
    refused = sorted(k for k in options if k not in accepted)
    if refused:
        raise InvalidInputError(f"{kind} {name!r} takes no option {refused}")
    not_stored = (["--quick"] if quick else []) + (["--json"] if json_path else []) + narrowing(module, options)
    target = None
    if not not_stored:
        _storable(argv)
        target = (Path(results_dir) if results_dir is not None else default_results_dir()) / f"{name}.json"
        if options.get("checkpoint") is not None:
            committed_checkpoint(options["checkpoint"], target.parent)  # fail before hours of work
    started = time.perf_counter()
    source = provenance(seed, quick, argv)  # the tree the run starts from, before it writes its figures
    extra = {"plots": plots} if plots else {}
    result = module.run(quick=quick, seed=seed, device=device, **extra, **options)
    if result.get("partial", False):
        not_stored.append("partial result")
    used = checkpoints_used(result, options)
    result = {"name": name, "kind": kind, **result, "provenance": {
        **source, "wall_s": time.perf_counter() - started,
        "checkpoints": [checkpoint_record(p) for p in used], "not_stored": not_stored or None}}
    if json_path and json_path != STDOUT:
        _write(Path(json_path), result)
    if target is not None and not not_stored:
        _store(name, result, used, target)
        return {**result, "stored": str(target)}
    return result


def markdown_of(result: dict) -> str | None:
    """The measurement's own markdown table of ``result`` (its module's ``markdown``), or None if it has none."""
    registry = BENCHMARKS if result.get("kind") == "benchmark" else EXPERIMENTS
    module_name = registry.get(result.get("name", ""))
    render = getattr(importlib.import_module(module_name), "markdown", None) if module_name else None
    return render(result) if render is not None else None
