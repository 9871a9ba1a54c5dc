"""Where full runs are stored, and the rules a result must meet to be stored there.

A stored result (``docs/results/NAME.json`` of the source checkout) must be reproducible from a clean checkout:

* it is an unrestricted full run: not ``--quick``, not ``--json`` (that run writes its file only), not marked
  ``"partial"`` and narrowed by none of its options (:func:`narrowing`);
* its provenance names the exact command (``argv``) and the version of every package (none unknown);
* every checkpoint it used is committed, unchanged, in the repository that holds the results folder; its
  sha256 is recorded.

The results folder is found from the package's own location (``src/contactkit`` of a source checkout), never from
the working directory; an installed (non-editable) package has none, and storing then needs an explicit folder.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import contactkit
from contactkit.errors import ResultStoreError

RESULTS_SUBDIR = Path("docs/results")
"""The stored results' folder, relative to the source checkout's root."""

WIDENING_OPTIONS = frozenset({"checkpoint"})
"""Options that add to a run (a model to evaluate) and so never narrow it, unless a module says otherwise."""

PLACEMENT_OPTIONS = frozenset({"workers", "ray_address"})
"""Options that say where a run's jobs run, not what runs (results equal the serial run's): they never narrow."""

GIT_TIMEOUT_S = 30.0
"""Longest wait for one ``git`` query [s]."""

HASH_CHUNK_BYTES = 1 << 20
"""Read size when hashing a checkpoint [bytes]."""


def source_root() -> Path:
    """The root of the source checkout this package is imported from (the folder holding ``pyproject.toml`` and
    ``src/contactkit``).

    Raises:
        ResultStoreError: the package is installed elsewhere (e.g. a non-editable install in site-packages).
    """
    package = Path(contactkit.__file__).resolve().parent
    root = package.parent.parent
    if package.parent.name != "src" or not (root / "pyproject.toml").is_file():
        raise ResultStoreError(f"contactkit is imported from {package}, not from a source checkout's "
                               "src/contactkit: give --results-dir to store a full run")
    return root


def default_results_dir() -> Path:
    """``docs/results`` of the source checkout (:func:`source_root`), wherever the command runs from."""
    return source_root() / RESULTS_SUBDIR


def narrowing(module, options: dict) -> list[str]:
    """Reasons why ``options`` (the harness options given, unset ones dropped) cut a run of ``module`` below its
    unrestricted default; empty for a full run.

    The module decides when it has ``narrowing(options) -> list[str]``; otherwise an option narrows when its value
    differs from the default of the module's ``run`` parameter, except the options in the module's
    ``WIDENING_OPTIONS`` (default :data:`WIDENING_OPTIONS`), which add to a run. The module's ``PLACEMENT_OPTIONS``
    (default :data:`PLACEMENT_OPTIONS`) never narrow: a timing benchmark sets it empty, because its numbers depend
    on where its jobs run.
    """
    placement = getattr(module, "PLACEMENT_OPTIONS", PLACEMENT_OPTIONS)
    options = {k: v for k, v in options.items() if k not in placement}
    own = getattr(module, "narrowing", None)
    if own is not None:
        return list(own(options))
    import inspect

    defaults = inspect.signature(module.run).parameters
    widening = getattr(module, "WIDENING_OPTIONS", WIDENING_OPTIONS)
    return [f"--{name.replace('_', '-')} {value}" for name, value in options.items()
            if name not in widening and name in defaults and value != defaults[name].default]


def sha256_of(path: str | Path) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(HASH_CHUNK_BYTES), b""):
            digest.update(chunk)
    return digest.hexdigest()


def checkpoint_record(path: str | Path) -> dict:
    """``{"path", "sha256", "bytes"}`` of one checkpoint file, the path as given.

    Raises:
        ResultStoreError: the file does not exist.
    """
    path = Path(path)
    if not path.is_file():
        raise ResultStoreError(f"checkpoint {path}: no such file")
    return {"path": str(path), "sha256": sha256_of(path), "bytes": path.stat().st_size}


def _git(cwd: Path, *args: str) -> str | None:
    """Stripped stdout of ``git args`` run in ``cwd``, or None when git fails or is not installed."""
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=GIT_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def git_root(path: str | Path) -> Path | None:
    """The git work tree that holds ``path`` (a folder, created if missing), or None."""
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    top = _git(folder, "rev-parse", "--show-toplevel")
    return Path(top).resolve() if top else None


def git_state(root: Path) -> dict:
    """``{"commit", "dirty"}`` of the work tree at ``root`` (None values outside git): the checked-out commit
    and whether tracked files differ from it."""
    commit = _git(root, "rev-parse", "HEAD")
    status = _git(root, "status", "--porcelain", "--untracked-files=no") if commit else None
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def committed_checkpoint(path: str | Path, results_dir: Path) -> dict:
    """:func:`checkpoint_record` of a checkpoint that a stored result may name: inside the git work tree that
    holds ``results_dir``, tracked, and identical to its committed version; ``path`` is then repo-relative.

    Raises:
        ResultStoreError: no such file; ``results_dir`` is not in a git work tree; the file lies outside it, is
            not committed, or differs from the committed version.
    """
    record = checkpoint_record(path)
    repo = git_root(results_dir)
    if repo is None:
        raise ResultStoreError(f"results folder {results_dir} is not inside a git work tree: cannot check that "
                               f"checkpoint {path} is committed")
    file = Path(path).resolve()
    if not file.is_relative_to(repo):
        raise ResultStoreError(f"checkpoint {path} is outside the repository {repo}: commit it under models/NAME/ "
                               "with its model card before storing a result made with it")
    rel = file.relative_to(repo).as_posix()
    committed = _git(repo, "rev-parse", f"HEAD:{rel}")
    if committed is None:
        raise ResultStoreError(f"checkpoint {rel} is not committed in {repo}: commit it (with its model card) "
                               "before storing a result made with it")
    if _git(repo, "hash-object", rel) != committed:
        raise ResultStoreError(f"checkpoint {rel} differs from its committed version in {repo}")
    return {**record, "path": rel}
