"""uniform with differing subscriptions is Kafka's UniformHeterogeneousAssignmentBuilder: every
case of Kafka's `UniformHeterogeneousAssignmentBuilderTest` (apache/kafka commit 1eb7644349cb,
October 2024), transcribed, and hypothesis properties for what the builder promises.

Kafka's tests sort the members (their TestGroupSpecImpl) so that the plan is deterministic, and
their topic ids compare in the order of the topic names, so every case is exact here. They force
the heterogeneous builder even where all members subscribe to the same topics; those cases call
`heterogeneous_plan` directly, the others go through `uniform.assign_subscribed`, which picks
the builder as Kafka's UniformAssignor does."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rebalancing.strategies import uniform
from rebalancing.strategies.uniform_heterogeneous import heterogeneous_plan
from tests.strategies.kafka_groups import Plan, partitions, plan_of

assign_subscribed = uniform.assign_subscribed


def forced(
    counts: Mapping[str, int],
    subscriptions: Mapping[str, Sequence[str]],
    held: Plan | None = None,
) -> Plan:
    """The heterogeneous builder whatever the subscriptions, as Kafka's tests run it (topics in
    name order, which is their ids' order; members sorted)."""
    topics = {topic: [(topic, p) for p in range(count)] for topic, count in sorted(counts.items())}
    return heterogeneous_plan(topics, sorted(subscriptions), subscriptions, held or {})


def test_two_members_no_topic_subscription() -> None:
    # testTwoMembersNoTopicSubscription: Kafka returns no entries; ours keeps both, empty
    assert forced({"topic1": 3}, {"A": [], "B": []}) == {"A": [], "B": []}


def test_two_members_subscribed_to_nonexistent_topics() -> None:
    # testTwoMembersSubscribedToNonexistentTopics: Kafka throws PartitionAssignorException
    with pytest.raises(ValueError, match="which has no queue"):
        assign_subscribed(partitions({"topic1": 3}), {"A": ["topic3"], "B": ["topic2"]})


def test_first_assignment_two_members_two_topics() -> None:
    # testFirstAssignmentTwoMembersTwoTopics
    plan = assign_subscribed(
        partitions({"topic1": 3, "topic3": 6}), {"A": ["topic1", "topic3"], "B": ["topic3"]}
    )
    assert plan == plan_of(A={"topic1": [0, 1, 2], "topic3": [4]}, B={"topic3": [0, 1, 2, 3, 5]})


def test_first_assignment_num_members_greater_than_total_num_partitions() -> None:
    # testFirstAssignmentNumMembersGreaterThanTotalNumPartitions (topic3 has one partition)
    plan = assign_subscribed(
        partitions({"topic1": 2, "topic3": 1}), {"A": ["topic3"], "B": ["topic3"], "C": ["topic1"]}
    )
    assert plan == plan_of(A={"topic3": [0]}, B={}, C={"topic1": [0, 1]})


def test_reassignment_for_two_members_three_topics_given_unbalanced_prev_assignment() -> None:
    # testReassignmentForTwoMembersThreeTopicsGivenUnbalancedPrevAssignment
    previous = plan_of(
        A={"topic1": [0, 1, 2]},
        B={"topic1": [3], "topic2": [0]},
        C={"topic1": [4, 5], "topic2": [1, 2, 3], "topic3": [0, 1, 2, 3]},
    )
    subscriptions = {
        "A": ["topic1"],
        "B": ["topic1", "topic2"],
        "C": ["topic1", "topic2", "topic3"],
    }
    queues = partitions({"topic1": 6, "topic2": 4, "topic3": 4})
    assert assign_subscribed(queues, subscriptions, previous) == plan_of(
        A={"topic1": [0, 1, 2, 5]},
        B={"topic1": [3], "topic2": [0, 1, 2, 3]},
        C={"topic1": [4], "topic3": [0, 1, 2, 3]},
    )


