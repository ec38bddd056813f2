"""Kafka's protocols in seconds (rebalancing.evaluation.scoring.kafka_time): an event's cost on
small groups checked against timelines worked by hand in the comments, with synced heartbeat
phases (nothing drawn) and Kafka 4.x's default timers (classic: heartbeats every 3 s, session
timeout 45 s, metadata refreshed every 300 s), determinism from the seed, and bad arguments
named in the errors."""

from __future__ import annotations

import pytest

from rebalancing.evaluation.scoring import kafka_time

# Every classic group below settles its cold start the same way: the first join at 0 s waits
# the 3 s initial delay, the other member joined meanwhile so it waits 3 s more, and the sync at
# 6 s restarts every member's heartbeat timer there: heartbeats at 9, 12, 15, ...; 2 members x
# 4 partitions, 2 partitions each.


def synced(setup: str, event: str) -> kafka_time.KafkaEventCost:
    return kafka_time.measure(setup, event, 2, 4, seed=3, heartbeat_phases="synced")


def test_an_eager_crash_waits_for_the_session_timeout_then_one_sync() -> None:
    # one member crashes at 6; its last heartbeat was at 6, so it is timed out at 51; the
    # survivor hears of the rebalance at its next heartbeat (54), rejoins revoking its 2
    # partitions, and the sync at 54 hands it all 4: balanced 48 s after the crash, the
    # crashed member's 2 partitions unread 48 s each, nothing paused (revoked and handed back
    # at one instant)
    cost = synced("eager_range", "crash")
    assert cost.seconds_to_balance == 48.0
    assert (cost.queue_seconds_unowned, cost.queue_seconds_paused) == (96.0, 0.0)
    assert (cost.rounds, cost.releases, cost.heartbeats, cost.changes) == (1, 2, None, 1)


def test_a_cooperative_join_pauses_only_the_partition_that_moves_for_one_heartbeat() -> None:
    # the newcomer joins at 6; the two members hear at 9: round 1 ends at 9 and withholds the
    # one partition the plan moves (2, 1, 1); its owner revokes it at 9 and rejoins at once,
    # the others hear at 12 (timers restarted at 9): round 2 hands it over at 12; paused 3 s
    cost = synced("cooperative_sticky", "join")
    assert cost.seconds_to_balance == 6.0
    assert (cost.queue_seconds_unowned, cost.queue_seconds_paused) == (3.0, 3.0)
    assert (cost.rounds, cost.releases, cost.queues_paused) == (2, 1, 1)


def test_an_eager_join_waits_for_the_slow_member_with_the_others_paused() -> None:
    # the newcomer joins at 6; the punctual member hears at 9 and revokes its 2 partitions;
    # the slow one polls at 36 (30 s late), rejoins revoking its 2, and the sync at 36 hands
    # all 4 out: balanced 30 s after the join, the punctual member's 2 paused 27 s each
    cost = synced("eager_range", "slow_join")
    assert cost.seconds_to_balance == 30.0
    assert (cost.queue_seconds_unowned, cost.queue_seconds_paused) == (54.0, 54.0)
    assert (cost.rounds, cost.releases) == (1, 4)


def test_partitions_added_wait_for_the_leaders_metadata_refresh() -> None:
    # 1 partition added at 6 (a quarter of 4); the leader sees it at its refresh, 300 s later,
    # and rejoins at 306 revoking its 2; the other hears at 309 and revokes its 2; the sync at
    # 309 hands out the 5: the new partition unowned 303 s, the leader's 2 paused 3 s each
    cost = synced("eager_range", "partitions_added")
    assert cost.seconds_to_balance == 303.0
    assert (cost.queue_seconds_unowned, cost.queue_seconds_paused) == (309.0, 6.0)
    assert (cost.partitions, cost.rounds, cost.releases) == (4, 1, 4)


def test_a_dynamic_rolling_restart_adds_up_its_batches_back_to_back() -> None:
    # batches of one (a quarter of 2, rounded up). Batch 1 at 6: X leaves (LeaveGroup), Y hears
    # at 9 and revokes its 2, the sync at 9 gives Y all 4 (X's 2 unowned 3 s); X is back at 16,
    # Y hears at 18 (timer restarted at 9) and revokes its 4, the sync at 18 splits them again:
    # 12 s. Batch 2 from 18, the same with the roles swapped: Y leaves, X syncs at 21, Y back at
    # 28, synced at 30: 12 s. The event: 24 s, 12 partition-seconds unowned, none paused,
    # releases 2 + 4 + 2 + 4, four rounds
    cost = synced("eager_range", "rolling_restart")
    assert cost.seconds_to_balance == 24.0
    assert (cost.queue_seconds_unowned, cost.queue_seconds_paused) == (12.0, 0.0)
    assert (cost.rounds, cost.releases, cost.changes) == (4, 12, 2)


