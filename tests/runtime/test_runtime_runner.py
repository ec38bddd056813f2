"""The thread-pool runner: exclusivity and order per channel under real concurrency, failures
(BaseExceptions too) reported, rebalances drained or handed back while revoked channels refuse
new work; throttled reception of a large backlog, keeping what the runner refuses.

Threads wait for each other on events, never on sleeps (a sleep inside a handler only makes work
overlap); a check that a thread is still blocked is `thread.join(timeout)` then `is_alive()`,
which a slow machine cannot make fail."""

from __future__ import annotations

import threading
import time
import tracemalloc
from collections.abc import Hashable, Iterator
from typing import Any

import pytest

from rebalancing.runtime import ChannelRevokedError, ChannelRunner, ThrottledReception


class Recorder:
    """A handler that checks, from what it sees, that no channel runs twice at once and that
    each channel's items arrive in order."""

    def __init__(self, pause: float = 0.0, gate: threading.Event | None = None) -> None:
        self.gate = gate  # when given, no item runs before it is set
        self.lock = threading.Lock()
        self.running: set[Hashable] = set()
        self.last: dict[Hashable, int] = {}
        self.violations: list[str] = []
        self.count = 0
        self.pause = pause

    def __call__(self, channel: Hashable, work: Any) -> None:
        if self.gate is not None:
            self.gate.wait()
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


class Stop(BaseException):
    """A stop signal that is not an Exception."""


@pytest.mark.parametrize("signal", [Stop("stop"), SystemExit(3)], ids=["custom", "SystemExit"])
def test_a_base_exception_from_the_handler_is_reported_unretried_and_the_worker_goes_on(
    signal: BaseException,
) -> None:
    seen: list[tuple[Hashable, int]] = []
    calls: dict[int, int] = {}

    def handler(channel: Hashable, work: int) -> None:
        calls[work] = calls.get(work, 0) + 1
        if channel == "q" and work == 1:
            raise signal
        seen.append((channel, work))

    runner = ChannelRunner(handler, workers=1, channels=["q", "r"], max_attempts=3)
    try:
        for work in range(3):
            runner.submit("q", work)
        assert runner.join(timeout=10), "the failed item's channel was ended"
        runner.submit("r", 9)
        assert runner.join(timeout=10), "the only worker still serves"
    finally:
        runner.close(drain=False, timeout=10)
    assert seen == [("q", 0), ("q", 2), ("r", 9)]
    assert calls[1] == 1, "a BaseException is not retried"
    assert [(failure.channel, failure.work, failure.attempts) for failure in runner.failures] == [
        ("q", 1, 1)
    ]
    assert runner.failures[0].error is signal


def test_a_rebalance_hands_back_the_pending_work_of_revoked_queues() -> None:
    started, release = threading.Event(), threading.Event()

    def handler(channel: Hashable, work: int) -> None:
        started.set()
        release.wait(10)

    runner = ChannelRunner(handler, workers=1, channels=["a", "b"])
    for work in range(5):
        runner.submit("a", work)
    assert started.wait(10), "the single worker is now blocked on a's first item"
    handed: dict[Hashable, list[Any]] = {}
    revoking = threading.Thread(
        target=lambda: handed.update(runner.update_assignment(["b", "c"], drain=False))
    )
    revoking.start()
    revoking.join(0.05)
    assert revoking.is_alive(), "waits for the item in progress"
    release.set()
    revoking.join(10)
    assert handed == {"a": [1, 2, 3, 4]}
    assert runner.channels() == {"b", "c"}
    with pytest.raises(ChannelRevokedError, match="channel 'a' is unknown"):
        runner.submit("a", 9)
    runner.close()


