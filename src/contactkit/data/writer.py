"""Crash-safe, resumable writer of contactkit trajectory datasets (HDF5, SWMR, index commit).

Guarantee: each episode is committed atomically. A writer killed at any instant (SIGKILL, OOM, crash)
loses at most the episode in progress; re-running with the same path and meta resumes after the last
committed episode.

How: the file is append-only. Rows of all episodes are concatenated in resizable chunked datasets
(``states/*``: ``T + 1`` rows per episode; ``steps/*``: ``T`` rows; ``scenes/bytes``: the UTF-8 text of
an episode's own scene, unless it equals the last stored scene, whose bytes it then shares). Appending
an episode extends the row datasets and flushes (and fsyncs), then extends ``episodes/state_start``,
``step_start``, ``seed``, ``scene_start``, ``scene_length`` and, last, ``episodes/length`` — the commit
point — and flushes again. The file is written in HDF5
SWMR mode (``libver="latest"``), whose ordered metadata flushes keep the on-disk file readable whatever
instant the process dies. Readers trust only episodes counted by ``episodes/length``.

HDF5 refuses to reopen for writing a file whose writer died (its superblock keeps an "open for write"
flag), so resuming such a file copies its committed episodes into ``path + ".tmp"``, fsyncs it and
``os.replace``-s it over the original before appending; a file written before per-episode scenes
existed is upgraded the same way (its episodes keep ``meta.scene``). A clean file is reopened in place and any rows
beyond the last committed episode are trimmed. A lock file ``path + ".lock"`` (``flock``) keeps a
second writer away from a file that is being written.
"""

from __future__ import annotations

import fcntl
import json
import os
from dataclasses import dataclass

import h5py
import numpy as np

from contactkit.data.reader import open_dataset
from contactkit.data.schema import (
    FORMAT_NAME,
    INDEX_FIELDS,
    NO_SCENE_START,
    NO_SEED,
    SCENE_BYTES,
    SOURCE_BYTES,
    SOURCE_INDEX_FIELDS,
    STATE_FIELDS,
    STEP_FIELDS,
    DatasetMeta,
    Episode,
)
from contactkit.errors import DatasetError, InvalidInputError

CHUNK_ROWS = 4096
"""Rows per HDF5 chunk of the row datasets (4096 × 6 float64 = 192 KiB)."""

INDEX_CHUNK_ROWS = 1024
"""Entries per HDF5 chunk of the episode index datasets."""

SCENE_CHUNK_BYTES = 1 << 16
"""Bytes per HDF5 chunk of ``scenes/bytes`` (a paper-0 training scene is about 12 kB of JSON)."""

COPY_BLOCK_ROWS = 1 << 18
"""Rows (or scene bytes) copied per read/write when a file is rebuilt (bounds memory)."""

TMP_SUFFIX = ".tmp"
LOCK_SUFFIX = ".lock"


def _row_datasets():
    """``(name, trailing shape)`` of every row dataset."""
    states = [(f"states/{k}", t) for k, t in STATE_FIELDS.items()]
    return states + [(f"steps/{k}", t) for k, t in STEP_FIELDS.items()]


def _create_layout(path: str, meta: DatasetMeta, chunk_rows: int) -> h5py.File:
    """Create an empty dataset file (all groups, datasets and attributes); returns it open for writing."""
    f = h5py.File(path, "w", libver="latest")
    f.attrs["format"] = FORMAT_NAME
    for key, value in meta.to_dict().items():
        f.attrs[key] = value
    for name, trailing in _row_datasets():
        f.create_dataset(name, shape=(0, *trailing), maxshape=(None, *trailing),
                         chunks=(chunk_rows, *trailing), dtype=np.float64)
    f.create_dataset(SCENE_BYTES, shape=(0,), maxshape=(None,), chunks=(SCENE_CHUNK_BYTES,), dtype=np.uint8)
    for key in INDEX_FIELDS:
        f.create_dataset(f"episodes/{key}", shape=(0,), maxshape=(None,), chunks=(INDEX_CHUNK_ROWS,),
                         dtype=np.int64)
    _add_source_storage(f, 0)
    return f


