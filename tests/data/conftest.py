"""Shared helpers of the contactkit.data tests: synthetic episodes and metadata."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from contactkit.control.impedance import ActionMode
from contactkit.data.schema import DatasetMeta, Episode

FILES = Path(__file__).parent / "files"


def synthetic_episode(rng: np.random.Generator, n_steps: int, seed: int | None = None) -> Episode:
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
    """Bitwise equality of every array (float64 bytes) and of the seed."""
    for key, value in a.arrays().items():
        other = getattr(b, key)
        assert np.asarray(value).dtype == np.float64 and np.asarray(other).dtype == np.float64, key
        assert np.asarray(value).tobytes() == np.asarray(other).tobytes(), key
    assert a.seed == b.seed


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


@pytest.fixture
def make_episode():
    return synthetic_episode


@pytest.fixture
def make_meta():
    return synthetic_meta


@pytest.fixture
def assert_identical():
    return assert_episodes_identical


@pytest.fixture
def sha256():
    return file_hash


@pytest.fixture
def files_dir() -> Path:
    return FILES
