"""Jobs on a Ray cluster: ``workers`` tasks at a time, results in submission order (``docs/scale.md``).

Collection (:func:`contactkit.data.collect.collect`) and the experiments (:mod:`contactkit.eval.workers`) run
many independent jobs — episodes, trials, cases — each a pure function of its job (seeds included), so the
results do not depend on where or in which order the jobs run. :class:`RayPool` runs them as Ray tasks of one
CPU each: on a local Ray instance it starts itself (``num_cpus = workers``), or on a running cluster given by its
address (``ray start --head`` on one machine, ``ray start --address HEAD:6379`` on the others). Jobs and their
functions are pickled (functions by reference: every machine needs the same contactkit installed); results come
back to the calling process, which alone writes files.

Ray is the optional extra ``contactkit[scale]``; without it, only the serial path (``workers=1``, no address)
runs.

Token authentication (Ray 2.60): ``ray start --head`` turns it on by itself when this machine has a token
(``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH`` or ``~/.ray/auth_token``) and ``RAY_AUTH_MODE`` is unset, and
``ray.init(address="auto")`` follows it, but ``ray.init(address="HOST:PORT")`` does not: the driver then connects
without its token and the cluster refuses it ("InvalidAuthToken"). :class:`RayPool` therefore enables token mode for
a ``HOST:PORT`` address the way Ray does for ``auto`` (:func:`enable_token_auth`); a cluster without authentication
accepts such a driver too.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future

from contactkit.errors import InvalidInputError, WorkerLost

RAY_INSTALL_HINT = "pip install 'contactkit[scale]' (ray)"
"""How to get Ray, named by the error raised when it is missing."""

RESULTS_BUFFERED_PER_WORKER = 4
"""Finished results that :meth:`RayPool.imap` holds per worker while an earlier job still runs (bounds memory)."""

LOST_WORKER_ERRORS = ("WorkerCrashedError", "NodeDiedError", "LocalRayletDiedError", "OwnerDiedError",
                      "ObjectLostError")
"""Ray exceptions (``ray.exceptions``) that mean a job's worker, node or result was lost rather than the job failing
on its own: :meth:`RayPool.imap` reports them as :class:`~contactkit.errors.WorkerLost`."""

CONNECT_TIMEOUT_S = 10.0
"""Longest wait [s] for a TCP answer from a ``HOST:PORT`` cluster address before giving up."""

LOCAL_ADDRESS = "local"
"""``ray.init`` address that starts a new local Ray instance (never joins one that happens to run)."""

AUTH_MODE_ENV = "RAY_AUTH_MODE"
"""Ray's switch for token authentication (``token`` or ``disabled``; unset: Ray decides, see the module doc)."""

AUTH_HINT = ("if the cluster uses Ray's token authentication, this machine needs the head's token: set "
             "RAY_AUTH_MODE=token and RAY_AUTH_TOKEN to the output of 'ray get-auth-token' on the head (or copy the "
             "head's ~/.ray/auth_token here, or point RAY_AUTH_TOKEN_PATH at a copy); docs/scale.md")
"""What to set when a cluster address refuses the driver (named by the error)."""


