"""Worker pools: inline jobs run at once with one torch thread (restored afterwards); Ray pools run the jobs."""

import math

import pytest
import torch

from contactkit.data.parallel import RayPool
from contactkit.errors import InvalidInputError
from contactkit.eval.workers import InlinePool, worker_pool


def test_inline_pool_runs_each_job_with_one_thread_and_restores_the_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with worker_pool(1) as pool:
            assert isinstance(pool, InlinePool) and torch.get_num_threads() == 1
            assert pool.submit(math.sqrt, 9.0).result() == 3.0
            assert pool.map(math.sqrt, [4.0, 16.0]) == [2.0, 4.0]
            assert list(pool.imap(math.sqrt, [1.0, 9.0])) == [1.0, 3.0]
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_ray_pool_returns_the_jobs_results_in_order(ray_cluster):
    with worker_pool(2) as pool:
        assert isinstance(pool, RayPool)
        assert list(pool.map(math.sqrt, [1.0, 4.0, 9.0])) == [1.0, 2.0, 3.0]
    assert isinstance(worker_pool(1, "auto"), RayPool)  # an address asks for Ray (not entered: no cluster there)


def test_bad_worker_counts_are_refused():
    with pytest.raises(InvalidInputError, match="--workers"):
        worker_pool(0)