def _add_source_storage(f: h5py.File, n: int) -> None:
    """Create the per-episode provenance datasets, ``n`` episodes without one (a file from before them)."""
    f.create_dataset(SOURCE_BYTES, shape=(0,), maxshape=(None,), chunks=(SCENE_CHUNK_BYTES,), dtype=np.uint8)
    for key, fill in zip(SOURCE_INDEX_FIELDS, (-1, 0), strict=True):
        f.create_dataset(f"episodes/{key}", data=np.full(n, fill, dtype=np.int64), maxshape=(None,),
                         chunks=(INDEX_CHUNK_ROWS,), dtype=np.int64)


def _fsync_path(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _replace_durably(tmp: str, path: str) -> None:
    """fsync ``tmp``, rename it over ``path`` atomically and fsync the directory entry."""
    _fsync_path(tmp)
    os.replace(tmp, path)
    _fsync_path(os.path.dirname(os.path.abspath(path)))


def _acquire_lock(path: str) -> int:
    """Exclusive non-blocking ``flock`` on ``path + ".lock"``; returns its file descriptor."""
    lock_path = path + LOCK_SUFFIX
    for _ in range(8):
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise DatasetError(f"{path}: cannot create the writer lock {lock_path} ({exc})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DatasetError(f"{path}: another writer is writing this file "
                               f"(lock {lock_path} is held)") from None
        try:
            same = os.fstat(fd).st_ino == os.stat(lock_path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)  # the previous holder removed the lock file after we opened it: lock the new one
    raise DatasetError(f"{path}: could not acquire the writer lock {lock_path}")


def _copy_committed(src: str, tmp: str, chunk_rows: int) -> None:
    """Write the committed episodes of ``src`` (any state) into a new, cleanly closed file ``tmp``."""
    with open_dataset(src) as ds, _create_layout(tmp, ds.meta, chunk_rows) as out:
        idx = ds.index
        rows = {"states": idx.n_state_rows, "steps": idx.n_step_rows}
        for name, _ in _row_datasets():
            group, key = name.split("/")
            n = rows[group]
            out[name].resize(n, axis=0)
            for a in range(0, n, COPY_BLOCK_ROWS):
                b = min(n, a + COPY_BLOCK_ROWS)
                out[name][a:b] = ds.rows(group, key, a, b)
        n = idx.n_scene_bytes
        out[SCENE_BYTES].resize((n,))
        for a in range(0, n, COPY_BLOCK_ROWS):
            b = min(n, a + COPY_BLOCK_ROWS)
            out[SCENE_BYTES][a:b] = np.frombuffer(ds.scene_bytes(a, b), dtype=np.uint8)
        for key in INDEX_FIELDS:  # a file without per-episode scenes gives NO_SCENE_START / 0
            out[f"episodes/{key}"].resize((idx.n_episodes,))
            out[f"episodes/{key}"][:] = getattr(idx, key)
        blob = b"".join(json.dumps(s, sort_keys=True).encode("utf-8") if s is not None else b"" for s in ds.sources())
        lengths = [len(json.dumps(s, sort_keys=True).encode("utf-8")) if s is not None else 0 for s in ds.sources()]
        out[SOURCE_BYTES].resize((len(blob),))
        out[SOURCE_BYTES][:] = np.frombuffer(blob, dtype=np.uint8)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64) if lengths else np.zeros(0, np.int64)
        for key, values in zip(SOURCE_INDEX_FIELDS, (np.where(np.asarray(lengths) > 0, starts, -1), lengths),
                               strict=True):
            out[f"episodes/{key}"].resize((idx.n_episodes,))
            out[f"episodes/{key}"][:] = np.asarray(values, dtype=np.int64)


@dataclass
class _Tail:
    """Where the next episode goes: committed episodes, rows and scene bytes, and the last stored scene
    (UTF-8 bytes, first byte) that an identical next scene shares."""

    episodes: int
    state_rows: int
    step_rows: int
    scene_bytes: int
    last_scene: tuple[bytes, int] | None
    source_bytes: int = 0


def _trim_to_committed(f: h5py.File) -> _Tail:
    """Drop rows, scene bytes and index entries beyond the committed episodes; returns the tail."""
    length = f["episodes/length"][:]
    n, steps = int(length.shape[0]), int(length.sum())
    for key in INDEX_FIELDS:
        f[f"episodes/{key}"].resize((n,))
    for name, _ in _row_datasets():
        f[name].resize(steps + n if name.startswith("states/") else steps, axis=0)
    start, size = f["episodes/scene_start"][:], f["episodes/scene_length"][:]
    stored = np.flatnonzero(size > 0)
    last = None
    if stored.size:
        a, m = int(start[stored[-1]]), int(size[stored[-1]])
        last = (f[SCENE_BYTES][a:a + m].tobytes(), a)
    used = 0 if last is None else last[1] + len(last[0])
    f[SCENE_BYTES].resize((used,))
    if SOURCE_BYTES not in f:  # a file from before per-episode provenance
        _add_source_storage(f, n)
    for key in SOURCE_INDEX_FIELDS:
        f[f"episodes/{key}"].resize((n,))
    ends = f["episodes/source_start"][:] + f["episodes/source_length"][:]
    source_used = int(ends[f["episodes/source_length"][:] > 0].max(initial=0))
    f[SOURCE_BYTES].resize((source_used,))
    return _Tail(n, steps + n, steps, used, last, source_used)


