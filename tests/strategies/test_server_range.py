"""server_range is Kafka's server-side RangeAssignor as rewritten by KAFKA-16944 (not sticky):
every case of Kafka's `RangeAssignorTest` (apache/kafka commit 1eb7644349cb, October 2024),
transcribed (the cases with differing subscriptions through `assign_subscribed`), and
hypothesis properties for what they assert: per-topic ranges, balance per topic,
co-partitioning, and that the current assignment is not read. Kafka's range plan reads no hash
order (members are sorted), so every case is exact."""

from __future__ import annotations

import pytest
from hypothesis import assume, given

from rebalancing.strategies import STRATEGIES, rack_aware_range, server_range
from tests.strategies.kafka_groups import Group, groups, partitions, plan_of

assign = server_range.assign
assign_subscribed = server_range.assign_subscribed


def test_one_member_no_topic() -> None:
    # testOneMemberNoTopic: A subscribes to nothing; topic1's partitions stay unassigned
    assert assign_subscribed(partitions({"topic1": 3}), {"A": []}) == {"A": []}


def test_one_member_subscribed_to_non_existent_topic() -> None:
    # testOneMemberSubscribedToNonExistentTopic: Kafka throws PartitionAssignorException
    with pytest.raises(ValueError, match="'topic2'"):
        assign_subscribed(partitions({"topic1": 3}), {"A": ["topic2"]})


def test_first_assignment_two_members_two_topics_same_subscriptions() -> None:
    # testFirstAssignmentTwoMembersTwoTopicsSameSubscriptions
    plan = assign(partitions({"topic1": 3, "topic3": 2}), ["A", "B"])
    assert plan == plan_of(A={"topic1": [0, 1], "topic3": [0]}, B={"topic1": [2], "topic3": [1]})


def test_first_assignment_three_members_three_topics_different_subscriptions() -> None:
    # testFirstAssignmentThreeMembersThreeTopicsDifferentSubscriptions
    queues = partitions({"topic1": 3, "topic2": 3, "topic3": 2})
    subscriptions = {"A": ["topic1", "topic2"], "B": ["topic3"], "C": ["topic2", "topic3"]}
    assert assign_subscribed(queues, subscriptions) == plan_of(
        A={"topic1": [0, 1, 2], "topic2": [0, 1]},
        B={"topic3": [0]},
        C={"topic2": [2], "topic3": [1]},
    )


def test_first_assignment_num_members_greater_than_num_partitions() -> None:
    # testFirstAssignmentNumMembersGreaterThanNumPartitions
    plan = assign(partitions({"topic1": 3, "topic3": 2}), ["A", "B", "C"])
    assert plan == plan_of(
        A={"topic1": [0], "topic3": [0]}, B={"topic1": [1], "topic3": [1]}, C={"topic1": [2]}
    )


def test_static_membership() -> None:
    # testStaticMembership: a static member that rejoins under a new member id keeps its
    # partitions. Here a static member's id is its instance id, so the rejoined member is the
    # same consumer and the plan cannot change
    queues = partitions({"topic1": 3})
    members = [(0, "instanceA"), (0, "instanceB")]
    initial = assign(queues, members)
    assert assign(queues, members, initial) == initial
    assert initial == {
        (0, "instanceA"): [("topic1", 0), ("topic1", 1)],
        (0, "instanceB"): [("topic1", 2)],
    }


def test_mixed_static_membership() -> None:
    # testMixedStaticMembership: static members (instance ids A, C) sort ahead of the dynamic
    # B, by instance id, and keep their partitions when A rejoins. Kafka's test asserts that
    # nothing changes; the plan itself follows from its sort: A, C, then B
    queues = partitions({"topic1": 5})
    members = [(0, "instanceA"), (0, "instanceC"), (1, "B")]
    initial = assign(queues, members)
    assert initial == {
        (0, "instanceA"): [("topic1", 0), ("topic1", 1)],
        (0, "instanceC"): [("topic1", 2), ("topic1", 3)],
        (1, "B"): [("topic1", 4)],
    }
    assert assign(queues, members, initial) == initial


def test_reassignment_num_members_greater_than_num_partitions_when_one_member_added() -> None:
    # testReassignmentNumMembersGreaterThanNumPartitionsWhenOneMemberAdded
    previous = plan_of(A={"topic1": [0], "topic2": [0]}, B={"topic1": [1], "topic2": [1]})
    plan = assign(partitions({"topic1": 2, "topic2": 2}), ["A", "B", "C"], previous)
    assert plan == plan_of(A={"topic1": [0], "topic2": [0]}, B={"topic1": [1], "topic2": [1]}, C={})


def test_reassignment_when_one_partition_added_for_two_members_two_topics() -> None:
    # testReassignmentWhenOnePartitionAddedForTwoMembersTwoTopics: 3 -> 4 partitions each
    previous = plan_of(A={"topic1": [0, 1], "topic2": [0, 1]}, B={"topic1": [2], "topic2": [2]})
    plan = assign(partitions({"topic1": 4, "topic2": 4}), ["A", "B"], previous)
    assert plan == plan_of(
        A={"topic1": [0, 1], "topic2": [0, 1]}, B={"topic1": [2, 3], "topic2": [2, 3]}
    )


