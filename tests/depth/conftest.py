"""Small depth networks trained in seconds, shared by the depth tests."""

import numpy as np
import pytest

from contactkit.depth import TrainConfig, default_setup, make_frame, train_depth_net
from contactkit.geometry import box

BOX_SIZE = 0.02
"""[m] edge of the test cube."""
BOX_CONFIG = TrainConfig(samples=30_000, steps=3000, batch=1024, lr=3e-3, lr_final=1e-5, seed=0)
"""Seconds on one core (measured ~5 s)."""


@pytest.fixture(scope="session")
def cube():
    return box((BOX_SIZE, BOX_SIZE, BOX_SIZE))


@pytest.fixture(scope="session")
def cube_net(cube):
    setup = default_setup(cube, make_frame("cartesian"), pad=2e-3, depth_scale=1e-2)
    return train_depth_net(cube, setup, BOX_CONFIG)


@pytest.fixture
def rng():
    return np.random.default_rng(7)