def _submit_until_refused(
    runner: ChannelRunner, channel: Hashable, accepted: list[int], seconds: float
) -> ChannelRevokedError | None:
    """Submit 1, 2, ... to `channel` (appending each accepted one) until the runner refuses one,
    giving up after `seconds`: used to catch the moment another thread starts a revocation."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        work = accepted[-1] + 1
        try:
            runner.submit(channel, work)
        except ChannelRevokedError as refusal:
            return refusal
        accepted.append(work)
    return None


def test_a_channel_being_revoked_refuses_new_work_at_once_and_carries_it_back() -> None:
    started, release = threading.Event(), threading.Event()
    done: list[int] = []

    def handler(channel: Hashable, work: int) -> None:
        started.set()
        release.wait(60)
        done.append(work)

    runner = ChannelRunner(handler, workers=1, channels=["a"])
    runner.submit("a", 0)
    assert started.wait(10)
    revoking = threading.Thread(target=runner.update_assignment, args=(["b"],), daemon=True)
    revoking.start()
    accepted = [0]
    refusal = _submit_until_refused(runner, "a", accepted, seconds=10)
    assert refusal is not None, "a channel being drained still accepted work"
    assert revoking.is_alive(), "refused while the drain still waits for item 0"
    assert (refusal.channel, refusal.work) == ("a", accepted[-1] + 1)
    assert "channel 'a' is being revoked" in str(refusal)
    release.set()
    revoking.join(10)
    assert not revoking.is_alive()
    assert done == accepted, "accepted work is drained, refused work never runs"
    with pytest.raises(ChannelRevokedError, match="channel 'a' is unknown") as late:
        runner.submit("a", "late")
    assert late.value.work == "late"
    runner.close()


def test_a_drain_ends_while_reception_feeds_the_revoked_channel_and_nothing_is_lost() -> None:
    first_item_started = threading.Event()
    handled: list[int] = []

    def handler(channel: Hashable, work: int) -> None:
        handled.append(work)  # one worker: no lock needed
        first_item_started.set()
        # Slower than polling: the reception refills the channel long before it runs dry (it
        # resumes at 190 pending, 0.38 s of work), so only a refusal can let the drain end.
        time.sleep(0.002)

    runner = ChannelRunner(handler, workers=1, channels=["a"])
    polled: list[int] = []

    def poll() -> tuple[Hashable, int] | None:
        """Endless messages for channel "a", until the runner has refused one."""
        if reception.stats.refused:
            return None
        polled.append(len(polled))
        return "a", polled[-1]

    reception = ThrottledReception(poll, runner, high_water=200, low_water=190)
    stop = threading.Event()
    receiving = threading.Thread(
        target=reception.run, kwargs={"stop": stop, "stop_when_empty": True}, daemon=True
    )
    receiving.start()
    assert first_item_started.wait(10)
    handed: dict[Hashable, list[Any]] = {}
    revoking = threading.Thread(
        target=lambda: handed.update(runner.update_assignment(["b"], drain=True)), daemon=True
    )
    revoking.start()
    revoking.join(10)
    drained = not revoking.is_alive()
    stop.set()  # ends the reception if it is still feeding (when the drain did not end)
    receiving.join(10)
    runner.close(drain=False, timeout=10)
    assert drained, "the drain of a channel that reception kept feeding never ended"
    assert handed == {"a": []}
    assert not receiving.is_alive(), "reception went on after the refusal"
    refused = reception.take_refused()
    assert refused == [("a", polled[-1])], "the refused message is kept for the broker"
    assert reception.refused == []
    assert reception.stats.refused == 1
    assert reception.stats.received == len(polled)
    assert handled == polled[:-1], "every accepted message was processed, in order"


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
    with pytest.raises(TypeError, match="not hashable"):
        runner.submit(["a"], 0)
    runner.close()


def _backlog(messages: int, channels: int) -> Iterator[tuple[int, int]]:
    for sequence in range(messages):
        yield sequence % channels, sequence


@pytest.mark.parametrize(
    ("messages", "peak_bound"),
    [
        # 0.2 MB traced at the peak; 4 MB if reception did not pause (everything pending)
        pytest.param(100_000, 1024 * 1024, id="100k"),
        pytest.param(1_000_000, 16 * 1024 * 1024, id="million", marks=pytest.mark.thorough),
    ],
)
def test_a_large_backlog_is_received_no_faster_than_it_is_processed(
    messages: int, peak_bound: int
) -> None:
    channels, high_water = 64, 2_000
    # The workers start only once the high-water mark is reached, so that reception must pause
    # at least once however fast they turn out to be on this machine.
    gate = threading.Event()
    recorder = Recorder(gate=gate)
    backlog = _backlog(messages, channels)
    tracemalloc.start()
    with ChannelRunner(recorder, workers=4, channels=range(channels)) as runner:

        def open_gate_at_the_mark() -> None:
            while runner.pending() < high_water:
                time.sleep(0.001)
            gate.set()

        opener = threading.Thread(target=open_gate_at_the_mark)
        opener.start()
        reception = ThrottledReception(lambda: next(backlog, None), runner, high_water)
        stats = reception.run(stop_when_empty=True)
        opener.join()
        runner.join(timeout=600)
        _, peak_bytes = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert stats.received == runner.processed == recorder.count == messages
    assert stats.refused == 0
    assert runner.peak_pending <= high_water
    assert stats.pauses > 0
    assert stats.paused_seconds > 0
    assert recorder.violations == []
    assert peak_bytes < peak_bound, f"peak traced memory {peak_bytes:,} bytes"


class BlockingHandler:
    """A handler that records (channel, work) when an item starts and then blocks until
    `release` is set: the test knows which item is in progress and what is still pending."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.handled: list[tuple[Hashable, Any]] = []  # one worker in these tests: no lock

    def __call__(self, channel: Hashable, work: Any) -> None:
        self.handled.append((channel, work))
        self.started.set()
        self.release.wait(60)


