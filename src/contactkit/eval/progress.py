"""Progress of a measurement's main loops, reported to whoever listens: the ``contactkit`` command installs a sink
that draws rich progress bars; from Python, with no sink installed, every call is a no-op.

A measurement wraps its loops::

    with progress.task("episodes", total=len(seeds)) as advance:
        for seed in seeds:
            ...
            advance()

or iterates through :func:`track`. Tasks nest (an outer loop over pairings, an inner one over episodes). The sink
lives in a context variable, so threads and worker processes that did not install one report nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol, TypeVar

__all__ = ["ProgressSink", "reporting", "task", "track"]

T = TypeVar("T")


class ProgressSink(Protocol):
    """Where progress goes: ``start`` a task (``total`` steps, None: unknown) and get its handle, ``advance`` it
    by ``steps``, ``finish`` it."""

    def start(self, description: str, total: int | None) -> object: ...

    def advance(self, handle: object, steps: int) -> None: ...

    def finish(self, handle: object) -> None: ...


_SINK: ContextVar[ProgressSink | None] = ContextVar("contactkit_progress_sink", default=None)


def _nothing(steps: int = 1) -> None:
    """The ``advance`` of a task nobody listens to."""


@contextmanager
def task(description: str, total: int | None = None) -> Iterator[Callable[[int], None]]:
    """A task of ``total`` steps (None: unknown) named ``description``; yields ``advance(steps=1)``."""
    sink = _SINK.get()
    if sink is None:
        yield _nothing
        return
    handle = sink.start(description, None if total is None else int(total))

    def advance(steps: int = 1) -> None:
        sink.advance(handle, steps)

    try:
        yield advance
    finally:
        sink.finish(handle)


def track(items: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    """Iterate ``items`` as a :func:`task` (``total`` defaults to ``len(items)`` where it has one)."""
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    with task(description, total) as advance:
        for item in items:
            yield item
            advance()


@contextmanager
def reporting(sink: ProgressSink) -> Iterator[None]:
    """Send the progress of everything run inside the block (in this context) to ``sink``."""
    token = _SINK.set(sink)
    try:
        yield
    finally:
        _SINK.reset(token)
