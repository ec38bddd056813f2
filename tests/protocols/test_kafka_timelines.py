"""Worked timelines of Kafka's group protocols on small groups, with synced heartbeat phases
(nothing drawn) and Kafka 4.x's default timers: every number below is derived by hand in the
comments from the protocols' rules (rebalancing.protocols' module docstrings)."""

from __future__ import annotations

import pytest

from rebalancing.protocols import (
    ClassicSession,
    ClassicTimers,
    ConsumerSession,
    ConsumerTimers,
)
from rebalancing.protocols.kafka_consumer import MemberRecord, next_member_state
from rebalancing.strategies import rack_aware_range, sticky


def test_the_timers_default_to_kafka_4() -> None:
    classic, consumer = ClassicTimers(), ConsumerTimers()
    assert (classic.session_timeout_ms, classic.heartbeat_interval_ms) == (45_000, 3_000)
    assert classic.max_poll_interval_ms == 300_000
    assert classic.group_initial_rebalance_delay_ms == 3_000
    assert classic.metadata_max_age_ms == 300_000
    assert consumer.group_consumer_heartbeat_interval_ms == 5_000
    assert consumer.group_consumer_session_timeout_ms == 45_000
    assert consumer.rebalance_timeout == 300.0


def test_timers_refuse_what_the_protocol_cannot_run() -> None:
    with pytest.raises(ValueError, match="heartbeat_interval_ms"):
        ClassicTimers(heartbeat_interval_ms=45_000)
    with pytest.raises(TypeError, match="session_timeout_ms"):
        ClassicTimers(session_timeout_ms=4.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="group_consumer_heartbeat_interval_ms"):
        ConsumerTimers(group_consumer_heartbeat_interval_ms=0)


def classic(protocol: str) -> ClassicSession:
    return ClassicSession(sticky.assign, protocol=protocol, heartbeat_phases="synced")  # type: ignore[arg-type]


@pytest.mark.parametrize("protocol", ["eager", "cooperative"])
def test_a_cold_start_waits_the_initial_delay_twice_when_several_join(protocol: str) -> None:
    # a joins at 0 and prepares the rebalance with a 3 s delay; b joined meanwhile, so at 3 s
    # it is extended by 3 s; at 6 s nobody new: the join ends, 4 partitions unowned 6 s each
    run = classic(protocol).rebalance(range(4), ["a", "b"])
    assert run.owners == {"a": [0, 2], "b": [1, 3]}
    assert (run.seconds_to_balance, run.queue_seconds_unowned, run.rounds) == (6.0, 24.0, 1)
    alone = classic(protocol).rebalance(range(4), ["a"])  # no second member: one delay
    assert (alone.seconds_to_balance, alone.queue_seconds_unowned) == (3.0, 12.0)


def test_eager_join_waits_for_a_slow_member_with_everything_revoked() -> None:
    session = classic("eager")
    session.rebalance(range(4), ["a", "b"])  # ends at 6 s; heartbeats at 9, 12, ...
    run = session.change(range(4), ["a", "b", "c"], slow={"a": 10})
    # c joins at 6; b hears of it at 9 and revokes [1, 3]; a polls only at 16 and revokes
    # [0, 2] then; the barrier ends at 16: b's two partitions paused 7 s each
    assert run.owners == {"a": [0, 2], "b": [1], "c": [3]}
    assert run.seconds_to_balance == 10.0
    assert run.queue_seconds_paused == run.queue_seconds_unowned == 14.0
    assert (run.releases, run.rounds, run.queues_paused) == (4, 1, 4)
    assert session.now == 16.0


def test_cooperative_join_takes_two_rounds_and_pauses_only_what_moves() -> None:
    session = classic("cooperative")
    session.rebalance(range(4), ["a", "b"])
    run = session.change(range(4), ["a", "b", "c"], slow={"a": 10})
    # round 1 ends at 16 (the barrier waits for a); partition 3 is withheld from c and b
    # revokes it at 16 and rejoins; a and c hear at 19 (the heartbeat timer restarted at the
    # sync): round 2 hands partition 3 to c at 19, paused 3 s
    assert run.owners == {"a": [0, 2], "b": [1], "c": [3]}
    assert (run.seconds_to_balance, run.queue_seconds_paused, run.rounds) == (13.0, 3.0, 2)
    assert (run.releases, run.steps) == (1, 1)