def test_reassignment_when_one_member_added_after_initial_assignment() -> None:
    # testReassignmentWhenOneMemberAddedAfterInitialAssignmentWithTwoMembersTwoTopics
    previous = plan_of(A={"topic1": [0, 1], "topic2": [0, 1]}, B={"topic1": [2], "topic2": [2]})
    plan = assign(partitions({"topic1": 3, "topic2": 3}), ["A", "B", "C"], previous)
    assert plan == plan_of(
        A={"topic1": [0], "topic2": [0]},
        B={"topic1": [1], "topic2": [1]},
        C={"topic1": [2], "topic2": [2]},
    )


def test_reassignment_when_one_member_and_one_partition_added() -> None:
    # testReassignmentWhenOneMemberAddedAndOnePartition
    # AfterInitialAssignmentWithTwoMembersTwoTopics (one name): C subscribes to topic1 only,
    # which grew from 3 to 4 partitions
    previous = plan_of(A={"topic1": [0, 1], "topic2": [0, 1]}, B={"topic1": [2], "topic2": [2]})
    subscriptions = {"A": ["topic1", "topic2"], "B": ["topic1", "topic2"], "C": ["topic1"]}
    plan = assign_subscribed(partitions({"topic1": 4, "topic2": 3}), subscriptions, previous)
    assert plan == plan_of(
        A={"topic1": [0, 1], "topic2": [0, 1]},
        B={"topic1": [2], "topic2": [2]},
        C={"topic1": [3]},
    )


def test_reassignment_when_one_member_removed_after_initial_assignment() -> None:
    # testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithTwoMembersTwoTopics
    previous = plan_of(A={"topic1": [0, 1], "topic2": [0, 1]}, B={"topic1": [2], "topic2": [2]})
    plan = assign(partitions({"topic1": 3, "topic2": 3}), ["B"], previous)
    assert plan == plan_of(B={"topic1": [0, 1, 2], "topic2": [0, 1, 2]})


def test_reassignment_when_multiple_subscriptions_removed_after_initial_assignment() -> None:
    # testReassignmentWhenMultipleSubscriptionsRemoved
    # AfterInitialAssignmentWithThreeMembersTwoTopics (one name)
    previous = plan_of(
        A={"topic1": [0, 1, 2], "topic2": [0]},
        B={"topic2": [1]},
        C={"topic2": [2], "topic3": [0, 1]},
    )
    subscriptions = {"A": ["topic1"], "B": ["topic1", "topic2", "topic3"], "C": ["topic2"]}
    plan = assign_subscribed(
        partitions({"topic1": 3, "topic2": 3, "topic3": 2}), subscriptions, previous
    )
    assert plan == plan_of(
        A={"topic1": [0, 1]},
        B={"topic1": [2], "topic2": [0, 1], "topic3": [0, 1]},
        C={"topic2": [2]},
    )


def test_subscriptions_must_be_lists_of_topics() -> None:
    with pytest.raises(TypeError, match=r"subscriptions\['A'\]"):
        assign_subscribed(partitions({"topic1": 3}), {"A": "topic1"})


# --- properties ---------------------------------------------------------------------------


@given(groups())
def test_each_topic_is_dealt_in_consecutive_ranges_larger_first(
    group: Group,
) -> None:
    queues, members, previous = group
    assume(members)
    plan = assign(queues, members, previous)
    for topic in {topic for topic, _ in queues}:
        topic_queues = sorted(queue for queue in queues if queue[0] == topic)
        shares = [[q for q in plan[member] if q[0] == topic] for member in sorted(members)]
        assert [q for share in shares for q in share] == topic_queues
        base, extra = divmod(len(topic_queues), len(members))
        assert [len(share) for share in shares] == [base + 1] * extra + [base] * (
            len(members) - extra
        )


@given(groups())
def test_co_partitioned_when_topics_have_equal_partition_counts(
    group: Group,
) -> None:
    queues, members, _ = group
    count = max((p + 1 for _, p in queues), default=0)
    topics = sorted({topic for topic, _ in queues})
    equal = [(topic, p) for topic in topics for p in range(count)]
    plan = assign(equal, members)
    for member in members:
        numbers = {topic: {p for t, p in plan[member] if t == topic} for topic in topics}
        assert len({frozenset(ps) for ps in numbers.values()}) <= 1


@given(groups())
def test_the_current_assignment_is_not_read(
    group: Group,
) -> None:
    queues, members, previous = group
    assert assign(queues, members, previous) == assign(queues, members, None)


@given(groups())
def test_the_plan_is_the_client_range_assignors_without_racks(
    group: Group,
) -> None:
    queues, members, previous = group
    assert assign(queues, members, previous) == rack_aware_range.assign(queues, members, previous)


@given(groups())
def test_everyone_subscribed_to_everything_is_the_homogeneous_plan(
    group: Group,
) -> None:
    queues, members, previous = group
    topics = sorted({topic for topic, _ in queues})
    subscriptions = dict.fromkeys(members, topics)
    assert assign_subscribed(queues, subscriptions, previous) == assign(queues, members, previous)


def test_registered_for_the_consumer_protocol_only() -> None:
    strategy = STRATEGIES["server_range"]
    assert strategy.assign is assign
    assert strategy.systems == frozenset({"kafka-consumer"})
    assert not strategy.uses