class DatasetWriter:
    """Append episodes to a dataset file, committing each atomically (see the module docstring).

    Use as a context manager::

        with DatasetWriter(path, meta=meta) as w:
            for i in range(w.n_committed, n_episodes):
                w.append_episode(make_episode(i))

    Args:
        path: the ``.h5`` file. Created if absent; if present it must be a contactkit dataset.
        meta: the file's attributes. Resuming requires the stored meta to equal ``meta`` on
            :data:`~contactkit.data.schema.META_KEYS_MUST_MATCH`; the stored meta is kept.
        resume: append to an existing dataset; if False an existing file is an error.
        chunk_rows: HDF5 chunk length of the row datasets (new files only).
        fsync: fsync the file at each commit (survives power loss, not just process death).

    Raises:
        DatasetError: the path holds a file that is not a contactkit dataset (it is left untouched),
            the file exists and ``resume`` is False, the stored meta differs (naming the keys), or
            another writer holds the file.
    """

    def __init__(self, path: str | os.PathLike, *, meta: DatasetMeta, resume: bool = True,
                 chunk_rows: int = CHUNK_ROWS, fsync: bool = True):
        if not isinstance(meta, DatasetMeta):
            raise InvalidInputError(f"{path}: meta must be a DatasetMeta, got {type(meta).__name__}")
        if isinstance(chunk_rows, bool) or not isinstance(chunk_rows, int) or chunk_rows < 1:
            raise InvalidInputError(f"chunk_rows must be an int >= 1, got {chunk_rows!r}")
        self.path = os.fspath(path)
        self._fsync = fsync
        self._f: h5py.File | None = None
        self._lock = _acquire_lock(self.path)
        try:
            self.meta = self._prepare(meta, resume, chunk_rows)
            self._f = h5py.File(self.path, "r+", libver="latest")
            self._tail = _trim_to_committed(self._f)
            self._f.flush()
            self._f.swmr_mode = True
        except BaseException:
            if self._f is not None:
                self._f.close()
            self._release_lock()
            raise

    def _prepare(self, meta: DatasetMeta, resume: bool, chunk_rows: int) -> DatasetMeta:
        """Create the file, or check an existing one and rebuild it if its writer died; returns its meta."""
        path = self.path
        if not os.path.lexists(path):
            tmp = path + TMP_SUFFIX
            _create_layout(tmp, meta, chunk_rows).close()
            _replace_durably(tmp, path)
            return meta
        try:
            with open_dataset(path) as ds:
                stored, clean, has_scenes = ds.meta, ds.closed_cleanly, ds.has_episode_scenes
        except DatasetError as exc:
            raise DatasetError(f"{path}: refusing to write: the file exists and is not a readable contactkit "
                               f"dataset ({exc})") from None
        if not resume:
            raise DatasetError(f"{path}: the dataset exists; pass resume=True to append to it "
                               "or choose another path")
        differ = stored.mismatched_keys(meta)
        if differ:
            raise DatasetError(f"{path}: cannot resume, meta differs in {differ} (stored → new: "
                               f"{stored.differences(meta)})")
        if not clean or not has_scenes:  # a crashed writer, or a file from before per-episode scenes
            tmp = path + TMP_SUFFIX
            _copy_committed(path, tmp, chunk_rows)
            _replace_durably(tmp, path)
        return stored

    @property
    def n_committed(self) -> int:
        """Number of episodes committed to the file (resumed ones included)."""
        return self._tail.episodes

    def __enter__(self) -> DatasetWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _sync(self) -> None:
        self._f.flush()
        if self._fsync:
            _fsync_path(self.path)

    def _write_rows(self, ep: Episode) -> tuple[dict[str, int], bytes | None]:
        """Append the episode's rows and scene bytes (not yet committed).

        Returns:
            ``(index entry, scene bytes newly stored or None)``.
        """
        T, f, tail = ep.n_steps, self._f, self._tail
        for group, fields, start, rows in (("states", STATE_FIELDS, tail.state_rows, T + 1),
                                           ("steps", STEP_FIELDS, tail.step_rows, T)):
            for key in fields:
                ds = f[f"{group}/{key}"]
                ds.resize(start + rows, axis=0)
                ds[start:start + rows] = getattr(ep, key)
        scene_start, scene_length, stored = NO_SCENE_START, 0, None
        if ep.scene is not None:
            data = ep.scene.encode("utf-8")
            if tail.last_scene is not None and tail.last_scene[0] == data:
                scene_start = tail.last_scene[1]  # identical to the last stored scene: share its bytes
            else:
                scene_start, stored = tail.scene_bytes, data
                ds = f[SCENE_BYTES]
                ds.resize((scene_start + len(data),))
                ds[scene_start:] = np.frombuffer(data, dtype=np.uint8)
            scene_length = len(data)
        entry = {"state_start": tail.state_rows, "step_start": tail.step_rows,
                 "seed": NO_SEED if ep.seed is None else ep.seed, "scene_start": scene_start,
                 "scene_length": scene_length, "length": T}
        return entry, stored

    def append_episode(self, episode: Episode, *, source: dict | None = None) -> int:
        """Validate ``episode`` and commit it atomically; returns its index in the file.

        An episode whose ``scene`` is byte-for-byte the last stored scene shares its stored copy. ``source`` is the
        episode's provenance (a JSON-serialisable dict, e.g. a robot log's file, sha256, stamp mode and start
        time), committed with it (:meth:`~contactkit.data.reader.Dataset.source`).

        Raises:
            InvalidInputError: the episode is malformed (naming the field and step, or the scene problem).
            DatasetError: the writer is closed or a previous append failed part-way.
        """
        if self._f is None:
            raise DatasetError(f"{self.path}: writer is closed (a previous append may have failed)")
        if not isinstance(episode, Episode):
            raise InvalidInputError(f"append_episode needs an Episode, got {type(episode).__name__}")
        ep = episode.validated()
        n = self._tail.episodes
        try:
            source_data = json.dumps(source, sort_keys=True).encode("utf-8") if source is not None else b""
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"append_episode: source must be a JSON-serialisable dict ({exc})") from None
        try:
            entry, stored = self._write_rows(ep)
            entry["source_start"], entry["source_length"] = -1, len(source_data)
            if source_data:
                ds = self._f[SOURCE_BYTES]
                entry["source_start"] = self._tail.source_bytes
                ds.resize((self._tail.source_bytes + len(source_data),))
                ds[self._tail.source_bytes:] = np.frombuffer(source_data, dtype=np.uint8)
            self._sync()
            for key in (*SOURCE_INDEX_FIELDS, *INDEX_FIELDS):  # "length" is last: extending it commits the episode
                if key == "length":
                    self._sync()
                ds = self._f[f"episodes/{key}"]
                ds.resize((n + 1,))
                ds[n] = entry[key]
            self._sync()
        except BaseException:
            self._abort()
            raise
        tail = self._tail
        if stored is not None:
            tail.last_scene = (stored, tail.scene_bytes)
            tail.scene_bytes += len(stored)
        tail.episodes += 1
        tail.source_bytes += len(source_data)
        tail.state_rows += ep.n_steps + 1
        tail.step_rows += ep.n_steps
        return n

    def _abort(self) -> None:
        """After a failed append: un-extend the index (best effort), close; resume trims stray rows."""
        try:
            for key in (*SOURCE_INDEX_FIELDS, *INDEX_FIELDS):
                ds = self._f[f"episodes/{key}"]
                if ds.shape[0] > self._tail.episodes:
                    ds.resize((self._tail.episodes,))
            self._f.flush()
        except Exception:  # noqa: BLE001 - the original error is re-raised by the caller
            pass
        self.close()

    def _release_lock(self) -> None:
        if self._lock is not None:
            try:
                os.unlink(self.path + LOCK_SUFFIX)
            except FileNotFoundError:
                pass
            os.close(self._lock)
            self._lock = None

    def close(self) -> None:
        """Close the file (it is then marked closed cleanly) and release the lock. Idempotent."""
        if self._f is not None:
            try:
                self._f.close()
            finally:
                self._f = None
        self._release_lock()
