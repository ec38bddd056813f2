"""Throttled reception ends cleanly: nothing polled is lost when the runner is closed, and a stop
is obeyed at once, even while reception is paused above the high-water mark (a blocked handler
cannot hold it), with no message polled after it.

Threads wait for each other on events and counters; the timeouts are only safety nets."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import Any

import pytest

from rebalancing.runtime import ChannelRunner, RunnerClosedError, ThrottledReception


def _wait_until(condition: Callable[[], bool], timeout: float) -> bool:
    """True as soon as `condition()` holds, False if it still does not after `timeout`."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True


class CountingSource:
    """poll(): ("a", 0), ("a", 1), ... (then None past `limit` messages), recording what it gave."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit
        self.polled: list[int] = []

    def __call__(self) -> tuple[Hashable, Any] | None:
        if self.limit is not None and len(self.polled) == self.limit:
            return None
        self.polled.append(len(self.polled))
        return "a", self.polled[-1]


def test_a_closed_runner_refuses_work_with_the_work_carried_back() -> None:
    runner = ChannelRunner(lambda channel, work: None, workers=1, channels=["a"])
    runner.close()
    with pytest.raises(RunnerClosedError, match="submit: the runner is closed") as refusal:
        runner.submit("a", 5)
    assert isinstance(refusal.value, RuntimeError)
    assert (refusal.value.channel, refusal.value.work) == ("a", 5)


def test_a_message_polled_after_the_runner_closed_is_kept_and_reception_ends() -> None:
    runner = ChannelRunner(lambda channel, work: None, workers=1, channels=["a"])
    runner.close()
    source = CountingSource()
    reception = ThrottledReception(
        lambda: source() if len(source.polled) < 100 else None, runner, 10
    )
    stats = reception.run(stop_when_empty=True)
    assert source.polled == [0], "nothing more is polled for a runner that is closed"
    assert reception.take_refused() == [("a", 0)], "the message is kept for the broker"
    assert stats.received == stats.refused == 1


class PausedReception:
    """A reception of an endless source into a runner whose one worker blocks on its first item
    until `release` is set: with a high-water mark of 2, reception pauses after two messages."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.runner = ChannelRunner(lambda channel, work: self.release.wait(60), 1, ["a"])
        self.source = CountingSource()
        self.reception = ThrottledReception(self.source, self.runner, high_water=2, low_water=0)
        self.stop = threading.Event()
        self.thread = threading.Thread(
            target=self.reception.run, kwargs={"stop": self.stop}, daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.release.set()
        self.stop.set()
        self.runner.close(drain=False, timeout=10)


def test_a_stop_set_while_paused_ends_the_run_though_the_handler_still_blocks() -> None:
    paused = PausedReception()
    try:
        assert _wait_until(lambda: paused.reception.stats.pauses == 1, timeout=10)
        paused.stop.set()
        paused.thread.join(10)
        assert not paused.thread.is_alive(), "reception still paused after stop was set"
    finally:
        paused.close()
    assert paused.source.polled == [0, 1]


def test_no_message_is_polled_once_stop_is_set_during_a_pause() -> None:
    paused = PausedReception()
    try:
        assert _wait_until(lambda: paused.reception.stats.pauses == 1, timeout=10)
        paused.stop.set()
        paused.release.set()  # pending falls to the low-water mark: the pause ends either way
        paused.thread.join(10)
        assert not paused.thread.is_alive()
    finally:
        paused.close()
    assert paused.source.polled == [0, 1], "a message was polled after stop was set"
    assert paused.reception.stats.received == 2