@pytest.mark.parametrize("setup", ["consumer_uniform", "cooperative_sticky"])
def test_a_static_rolling_restart_moves_nothing_and_waits_out_each_batch(setup: str) -> None:
    # each of the two batches is one member away 10 s, its 2 partitions waiting for it and
    # nothing moving; the second batch starts when the first is back: 20 s, 2 x 2 x 10
    # partition-seconds unowned; under the consumer protocol each restarted member sends its
    # leave (epoch -2), its rejoin and its acknowledgement: 6 heartbeats
    cost = synced(setup, "static_rolling_restart")
    assert cost.seconds_to_balance == 20.0
    assert (cost.queue_seconds_unowned, cost.queue_seconds_paused) == (40.0, 0.0)
    assert (cost.rounds, cost.releases, cost.changes) == (0, 0, 2)
    assert cost.heartbeats == (6 if setup == "consumer_uniform" else None)


def test_the_plan_draws_names_crashes_and_batches_from_the_seed() -> None:
    plan = kafka_time.event_plan("rolling_restart", 9, 30, seed=5)
    assert [len(batch) for batch in plan.batches] == [3, 3, 3]
    assert sorted(member for batch in plan.batches for member in batch) == list(plan.members)
    assert kafka_time.event_plan("rolling_restart", 9, 30, seed=5) == plan
    added = kafka_time.event_plan("partitions_added", 4, 10, seed=5)
    assert (added.partitions, added.partitions_after) == (10, 13)
    joined = kafka_time.event_plan("join", 4, 10, seed=5)
    assert joined.newcomer is not None
    assert joined.newcomer not in joined.members
    assert joined.slow is None
    slow = kafka_time.event_plan("slow_join", 4, 10, seed=5)
    assert slow.newcomer == joined.newcomer
    assert slow.slow in slow.members


def test_runs_are_deterministic_from_the_seed() -> None:
    first = kafka_time.measure_all(sizes=((3, 12),), seeds=2, events=("crash", "join"))
    assert kafka_time.measure_all(sizes=((3, 12),), seeds=2, events=("crash", "join")) == first
    scores = {
        seed: [
            (cost.seconds_to_balance, cost.queue_seconds_unowned)
            for cost in first
            if cost.seed == seed
        ]
        for seed in (0, 1)
    }
    assert scores[0] != scores[1], "the heartbeat phases and the crashed member are drawn"


def test_summaries_and_tables_show_each_setup_and_only_the_counted_scores() -> None:
    costs = kafka_time.measure_all(sizes=((2, 10), (4, 20)), seeds=3, events=("join",))
    summaries = kafka_time.summarise(costs)
    assert {(s.protocol, s.consumers, s.runs) for s in summaries} == {
        (setup, size, 3) for setup in kafka_time.PROTOCOLS for size in (2, 4)
    }
    tables = kafka_time.markdown_tables(summaries)
    assert "| 2 x 10 | 4 x 20 |" in tables
    heartbeats = tables.split("heartbeats (consumer protocol)")[1]
    assert "`consumer_uniform`" in heartbeats
    assert "`eager_range`" not in heartbeats


@pytest.mark.parametrize(
    ("call", "culprit"),
    [
        (lambda: kafka_time.measure("lazy_range", "join", 2, 4, 0), "lazy_range"),
        (lambda: kafka_time.measure("eager_range", "deploy", 2, 4, 0), "deploy"),
        (lambda: kafka_time.measure("eager_range", "join", 0, 4, 0), "members"),
        (lambda: kafka_time.measure("eager_range", "join", 2, -1, 0), "partitions"),
        (lambda: kafka_time.measure_all(seeds=0), "seeds"),
        (lambda: kafka_time.measure_all(sizes=(2,), seeds=1), "group size"),  # type: ignore[arg-type]
        (lambda: kafka_time.parse_sizes("10x100,ten"), "'ten'"),
        (lambda: kafka_time.figure([], "moves"), "moves"),
        (lambda: kafka_time.figure([], "heartbeats"), "summaries is empty"),
    ],
)
def test_bad_arguments_are_named(call: object, culprit: str) -> None:
    with pytest.raises(ValueError, match=culprit):
        call()  # type: ignore[operator]
