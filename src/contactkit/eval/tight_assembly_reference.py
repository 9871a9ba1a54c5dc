"""Cached reference data of the tight-assembly experiment (:mod:`contactkit.eval.exp_tight_assembly`).

A full run needs 20k reference rows per task (the high-fidelity 1 ms simulation of
:mod:`contactkit.assembly.reference_data`: about 25 min for the peg and 11 min for the nut on the shared 2-core
machine) and 1000 per Table II pair. The rows are a pure function of the task (its meshes), the reference seed, the
row count, the trajectory length and the reference code, so a run keeps them in a folder and the next run with the
same key reads them instead of simulating again.

A cached file is ``FOLDER/KIND-seedS-rowsN-trajT-DIGEST.h5`` (written by
:func:`~contactkit.assembly.reference_data.write_reference`, one episode at a time: an interrupted run resumes) and
its key ``….json`` next to it. It is reused only when all of these hold, else it is refused with a
:class:`~contactkit.errors.DatasetError` naming what differs (never silently regenerated over, never silently
used):

* the key file equals :func:`cache_key` of this run: task identity (kind, name, SHA-256 of the tool and static
  meshes), reference seed, rows, trajectory rows, and the SHA-256 of the reference code (:data:`CODE_MODULES`);
* :func:`~contactkit.assembly.reference_data.read_reference` accepts the file for the task (mesh hashes) and its
  meta equals :func:`~contactkit.assembly.reference_data.reference_meta` of the task and seed on
  :data:`~contactkit.data.schema.META_KEYS_MUST_MATCH` (seed, margin, solver tolerance, gains, trajectory kinds);
* its episodes are a prefix of the plan (:func:`plan`): the same seeds and row counts in order.
"""

from __future__ import annotations

import hashlib
import importlib
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

from contactkit.errors import DatasetError, InvalidInputError
from contactkit.files import write_atomic

CACHE_DIR = "out/tight-assembly/reference"
"""Default folder of the full run's cached reference files (relative to the working directory; the CLI's
``--reference-dir`` replaces it)."""
CODE_MODULES = ("contactkit.assembly.reference", "contactkit.assembly.reference_data",
                "contactkit.assembly.trajectories", "contactkit.assembly.coupling",
                "contactkit.assembly.exact_contacts")
"""Modules whose source makes the reference rows: a change to any of them gives a new cache key (a new file)."""
KEY_VERSION = 1
"""Version of the key file's layout."""


def code_digest() -> str:
    """SHA-256 (hex) of the source files of :data:`CODE_MODULES`, in order."""
    digest = hashlib.sha256()
    for name in CODE_MODULES:
        digest.update(Path(importlib.import_module(name).__file__).read_bytes())
    return digest.hexdigest()