def test_reassignment_when_partitions_are_added_for_two_members() -> None:
    # testReassignmentWhenPartitionsAreAddedForTwoMembers: topic1 4 -> 6, topic2 3 -> 5,
    # topic3 2 -> 3 partitions, topic4 3
    previous = plan_of(
        A={"topic1": [0, 1, 2, 3], "topic3": [0, 1]}, B={"topic2": [0, 1, 2], "topic4": [0, 1, 2]}
    )
    subscriptions = {"A": ["topic1", "topic3"], "B": ["topic1", "topic2", "topic3", "topic4"]}
    queues = partitions({"topic1": 6, "topic2": 5, "topic3": 3, "topic4": 3})
    assert assign_subscribed(queues, subscriptions, previous) == plan_of(
        A={"topic1": [0, 1, 2, 3, 4, 5], "topic3": [0, 1, 2]},
        B={"topic2": [0, 1, 2, 3, 4], "topic4": [0, 1, 2]},
    )


def test_reassignment_when_one_member_added_and_partitions_added() -> None:
    # testReassignmentWhenOneMemberAddedAndPartitionsAddedTwoMembersTwoTopics: topic1 3 -> 6,
    # topic2 3 -> 7 partitions; A now subscribes to topic1 only
    previous = plan_of(A={"topic1": [0, 2], "topic2": [0]}, B={"topic1": [1], "topic2": [1, 2]})
    subscriptions = {"A": ["topic1"], "B": ["topic1", "topic2"], "C": ["topic1", "topic2"]}
    queues = partitions({"topic1": 6, "topic2": 7})
    assert assign_subscribed(queues, subscriptions, previous) == plan_of(
        A={"topic1": [0, 2, 3, 4, 5]},
        B={"topic1": [1], "topic2": [1, 2, 6]},
        C={"topic2": [0, 3, 4, 5]},
    )


def test_reassignment_when_one_member_removed_after_initial_assignment() -> None:
    # testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithThreeMembersThreeTopics
    previous = plan_of(
        A={"topic1": [0, 1, 2], "topic3": [0, 1]},
        B={"topic2": [3, 4, 5, 6]},
        C={"topic2": [0, 1, 2, 7], "topic3": [2]},  # C has left: what it held is free
    )
    subscriptions = {"A": ["topic1", "topic3"], "B": ["topic2"]}
    queues = partitions({"topic1": 3, "topic2": 8, "topic3": 3})
    assert assign_subscribed(queues, subscriptions, previous) == plan_of(
        A={"topic1": [0, 1, 2], "topic3": [0, 1, 2]}, B={"topic2": [0, 1, 2, 3, 4, 5, 6, 7]}
    )


def test_reassignment_when_one_subscription_removed_after_initial_assignment() -> None:
    # testReassignmentWhenOneSubscriptionRemovedAfterInitialAssignmentWithTwoMembersTwoTopics
    previous = plan_of(
        A={"topic1": [0, 2], "topic2": [1, 3]}, B={"topic1": [1], "topic2": [0, 2, 4]}
    )
    subscriptions = {"A": ["topic1"], "B": ["topic1", "topic2"]}
    queues = partitions({"topic1": 3, "topic2": 5})
    assert assign_subscribed(queues, subscriptions, previous) == plan_of(
        A={"topic1": [0, 1, 2]}, B={"topic2": [0, 1, 2, 3, 4]}
    )


def test_reassignment_when_topic_partitions_run_out_and_members_have_no_partitions() -> None:
    # testReassignmentWhenTopicPartitionsRunOutAndMembersHaveNoPartitions: the same
    # subscriptions, the heterogeneous builder forced as in Kafka's test
    everything = ["topic1", "topic2", "topic3"]
    held = plan_of(A={"topic1": [0, 1], "topic2": [0, 1], "topic3": [0, 1]})
    plan = forced({"topic1": 2, "topic2": 2, "topic3": 2}, {"A": everything, "B": everything}, held)
    assert plan == plan_of(A={"topic2": [0], "topic3": [0, 1]}, B={"topic1": [0, 1], "topic2": [1]})


def test_first_assignment_with_two_members_including_one_without_subscriptions() -> None:
    # testFirstAssignmentWithTwoMembersIncludingOneWithoutSubscriptions
    plan = assign_subscribed(partitions({"topic1": 3}), {"A": ["topic1"], "B": []})
    assert plan == plan_of(A={"topic1": [0, 1, 2]}, B={})


