"""Progress reporting: a no-op without a sink; with one, every task starts, advances and finishes, nested or not."""

from __future__ import annotations

import threading

import pytest

from contactkit.eval import progress


class RecordingSink:
    def __init__(self):
        self.events: list[tuple] = []
        self.count = 0

    def start(self, description, total):
        self.count += 1
        self.events.append(("start", description, total))
        return self.count

    def advance(self, handle, steps):
        self.events.append(("advance", handle, steps))

    def finish(self, handle):
        self.events.append(("finish", handle))


def test_without_a_sink_every_call_is_a_no_op():
    with progress.task("episodes", total=3) as advance:
        advance()
        advance(2)
    assert list(progress.track(range(4), "cases")) == [0, 1, 2, 3]


def test_a_sink_sees_nested_tasks_in_order():
    sink = RecordingSink()
    with progress.reporting(sink):
        for _ in progress.track(["square", "circle"], "pairings"):
            with progress.task("episodes", total=2) as advance:
                advance()
                advance()
    assert sink.events == [
        ("start", "pairings", 2),
        ("start", "episodes", 2), ("advance", 2, 1), ("advance", 2, 1), ("finish", 2), ("advance", 1, 1),
        ("start", "episodes", 2), ("advance", 3, 1), ("advance", 3, 1), ("finish", 3), ("advance", 1, 1),
        ("finish", 1),
    ]


def test_a_task_finishes_when_its_loop_raises_and_the_sink_is_removed_after_the_block():
    sink = RecordingSink()
    with progress.reporting(sink), pytest.raises(ValueError), progress.task("trials", total=None):
        raise ValueError("boom")
    assert sink.events == [("start", "trials", None), ("finish", 1)]
    with progress.task("after", total=1) as advance:
        advance()
    assert len(sink.events) == 2


def test_another_thread_reports_nothing():
    sink = RecordingSink()

    def work():
        with progress.task("in a thread", total=1) as advance:
            advance()

    with progress.reporting(sink):
        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
    assert sink.events == []
