"""The aiokafka assignor, driven through whole groups with aiokafka's own protocol structs
(ConsumerProtocolMemberMetadata, ConsumerProtocolMemberAssignment), as aiokafka's group
coordinator calls it: classmethods, members as a dict, no generation. The same histories as the
kafka-python tests (tests/adapters/test_kafka_python.py), the same checks."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from aiokafka.coordinator.protocol import ConsumerProtocol
from hypothesis import given, settings
from kafka.coordinator.assignors.abstract import RebalanceProtocol
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment

from rebalancing.adapters.kafka import aiokafka_assignor, kafka_python_assignor
from rebalancing.adapters.kafka_aiokafka import PlanGeneration
from rebalancing.adapters.kafka_plan import Partition
from tests.adapters.test_kafka_python import (
    GROUP_EXAMPLES,
    Cluster,
    Event,
    Group,
    Round,
    apply,
    assert_balanced_and_sticky,
    assert_sharing_refused,
    assert_valid,
    expected_previous,
    histories,
    orders,
    until_a_stale_member_comes_back,
)


class AiokafkaGroup(Group):
    """A group as aiokafka's GroupCoordinator runs it (consumer/group_coordinator.py): eager
    only; the leader's `assign(cluster, {member_id: metadata})`; every member decodes its
    assignment and calls `on_assignment(assignment)`."""

    @property
    def protocol(self) -> RebalanceProtocol:
        return RebalanceProtocol.EAGER

    def rebalance(self) -> Round:
        self.generation += 1
        for member in self.members.values():
            member.held = set()
        members = {
            member_id: ConsumerProtocol.METADATA.decode(
                member.assignor.metadata(set(member.topics)).encode()
            )
            for member_id, member in self.members.items()
        }
        answers = [
            member.assignor.assign(self.cluster, members) for member in self.members.values()
        ]
        answer = answers[0]  # the first member to have joined leads
        assert set(answer) == set(self.members)
        for other in answers[1:]:  # any member leading would have sent the same assignments
            assert {m: a.encode() for m, a in other.items()} == {
                m: a.encode() for m, a in answer.items()
            }
        plan: dict[str, list[Partition]] = {}
        for member_id, member in self.members.items():
            assignment = ConsumerProtocol.ASSIGNMENT.decode(answer[member_id].encode())
            plan[member_id] = [(p.topic, p.partition) for p in assignment.partitions()]
            member.held = set(plan[member_id])
            member.assignor.on_assignment(assignment)
        result = Round(self.generation, {m: set() for m in plan}, plan, {m: set() for m in plan})
        self.rounds.append(result)
        return result


@pytest.mark.parametrize("strategy", ["sticky", "averagely", "round_robin"])
@settings(max_examples=GROUP_EXAMPLES)
@given(history=histories())
def test_a_group_through_generations_gets_valid_balanced_sticky_plans(
    strategy: str, history: tuple[dict[str, int], list[Event]]
) -> None:
    """Joins, leaves, time-outs (the member comes back with its old plan number: stale),
    subscription changes and new partitions: every plan valid, balanced per the strategy's
    promise, and for sticky as sticky as balance allows."""
    partitions, events = history
    group = AiokafkaGroup(Cluster(partitions), lambda: aiokafka_assignor(strategy))
    settled: dict[str, list[Partition]] = {}
    for event in events:
        concerned = apply(group, event)
        if concerned is None:
            continue
        previous = expected_previous(group, settled)
        if event[0] == "come_back":
            previous[concerned] = []
        plan = group.rebalance().plan
        assert_valid(group, plan)
        assert_balanced_and_sticky(group, previous, plan, sticky=strategy == "sticky")
        settled = group.held


def test_the_leader_numbers_its_plans_one_past_the_newest_its_members_report() -> None:
    group = AiokafkaGroup(Cluster({"orders": 4}), lambda: aiokafka_assignor("sticky"))
    group.join("a", ["orders"])
    group.join("b", ["orders"])
    numbers = []
    for _ in range(3):
        group.rebalance()
        numbers.append({m.assignor.generation for m in group.members.values()})
    assert numbers == [{0}, {1}, {2}]


def test_a_member_that_missed_a_rebalance_is_stale_without_kafkas_generation() -> None:
    """As with kafka-python (test_a_member_that_comes_back_stale_does_not_count_as_an_owner),
    with the leader's plan numbers in place of Kafka's generation ids."""
    group = AiokafkaGroup(Cluster({"orders": 4}), lambda: aiokafka_assignor("sticky"))
    plans = until_a_stale_member_comes_back(group)
    assert plans[2] == {"a": orders(0, 1), "c": orders(2, 3)}
    assert group.members["b"].assignor.generation == 0  # plan 0 gave "b" orders-1 and 3
    assert group.rebalance().plan == {"a": orders(0, 1), "b": orders(3), "c": orders(2)}


def test_each_call_makes_a_class_with_its_own_state() -> None:
    first, second = aiokafka_assignor("sticky"), aiokafka_assignor("sticky")
    assert first is not second
    assert first.name == second.name == "rebalancing-sticky"
    assignment = ConsumerProtocol.ASSIGNMENT(0, [("orders", [1])], PlanGeneration(3).encode())
    first.on_assignment(assignment)
    assert first.owned == (("orders", 1),)
    assert second.owned is None


def test_the_subscription_bytes_are_the_kafka_python_adapters_and_aiokafkas_sticky_reads_them() -> (
    None
):
    """Same StickyAssignorUserData v1 bytes from both adapters (Java's layout, no version
    header), and aiokafka's own StickyPartitionAssignor parses them."""
    owned = [("orders", [2, 0]), ("audit", [1])]
    ours = aiokafka_assignor("sticky")
    ours.on_assignment(ConsumerProtocol.ASSIGNMENT(0, owned, PlanGeneration(7).encode()))
    theirs = kafka_python_assignor("sticky")
    theirs.on_assignment(ConsumerProtocolAssignment(0, owned, b""), 7)
    aiokafka_bytes = ours.metadata({"orders", "audit"}).user_data
    assert aiokafka_bytes == theirs.metadata({"orders", "audit"}).user_data
    parsed = StickyPartitionAssignor.parse_member_metadata(ours.metadata({"orders", "audit"}))
    assert sorted(tuple(p) for p in parsed.partitions) == [
        ("audit", 1),
        ("orders", 0),
        ("orders", 2),
    ]
    assert parsed.generation == 7


