"""rack_aware_sticky is Kafka's StickyAssignor for uniform subscriptions with KIP-881's rack
matching: `AbstractStickyAssignorTest.testRackAwareAssignmentWithUniformSubscription` as
StickyAssignorTest runs it, transcribed (apache/kafka commit 1eb7644349cb, October 2024; the
preferRackAwareLogic cases, a test-only switch, are left out), and its own promises: balance
first, then racks, then stickiness."""

from __future__ import annotations

from typing import Any

import pytest

from rebalancing.strategies import rack_aware_sticky, sticky
from tests.strategies.kafka_racks import cluster, kafka_case, null_racks, parsed, racks

assign = rack_aware_sticky.assign

TOPICS = {"t1": 6, "t2": 7, "t3": 2}
ROUND_ROBIN = [
    "t1-0, t1-3, t2-0, t2-3, t2-6",
    "t1-1, t1-4, t2-1, t2-4, t3-0",
    "t1-2, t1-5, t2-2, t2-5, t3-1",
]


@pytest.mark.parametrize(
    ("replication", "brokers", "consumers", "expected_mismatches"),
    [
        (3, null_racks(3), racks(3), -1),
        (3, racks(3), null_racks(3), -1),
        (3, racks(3), racks(3), 0),
        (3, racks(3), ["d", "e", "f"], -1),
        (3, racks(3), [None, "e", "f"], -1),
        (1, racks(3), racks(3), 0),  # rack-aligned where brokers hold a subset of partitions
        (2, racks(3), racks(3), 0),
        (3, racks(2), racks(3), 5),  # one consumer on a rack with no partitions
    ],
)
def test_kafka_uniform_subscription_from_nothing_and_from_its_own_plan(
    replication: int, brokers: list[Any], consumers: list[Any], expected_mismatches: int
) -> None:
    """Kafka's verifyUniformSubscription: the plan from no previous plan, then the same plan
    again when it is the previous one."""
    for owned in (None, ROUND_ROBIN):
        plan, mismatched = kafka_case(assign, TOPICS, replication, brokers, consumers, owned)
        assert plan == parsed(ROUND_ROBIN)
        if expected_mismatches >= 0:
            assert mismatched == expected_mismatches


def test_kafka_rack_awareness_is_improved_when_owned_partitions_are_misaligned() -> None:
    owned = [
        "t1-0, t1-1, t1-2, t1-3, t1-4",
        "t1-5, t2-0, t2-1, t2-2, t2-3",
        "t2-4, t2-5, t2-6, t3-0, t3-1",
    ]
    plan, mismatched = kafka_case(assign, TOPICS, 1, racks(3), racks(3), owned)
    assert plan == parsed(ROUND_ROBIN)
    assert mismatched == 0


def test_without_zones_it_keeps_previous_queues_within_the_quotas() -> None:
    queues = [f"q{number}" for number in range(6)]
    previous = {"a": ["q0", "q1", "q2"], "b": ["q3", "q4", "q5"]}
    assert assign(queues, ["a", "b", "c"], previous) == sticky.assign(
        queues, ["a", "b", "c"], previous
    )
    assert assign(queues, ["a", "b", "c"], previous) == {
        "a": ["q0", "q1"],
        "b": ["q3", "q4"],
        "c": ["q2", "q5"],
    }


def test_a_previous_queue_read_outside_its_zone_moves_to_a_consumer_of_its_zone() -> None:
    queues = ["q0", "q1", "q2", "q3"]
    zones = {"q0": ["a"], "q1": ["a"], "q2": ["b"], "q3": ["b"]}
    previous = {"x": ["q0", "q2"], "y": ["q1", "q3"]}
    plan = assign(
        queues, ["x", "y"], previous, consumer_zones={"x": "a", "y": "b"}, queue_zones=zones
    )
    assert plan == {"x": ["q0", "q1"], "y": ["q2", "q3"]}


def test_balance_comes_before_rack_matching() -> None:
    queues = ["q0", "q1", "q2", "q3"]
    zones = {"q0": ["a"], "q1": ["a"], "q2": ["a"], "q3": ["b"]}
    plan = assign(queues, ["x", "y"], None, consumer_zones={"x": "a", "y": "b"}, queue_zones=zones)
    assert sorted(map(len, plan.values())) == [2, 2]
    assert "q3" in plan["y"]


