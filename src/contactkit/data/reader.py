"""Validating reader of contactkit trajectory datasets (HDF5).

Every problem with a file — missing, empty, not HDF5, truncated, foreign, another schema version, an
episode index inconsistent with the data, NaN in the data — is a :class:`DatasetError` that names the
file and what is wrong. Only committed episodes (those counted by ``episodes/length``) are read; rows a
crashed writer left beyond them are ignored. A file whose writer died (or is still writing) carries the
HDF5 "open for write" flag; it is opened read-only in SWMR mode, which HDF5 allows for such files.

Per-episode scenes (``scenes/bytes`` and ``episodes/scene_start``, ``scene_length``) are optional: a
file written before they existed is read as if every episode used the file's ``meta.scene``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass

import h5py
import numpy as np

from contactkit.data.schema import (
    FORMAT_NAME,
    INDEX_FIELDS,
    NO_SCENE_START,
    NO_SEED,
    SCENE_BYTES,
    SCENE_INDEX_FIELDS,
    SCHEMA_VERSION,
    SOURCE_BYTES,
    SOURCE_INDEX_FIELDS,
    STATE_FIELDS,
    STEP_FIELDS,
    DatasetMeta,
    Episode,
    check_scene_index,
    validate_scene_json,
)
from contactkit.errors import DatasetError, InvalidInputError
from contactkit.files import PathKind, expect_path

OPEN_FOR_WRITE_MESSAGE = "already open for write"
"""Fragment of the HDF5 error raised when a file's superblock still says it is open for writing."""

_H5_ERRORS = (OSError, KeyError, ValueError, RuntimeError, TypeError)


@dataclass(frozen=True)
class EpisodeIndex:
    """Committed episode index of a file, each array ``(E,)`` int64.

    Attributes:
        state_start: first row of episode i in ``states/*``.
        step_start: first row of episode i in ``steps/*``.
        length: number of steps ``T_i`` (the episode has ``T_i + 1`` state rows).
        seed: seed of episode i, or :data:`NO_SEED`.
        scene_start: first byte of episode i's scene in ``scenes/bytes``, or :data:`NO_SCENE_START`.
        scene_length: bytes of episode i's scene (0: the episode uses ``meta.scene``).
    """

    state_start: np.ndarray
    step_start: np.ndarray
    length: np.ndarray
    seed: np.ndarray
    scene_start: np.ndarray
    scene_length: np.ndarray

    @property
    def n_episodes(self) -> int:
        return int(self.length.shape[0])

    @property
    def n_state_rows(self) -> int:
        """State rows used by the committed episodes, ``Σ (T_i + 1)``."""
        return int(self.length.sum()) + self.n_episodes

    @property
    def n_step_rows(self) -> int:
        """Step rows used by the committed episodes, ``Σ T_i``."""
        return int(self.length.sum())

    @property
    def n_scene_bytes(self) -> int:
        """Bytes of ``scenes/bytes`` used by the committed episodes (the end of the last stored scene)."""
        ends = (self.scene_start + self.scene_length)[self.scene_length > 0]
        return int(ends.max(initial=0))


