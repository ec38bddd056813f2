"""rack_aware_range is Kafka's RangeAssignor with KIP-881's rack matching: Kafka's own
`RangeAssignorTest` rack cases for uniform subscriptions, transcribed (apache/kafka commit
1eb7644349cb, October 2024; the cases with preferRackAwareLogic, a test-only switch, and with
non-equal subscriptions, which the adapter plans topic by topic, are left out), and its own
promises: balance per topic first, zones ignored where they cannot matter."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rebalancing.placement import ZONE_INPUTS
from rebalancing.strategies import STRATEGIES, rack_aware_range
from rebalancing.testing import (
    BrokenPromiseError,
    Case,
    placement_checks,
    zone_matching,
    zone_matching_per_topic,
)
from tests.strategies.kafka_racks import kafka_case, null_racks, parsed, racks

assign = rack_aware_range.assign

UNIFORM = {"t1": 6, "t2": 7, "t3": 2}
UNIFORM_PLAIN = [
    "t1-0, t1-1, t2-0, t2-1, t2-2, t3-0",
    "t1-2, t1-3, t2-3, t2-4, t3-1",
    "t1-4, t1-5, t2-5, t2-6",
]


# RangeAssignorTest.verifyNonRackAwareAssignment:
# (replication, broker racks, consumer racks, mismatches)
PLAIN_COMBINATIONS: list[tuple[int, list[Any], list[Any], int]] = [
    (3, null_racks(3), racks(3), -1),
    (3, racks(3), null_racks(3), -1),
    (3, racks(3), racks(3), 0),
    (4, racks(4), racks(3), 0),
    (3, racks(3), ["d", "e", "f"], -1),
    (3, racks(3), [None, "e", "f"], -1),
]


@pytest.mark.parametrize(
    ("replication", "brokers", "consumers", "expected_mismatches"), PLAIN_COMBINATIONS
)
def test_kafka_uniform_subscription_where_rack_matching_is_not_used(
    replication: int, brokers: list[Any], consumers: list[Any], expected_mismatches: int
) -> None:
    plan, mismatched = kafka_case(assign, UNIFORM, replication, brokers, consumers)
    assert plan == parsed(UNIFORM_PLAIN)
    if expected_mismatches >= 0:
        assert mismatched == expected_mismatches


@pytest.mark.parametrize(
    ("replication", "brokers", "expected", "expected_mismatches"),
    [
        (
            1,
            racks(3),
            [
                "t1-0, t1-3, t2-0, t2-3, t2-6",
                "t1-1, t1-4, t2-1, t2-4, t3-0",
                "t1-2, t1-5, t2-2, t2-5, t3-1",
            ],
            0,
        ),
        (
            2,
            racks(3),
            [
                "t1-0, t1-2, t2-0, t2-2, t2-3, t3-1",
                "t1-1, t1-3, t2-1, t2-4, t3-0",
                "t1-4, t1-5, t2-5, t2-6",
            ],
            1,
        ),
        (3, racks(2), UNIFORM_PLAIN, 4),  # one consumer on a rack with no partitions
    ],
)
def test_kafka_rack_aware_assignment_with_uniform_subscription(
    replication: int, brokers: list[Any], expected: list[str], expected_mismatches: int
) -> None:
    plan, mismatched = kafka_case(assign, UNIFORM, replication, brokers, racks(3))
    assert plan == parsed(expected)
    assert mismatched == expected_mismatches


@pytest.mark.parametrize(("replication", "expected_mismatches"), [(1, 10), (2, 5)])
def test_kafka_co_partitioning_is_prioritised_over_rack_alignment(
    replication: int, expected_mismatches: int
) -> None:
    topics = {"t1": 5, "t2": 5, "t3": 5}
    expected = [
        "t1-0, t1-1, t2-0, t2-1, t3-0, t3-1",
        "t1-2, t1-3, t2-2, t2-3, t3-2, t3-3",
        "t1-4, t2-4, t3-4",
    ]
    plan, mismatched = kafka_case(assign, topics, replication, racks(3), racks(3))
    assert plan == parsed(expected)
    assert mismatched == expected_mismatches
    plan, mismatched = kafka_case(assign, topics, 3, racks(2), racks(3))
    assert plan == parsed(expected)
    assert mismatched == 3


def test_kafka_rack_aware_assignment_with_co_partitioning() -> None:
    topics = {"t1": 6, "t2": 6, "t3": 2, "t4": 2}
    consumer_racks: list[Any] = ["a", "b", "b", "a"]
    plain = [
        "t1-0, t1-1, t2-0, t2-1, t3-0, t4-0",
        "t1-2, t1-3, t2-2, t2-3, t3-1, t4-1",
        "t1-4, t2-4",
        "t1-5, t2-5",
    ]
    for replication, expected_mismatches in ((3, -1), (2, 0)):
        plan, mismatched = kafka_case(assign, topics, replication, racks(2), consumer_racks)
        assert plan == parsed(plain)
        if expected_mismatches >= 0:
            assert mismatched == expected_mismatches
    plan, mismatched = kafka_case(assign, topics, 1, racks(2), consumer_racks)
    assert plan == parsed(
        [
            "t1-0, t1-2, t2-0, t2-2, t3-0, t4-0",
            "t1-1, t1-3, t2-1, t2-3, t3-1, t4-1",
            "t1-5, t2-5",
            "t1-4, t2-4",
        ]
    )
    assert mismatched == 0
    plan, mismatched = kafka_case(assign, topics, 1, racks(3), consumer_racks)
    assert plan == parsed(
        [
            "t1-0, t1-3, t2-0, t2-3, t3-0, t4-0",
            "t1-1, t1-4, t2-1, t2-4, t3-1, t4-1",
            "t1-2, t2-2",
            "t1-5, t2-5",
        ]
    )
    assert mismatched == 6


def test_kafka_co_partitioned_assignment_with_same_subscription_and_no_broker_racks() -> None:
    topics = {"t1": 6, "t2": 6, "t3": 2, "t4": 2, "t5": 4, "t6": 4}
    plain = [
        "t1-0, t1-1, t2-0, t2-1, t3-0, t4-0, t5-0, t5-1, t6-0, t6-1",
        "t1-2, t1-3, t2-2, t2-3, t3-1, t4-1, t5-2, t6-2",
        "t1-4, t1-5, t2-4, t2-5, t5-3, t6-3",
    ]
    plan, _ = kafka_case(assign, topics, 3, null_racks(3), racks(3))
    assert plan == parsed(plain)


def test_kafka_range_example_of_the_class_javadoc() -> None:
    queues = [(topic, partition) for topic in ("t0", "t1") for partition in range(3)]
    assert assign(queues, ["C0", "C1"]) == {
        "C0": [("t0", 0), ("t0", 1), ("t1", 0), ("t1", 1)],
        "C1": [("t0", 2), ("t1", 2)],
    }


def test_ids_that_are_not_tuples_form_one_topic_like_averagely() -> None:
    from rebalancing.strategies import averagely

    queues = [f"q{number:02}" for number in range(11)]
    assert assign(queues, ["a", "b", "c"]) == averagely.assign(queues, ["a", "b", "c"])


@given(
    st.dictionaries(st.sampled_from(["t1", "t2", "t3"]), st.integers(0, 9), min_size=1),
    st.lists(st.sampled_from(["a", "b", "c", None]), min_size=1, max_size=5),
    st.integers(0, 2**32),
)
def test_each_topic_stays_balanced_whatever_the_zones(
    topics: dict[str, int], consumer_racks: list[Any], seed: int
) -> None:
    import random

    rng = random.Random(seed)
    queues = [(topic, partition) for topic, count in topics.items() for partition in range(count)]
    queue_zones = {queue: rng.sample(["a", "b", "c"], rng.randint(0, 2)) for queue in queues}
    consumer_zones = {f"c{index}": rack for index, rack in enumerate(consumer_racks)}
    plan = assign(
        queues, list(consumer_zones), consumer_zones=consumer_zones, queue_zones=queue_zones
    )
    for topic in topics:
        counts = [sum(1 for queue in owned if queue[0] == topic) for owned in plan.values()]
        assert max(counts) - min(counts) <= 1, (topic, plan)


def test_zones_are_matched_within_each_topic_s_range_not_across_topics() -> None:
    """Issue 43: two zones, each with one consumer and two partitions, but each topic in one
    zone. Kafka's range rule balances every topic over its members first, so each consumer
    takes one partition of each topic and two are read cross-zone: the promise is
    `zone_matching_per_topic` (this group does not fit topic by topic), not `zone_matching`
    (it fits as a whole)."""
    queues = [("A", 0), ("A", 1), ("B", 0), ("B", 1)]
    consumer_zones = {"c1": "za", "c2": "zb"}
    queue_zones = {("A", 0): ["za"], ("A", 1): ["za"], ("B", 0): ["zb"], ("B", 1): ["zb"]}
    facts = {"consumer_zones": consumer_zones, "queue_zones": queue_zones}
    plan = assign(queues, ["c1", "c2"], **facts)
    assert plan == {"c1": [("A", 0), ("B", 0)], "c2": [("A", 1), ("B", 1)]}
    case = Case(queues, ["c1", "c2"], None, consumer_zones, queue_zones)
    with pytest.raises(BrokenPromiseError, match="queues read outside their zone"):
        zone_matching(assign, case)
    zone_matching_per_topic(assign, case)  # not a group it speaks of
    assert STRATEGIES["rack_aware_range"].promises == {"zone_matching_per_topic"}
    with pytest.raises(BrokenPromiseError, match=r"^promise_zone_matching:"):
        placement_checks(ZONE_INPUTS, {"zone_matching"})["promise_zone_matching"](assign)
    placement_checks(ZONE_INPUTS, {"zone_matching_per_topic"})["promise_zone_matching_per_topic"](
        assign
    )