def test_close_without_drain_stops_after_the_current_item_and_returns_the_pending_work() -> None:
    handler = BlockingHandler()
    runner = ChannelRunner(handler, workers=1, channels=["a", "b"])
    for work in range(50):
        runner.submit("a" if work % 2 == 0 else "b", work)
    assert handler.started.wait(10), "the single worker is now blocked on a's first item"
    returned: dict[Hashable, list[Any]] = {}
    closing = threading.Thread(
        target=lambda: returned.update(runner.close(drain=False, timeout=60)), daemon=True
    )
    try:
        closing.start()
        assert runner.wait_until_pending_at_most(1, timeout=10), "pending work kept, not returned"
    finally:
        handler.release.set()
    closing.join(60)
    assert not closing.is_alive()
    assert handler.handled == [("a", 0)], "only the item in progress ran"
    assert returned == {"a": list(range(2, 50, 2)), "b": list(range(1, 50, 2))}
    assert runner.processed == 1
    assert runner.pending() == 0
    with pytest.raises(RuntimeError, match="closed"):
        runner.submit("a", 99)


def test_close_with_drain_runs_every_pending_item_and_returns_no_work() -> None:
    gate = threading.Event()
    recorder = Recorder(gate=gate)
    runner = ChannelRunner(recorder, workers=2, channels=["a", "b"])
    for work in range(20):
        runner.submit("a" if work % 2 == 0 else "b", work)
    gate.set()
    assert runner.close(drain=True, timeout=60) == {}
    assert recorder.count == runner.processed == 20
    assert recorder.violations == []


def _one_worker_busy_on_the_first_of(
    handler: BlockingHandler, channel: Hashable, items: int
) -> ChannelRunner:
    """A runner whose one worker is blocked in `handler` on `channel`'s item 0, with items
    1 .. items - 1 pending."""
    runner = ChannelRunner(handler, workers=1, channels=[channel])
    for work in range(items):
        runner.submit(channel, work)
    assert handler.started.wait(10)
    return runner


def test_a_later_assignment_keeps_a_channel_that_an_earlier_one_is_still_draining() -> None:
    handler = BlockingHandler()
    runner = _one_worker_busy_on_the_first_of(handler, "x", items=1)
    earlier: dict[Hashable, list[Any]] = {}
    draining = threading.Thread(
        target=lambda: earlier.update(runner.update_assignment(["y"], drain=True)), daemon=True
    )
    draining.start()
    accepted = [0]
    try:
        assert _submit_until_refused(runner, "x", accepted, seconds=10) is not None
        assert runner.update_assignment(["x", "y"]) == {}, "nothing to revoke in the later call"
        runner.submit("x", "after")  # served again at once
    finally:
        handler.release.set()
    draining.join(10)
    assert not draining.is_alive()
    assert earlier == {}, "x was kept in the end: the earlier call did not revoke it"
    assert runner.channels() == {"x", "y"}
    assert runner.join(timeout=10)
    assert handler.handled == [("x", work) for work in accepted] + [("x", "after")]
    runner.close()


