"""pulsar_failover.Session in seconds: Pulsar's failover delay on every hand-over, a crash
noticed when the broker's keep-alive closes the connection, new partitions subscribed at each
consumer's partition check; a worked timeline, and properties over random changes."""

from __future__ import annotations

import itertools
import math
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rebalancing.strategies import pulsar_failover
from rebalancing.strategies.pulsar_failover import (
    AUTO_UPDATE_PARTITIONS_INTERVAL_SECONDS,
    FAILOVER_DELAY_SECONDS,
    KEEP_ALIVE_INTERVAL_SECONDS,
    FailoverTimers,
    Session,
)
from rebalancing.strategies.super_stream import activate

DELAY = FAILOVER_DELAY_SECONDS


def times(run: Any) -> tuple[float, float, float, float]:
    return (
        run.seconds_to_balance,
        run.queue_seconds_unowned,
        run.queue_seconds_doubly_owned,
        run.queue_seconds_paused,
    )


def test_the_defaults_are_pulsars() -> None:
    assert (FAILOVER_DELAY_SECONDS, KEEP_ALIVE_INTERVAL_SECONDS) == (1.0, 30.0)
    assert AUTO_UPDATE_PARTITIONS_INTERVAL_SECONDS == 60.0
    assert FailoverTimers() == FailoverTimers(
        failover_delay_seconds=1.0,
        keep_alive_interval_seconds=30.0,
        auto_update_partitions_interval_seconds=60.0,
    )


def test_a_worked_timeline_of_three_consumers_and_six_partitions() -> None:
    """The session draws a crash's detection (1 to 2 keep-alive intervals), then each consumer
    already there's partition check (0 to 60 s), from its seed, in sorted order."""
    draws = random.Random(7)
    detected = KEEP_ALIVE_INTERVAL_SECONDS * (1 + draws.random())  # 39.7 s
    check_a, check_b = (
        AUTO_UPDATE_PARTITIONS_INTERVAL_SECONDS * (1 - draws.random()) for _ in "ab"
    )
    assert check_b < check_a  # 20.9 s and 50.9 s: b subscribes to new partitions first
    session = Session(seed=7)

    # the cold start: every partition is added, each first dispatched after the failover delay
    run = session.rebalance(range(6), ["a", "b", "c"])
    assert run.owners == {"a": [0, 3], "b": [1, 4], "c": [2, 5]}
    assert times(run) == (1.0, 6.0, 0.0, 0.0)
    assert session.timeline[0] == ((0.0, None, False), (1.0, "a", False))

    # b leaves gracefully: the broker removes it at once; 1, 2, 3 and 4 change hands, and 2 and
    # 3 are stopped from consumers that stay (paused), each unread for the delay
    run = session.apply_change(range(6), ["a", "c"], "leave")
    assert run.owners == {"a": [0, 2, 4], "c": [1, 3, 5]}
    assert times(run) == (1.0, 4.0, 0.0, 2.0)
    assert (run.releases, run.steps, run.queues_paused) == (2, 4, 2)
    assert session.timeline == {
        1: ((0.0, None, False), (1.0, "c", False)),
        2: ((0.0, None, True), (1.0, "a", False)),
        3: ((0.0, None, True), (1.0, "c", False)),
        4: ((0.0, None, False), (1.0, "a", False)),
    }

    # b joins again: its name's place, so four partitions are handed over, each after the delay
    run = session.apply_change(range(6), ["a", "b", "c"], "join")
    assert run.owners == {"a": [0, 3], "b": [1, 4], "c": [2, 5]}
    assert times(run) == (1.0, 4.0, 0.0, 4.0)
    assert session.timeline[1] == ((0.0, None, True), (1.0, "b", False))

    # c crashes: its partitions 2 and 5 go unread at once, but c stays their active consumer
    # until the keep-alive closes its connection; then everyone after the shift is handed over
    run = session.apply_change(range(6), ["a", "b"], "crash")
    assert run.owners == {"a": [0, 2, 4], "b": [1, 3, 5]}
    settled = detected + DELAY
    assert session.timeline == {
        2: ((0.0, None, False), (settled, "a", False)),
        3: ((detected, None, True), (settled, "b", False)),
        4: ((detected, None, True), (settled, "a", False)),
        5: ((0.0, None, False), (settled, "b", False)),
    }
    assert times(run) == pytest.approx((settled, 2 * settled + 2 * DELAY, 0.0, 2 * DELAY))
    assert (run.releases, run.steps, run.queues_paused) == (2, 4, 2)  # as before the clock

    # partitions 6 and 7 are added: a and b each subscribe at their partition check; b first,
    # so b gets both, and 6 (sorted index 6: a's in name order) moves to a once a subscribes
    run = session.rebalance(range(8), ["a", "b"])
    assert run.owners == {"a": [0, 2, 4, 6], "b": [1, 3, 5, 7]}
    assert session.timeline == {
        6: (
            (0.0, None, False),
            (check_b + DELAY, "b", False),
            (check_a, None, True),
            (check_a + DELAY, "a", False),
        ),
        7: ((0.0, None, False), (check_b + DELAY, "b", False)),
    }
    unowned = 2 * (check_b + DELAY) + DELAY
    assert times(run) == pytest.approx((check_a + DELAY, unowned, 0.0, DELAY))
    assert (run.releases, run.steps, run.queues_paused) == (0, 2, 0)  # new partitions

    # nothing changes: nothing costs
    assert times(session.rebalance(range(8), ["a", "b"])) == (0.0, 0.0, 0.0, 0.0)
    assert session.timeline == {}


