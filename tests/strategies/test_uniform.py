"""uniform is Kafka's server-side UniformAssignor (homogeneous builder): the cases of Kafka's
`OptimizedUniformAssignmentBuilderTest` (apache/kafka commit 1eb7644349cb, October 2024),
transcribed, and hypothesis properties for what those tests assert (validity, balance) and for
the builder's stickiness bounds.

Kafka's plan depends on the order in which Java iterates the subscribed topic ids (a HashSet of
`Uuid`s). Its tests fix the topic ids, so that order is fixed there too: `kafka_topic_order`
computes it from the ids as Java does (Uuid.hashCode, HashMap's bucket spreading, 16 buckets),
and each case whose expected plan depends on it is held to Kafka's exact plan under Kafka's
order (`homogeneous_plan`) and to the properties Kafka checks under our sorted order (`assign`).
The cases that do not depend on it are held to the exact plan through `assign`.
Left out: `testOneMemberSubscribedToNonexistentTopic` (the contract has no subscriptions, so no
subscription can name a missing topic)."""

from __future__ import annotations

import base64
import struct
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import assume, given

from rebalancing.strategies import STRATEGIES, uniform
from tests.strategies.kafka_groups import Group, Plan, groups, partitions, plan_of

assign = uniform.assign

# Kafka's test topic ids (OptimizedUniformAssignmentBuilderTest's topic1Uuid .. topic3Uuid)
KAFKA_TOPIC_IDS = {
    "topic1": "T1-A4s3VTwiI5CTbEp6POw",
    "topic2": "T2-B4s3VTwiI5YHbPp6YUe",
    "topic3": "T3-CU8fVTLCz5YMkLoDQsa",
}


def _java_uuid_hash(encoded: str) -> int:
    """Kafka's Uuid.hashCode of a base64url-encoded id: the 64-bit xor of its two halves,
    folded to 32 bits (as an unsigned int)."""
    most, least = struct.unpack(">QQ", base64.urlsafe_b64decode(encoded + "=="))
    folded = most ^ least
    return ((folded >> 32) ^ folded) & 0xFFFFFFFF


def kafka_topic_order(topics: Sequence[str]) -> list[str]:
    """The order a Java HashSet of 16 buckets (what Kafka's builder copies the subscriptions
    into, for up to 12 topics) iterates these topics' ids: by bucket, the hash spread as
    HashMap.hash does. Refuses ids sharing a bucket, whose order would be insertion order."""

    def bucket(topic: str) -> int:
        code = _java_uuid_hash(KAFKA_TOPIC_IDS[topic])
        return (code ^ (code >> 16)) & 15

    buckets = [bucket(topic) for topic in topics]
    assert len(set(buckets)) == len(buckets), "two topic ids share a bucket"
    return sorted(topics, key=bucket)


def test_kafka_test_ids_iterate_topic2_then_topic3_then_topic1() -> None:
    # the order behind the expected plans below: topic3 before topic1 in
    # testFirstAssignmentTwoMembersTwoTopicsNoMemberRacks, topic2 before topic1 in the others
    assert kafka_topic_order(["topic1", "topic2", "topic3"]) == ["topic2", "topic3", "topic1"]


def kafka_run(
    counts: Mapping[str, int],
    members: Sequence[str],
    held: Mapping[str, Mapping[str, Sequence[int]]],
    held_topic_order: str = "hash",
) -> Plan:
    """The builder under the orders of Kafka's test run: topics as the HashSet iterates them,
    members sorted (the tests' TreeMap), a member's topics as its assignment map iterates them
    (mkAssignment: the same HashMap order; mkOrderedAssignment: as written, `held_topic_order`
    "given"), partitions ascending (a HashSet of small Integers)."""
    topic_order = kafka_topic_order(list(counts))
    topics = [[(topic, p) for p in range(counts[topic])] for topic in topic_order]

    def in_kafka_order(owned: Mapping[str, Sequence[int]]) -> list[tuple[str, int]]:
        order = list(owned) if held_topic_order == "given" else kafka_topic_order(list(owned))
        return [(topic, p) for topic in order for p in sorted(owned[topic])]

    return uniform.homogeneous_plan(
        topics, sorted(members), {member: in_kafka_order(owned) for member, owned in held.items()}
    )


def check_validity_and_balance(plan: Plan, queues: Sequence[Any]) -> None:
    """Kafka's checkValidityAndBalance (every member subscribes to every topic here): no
    partition twice, and any two members' counts differ by at most one. Ours also: none lost."""
    owned = [queue for queue_list in plan.values() for queue in queue_list]
    assert sorted(owned) == sorted(queues)
    counts = [len(queue_list) for queue_list in plan.values()]
    assert max(counts) - min(counts) <= 1