def open_hdf5(path: str | os.PathLike) -> tuple[h5py.File, bool]:
    """Open ``path`` read-only; returns ``(file, closed_cleanly)``.

    A file still flagged "open for write" (its writer crashed or is running) is opened with
    ``swmr=True`` and reported as not closed cleanly.

    Raises:
        DatasetError: the file is missing, not a regular file (a directory, a FIFO, a device), empty, not HDF5 or
            truncated.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise DatasetError(f"{path}: no such dataset file")
    expect_path(path, PathKind.FILE, lambda problem: DatasetError(f"{path}: {problem}, not a dataset file"))
    if os.path.getsize(path) == 0:
        raise DatasetError(f"{path}: empty file (0 bytes), not an HDF5 dataset")
    try:
        return h5py.File(path, "r"), True
    except OSError as exc:
        first = exc
    if OPEN_FOR_WRITE_MESSAGE in str(first):
        try:
            return h5py.File(path, "r", swmr=True), False
        except OSError as exc:
            first = exc
    text = str(first)
    if "signature not found" in text:
        raise DatasetError(f"{path}: not an HDF5 file (no HDF5 signature)")
    if "truncated" in text:
        raise DatasetError(f"{path}: truncated HDF5 file ({text})")
    raise DatasetError(f"{path}: cannot be opened as HDF5 ({text})")


def _attr(f: h5py.File, key: str):
    value = f.attrs[key]
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, np.generic):
        return value.item()
    return value


def read_meta(f: h5py.File, path: str) -> DatasetMeta:
    """Check the root attributes ``format`` and ``schema_version`` and parse the :class:`DatasetMeta`."""
    fmt = _attr(f, "format") if "format" in f.attrs else None
    if fmt != FORMAT_NAME:
        raise DatasetError(f"{path}: not a contactkit dataset (root attribute 'format' is {fmt!r}, "
                           f"expected {FORMAT_NAME!r})")
    version = _attr(f, "schema_version") if "schema_version" in f.attrs else None
    if version != SCHEMA_VERSION:
        raise DatasetError(f"{path}: schema_version {version!r} is not supported; this contactkit reads "
                           f"schema_version {SCHEMA_VERSION}")
    keys = DatasetMeta.__dataclass_fields__
    missing = [k for k in keys if k not in f.attrs]
    if missing:
        raise DatasetError(f"{path}: root attribute(s) {missing} missing")
    try:
        return DatasetMeta(**{k: _attr(f, k) for k in keys})
    except InvalidInputError as exc:
        raise DatasetError(f"{path}: invalid root attribute: {exc}") from None


def _check_dataset(f: h5py.File, path: str, name: str, trailing: tuple[int, ...], kind: str) -> h5py.Dataset:
    obj = f.get(name)
    if not isinstance(obj, h5py.Dataset):
        raise DatasetError(f"{path}: dataset '{name}' is missing")
    if obj.dtype.kind != kind or obj.ndim != 1 + len(trailing) or obj.shape[1:] != trailing:
        raise DatasetError(f"{path}: dataset '{name}' has dtype {obj.dtype} and shape {obj.shape}; expected "
                           f"{'float' if kind == 'f' else 'int'} rows of shape {trailing}")
    return obj


def has_scene_storage(f: h5py.File, path: str) -> bool:
    """Whether the file stores per-episode scenes (False for files written before they existed).

    Raises:
        DatasetError: only some of the per-episode scene datasets exist.
    """
    names = [SCENE_BYTES, *(f"episodes/{k}" for k in SCENE_INDEX_FIELDS)]
    present = [name in f for name in names]
    if any(present) and not all(present):
        missing = [name for name, there in zip(names, present, strict=True) if not there]
        raise DatasetError(f"{path}: per-episode scene storage is incomplete: dataset(s) {missing} missing")
    return all(present)


def _scene_bytes_dataset(f: h5py.File, path: str) -> h5py.Dataset:
    ds = f[SCENE_BYTES]
    if not isinstance(ds, h5py.Dataset):
        raise DatasetError(f"{path}: '{SCENE_BYTES}' is not a dataset")
    if ds.dtype != np.uint8 or ds.ndim != 1:
        raise DatasetError(f"{path}: dataset '{SCENE_BYTES}' has dtype {ds.dtype} and shape {ds.shape}; "
                           "expected 1-D uint8")
    return ds


def read_index(f: h5py.File, path: str) -> EpisodeIndex:
    """Read and check the committed episode index against the row datasets and the scene bytes.

    Raises:
        DatasetError: a dataset is missing or ill-shaped, the episode lengths do not tile the rows
            (mismatched lengths), the index points past the data, or a scene index is invalid or
            points past ``scenes/bytes`` (naming the episode).
    """
    scenes = has_scene_storage(f, path)
    keys = [k for k in INDEX_FIELDS if scenes or k not in SCENE_INDEX_FIELDS]
    index = {k: _check_dataset(f, path, f"episodes/{k}", (), "i") for k in keys}
    n = index["length"].shape[0]
    for key, ds in index.items():
        if ds.shape[0] < n:
            raise DatasetError(f"{path}: mismatched lengths: episodes/{key} has {ds.shape[0]} entries but "
                               f"episodes/length commits {n} episodes")
    arrays = {k: np.asarray(ds[:n], dtype=np.int64) for k, ds in index.items()}
    length = arrays["length"]
    if n and length.min() < 1:
        i = int(np.argmax(length < 1))
        raise DatasetError(f"{path}: episode {i} has length {length[i]} (at least 1 step is required)")
    step_start = np.concatenate([[0], np.cumsum(length)[:-1]]).astype(np.int64)
    expected = {"step_start": step_start, "state_start": step_start + np.arange(n)}
    for key, want in expected.items():
        bad = arrays[key] != want
        if bad.any():
            i = int(np.argmax(bad))
            raise DatasetError(f"{path}: mismatched lengths: episodes/{key}[{i}] = {arrays[key][i]} but the "
                               f"episodes before it end at row {want[i]}")
    if n and arrays["seed"].min() < NO_SEED:
        raise DatasetError(f"{path}: episodes/seed holds a negative seed other than {NO_SEED}")
    if scenes:
        check_scene_index(path, arrays["scene_start"], arrays["scene_length"],
                           _scene_bytes_dataset(f, path).shape[0])
    else:
        arrays["scene_start"] = np.full(n, NO_SCENE_START, dtype=np.int64)
        arrays["scene_length"] = np.zeros(n, dtype=np.int64)
    result = EpisodeIndex(arrays["state_start"], arrays["step_start"], length, arrays["seed"],
                          arrays["scene_start"], arrays["scene_length"])
    for group, fields, rows in (("states", STATE_FIELDS, result.n_state_rows),
                                ("steps", STEP_FIELDS, result.n_step_rows)):
        for key, trailing in fields.items():
            ds = _check_dataset(f, path, f"{group}/{key}", trailing, "f")
            if ds.shape[0] < rows:
                raise DatasetError(f"{path}: index points past the data: the {n} committed episodes need "
                                   f"{rows} rows but {group}/{key} has {ds.shape[0]}")
    return result


class Dataset:
    """Read access to the committed episodes of one dataset file (open it with :func:`open_dataset`)."""

    def __init__(self, path: str, f: h5py.File, meta: DatasetMeta, index: EpisodeIndex, clean: bool):
        self.path = path
        self.meta = meta
        self.index = index
        self.closed_cleanly = clean
        """False when the writer died (or is still writing): the file still has the HDF5 write flag."""
        self.has_episode_scenes = SCENE_BYTES in f
        """False for a file written before per-episode scenes existed (every episode uses meta.scene)."""
        self._f = f

    def __len__(self) -> int:
        return self.index.n_episodes

    def __enter__(self) -> Dataset:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Close the HDF5 file."""
        self._f.close()

    def rows(self, group: str, key: str, start: int, stop: int) -> np.ndarray:
        """Raw float64 rows ``start:stop`` of ``group/key`` (e.g. ``"states", "pos"``), unvalidated."""
        try:
            return np.asarray(self._f[f"{group}/{key}"][start:stop], dtype=np.float64)
        except _H5_ERRORS as exc:
            raise DatasetError(f"{self.path}: cannot read {group}/{key} rows "
                               f"{start}:{stop} ({exc})") from None

    def scene_bytes(self, start: int, stop: int) -> bytes:
        """Raw bytes ``start:stop`` of ``scenes/bytes``, undecoded (empty for a file without them)."""
        if not self.has_episode_scenes or stop <= start:
            return b""
        try:
            return np.asarray(self._f[SCENE_BYTES][start:stop], dtype=np.uint8).tobytes()
        except _H5_ERRORS as exc:
            raise DatasetError(f"{self.path}: cannot read {SCENE_BYTES} {start}:{stop} ({exc})") from None

    def source(self, i: int) -> dict | None:
        """Episode ``i``'s provenance (e.g. a robot log's ``file``, ``sha256``, ``stamp``, ``start_ns``), or None
        (a collected episode, or a file written before provenance was stored).

        Raises:
            DatasetError: ``i`` out of range, or the stored provenance is not a JSON object.
        """
        i = self._check_range(i)
        names = [SOURCE_BYTES, *(f"episodes/{k}" for k in SOURCE_INDEX_FIELDS)]
        if not all(name in self._f for name in names):
            return None
        try:
            a = int(self._f["episodes/source_start"][i])
            m = int(self._f["episodes/source_length"][i])
            if m == 0:
                return None
            raw = np.asarray(self._f[SOURCE_BYTES][a:a + m], dtype=np.uint8).tobytes()
            value = json.loads(raw.decode("utf-8"))
        except (*_H5_ERRORS, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise DatasetError(f"{self.path}: episode {i}'s stored source cannot be read ({exc})") from None
        if not isinstance(value, dict) or len(raw) != m:
            raise DatasetError(f"{self.path}: episode {i}'s stored source is not a JSON object")
        return value

    def sources(self) -> list[dict | None]:
        """:meth:`source` of every committed episode."""
        return [self.source(i) for i in range(len(self))]

    def _stored_scene(self, i: int, blob: bytes | None = None) -> str | None:
        """Episode ``i``'s own scene text (None if it uses meta.scene), decoded from ``blob`` (all the
        used scene bytes) or read from the file; not JSON-checked."""
        a, m = int(self.index.scene_start[i]), int(self.index.scene_length[i])
        if m == 0:
            return None
        raw = self.scene_bytes(a, a + m) if blob is None else blob[a:a + m]
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DatasetError(f"{self.path}: episode {i}.scene is not valid UTF-8 ({exc.reason} at byte "
                               f"{a + exc.start} of {SCENE_BYTES})") from None

    def _validated(self, raw: dict, i: int, scene: str | None) -> Episode:
        seed = int(self.index.seed[i])
        try:
            return Episode(**raw, seed=None if seed == NO_SEED else seed, scene=scene).validated(f"episode {i}")
        except InvalidInputError as exc:
            raise DatasetError(f"{self.path}: {exc}") from None

    def _check_range(self, i: int) -> int:
        n = len(self)
        if not -n <= i < n:
            raise DatasetError(f"{self.path}: episode {i} out of range (the file has {n} episodes)")
        return i % n

    def scene_json(self, i: int) -> str:
        """JSON object text of the scene that applies to episode ``i``: its own, else ``meta.scene``.

        Raises:
            DatasetError: ``i`` out of range, or the stored scene is not UTF-8 or not a JSON object.
        """
        i = self._check_range(i)
        scene = self._stored_scene(i)
        if scene is None:
            return self.meta.scene
        try:
            return validate_scene_json(f"episode {i}", scene)
        except InvalidInputError as exc:
            raise DatasetError(f"{self.path}: {exc}") from None

    def episode(self, i: int) -> Episode:
        """Episode ``i`` (negative counts from the end), validated.

        Raises:
            DatasetError: ``i`` out of range, or the stored data is not a valid episode (e.g. NaN).
        """
        i = self._check_range(i)
        a, b = int(self.index.state_start[i]), int(self.index.step_start[i])
        T = int(self.index.length[i])
        raw = {k: self.rows("states", k, a, a + T + 1) for k in STATE_FIELDS}
        raw.update({k: self.rows("steps", k, b, b + T) for k in STEP_FIELDS})
        return self._validated(raw, i, self._stored_scene(i))

    def episodes(self) -> Iterator[Episode]:
        """Iterate over all committed episodes, one read per episode."""
        for i in range(len(self)):
            yield self.episode(i)

    def all_episodes(self) -> list[Episode]:
        """All committed episodes, read with one read per field (for loading a whole file at once)."""
        idx = self.index
        states = {k: self.rows("states", k, 0, idx.n_state_rows) for k in STATE_FIELDS}
        steps = {k: self.rows("steps", k, 0, idx.n_step_rows) for k in STEP_FIELDS}
        blob = self.scene_bytes(0, idx.n_scene_bytes)
        out = []
        for i in range(len(self)):
            a, b, T = int(idx.state_start[i]), int(idx.step_start[i]), int(idx.length[i])
            raw = {k: v[a:a + T + 1] for k, v in states.items()}
            raw.update({k: v[b:b + T] for k, v in steps.items()})
            out.append(self._validated(raw, i, self._stored_scene(i, blob)))
        return out

    def summary(self) -> dict:
        """Counts and value ranges of the whole file (reads and validates every episode).

        Returns:
            ``{"path", "episodes", "steps", "closed_cleanly", "meta", "episode_scenes", "episode_length":
            {min, max, mean}, "ranges": {field: {"min": [...], "max": [...]}}}``; ``episode_scenes`` counts
            the episodes with their own scene; ranges are per column, in the field's units (see
            :class:`Episode`).
        """
        episodes = self.all_episodes()
        lengths = self.index.length
        ranges = {}
        for key in (*STATE_FIELDS, *STEP_FIELDS):
            if episodes:
                values = np.concatenate([getattr(e, key) for e in episodes])
                ranges[key] = {"min": np.min(values, axis=0).tolist(), "max": np.max(values, axis=0).tolist()}
        return {
            "path": self.path,
            "episodes": len(self),
            "steps": self.index.n_step_rows,
            "closed_cleanly": self.closed_cleanly,
            "meta": self.meta.to_dict(),
            "episode_scenes": int(np.count_nonzero(self.index.scene_length)),
            "episode_length": {"min": int(lengths.min()), "max": int(lengths.max()),
                               "mean": float(lengths.mean())} if len(self) else None,
            "ranges": ranges,
        }


def open_dataset(path: str | os.PathLike) -> Dataset:
    """Open a dataset file for reading and check its structure (attributes, datasets, episode index).

    Episode data (finite values, unit quaternions, increasing time) is checked as it is read.

    Raises:
        DatasetError: naming the file and what is wrong with it.
    """
    path = os.fspath(path)
    f, clean = open_hdf5(path)
    try:
        meta = read_meta(f, path)
        index = read_index(f, path)
    except DatasetError:
        f.close()
        raise
    except _H5_ERRORS as exc:
        f.close()
        raise DatasetError(f"{path}: corrupt dataset structure ({type(exc).__name__}: {exc})") from None
    return Dataset(path, f, meta, index, clean)