@pytest.mark.parametrize("protocol", ["eager", "cooperative"])
def test_a_classic_crash_waits_for_the_session_timeout(protocol: str) -> None:
    session = classic(protocol)
    session.rebalance(range(4), ["a", "b"])  # ends at 6; b last heartbeats at 6
    run = session.change(range(4), ["a"], crashed=["b"])
    # b's session expires at 6 + 45 = 51; a hears at 54 and the sync gives it b's [1, 3]
    assert run.owners == {"a": [0, 1, 2, 3]}
    assert (run.seconds_to_balance, run.queue_seconds_unowned) == (48.0, 96.0)


@pytest.mark.parametrize("protocol", ["eager", "cooperative"])
def test_a_classic_graceful_leave_rebalances_at_the_next_heartbeat(protocol: str) -> None:
    session = classic(protocol)
    session.rebalance(range(4), ["a", "b"])
    run = session.rebalance(range(4), ["a"])  # b's LeaveGroup at 6; a hears at 9
    assert (run.seconds_to_balance, run.queue_seconds_unowned) == (3.0, 6.0)


@pytest.mark.parametrize("protocol", ["eager", "cooperative"])
def test_partitions_added_wait_for_the_leaders_metadata_refresh(protocol: str) -> None:
    session = classic(protocol)
    session.rebalance(range(4), ["a", "b"])
    run = session.rebalance(range(6), ["a", "b"])
    # synced: the leader a sees them a whole metadata.max.age (300 s) after the change, at
    # 306, and rejoins; b hears at 309 (its grid: 6 + 3k): two new partitions unowned 303 s
    assert run.seconds_to_balance == 303.0
    extra = 0.0 if protocol == "cooperative" else 2 * 3.0  # eager: a's two paused from 306
    assert run.queue_seconds_unowned == 2 * 303.0 + extra
    assert sorted(q for queues in run.owners.values() for q in queues) == list(range(6))


@pytest.mark.parametrize("protocol", ["eager", "cooperative"])
def test_a_static_restart_within_the_session_timeout_moves_nothing(protocol: str) -> None:
    session = ClassicSession(
        sticky.assign,
        protocol=protocol,
        static_membership=True,
        heartbeat_phases="synced",  # type: ignore[arg-type]
    )
    before = session.rebalance(range(4), ["a", "b"]).owners
    run = session.restart(["b"], 20.0)
    assert run.owners == before
    assert run.steps == run.releases == run.rounds == 0
    assert run.queue_seconds_unowned == 2 * 20.0  # b's partitions wait for it, unread
    dynamic = classic(protocol)
    dynamic.rebalance(range(4), ["a", "b"])
    assert dynamic.restart(["b"], 20.0).steps > 0  # a leave and a join: partitions move


def consumer() -> ConsumerSession:
    return ConsumerSession(sticky.assign, heartbeat_phases="synced")


def test_consumer_protocol_cold_start() -> None:
    session = consumer()
    run = session.rebalance(range(4), ["a", "b"])
    # a's join at 0 gets the target of {a}: all four, free, consumed at once; b joins at 0
    # (epoch 2) and waits for [2, 3] (UNRELEASED_PARTITIONS); a hears at its heartbeat at 5,
    # revokes them and acknowledges at once; b's heartbeat at 5, just after, gets them
    assert run.owners == {"a": [0, 1], "b": [2, 3]}
    assert (run.seconds_to_balance, run.queue_seconds_unowned, run.rounds) == (5.0, 0.0, 2)
    assert (run.releases, run.steps) == (2, 6)


