"""Worker pools for experiments: spawned processes of one torch thread each, or the same jobs run inline.

Experiments run many small, independent jobs (episodes, training runs, evaluations); on a small machine one torch
thread per worker avoids threads contending for the same cores.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import Future, ProcessPoolExecutor


def one_torch_thread() -> None:
    """Limit torch in this process to one intra-op thread (a pool's initializer)."""
    import torch

    torch.set_num_threads(1)


class InlinePool:
    """A stand-in for a process pool that runs each job at once in this process, with one torch thread
    (restored on exit); ``submit`` returns a finished :class:`~concurrent.futures.Future`."""

    def __enter__(self) -> InlinePool:
        import torch

        self._threads = torch.get_num_threads()
        one_torch_thread()
        return self

    def __exit__(self, *exc) -> None:
        import torch

        torch.set_num_threads(self._threads)

    def submit(self, fn, job) -> Future:
        future: Future = Future()
        future.set_result(fn(job))
        return future

    def map(self, fn, jobs):
        return [fn(job) for job in jobs]


def worker_pool(workers: int):
    """``workers`` spawned processes of one torch thread each, or :class:`InlinePool` for ``workers <= 1``.

    Spawned (not forked: torch's thread pools do not survive a fork), so a script that runs an experiment
    needs the usual ``if __name__ == "__main__":`` guard.
    """
    if workers <= 1:
        return InlinePool()
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=one_torch_thread)
