"""The channel scheduler against the Channeling Work spec: a state machine whose rules are the
spec's operations and whose invariants are the spec's (and a reference model of per-channel
FIFO order and of the order of ready channels)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable
from typing import Any

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from rebalancing.runtime.channels import ChannelScheduler

CHANNELS = st.integers(0, 5)


class SchedulerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.scheduler = ChannelScheduler([0, 1, 2])
        self.expected: dict[int, deque[Any]] = {0: deque(), 1: deque(), 2: deque()}
        self.started: set[int] = set()
        self.ready_order: list[int] = []  # the reference model of ready, head first
        self.next_work = 0

    @rule(channel=CHANNELS)
    def deliver(self, channel: int) -> None:
        if channel not in self.expected:
            with pytest.raises(ValueError, match="unknown channel"):
                self.scheduler.deliver(channel, "work")
            return
        self.scheduler.deliver(channel, self.next_work)
        dormant = channel not in self.started and not self.expected[channel]
        if dormant:
            self.ready_order.append(channel)
        self.expected[channel].append(self.next_work)
        self.next_work += 1

    @rule()
    def start_work(self) -> None:
        ready_before = list(self.scheduler.ready)
        started = self.scheduler.start_work()
        if not ready_before:
            assert started is None
            return
        assert started is not None
        channel, work = started
        assert channel == ready_before[0], "the head of ready is served first"
        assert channel not in self.started, "at most one item of a channel in progress"
        assert work == self.expected[channel].popleft(), "a channel's work never overtakes"
        self.started.add(channel)
        self.ready_order.pop(0)

    @precondition(lambda self: self.started)
    @rule(data=st.data())
    def end_work(self, data: st.DataObject) -> None:
        channel = data.draw(st.sampled_from(sorted(self.started)))
        self.scheduler.end_work(channel)
        self.started.discard(channel)
        if self.expected[channel]:
            assert list(self.scheduler.ready)[-1] == channel, "more work: to the tail of ready"
            self.ready_order.append(channel)
        else:
            assert channel in self.scheduler.dormant

    @rule(channel=CHANNELS)
    def end_work_of_a_channel_not_in_progress_is_refused(self, channel: int) -> None:
        if channel not in self.started:
            with pytest.raises(ValueError, match=r"not in progress|unknown channel"):
                self.scheduler.end_work(channel)

    @rule(channel=CHANNELS)
    def withdraw(self, channel: int) -> None:
        if channel in self.expected:
            assert self.scheduler.withdraw(channel) == list(self.expected[channel])
            self.expected[channel].clear()
            if channel in self.ready_order:
                self.ready_order.remove(channel)

    @rule()
    def withdraw_all(self) -> None:
        in_progress_with_work = sorted(c for c in self.started if self.expected[c])
        withdrawn = self.scheduler.withdraw_all()
        assert list(withdrawn)[: len(self.ready_order)] == self.ready_order, "ready's order first"
        assert sorted(list(withdrawn)[len(self.ready_order) :]) == in_progress_with_work
        assert withdrawn == {c: list(work) for c, work in self.expected.items() if work}
        for work in self.expected.values():
            work.clear()
        self.ready_order.clear()

    @rule(channel=CHANNELS)
    def add_channel(self, channel: int) -> None:
        if channel in self.expected:
            with pytest.raises(ValueError, match="already known"):
                self.scheduler.add_channel(channel)
            return
        self.scheduler.add_channel(channel)
        self.expected[channel] = deque()

    @rule(channel=CHANNELS)
    def remove_channel(self, channel: int) -> None:
        if channel not in self.expected:
            with pytest.raises(ValueError, match="unknown channel"):
                self.scheduler.remove_channel(channel)
        elif channel in self.started:
            with pytest.raises(ValueError, match="in progress"):
                self.scheduler.remove_channel(channel)
        else:
            assert self.scheduler.remove_channel(channel) == list(self.expected.pop(channel))
            if channel in self.ready_order:
                self.ready_order.remove(channel)

    @invariant()
    def the_specs_invariants_hold(self) -> None:
        assert self.scheduler.invariant_violations() == []
        assert self.scheduler.in_progress == self.started
        assert len(self.scheduler) == sum(len(work) for work in self.expected.values())

    @invariant()
    def ready_keeps_its_fifo_order_when_a_channel_leaves_it_from_anywhere(self) -> None:
        assert list(self.scheduler.ready) == self.ready_order


TestSchedulerMachine = SchedulerMachine.TestCase


def test_initial_state_has_every_channel_dormant() -> None:
    scheduler = ChannelScheduler(["a", "b"])
    assert scheduler.dormant == {"a", "b"}
    assert not scheduler.ready
    assert not scheduler.in_progress
    assert scheduler.start_work() is None


def test_ready_channels_are_served_in_fifo_order() -> None:
    scheduler = ChannelScheduler(["a", "b", "c"])
    for channel, work in (("b", 1), ("a", 2), ("b", 3), ("c", 4)):
        scheduler.deliver(channel, work)
    assert scheduler.start_work() == ("b", 1)
    assert scheduler.start_work() == ("a", 2)
    assert scheduler.start_work() == ("c", 4)
    assert scheduler.start_work() is None, "b's second item waits for its first"
    scheduler.end_work("b")
    assert scheduler.start_work() == ("b", 3)


def test_unhashable_channels_are_refused() -> None:
    with pytest.raises(TypeError, match="not hashable"):
        ChannelScheduler([["a"]])


class CountingChannel:
    """A channel id that counts the equality comparisons made with it: a scan of a sequence
    compares with every element it passes, a hash lookup (distinct hashes) with none."""

    def __init__(self, number: int, comparisons: list[int]) -> None:
        self.number = number
        self.comparisons = comparisons

    def __hash__(self) -> int:
        return hash(self.number)

    def __eq__(self, other: object) -> bool:
        self.comparisons[0] += 1
        return isinstance(other, CountingChannel) and other.number == self.number


def _comparisons_to_take_the_last_ready_channel_out(
    ready_channels: int, take_out: Callable[[ChannelScheduler, Hashable], list[Any]]
) -> int:
    """Equality comparisons made by `take_out` on the tail of `ready_channels` ready channels."""
    comparisons = [0]
    channels = [CountingChannel(number, comparisons) for number in range(ready_channels)]
    scheduler = ChannelScheduler(channels)
    for channel in channels:
        scheduler.deliver(channel, "work")
    comparisons[0] = 0
    assert take_out(scheduler, channels[-1]) == ["work"]
    assert scheduler.invariant_violations() == []
    return comparisons[0]


@pytest.mark.parametrize(
    "take_out",
    [ChannelScheduler.withdraw, ChannelScheduler.remove_channel],
    ids=lambda f: f.__name__,
)
def test_taking_a_channel_out_of_ready_does_not_scan_the_ready_channels(
    take_out: Callable[[ChannelScheduler, Hashable], list[Any]],
) -> None:
    few = _comparisons_to_take_the_last_ready_channel_out(10, take_out)
    many = _comparisons_to_take_the_last_ready_channel_out(10_000, take_out)
    assert few == many == 0, f"{few} comparisons among 10 ready channels, {many} among 10,000"