def test_one_member_no_topic_subscription() -> None:
    # testOneMemberNoTopicSubscription: Kafka returns no entry for A; the contract keeps every
    # consumer as a key, with nothing assigned
    assert assign([], ["A"]) == {"A": []}


def test_first_assignment_two_members_two_topics_no_member_racks() -> None:
    # testFirstAssignmentTwoMembersTwoTopicsNoMemberRacks: topic3's partitions come first in
    # Kafka's topic order, so A (3 partitions) takes both of them and topic1-0
    counts = {"topic1": 3, "topic3": 2}
    expected = plan_of(A={"topic1": [0], "topic3": [0, 1]}, B={"topic1": [1, 2]})
    assert kafka_run(counts, ["A", "B"], {}) == expected
    ours = assign(partitions(counts), ["A", "B"])
    check_validity_and_balance(ours, partitions(counts))
    assert ours != expected  # sorted topic order: topic1 first, a plan as valid and balanced


def test_first_assignment_num_members_greater_than_total_num_partitions() -> None:
    # testFirstAssignmentNumMembersGreaterThanTotalNumPartitions
    plan = assign(partitions({"topic3": 2}), ["A", "B", "C"])
    assert plan == plan_of(A={"topic3": [0]}, B={"topic3": [1]}, C={})


def test_validity_and_balance_for_large_sample_set() -> None:
    # testValidityAndBalanceForLargeSampleSet: 99 topics of 3 partitions, 49 members (Kafka's
    # topic ids are random there, so only validity and balance are asserted)
    queues = partitions({f"topic-{i}": 3 for i in range(1, 100)})
    members = [f"member{i}" for i in range(1, 50)]
    check_validity_and_balance(assign(queues, members), queues)


def test_reassignment_for_two_members_two_topics_given_unbalanced_prev_assignment() -> None:
    # testReassignmentForTwoMembersTwoTopicsGivenUnbalancedPrevAssignment (ordered
    # assignments: topic1 then topic2, which is also the sorted order)
    counts = {"topic1": 3, "topic2": 3}
    previous = plan_of(A={"topic1": [0, 1], "topic2": [0, 1]}, B={"topic1": [2], "topic2": [2]})
    expected = plan_of(A={"topic1": [0, 1], "topic2": [0]}, B={"topic1": [2], "topic2": [1, 2]})
    assert assign(partitions(counts), ["A", "B"], previous) == expected


def test_reassignment_when_partitions_are_added_for_two_members_two_topics() -> None:
    # testReassignmentWhenPartitionsAreAddedForTwoMembersTwoTopics: topic1 3 -> 6 and topic2
    # 3 -> 5 partitions; the new ones are dealt topic2 first (Kafka's topic order)
    counts = {"topic1": 6, "topic2": 5}
    held = {"A": {"topic1": [0, 2], "topic2": [0]}, "B": {"topic1": [1], "topic2": [1, 2]}}
    expected = plan_of(
        A={"topic1": [0, 2, 3], "topic2": [0, 3, 4]}, B={"topic1": [1, 4, 5], "topic2": [1, 2]}
    )
    assert kafka_run(counts, ["A", "B"], held, held_topic_order="given") == expected
    ours = assign(partitions(counts), ["A", "B"], plan_of(**held))
    check_validity_and_balance(ours, partitions(counts))
    assert all(set(plan_of(**held)[member]) <= set(ours[member]) for member in "AB")


def test_reassignment_when_one_member_added_after_initial_assignment() -> None:
    # testReassignmentWhenOneMemberAddedAfterInitialAssignmentWithTwoMembersTwoTopics
    previous = plan_of(A={"topic1": [0, 2], "topic2": [0]}, B={"topic1": [1], "topic2": [1, 2]})
    plan = assign(partitions({"topic1": 3, "topic2": 3}), ["A", "B", "C"], previous)
    assert plan == plan_of(
        A={"topic1": [0, 2]}, B={"topic1": [1], "topic2": [1]}, C={"topic2": [0, 2]}
    )


def test_reassignment_when_one_member_removed_after_initial_assignment() -> None:
    # testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithThreeMembersTwoTopics: C's
    # partitions are dealt topic2's first (Kafka's topic order), so A gets topic2-2
    counts = {"topic1": 3, "topic2": 3}
    held = {"A": {"topic1": [0], "topic2": [0]}, "B": {"topic1": [1], "topic2": [1]}}
    expected = plan_of(A={"topic1": [0], "topic2": [0, 2]}, B={"topic1": [1, 2], "topic2": [1]})
    assert kafka_run(counts, ["A", "B"], held) == expected
    previous = {**plan_of(**held), "C": [("topic1", 2), ("topic2", 2)]}  # C has left
    ours = assign(partitions(counts), ["A", "B"], previous)
    check_validity_and_balance(ours, partitions(counts))
    assert all(set(previous[member]) <= set(ours[member]) for member in "AB")


