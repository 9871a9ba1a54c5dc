"""Worker pools for experiments: Ray tasks of one torch thread each (``docs/scale.md``), or the same jobs inline.

Experiments run many small, independent jobs (episodes, trials, cases, training runs); each is a pure function of
its job (seeds included), so the results do not depend on the pool. One torch thread per job avoids threads
contending for the same cores on a small machine.
"""

from __future__ import annotations

from concurrent.futures import Future

from contactkit.data.parallel import RayPool, uses_ray


def one_torch_thread() -> None:
    """Limit torch in this process to one intra-op thread."""
    import torch

    torch.set_num_threads(1)


class InlinePool:
    """A stand-in for a pool that runs each job at once in this process, with one torch thread (restored on
    exit); ``submit`` returns a finished :class:`~concurrent.futures.Future`."""

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

    def imap(self, fn, jobs):
        return (fn(job) for job in jobs)

    def map(self, fn, jobs):
        return [fn(job) for job in jobs]


def worker_pool(workers: int, ray_address: str | None = None) -> InlinePool | RayPool:
    """A pool for ``workers`` jobs at a time: :class:`InlinePool` for ``workers == 1`` without an address, else a
    :class:`~contactkit.data.parallel.RayPool` (a local Ray instance of ``workers`` CPUs, or the cluster at
    ``ray_address``). Both are context managers with ``submit(fn, job) -> Future``, ``imap`` (results in the jobs'
    order, as they come) and ``map``; ``fn`` must be a module-level function (pickled by reference)."""
    return RayPool(workers, ray_address) if uses_ray(workers, ray_address) else InlinePool()