def member_metadata(topics: Iterable[str], user_data: bytes) -> Any:
    return ConsumerProtocol.METADATA(0, sorted(topics), user_data)


@pytest.mark.parametrize(
    ("metadata", "error", "message"),
    [
        (
            member_metadata(["orders"], b"\x00\x01"),
            ValueError,
            "member 'b': its subscription user data is not",
        ),
        (b"\x00", ValueError, "member 'b': its metadata is not a ConsumerProtocolMemberMetadata"),
        ({"topics": ["orders"]}, TypeError, "member 'b': metadata is dict"),
    ],
)
def test_a_member_whose_metadata_cannot_be_read_is_named(
    metadata: Any, error: type[Exception], message: str
) -> None:
    members = {"a": member_metadata(["orders"], b""), "b": metadata}
    with pytest.raises(error, match=message):
        aiokafka_assignor("sticky").assign(Cluster({"orders": 2}), members)


def test_user_data_with_bytes_left_over_is_refused() -> None:
    user_data = aiokafka_assignor("sticky").metadata({"orders"}).user_data
    assert user_data == b""
    assigned = aiokafka_assignor("sticky")
    assigned.on_assignment(
        ConsumerProtocol.ASSIGNMENT(0, [("orders", [0])], PlanGeneration(1).encode())
    )
    padded = assigned.metadata({"orders"}).user_data + b"\x00"
    with pytest.raises(
        ValueError, match="member 'a': its subscription user data has 1 bytes after"
    ):
        assigned.assign(Cluster({"orders": 2}), {"a": member_metadata(["orders"], padded)})


def test_an_assignment_without_a_plan_number_is_refused() -> None:
    with pytest.raises(ValueError, match="is not the plan number this assignor's leader writes"):
        aiokafka_assignor("sticky").on_assignment(ConsumerProtocol.ASSIGNMENT(0, [], b""))


def test_one_assignor_class_shared_by_two_members_is_refused_at_the_second_assignment() -> None:
    """aiokafka keeps a member's state on the class it is given: two consumers given the same
    class would remember one member's partitions and both claim them."""
    shared = aiokafka_assignor("sticky")
    group = AiokafkaGroup(Cluster({"orders": 4}), lambda: shared)
    assert_sharing_refused(group, shared, "plan 0 .*one assignor class is shared by two consumers")


def test_the_same_assignment_given_again_for_its_plan_is_accepted() -> None:
    assignor = aiokafka_assignor("sticky")
    for owned in ([("orders", [1, 3])], [("orders", [3, 1])]):
        assignor.on_assignment(ConsumerProtocol.ASSIGNMENT(0, owned, PlanGeneration(4).encode()))
    assert (assignor.owned, assignor.generation) == ((("orders", 1), ("orders", 3)), 4)