def check_workers(workers: int, ray_address: str | None = None) -> None:
    """Refuse a worker count that is not an integer >= 1, or an empty address (``--workers``/``--ray-address``)."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InvalidInputError(f"--workers must be an integer >= 1, got {workers!r}")
    if ray_address is not None and (not isinstance(ray_address, str) or not ray_address.strip()):
        raise InvalidInputError(f"--ray-address must name a Ray cluster (HOST:PORT, 'auto' or ray://HOST:PORT), "
                                f"got {ray_address!r}")


def uses_ray(workers: int, ray_address: str | None = None) -> bool:
    """Whether ``workers``/``ray_address`` ask for Ray (more than one worker, or a cluster address)."""
    check_workers(workers, ray_address)
    return workers > 1 or ray_address is not None


def check_reachable(address: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Refuse a ``HOST:PORT`` cluster address nothing listens at (Ray itself would retry for minutes); other forms
    (``auto``, ``ray://``) are left to Ray."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or "://" in address or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise InvalidInputError(f"--ray-address {address}: no Ray cluster answers there ({exc.strerror or exc}); "
                                "start one with 'ray start --head' (docs/scale.md)") from None


def enable_token_auth(address: str) -> bool:
    """Turn on Ray's token authentication in this process for a ``HOST:PORT`` cluster ``address`` when
    ``RAY_AUTH_MODE`` is unset and a token is available here, as ``ray.init(address="auto")`` does itself (module
    doc); ``RAY_AUTH_MODE`` set either way is respected. Sets ``RAY_AUTH_MODE=token`` in this process's environment
    (kept after the pool closes, as Ray does). Returns whether token mode is on for the connection."""
    if address == "auto" or "://" in address:
        return os.environ.get(AUTH_MODE_ENV, "").lower() == "token"
    try:
        from ray._private.authentication import authentication_token_setup as auth
    except ImportError:  # another Ray version: leave it to Ray (the error names what to set)
        return os.environ.get(AUTH_MODE_ENV, "").lower() == "token"
    quiet = logging.getLogger(auth.__name__)
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # its warning speaks of starting a cluster, not of joining one
    try:
        return bool(auth.maybe_enable_token_auth_if_token_available(warn_if_disabled=False))
    finally:
        quiet.setLevel(level)


def _import_ray():
    try:
        import ray
    except ImportError:
        raise InvalidInputError(f"--workers > 1 and --ray-address run on Ray, which is not installed: "
                                f"{RAY_INSTALL_HINT}") from None
    return ray


def _run_job(fn: Callable, job):
    """A Ray task: ``fn(job)`` with one torch thread (jobs are small; threads would contend for the cores)."""
    import torch

    torch.set_num_threads(1)
    return fn(job)


class RayPool:
    """Run jobs on Ray, ``workers`` at a time; a context manager (it connects on enter).

    On enter it uses the Ray instance this process is already connected to, else connects to ``address`` (a running
    cluster: ``HOST:PORT``, ``auto``, ``ray://HOST:PORT``), else starts a local instance of ``workers`` CPUs on
    this machine (Ray 2.60 binds its ports on every interface: docs/scale.md); on exit it shuts down only what it
    started or connected to. Each job is a task of one CPU. A job whose worker dies beyond Ray's retries is a
    :class:`~contactkit.errors.WorkerLost` from :meth:`imap`.

    Args:
        workers: jobs running at a time (>= 1).
        address: a running Ray cluster, or None for a local instance.
    """

    def __init__(self, workers: int, address: str | None = None):
        check_workers(workers, address)
        self.workers, self.address = workers, address
        self._running: list = []
        self._owner = False
        self._submitted = 0

    def __enter__(self) -> RayPool:
        ray = _import_ray()
        if not ray.is_initialized():
            local = self.address is None
            if not local:
                check_reachable(self.address)
                enable_token_auth(self.address)
            try:
                ray.init(address=LOCAL_ADDRESS if local else self.address, num_cpus=self.workers if local else None,
                         include_dashboard=False if local else None, log_to_driver=False,
                         logging_level=logging.WARNING, configure_logging=True)
            except (ConnectionError, RuntimeError, ValueError, ray.exceptions.RayError) as exc:
                where = "start a local Ray instance" if local else f"connect to the Ray cluster at {self.address}"
                hint = "" if local else f"; {AUTH_HINT}"
                raise InvalidInputError(f"--ray-address {self.address}: cannot {where} ({exc}){hint}") from None
            self._owner = True
        self._ray = ray
        self._task = ray.remote(num_cpus=1)(_run_job)
        return self

    def __exit__(self, *exc) -> None:
        if self._running:
            for ref in self._running:
                self._ray.cancel(ref)
            self._running = []
        if self._owner:
            self._ray.shutdown()
            self._owner = False

    def _throttle(self, limit: int) -> None:
        """Wait until fewer than ``limit`` submitted tasks are still running."""
        while len(self._running) >= limit:
            _, self._running = self._ray.wait(self._running, num_returns=1)

    def submit(self, fn: Callable, job) -> Future:
        """Run ``fn(job)`` on a worker (waits while ``workers`` tasks run); its :class:`~concurrent.futures.Future`
        (usable with ``concurrent.futures.as_completed``). A job whose worker died beyond Ray's retries ends that
        future in :class:`~contactkit.errors.WorkerLost` (naming the job by its submission number); the other
        futures, finished or not, are unaffected, so a caller keeps every result it already has."""
        self._throttle(self.workers)
        ref = self._task.remote(fn, job)
        self._running.append(ref)
        index, self._submitted = self._submitted, self._submitted + 1
        out: Future = Future()

        def relay(done: Future) -> None:
            try:
                result = done.result()
            except self._lost_errors() as exc:
                outcome = (False, self._lost(exc, f"job {index} (in submission order) was lost",
                                             "; the results of the other jobs are kept"))
            except BaseException as exc:  # noqa: BLE001 - the job's own error, handed to the caller as is
                outcome = (False, exc)
            else:
                outcome = (True, result)
            if out.set_running_or_notify_cancel():
                (out.set_result if outcome[0] else out.set_exception)(outcome[1])

        ref.future().add_done_callback(relay)
        return out

    def imap(self, fn: Callable, jobs: Iterable) -> Iterator:
        """``fn(job)`` of each job, in the jobs' order, as each becomes due; at most ``workers`` jobs run at a time
        and at most :data:`RESULTS_BUFFERED_PER_WORKER` × ``workers`` finished results wait for an earlier one."""
        pending, buffer = iter(jobs), RESULTS_BUFFERED_PER_WORKER * self.workers
        running, finished, submitted, due, exhausted = {}, {}, 0, 0, False
        try:
            while True:
                while not exhausted and len(running) < self.workers and len(finished) < buffer:
                    try:
                        job = next(pending)
                    except StopIteration:
                        exhausted = True
                        break
                    running[self._task.remote(fn, job)] = submitted
                    submitted += 1
                if due in finished:
                    yield self._result(finished.pop(due), due)
                    due += 1
                elif not running:
                    return
                else:
                    ready, _ = self._ray.wait(list(running), num_returns=1)
                    for ref in ready:
                        finished[running.pop(ref)] = ref
        finally:
            for ref in running:
                self._ray.cancel(ref)

    def _result(self, ref, index: int):
        """The result of job ``index`` (in submission order); :class:`~contactkit.errors.WorkerLost` when its worker
        died beyond Ray's task retries (:data:`LOST_WORKER_ERRORS`)."""
        try:
            return self._ray.get(ref)
        except self._lost_errors() as exc:
            raise self._lost(exc, f"job {index} (in submission order) was lost",
                             f"; the {index} job(s) before it were delivered (a collection keeps those episodes: "
                             "run the same command again to resume)") from None

    def _lost_errors(self) -> tuple[type[BaseException], ...]:
        """The classes of :data:`LOST_WORKER_ERRORS` this Ray has."""
        return tuple(getattr(self._ray.exceptions, name) for name in LOST_WORKER_ERRORS
                     if hasattr(self._ray.exceptions, name))

    @staticmethod
    def _lost(exc: BaseException, what: str, after: str) -> WorkerLost:
        """A one-line :class:`WorkerLost` for Ray's ``exc``: ``what``, the cause, then ``after``."""
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        return WorkerLost(f"{what}: its Ray worker died beyond Ray's retries ({type(exc).__name__}: {first}){after}")

    def map(self, fn: Callable, jobs: Iterable) -> list:
        """``[fn(job) for job in jobs]``, run on the workers."""
        return list(self.imap(fn, jobs))