def test_consumer_protocol_slow_member_delays_only_what_it_releases() -> None:
    session = consumer()
    session.rebalance(range(4), ["a", "b"])  # settles at 5
    run = session.change(range(4), ["a", "b", "c"], slow={"a": 10})
    # c joins at 5 and is given partition 3, b's; b revokes it at its heartbeat at 10 and c
    # gets it at its own at 10: slow a, which gives up nothing, holds nobody up
    assert run.owners == {"a": [0, 1], "b": [2], "c": [3]}
    assert (run.seconds_to_balance, run.queue_seconds_unowned) == (5.0, 0.0)
    slow_owner = consumer()
    slow_owner.rebalance(range(4), ["a", "b"])
    run = slow_owner.change(range(4), ["a", "b", "c"], slow={"b": 10})
    # b hears at 10 but its poll loop is busy until 15: it keeps consuming partition 3 till
    # then (never unowned), acknowledges at 15, and c's heartbeat at 15 takes it
    assert (run.seconds_to_balance, run.queue_seconds_unowned) == (10.0, 0.0)


def test_consumer_protocol_crash_waits_for_the_session_timeout() -> None:
    session = consumer()
    session.rebalance(range(4), ["a", "b"])  # b last heartbeats at 5
    run = session.change(range(4), ["a"], crashed=["b"])
    # b is timed out at 5 + 45 = 50 (after a's heartbeat at 50); a's heartbeat at 55 gets
    # [2, 3]
    assert run.owners == {"a": [0, 1, 2, 3]}
    assert (run.seconds_to_balance, run.queue_seconds_unowned) == (50.0, 100.0)


def test_consumer_protocol_graceful_leave_and_partitions_added() -> None:
    session = consumer()
    session.rebalance(range(4), ["a", "b"])
    run = session.rebalance(range(4), ["a"])  # b leaves at 5 (epoch -1); a's heartbeat at 10
    assert (run.seconds_to_balance, run.queue_seconds_unowned) == (5.0, 10.0)
    run = session.rebalance(range(6), ["a"])  # the broker knows; a's next heartbeat, at 15
    assert (run.seconds_to_balance, run.queue_seconds_unowned) == (5.0, 10.0)
    assert run.owners == {"a": list(range(6))}


def test_consumer_protocol_static_restart_moves_nothing() -> None:
    session = ConsumerSession(
        rack_aware_range.assign, static_membership=True, heartbeat_phases="synced"
    )
    before = session.rebalance(range(4), ["a", "b"]).owners
    run = session.restart(["a"], 30.0)
    assert run.owners == before
    assert run.steps == run.releases == 0
    assert run.queue_seconds_unowned == 2 * 30.0


def test_next_member_state_follows_the_current_assignment_builder() -> None:
    stable = MemberRecord("STABLE", 1, frozenset({0, 1}))
    owned = frozenset({0, 1})
    revoking = next_member_state(stable, 2, frozenset({0}), {0: "a", 1: "a"}, owned)
    assert revoking == MemberRecord("UNREVOKED_PARTITIONS", 1, frozenset({0}), frozenset({1}))
    still = next_member_state(revoking, 2, frozenset({0}), {0: "a", 1: "a"}, owned)
    assert still is revoking  # it still reports partition 1
    done = next_member_state(revoking, 2, frozenset({0}), {0: "a"}, frozenset({0}))
    assert done == MemberRecord("STABLE", 2, frozenset({0}))
    waiting = next_member_state(MemberRecord(), 2, frozenset({1, 2}), {1: "a"}, frozenset())
    assert waiting == MemberRecord("UNRELEASED_PARTITIONS", 2, frozenset({2}))
    got = next_member_state(waiting, 2, frozenset({1, 2}), {2: "b"}, frozenset({2}))
    assert got == MemberRecord("STABLE", 2, frozenset({1, 2}))


def test_consumer_protocol_static_leave_times_out_from_the_last_heartbeat() -> None:
    session = ConsumerSession(sticky.assign, static_membership=True, heartbeat_phases="synced")
    session.rebalance(range(4), ["a", "b"])  # settles at 5; b last heartbeats at 5
    session.restart(["a"], 2.0)  # a back at 7, heartbeating at 12, 17, ...
    run = session.rebalance(range(4), ["a"])
    # b's leave at 7 (epoch -2) does not restart its session timer: it is timed out at
    # 5 + 45 = 50, not 52, and a's heartbeat at 52 gets [2, 3], unowned 45 s each
    assert run.owners == {"a": [0, 1, 2, 3]}
    assert (run.seconds_to_balance, run.queue_seconds_unowned) == (45.0, 90.0)
