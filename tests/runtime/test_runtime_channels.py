"""The channel scheduler against the Channeling Work spec: a state machine whose rules are the
spec's operations and whose invariants are the spec's (and a reference model of per-channel
FIFO order)."""

from __future__ import annotations

from collections import deque
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
        self.next_work = 0

    @rule(channel=CHANNELS)
    def deliver(self, channel: int) -> None:
        if channel not in self.expected:
            with pytest.raises(ValueError, match="unknown channel"):
                self.scheduler.deliver(channel, "work")
            return
        self.scheduler.deliver(channel, self.next_work)
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

    @precondition(lambda self: self.started)
    @rule(data=st.data())
    def end_work(self, data: st.DataObject) -> None:
        channel = data.draw(st.sampled_from(sorted(self.started)))
        self.scheduler.end_work(channel)
        self.started.discard(channel)
        if self.expected[channel]:
            assert self.scheduler.ready[-1] == channel, "more work: to the tail of ready"
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

    @invariant()
    def the_specs_invariants_hold(self) -> None:
        assert self.scheduler.invariant_violations() == []
        assert self.scheduler.in_progress == self.started
        assert len(self.scheduler) == sum(len(work) for work in self.expected.values())


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