def _revoke_in_thread(
    runner: ChannelRunner, assigned: list[str], results: dict[Hashable, list[Any]]
) -> threading.Thread:
    """Start update_assignment(assigned, drain=False) in a thread that fills `results`."""
    revoking = threading.Thread(
        target=lambda: results.update(runner.update_assignment(assigned, drain=False)),
        daemon=True,
    )
    revoking.start()
    return revoking


def test_a_later_assignment_keeps_a_channel_whose_work_an_earlier_one_withdrew_in_order() -> None:
    handler = BlockingHandler()
    runner = _one_worker_busy_on_the_first_of(handler, "x", items=4)
    earlier: dict[Hashable, list[Any]] = {}
    try:
        revoking = _revoke_in_thread(runner, ["y"], earlier)
        assert runner.wait_until_pending_at_most(1, timeout=10), "1, 2, 3 were withdrawn"
        assert runner.update_assignment(["x", "y"]) == {}
        runner.submit("x", 4)
    finally:
        handler.release.set()
    revoking.join(10)
    assert not revoking.is_alive()
    assert earlier == {}, "the withdrawn work went back to x, not to the earlier caller"
    assert runner.join(timeout=10)
    assert handler.handled == [("x", work) for work in range(5)], "withdrawn work first, in order"
    runner.close()


def test_of_three_overlapping_assignments_the_last_one_revokes_and_hands_back() -> None:
    handler = BlockingHandler()
    runner = _one_worker_busy_on_the_first_of(handler, "x", items=4)
    first: dict[Hashable, list[Any]] = {}
    last: dict[Hashable, list[Any]] = {}
    try:
        revoking_first = _revoke_in_thread(runner, ["y"], first)
        assert runner.wait_until_pending_at_most(1, timeout=10)
        assert runner.update_assignment(["x", "y"]) == {}
        assert runner.pending() == 4, "the withdrawn work is back in x"
        revoking_last = _revoke_in_thread(runner, ["y"], last)
        assert runner.wait_until_pending_at_most(1, timeout=10)
    finally:
        handler.release.set()
    revoking_first.join(10)
    revoking_last.join(10)
    assert not revoking_first.is_alive()
    assert not revoking_last.is_alive()
    assert first == {}
    assert last == {"x": [1, 2, 3]}
    assert runner.channels() == {"y"}
    assert handler.handled == [("x", 0)]
    runner.close()


class Interrupt(BaseException):
    """An interruption inside the runner, as a KeyboardInterrupt would be."""


class InterruptingChannel:
    """A channel id whose hash, once armed, raises Interrupt (once): the runner's next look-up
    of it is interrupted, wherever that is."""

    def __init__(self) -> None:
        self.armed = False

    def __hash__(self) -> int:
        if self.armed:
            self.armed = False
            raise Interrupt
        return 1

    def __repr__(self) -> str:
        return "x"


def test_an_interrupted_revocation_serves_its_channel_again_with_its_withdrawn_work_first() -> None:
    handler = BlockingHandler()
    x = InterruptingChannel()
    runner = _one_worker_busy_on_the_first_of(handler, x, items=4)

    def interrupt_the_waiting_revocation() -> None:
        # Returns only once the revocation waits: it holds the lock until then.
        if runner.wait_until_pending_at_most(1, timeout=10):
            x.armed = True
            runner.submit("y", "wake")  # wakes the revocation, which looks x up

    interrupter = threading.Thread(target=interrupt_the_waiting_revocation, daemon=True)
    try:
        interrupter.start()
        with pytest.raises(Interrupt):
            runner.update_assignment(["y"], drain=False)
        runner.submit(x, 4)
    finally:
        handler.release.set()
    interrupter.join(10)
    assert runner.join(timeout=10)
    assert [work for channel, work in handler.handled if channel is x] == list(range(5))
    assert runner.channels() == {x, "y"}
    runner.close()


def test_assignment_is_refused_once_the_runner_is_closed() -> None:
    runner = ChannelRunner(lambda channel, work: None, workers=1, channels=["a"])
    runner.close()
    with pytest.raises(RuntimeError, match="update_assignment: the runner is closed"):
        runner.update_assignment(["b"])
