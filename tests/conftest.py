"""Suite-wide settings: one torch thread per test worker (tiny tensors are 10-100x slower when two
workers each spawn threads on a 2-core machine)."""

import pytest
import torch

import contactkit  # noqa: F401  (first: on a machine without a display it sets MUJOCO_GL before any test imports mujoco)


def pytest_configure(config):
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def ray_cluster():
    """A local Ray instance on 127.0.0.1 with two worker CPUs, shared by the tests that use it (started on first
    use, about 10 s; shut down, its processes with it, at the end of the session)."""
    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()
