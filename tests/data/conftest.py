"""Shared helpers of the contactkit.data tests: synthetic episodes and metadata."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import h5py
import numpy as np
import pytest

from contactkit.data.schema import DatasetMeta, Episode
from contactkit.model import ActionMode

FILES = Path(__file__).parent / "files"


def synthetic_scene(rng: np.random.Generator, n_obstacles: int = 4) -> str:
    """JSON object text of a made-up scene with non-ASCII names (multi-byte UTF-8) and random numbers."""
    scene = {"name": "schräge Kiste ø→✓", "tool": {"shape": "hexagon", "size": float(rng.uniform(0.008, 0.012))},
             "obstacles": rng.uniform(-0.09, 0.09, size=(n_obstacles, 3)).tolist()}
    return json.dumps(scene, ensure_ascii=False)


def synthetic_episode(rng: np.random.Generator, n_steps: int, seed: int | None = None,
                      scene: str | None = None) -> Episode:
    """A valid episode of random but well-formed values (unit quaternions, increasing time)."""
    quat = rng.normal(size=(n_steps + 1, 4))
    quat /= np.linalg.norm(quat, axis=-1, keepdims=True)
    return Episode(
        time=np.cumsum(rng.uniform(0.005, 0.02, size=n_steps + 1)),
        pos=rng.normal(scale=0.1, size=(n_steps + 1, 3)),
        quat=quat,
        lin_vel=rng.normal(size=(n_steps + 1, 3)),
        ang_vel=rng.normal(size=(n_steps + 1, 3)),
        action=rng.normal(size=(n_steps, 6)),
        command=rng.normal(size=(n_steps, 6)),
        wrench=rng.normal(size=(n_steps, 6)),
        seed=seed,
        scene=scene,
    )


def synthetic_meta(**changes) -> DatasetMeta:
    """Metadata of a test dataset; keyword arguments replace fields."""
    fields = dict(scene=json.dumps({"name": "peg", "clearance": 1e-3}), world=json.dumps({"timestep": 0.002}),
                  policy=json.dumps({"name": "random", "scale": 0.5}), seed=7, action_mode=ActionMode.WRENCH,
                  control_dt=0.01, backend="test")
    fields.update(changes)
    return DatasetMeta(**fields)


def file_hash(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def assert_episodes_identical(a: Episode, b: Episode) -> None:
    """Bitwise equality of every array (float64 bytes), of the seed and of the scene text."""
    for key, value in a.arrays().items():
        other = getattr(b, key)
        assert np.asarray(value).dtype == np.float64 and np.asarray(other).dtype == np.float64, key
        assert np.asarray(value).tobytes() == np.asarray(other).tobytes(), key
    assert a.seed == b.seed
    assert a.scene == b.scene and type(a.scene) is type(b.scene)


def assert_hdf5_files_equal(a, b) -> None:
    """Same dataset names, every dataset bitwise equal (shape and bytes), every root attribute equal."""
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        names_a, names_b = [], []
        fa.visititems(lambda n, o: names_a.append(n) if isinstance(o, h5py.Dataset) else None)
        fb.visititems(lambda n, o: names_b.append(n) if isinstance(o, h5py.Dataset) else None)
        assert names_a == names_b
        for n in names_a:
            assert fa[n].dtype == fb[n].dtype, n
            assert fa[n].shape == fb[n].shape and fa[n][()].tobytes() == fb[n][()].tobytes(), n
        assert dict(fa.attrs) == dict(fb.attrs)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


@pytest.fixture
def make_episode():
    return synthetic_episode


@pytest.fixture
def make_scene():
    return synthetic_scene


@pytest.fixture
def make_meta():
    return synthetic_meta


@pytest.fixture
def assert_identical():
    return assert_episodes_identical


@pytest.fixture
def assert_same_file():
    return assert_hdf5_files_equal


@pytest.fixture
def sha256():
    return file_hash


@pytest.fixture
def files_dir() -> Path:
    return FILES