def plan(task, n_rows: int, trajectory_rows: int | None, seed: int) -> list[tuple[object, int, int]]:
    """``(trajectory kind, episode seed, rows)`` of the reference episodes: ``n_rows`` rows in trajectories of the
    reference module's standard length (:func:`~contactkit.assembly.reference_data.episode_plan`), or with
    ``trajectory_rows`` ``n_rows // trajectory_rows`` (at least one) trajectories that short; seeds drawn from
    ``np.random.default_rng(seed)``."""
    from contactkit.assembly import reference_data as rd

    if int(n_rows) < 1 or (trajectory_rows is not None and int(trajectory_rows) < 1):
        raise InvalidInputError(f"reference plan needs n_rows >= 1 and trajectory_rows >= 1 or None, got "
                                f"{n_rows!r}, {trajectory_rows!r}")
    rng = np.random.default_rng(int(seed))
    if trajectory_rows is None:
        return rd.episode_plan(task, int(n_rows), rng)
    n_traj = max(int(n_rows) // int(trajectory_rows), 1)
    return [(kind, s, int(trajectory_rows)) for kind, s, _ in rd.episode_plan(task, n_traj * rd.TRAJECTORY_ROWS,
                                                                               rng)]


def cache_key(task, n_rows: int, trajectory_rows: int | None, seed: int) -> dict:
    """What a cached file must agree on (module docstring): task identity, seed, rows, trajectory rows, code."""
    from contactkit.assembly.reference_data import task_identity

    return {"version": KEY_VERSION, **task_identity(task), "seed": int(seed), "n_rows": int(n_rows),
            "trajectory_rows": None if trajectory_rows is None else int(trajectory_rows),
            "code_sha256": code_digest()}


def cache_path(folder: str | Path, key: dict) -> Path:
    """The file of ``key`` in ``folder``: readable kind, seed and rows, then 16 hex digits of the key's hash."""
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    traj = "std" if key["trajectory_rows"] is None else key["trajectory_rows"]
    return Path(folder) / f"{key['task']}-seed{key['seed']}-rows{key['n_rows']}-traj{traj}-{digest}.h5"


def _check(path: Path, task, key: dict, steps: list) -> list:
    """The episodes of the cached file ``path`` after the checks of the module docstring (DatasetError if any
    fails)."""
    from contactkit.assembly.reference_data import read_reference, reference_meta
    from contactkit.data import open_dataset

    key_file = path.with_suffix(".json")
    if not key_file.is_file():
        raise DatasetError(f"{path}: cached reference without its key file {key_file.name}: refusing to reuse it "
                           "(delete it to regenerate)")
    stored = json.loads(key_file.read_text())
    diff = sorted(k for k in set(stored) | set(key) if stored.get(k) != key.get(k))
    if diff:
        raise DatasetError(f"{path}: cached reference made for another key: {diff} differ "
                           f"({[(stored.get(k), key.get(k)) for k in diff]}); delete it to regenerate")
    episodes = read_reference(path, task)
    with open_dataset(path) as ds:
        meta = ds.meta
    want = reference_meta(task, key["seed"])
    if meta.mismatched_keys(want):
        raise DatasetError(f"{path}: cached reference meta differs from this run's: {meta.differences(want)}")
    got = [(e.seed, e.n_steps) for e in episodes]
    if len(got) > len(steps) or got != [(s, r) for _, s, r in steps[:len(got)]]:
        raise DatasetError(f"{path}: cached episodes (seed, rows) {got[:5]}... are not a prefix of this run's plan "
                           f"{[(s, r) for _, s, r in steps[:5]]}...")
    return episodes


def reference_episodes(task, n_rows: int, trajectory_rows: int | None, seed: int, folder: str | Path | None,
                       progress: Callable[[str], None] | None = None) -> tuple[list, dict]:
    """The reference episodes of :func:`plan`, read from ``folder``'s cached file where it has them (checked,
    module docstring) and simulated for the rest (appended to that file, one episode at a time).

    Args:
        task: the :class:`~contactkit.assembly.task.AssemblyTask`. n_rows, trajectory_rows, seed: :func:`plan`.
        folder: the cache folder (created), or None: simulate everything and store nothing.
        progress: called with a line after each simulated episode.

    Returns:
        ``(episodes, facts)``: facts ``{"cache_file", "cached_episodes", "simulated_episodes"}``.

    Raises:
        DatasetError: a cached file that does not match (module docstring).
    """
    from contactkit.assembly.reference_data import reference_episode, write_reference

    steps = plan(task, n_rows, trajectory_rows, seed)
    path, episodes = None, []
    if folder is not None:
        key = cache_key(task, n_rows, trajectory_rows, seed)
        path = cache_path(folder, key)
        if path.is_file():
            episodes = _check(path, task, key, steps)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path.with_suffix(".json"), json.dumps(key, indent=1, sort_keys=True) + "\n")
    cached = len(episodes)
    for i, (kind, ep_seed, rows) in enumerate(steps[cached:], start=cached):
        episode, _ = reference_episode(task, kind, ep_seed, rows)
        if path is not None:
            write_reference(path, task, [episode], seed)
        episodes.append(episode)
        if progress is not None:
            progress(f"reference {task.kind.value}: episode {i + 1}/{len(steps)}")
    facts = {"cache_file": None if path is None else str(path), "cached_episodes": cached,
             "simulated_episodes": len(steps) - cached}
    return episodes, facts
