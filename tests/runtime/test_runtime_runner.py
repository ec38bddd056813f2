"""The thread-pool runner: exclusivity and order per channel under real concurrency, failures
reported, rebalances drained or handed back; throttled reception of a large backlog."""

from __future__ import annotations

import threading
import time
import tracemalloc
from collections.abc import Hashable, Iterator
from typing import Any

import pytest

from rebalancing.runtime import ChannelRunner, ThrottledReception


class Recorder:
    """A handler that checks, from what it sees, that no channel runs twice at once and that
    each channel's items arrive in order."""

    def __init__(self, pause: float = 0.0) -> None:
        self.lock = threading.Lock()
        self.running: set[Hashable] = set()
        self.last: dict[Hashable, int] = {}
        self.violations: list[str] = []
        self.count = 0
        self.pause = pause

    def __call__(self, channel: Hashable, work: Any) -> None:
        with self.lock:
            if channel in self.running:
                self.violations.append(f"{channel} ran twice at once")
            self.running.add(channel)
            if work <= self.last.get(channel, -1):
                self.violations.append(f"{channel}: {work} after {self.last[channel]}")
            self.last[channel] = work
        if self.pause:
            time.sleep(self.pause)
        with self.lock:
            self.running.discard(channel)
            self.count += 1


def _check_log(log: list[tuple[str, Hashable, int]]) -> list[str]:
    """From a log of ("start" | "end", channel, work) events in the order they happened:
    per channel, starts and ends alternate (never two items at once) and work increases."""
    problems: list[str] = []
    open_item: dict[Hashable, int] = {}
    last: dict[Hashable, int] = {}
    for event, channel, work in log:
        if event == "start":
            if channel in open_item:
                problems.append(f"{channel}: {work} started while {open_item[channel]} ran")
            if work <= last.get(channel, -1):
                problems.append(f"{channel}: {work} started after {last[channel]}")
            open_item[channel] = work
            last[channel] = work
        elif open_item.pop(channel, None) != work:
            problems.append(f"{channel}: {work} ended without starting")
    return problems


def test_many_threads_keep_each_channel_exclusive_and_in_order() -> None:
    log: list[tuple[str, Hashable, int]] = []
    log_lock = threading.Lock()

    def handler(channel: Hashable, work: int) -> None:
        with log_lock:
            log.append(("start", channel, work))
        time.sleep(0.0001)
        with log_lock:
            log.append(("end", channel, work))

    channels = list(range(40))
    with ChannelRunner(handler, workers=8, channels=channels) as runner:
        for sequence in range(200):
            for channel in channels:
                runner.submit(channel, sequence)
        assert runner.join(timeout=120)
    assert runner.processed == len(log) // 2 == 40 * 200
    assert _check_log(log) == []
    assert len(set(log)) == len(log), "no item ran twice"


def test_the_log_check_catches_overlap_and_overtaking() -> None:
    overlapping = [("start", "a", 0), ("start", "a", 1), ("end", "a", 0), ("end", "a", 1)]
    overtaking = [("start", "a", 1), ("end", "a", 1), ("start", "a", 0), ("end", "a", 0)]
    assert _check_log(overlapping)
    assert _check_log(overtaking)


def test_a_failing_item_is_reported_and_its_channel_goes_on_in_order() -> None:
    seen: list[tuple[str, int]] = []
    attempts: dict[int, int] = {}

    def handler(channel: Hashable, work: int) -> None:
        attempts[work] = attempts.get(work, 0) + 1
        if work == 2 or (work == 4 and attempts[work] == 1):
            raise RuntimeError(f"item {work} failed")
        seen.append((str(channel), work))

    with ChannelRunner(handler, workers=3, channels=["q"], max_attempts=2) as runner:
        for work in range(6):
            runner.submit("q", work)
        runner.join(timeout=30)
    assert seen == [("q", 0), ("q", 1), ("q", 3), ("q", 4), ("q", 5)]
    assert [(failure.work, failure.attempts) for failure in runner.failures] == [(2, 2)]
    assert str(runner.failures[0].error) == "item 2 failed"
    assert attempts[4] == 2, "retried once, before item 5"


def test_a_rebalance_hands_back_the_pending_work_of_revoked_queues() -> None:
    release = threading.Event()

    def handler(channel: Hashable, work: int) -> None:
        release.wait(10)

    runner = ChannelRunner(handler, workers=1, channels=["a", "b"])
    for work in range(5):
        runner.submit("a", work)
    time.sleep(0.05)  # the single worker is now blocked on a's first item
    handed: dict[Hashable, list[Any]] = {}
    revoking = threading.Thread(
        target=lambda: handed.update(runner.update_assignment(["b", "c"], drain=False))
    )
    revoking.start()
    time.sleep(0.05)
    assert revoking.is_alive(), "waits for the item in progress"
    release.set()
    revoking.join(10)
    assert handed == {"a": [1, 2, 3, 4]}
    assert runner.channels() == {"b", "c"}
    with pytest.raises(ValueError, match="unknown channel 'a'"):
        runner.submit("a", 9)
    runner.close()


def test_a_drained_rebalance_finishes_the_revoked_work_first() -> None:
    done: list[int] = []
    runner = ChannelRunner(lambda channel, work: done.append(work), workers=2, channels=["a"])
    for work in range(100):
        runner.submit("a", work)
    assert runner.update_assignment(["b"], drain=True) == {"a": []}
    assert done == list(range(100))
    runner.close()


def test_bad_runner_parameters_are_refused() -> None:
    with pytest.raises(ValueError, match="workers"):
        ChannelRunner(lambda channel, work: None, workers=0)
    runner = ChannelRunner(lambda channel, work: None, workers=1)
    with pytest.raises(ValueError, match="low_water"):
        ThrottledReception(lambda: None, runner, high_water=10, low_water=10)
    runner.close()


def _backlog(messages: int, channels: int) -> Iterator[tuple[int, int]]:
    for sequence in range(messages):
        yield sequence % channels, sequence


def test_a_million_message_backlog_is_received_no_faster_than_it_is_processed() -> None:
    messages, channels, high_water = 1_000_000, 64, 2_000
    recorder = Recorder()
    backlog = _backlog(messages, channels)
    tracemalloc.start()
    with ChannelRunner(recorder, workers=4, channels=range(channels)) as runner:
        reception = ThrottledReception(lambda: next(backlog, None), runner, high_water)
        stats = reception.run(stop_when_empty=True)
        runner.join(timeout=600)
        _, peak_bytes = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert stats.received == runner.processed == recorder.count == messages
    assert runner.peak_pending <= high_water
    assert stats.pauses > 0
    assert stats.paused_seconds > 0
    assert recorder.violations == []
    assert peak_bytes < 16 * 1024 * 1024, f"peak traced memory {peak_bytes:,} bytes"
