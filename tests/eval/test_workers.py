"""Worker pools: inline jobs run at once with one torch thread (restored afterwards); spawned pools run the jobs."""

import math

import torch

from contactkit.eval.workers import InlinePool, worker_pool


def test_inline_pool_runs_each_job_with_one_thread_and_restores_the_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with worker_pool(1) as pool:
            assert isinstance(pool, InlinePool) and torch.get_num_threads() == 1
            assert pool.submit(math.sqrt, 9.0).result() == 3.0
            assert pool.map(math.sqrt, [4.0, 16.0]) == [2.0, 4.0]
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_spawned_pool_returns_the_jobs_results_in_order():
    with worker_pool(2) as pool:
        assert list(pool.map(math.sqrt, [1.0, 4.0, 9.0])) == [1.0, 2.0, 3.0]