def test_identical_subscriptions_take_the_homogeneous_builder() -> None:
    # as Kafka's UniformAssignor does: the run-out case above, not forced, keeps A's quota
    everything = ["topic1", "topic2", "topic3"]
    held = plan_of(A={"topic1": [0, 1], "topic2": [0, 1], "topic3": [0, 1]})
    queues = partitions({"topic1": 2, "topic2": 2, "topic3": 2})
    plan = assign_subscribed(queues, {"A": everything, "B": everything}, held)
    assert plan == uniform.assign(queues, ["A", "B"], held)
    assert plan == plan_of(A={"topic1": [0, 1], "topic2": [0]}, B={"topic2": [1], "topic3": [0, 1]})


# --- properties ---------------------------------------------------------------------------

TOPICS = ["t0", "t1", "t2", "t3", "t4"]


class Planned(NamedTuple):
    """A drawn group (queues, each member's topics, a previous plan) and its plan."""

    queues: list[tuple[str, int]]
    subscriptions: dict[str, list[str]]
    previous: Plan
    plan: Plan


@st.composite
def planned_groups(draw: st.DrawFn) -> Planned:
    """Up to five topics of 1-9 partitions, up to six members each subscribing to some of them,
    a previous plan over two partitions more per topic (some owners gone), and the plan."""
    counts = {topic: draw(st.integers(1, 9)) for topic in TOPICS[: draw(st.integers(1, 5))]}
    members = draw(st.lists(st.sampled_from("ABCDEF"), unique=True, min_size=1, max_size=6))
    subscriptions = {
        member: draw(st.lists(st.sampled_from(sorted(counts)), unique=True)) for member in members
    }
    previous: Plan = {}
    for queue in partitions({topic: count + 2 for topic, count in counts.items()}):
        owner = draw(st.sampled_from([*"ABCDEFG", None]))
        if owner is not None:
            previous.setdefault(owner, []).append(queue)
    queues = partitions(counts)
    return Planned(
        queues, subscriptions, previous, assign_subscribed(queues, subscriptions, previous)
    )


@given(planned_groups())
def test_each_subscribed_partition_goes_once_to_a_subscriber(group: Planned) -> None:
    queues, subscriptions, plan = group.queues, group.subscriptions, group.plan
    assert set(plan) == set(subscriptions)
    assigned = [queue for owned in plan.values() for queue in owned]
    subscribed = {topic for topics in subscriptions.values() for topic in topics}
    assert sorted(assigned) == [queue for queue in queues if queue[0] in subscribed]
    for member, owned in plan.items():
        assert {topic for topic, _ in owned} <= set(subscriptions[member])


@given(planned_groups())
def test_members_that_share_their_topics_with_no_one_else_are_balanced(group: Planned) -> None:
    """Kafka: balanced when all subscribers of a topic have the same subscriptions. Members
    with one subscription, whose topics no other member reads, differ by at most one."""
    subscriptions, plan = group.subscriptions, group.plan
    for topics in {frozenset(topics) for topics in subscriptions.values() if topics}:
        class_members = [m for m, subscribed in subscriptions.items() if set(subscribed) == topics]
        others = [m for m in subscriptions if m not in class_members]
        if any(topics & set(subscriptions[other]) for other in others):
            continue
        counts = [len(plan[member]) for member in class_members]
        assert max(counts) - min(counts) <= 1


@given(planned_groups())
def test_a_plan_is_kept_when_nothing_changes(group: Planned) -> None:
    queues, subscriptions, plan = group.queues, group.subscriptions, group.plan
    assert assign_subscribed(queues, subscriptions, plan) == plan


@given(planned_groups())
def test_no_holder_of_a_topic_is_two_above_its_least_loaded_subscriber(group: Planned) -> None:
    """Where the balancing passes settle (16 passes are far more than these groups need), no
    subscriber of a topic that holds some of it has two or more partitions above the topic's
    least-loaded subscriber: one of them would have been moved."""
    subscriptions, plan = group.subscriptions, group.plan
    for topic in {topic for topics in subscriptions.values() for topic in topics}:
        readers = [member for member, topics in subscriptions.items() if topic in topics]
        least = min(len(plan[reader]) for reader in readers)
        for reader in readers:
            if any(owned_topic == topic for owned_topic, _ in plan[reader]):
                assert len(plan[reader]) <= least + 1, (topic, reader)