def test_reassignment_when_one_subscription_removed_after_initial_assignment() -> None:
    # testReassignmentWhenOneSubscriptionRemovedAfterInitialAssignmentWithTwoMembersTwoTopics:
    # topic1 is no longer subscribed, so its partitions are no longer among the queues
    previous = plan_of(A={"topic1": [0], "topic2": [0]}, B={"topic1": [1], "topic2": [1]})
    plan = assign(partitions({"topic2": 2}), ["A", "B"], previous)
    assert plan == plan_of(A={"topic2": [0]}, B={"topic2": [1]})


def test_a_member_under_the_larger_quota_in_member_order_takes_from_one_that_held_more() -> None:
    # the quotas go by member order, not by what members held: 5 partitions, B joins A and C;
    # A and B get the larger quota, so C gives up one of its two although keeping both and
    # giving B one of A's three would move one partition where this moves two
    queues = partitions({"topic1": 5})
    previous = plan_of(A={"topic1": [0, 1, 2]}, C={"topic1": [3, 4]})
    plan = assign(queues, ["A", "B", "C"], previous)
    assert plan == plan_of(A={"topic1": [0, 1]}, B={"topic1": [2, 4]}, C={"topic1": [3]})


def test_partitions_no_one_held_are_dealt_before_those_revoked() -> None:
    # the builder appends what it revokes to the list of unassigned partitions, after the ones
    # no member held: B, first below quota, gets topic1-4 and -5, C the two that A gave up
    previous = plan_of(A={"topic1": [0, 1, 2, 3]})
    plan = assign(partitions({"topic1": 6}), ["A", "B", "C"], previous)
    assert plan == plan_of(A={"topic1": [0, 1]}, B={"topic1": [4, 5]}, C={"topic1": [2, 3]})


# --- properties ---------------------------------------------------------------------------


@given(groups())
def test_every_plan_is_valid_and_balanced(group: Group) -> None:
    queues, members, previous = group
    plan = assign(queues, members, previous)
    if members:
        check_validity_and_balance(plan, queues)
    else:
        assert plan == {}


@given(groups())
def test_the_larger_quotas_go_to_the_first_members(group: Group) -> None:
    queues, members, previous = group
    plan = assign(queues, members, previous)
    if members:
        base, extra = divmod(len(queues), len(members))
        expected = [base + 1] * extra + [base] * (len(members) - extra)
        assert [len(plan[member]) for member in sorted(members)] == expected


@given(groups())
def test_stickiness_bounds(group: Group) -> None:
    """A member keeps what it held up to its quota, and never both loses and gains."""
    queues, members, previous = group
    plan = assign(queues, members, previous)
    present = set(queues)
    for member in members:
        held = {queue for queue in previous.get(member, ()) if queue in present}
        now = set(plan[member])
        assert len(now & held) == min(len(held), len(now))
        assert now <= held or held <= now


@given(groups())
def test_a_plan_is_kept_when_nothing_changes(group: Group) -> None:
    queues, members, previous = group
    plan = assign(queues, members, previous)
    assert assign(queues, members, plan) == plan


@given(groups())
def test_deals_free_partitions_in_topic_then_partition_order(
    group: Group,
) -> None:
    """Without a previous plan, the members in order take consecutive runs of the sorted
    partitions: the first member the first quota, and so on."""
    queues, members, _ = group
    plan = assign(queues, members, None)
    assume(members)
    dealt = [queue for member in sorted(members) for queue in plan[member]]
    assert dealt == sorted(queues)


def test_registered_for_the_consumer_protocol_only() -> None:
    strategy = STRATEGIES["uniform"]
    assert strategy.assign is assign
    assert strategy.systems == frozenset({"kafka-consumer"})
    assert not strategy.client_side
    assert not strategy.uses


@pytest.mark.parametrize("members", [["A"], ["A", "B", "C"]])
def test_plain_ids_are_one_topic(members: list[str]) -> None:
    plan = assign(range(7), members, {"A": [6, 5]})
    check_validity_and_balance(plan, list(range(7)))
    assert Counter(len(owned) for owned in plan.values()) == Counter(
        [7 // len(members) + 1] * (7 % len(members))
        + [7 // len(members)] * (len(members) - 7 % len(members))
    )
