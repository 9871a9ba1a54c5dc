"""Suite-wide settings: one torch thread per test worker (tiny tensors are 10-100x slower when two
workers each spawn threads on a 2-core machine)."""

import torch

import contactkit  # noqa: F401  (first: on a machine without a display it sets MUJOCO_GL before any test imports mujoco)


def pytest_configure(config):
    torch.set_num_threads(1)