def test_like_kafka_a_partition_read_outside_its_racks_is_released_even_when_nothing_changed() -> (
    None
):
    # Kafka's assignOwnedPartitions keeps only owned partitions whose racks match the member's,
    # and assignRoundRobin gives the rest by count: partition 3 (replicas in z0 only, where no
    # member runs) sits with c2 after the first plan, and goes to c1 (no rack, at min quota,
    # first in order) the next time, with the same group; then the plan is its own fixed point.
    zones = {"c0": "z2", "c1": None, "c2": "z1"}
    replicas = {0: ["z0", "z1", "z2"], 1: ["z0"], 2: ["z0", "z1", "z2"], 3: ["z0"], 4: ["z2"]}
    consumers = ["c0", "c1", "c2"]
    first = assign(range(5), consumers, consumer_zones=zones, queue_zones=replicas)
    assert first == {"c0": [2, 4], "c1": [1], "c2": [0, 3]}
    again = assign(range(5), consumers, first, consumer_zones=zones, queue_zones=replicas)
    assert again == {"c0": [2, 4], "c1": [1, 3], "c2": [0]}
    assert assign(range(5), consumers, again, consumer_zones=zones, queue_zones=replicas) == again


MAX_QUOTA_OWNED = {  # consumer -> owned, as Kafka's test subscribes them (generation 1)
    "consumer1": [("topic1", 0), ("topic2", 0)],
    "consumer2": [("topic1", 1), ("topic2", 1)],
    "consumer3": [],
}


@pytest.mark.parametrize("strategy", [rack_aware_sticky.assign, sticky.assign])
@pytest.mark.parametrize(
    "broker_racks",
    [[None] * 3, [racks(3)[broker % 3] for broker in range(9)]],
    ids=["NO_BROKER_RACK", "NO_CONSUMER_RACK/BROKER_AND_CONSUMER_RACK"],
)
def test_kafka_max_quota_consumer_more_than_num_expected_max_capacity_members(
    strategy: Any, broker_racks: list[Any]
) -> None:
    """AbstractStickyAssignorTest.testMaxQuotaConsumerMoreThanNumExpectedMaxCapacityMembers
    (apache/kafka 1eb7644349cb): 2 + 2 partitions, 3 members, two of them owning two each, where
    one only may keep two. Kafka visits members in its HashMap's order and lets consumer2 keep
    two: consumer1 [t1-0], consumer2 [t1-1, t2-1], consumer3 [t2-0]. Here members are visited
    sorted, so consumer1 keeps two: a different plan, as balanced and with as few moves (one
    partition changes owner in both). Its subscriptions carry no rack (V2 and above), and with
    3 replicas on 3 racks every partition is on every rack: no rack matching in any RackConfig."""
    queues, queue_zones = cluster({"topic1": 2, "topic2": 2}, 3, broker_racks)
    facts: dict[str, Any] = {"consumer_zones": dict.fromkeys(MAX_QUOTA_OWNED)}
    facts["queue_zones"] = queue_zones
    if strategy is sticky.assign:
        facts = {}
    plan = strategy(queues, list(MAX_QUOTA_OWNED), MAX_QUOTA_OWNED, **facts)
    kafka = parsed(["", "topic1-0", "topic1-1, topic2-1", "topic2-0"])  # no consumer0
    del kafka["consumer0"]
    assert plan == {
        "consumer1": [("topic1", 0), ("topic2", 0)],
        "consumer2": [("topic1", 1)],
        "consumer3": [("topic2", 1)],
    }
    for either in (plan, kafka):
        counts = [len(owned) for owned in either.values()]
        assert max(counts) - min(counts) <= 1
        moved = [q for c, owned in either.items() for q in owned if q not in MAX_QUOTA_OWNED[c]]
        assert len(moved) == 1
    # visited in Kafka's order (consumer2's owned partitions given to the member sorted first),
    # the plan is Kafka's, names swapped back
    swap = {"consumer1": "consumer2", "consumer2": "consumer1", "consumer3": "consumer3"}
    swapped = {swap[consumer]: owned for consumer, owned in MAX_QUOTA_OWNED.items()}
    again = strategy(queues, list(swapped), swapped, **facts)
    assert {swap[consumer]: owned for consumer, owned in again.items()} == kafka