def test_the_failover_delay_is_what_a_graceful_hand_over_costs() -> None:
    for delay in (0.0, 0.25, 5.0):
        session = Session(timers=FailoverTimers(failover_delay_seconds=delay))
        session.rebalance(range(10), ["a", "b"])
        run = session.rebalance(range(10), ["a", "b", "c"])  # c takes 2, 5, 8; 3, 4, 9 move
        assert (run.steps, run.releases) == (6, 6)
        assert times(run) == (delay, 6 * delay, 0.0, 6 * delay)


def test_a_crash_is_noticed_between_one_and_two_keep_alive_intervals() -> None:
    for interval in (10.0, 30.0):
        detections = []
        for seed in range(30):
            session = Session(seed, timers=FailoverTimers(keep_alive_interval_seconds=interval))
            session.rebalance(range(4), ["a", "b"])
            run = session.apply_change(range(4), ["a"], "crash")
            detections.append((run.seconds_to_balance or 0.0) - DELAY)
        assert all(interval <= seconds < 2 * interval for seconds in detections)
        assert len(set(detections)) == 30  # the phase is drawn per seed


def test_a_crash_given_its_detection_time_and_a_close_that_is_seen_at_once() -> None:
    crashed = Session(crash_detection_seconds=45.0)
    closed = Session(crash_detection_seconds=45.0)
    for session in (crashed, closed):
        session.rebalance(range(4), ["a", "b"])
    assert times(crashed.apply_change(range(4), ["a"], "crash")) == (46.0, 92.0, 0.0, 0.0)
    assert times(closed.apply_change(range(4), ["a"], "rolling_restart")) == (1.0, 2.0, 0.0, 0.0)


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"timers": {"failover_delay_seconds": 1}}, TypeError, "timers must be FailoverTimers"),
        ({"crash_detection_seconds": 0}, ValueError, "crash_detection_seconds must be finite"),
        ({"partition_check_seconds": "1"}, TypeError, "partition_check_seconds must be a"),
    ],
)
def test_bad_session_arguments_are_refused_by_name(
    arguments: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        Session(**arguments)


@pytest.mark.parametrize(
    ("timers", "error", "message"),
    [
        ({"failover_delay_seconds": -1}, ValueError, "failover_delay_seconds must be finite and 0"),
        ({"keep_alive_interval_seconds": 0}, ValueError, "keep_alive_interval_seconds must be"),
        ({"auto_update_partitions_interval_seconds": math.inf}, ValueError, "must be finite"),
        ({"keep_alive_interval_seconds": True}, TypeError, "must be a number of seconds"),
    ],
)
def test_bad_timers_are_refused_by_name(
    timers: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        FailoverTimers(**timers)


def test_apply_change_wants_a_kind_name() -> None:
    with pytest.raises(TypeError, match="kind must be a change kind's name"):
        Session().apply_change(range(2), ["a"], 3)  # type: ignore[arg-type]


# Properties over random changes.

KINDS = ("join", "leave", "crash", "rolling_restart", "queues")


@st.composite
def histories(draw: st.DrawFn) -> tuple[int, list[tuple[list[int], list[str], str]]]:
    """A seed and a few changes: each the group after it and its kind."""
    names = [f"c{number:02d}" for number in range(12)]
    consumers = draw(st.lists(st.sampled_from(names), min_size=1, max_size=6, unique=True))
    partitions = draw(st.integers(1, 20))
    changes = [(list(range(partitions)), consumers, "initial")]
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(KINDS))
        if kind == "join":
            outside = [name for name in names if name not in consumers]
            if outside:
                consumers = sorted([*consumers, draw(st.sampled_from(outside))])
        elif kind in ("leave", "crash", "rolling_restart") and len(consumers) > 1:
            gone = draw(st.lists(st.sampled_from(consumers), min_size=1, unique=True))
            consumers = [name for name in consumers if name not in gone] or consumers[:1]
        elif kind == "queues":
            partitions += draw(st.integers(1, 6))
        changes.append((list(range(partitions)), consumers, kind))
    return draw(st.integers(0, 2**32)), changes


def replay(seed: int, changes: list[tuple[list[int], list[str], str]]) -> list[Any]:
    session = Session(seed)
    return [session.apply_change(queues, consumers, kind) for queues, consumers, kind in changes]


@settings(max_examples=150)
@given(histories())
def test_at_quiescence_each_partition_is_dispatched_to_its_one_active_consumer(
    history: tuple[int, list[tuple[list[int], list[str], str]]],
) -> None:
    seed, changes = history
    session = Session(seed)
    reader: dict[Any, Any] = {}
    owner: dict[Any, Any] = {}
    for queues, consumers, kind in changes:
        run = session.apply_change(queues, consumers, kind)
        expected = pulsar_failover.assign(queues, consumers)
        assert run.owners == expected
        counted, owner = activate(expected, owner, expected.keys())  # the counts, unchanged
        assert (run.releases, run.steps, run.rounds, run.queues_paused) == (
            counted.releases,
            counted.steps,
            counted.rounds,
            counted.queues_paused,
        )
        for queue, changed in session.timeline.items():
            reader[queue] = changed[-1][1]
        assert reader == owner  # the last dispatched, every partition: its one active consumer
        assert run.queue_seconds_doubly_owned == 0.0


@settings(max_examples=150)
@given(histories())
def test_a_partition_is_never_dispatched_to_two_consumers_and_waits_the_delay_between(
    history: tuple[int, list[tuple[list[int], list[str], str]]],
) -> None:
    """Pulsar's dispatcher has one active consumer: a hand-over stops the old one before the
    new one is dispatched to, at least the failover delay later."""
    seed, changes = history
    session = Session(seed)
    for queues, consumers, kind in changes:
        run = session.apply_change(queues, consumers, kind)
        for changed in session.timeline.values():
            instants = [instant for instant, _, _ in changed]
            assert instants == sorted(instants)
            for (stopped, nobody, _), (started, reader, _) in itertools.pairwise(changed):
                if reader is not None:  # every start follows a stop, the delay before it
                    assert nobody is None
                    assert started - stopped >= DELAY - 1e-9  # a float sum rounds
        assert run.seconds_to_balance == max(
            (changed[-1][0] for changed in session.timeline.values()), default=0.0
        )


@settings(max_examples=150)
@given(histories())
def test_a_graceful_change_costs_the_delay_per_partition_handed_over(
    history: tuple[int, list[tuple[list[int], list[str], str]]],
) -> None:
    """Without a crash or partitions added to a group already there, every hand-over happens at
    t0: each partition whose active consumer changed is unread for the delay, paused when its
    consumer stays."""
    seed, changes = history
    session = Session(seed)
    before: list[str] = []
    for queues, consumers, kind in changes:
        added = kind == "queues" and bool(before)
        run = session.apply_change(queues, consumers, kind)
        if kind != "crash" and not added:
            assert times(run) == pytest.approx(
                (DELAY if run.steps else 0.0, run.steps * DELAY, 0.0, run.releases * DELAY)
            )
        before = consumers


@given(histories())
def test_the_same_seed_gives_the_same_seconds(
    history: tuple[int, list[tuple[list[int], list[str], str]]],
) -> None:
    assert replay(*history) == replay(*history)
