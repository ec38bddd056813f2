"""kafka-python's assignors as oracles: Range and RoundRobin deal exactly as averagely and
round_robin do on one topic, and kafka-python's Sticky never keeps more, balanced, than ours.

The assignors are called through their public assign() with kafka-python's protocol objects,
each member's previous partitions sent the way a real consumer sends them (on_assignment, then
metadata). kafka-python is a dev dependency (benchmarks/versus_kafka_python.py uses it too).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from kafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from kafka.protocol.consumer.group import JoinGroupResponse
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment

from rebalancing.evaluation.scoring.scores import score
from rebalancing.strategies import averagely, round_robin, sticky

TOPIC = "orders"


class OneTopicCluster:
    """The two questions kafka-python's assignors ask of the cluster metadata."""

    def __init__(self, partitions: list[int]) -> None:
        self.partitions = partitions

    def topics(self) -> set[str]:
        return {TOPIC}

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return set(self.partitions) if topic == TOPIC else None


def kafka_assign(
    assignor_class: type[AbstractPartitionAssignor],
    partitions: list[int],
    members: list[str],
    previous: dict[str, list[int]] | None,
) -> dict[str, list[int]]:
    """Run one kafka-python assignor as a group leader would; member -> its partitions."""
    joined = []
    for member_id in members:
        assignor = assignor_class()
        if previous is not None and member_id in previous:
            owned = ConsumerProtocolAssignment(0, [(TOPIC, previous[member_id])], b"")
            assignor.on_assignment(owned, 1)
        joined.append(
            JoinGroupResponse.JoinGroupResponseMember(
                member_id=member_id, group_instance_id=None, metadata=assignor.metadata({TOPIC})
            )
        )
    answer = assignor_class().assign(OneTopicCluster(partitions), joined)
    return {
        member_id: sorted(
            partition
            for topic, owned in assignment.assigned_partitions
            for partition in owned
            if topic == TOPIC
        )
        for member_id, assignment in answer.items()
    }


@st.composite
def kafka_groups(draw: st.DrawFn) -> tuple[list[int], list[str], dict[str, list[int]]]:
    """Partitions of one topic, member ids, and a previous assignment among current members
    (departed members send nothing) that may name partitions the topic no longer has."""
    partitions = sorted(draw(st.sets(st.integers(0, 80), max_size=60)))
    members = draw(
        st.lists(
            st.text(alphabet="abcdefghij-0123456789", min_size=1, max_size=8),
            min_size=1,
            max_size=12,
            unique=True,
        )
    )
    owner = draw(
        st.dictionaries(st.integers(0, 90), st.sampled_from(members), max_size=len(partitions))
    )
    previous: dict[str, list[int]] = {member: [] for member in members}
    for partition, member in sorted(owner.items()):
        previous[member].append(partition)
    return partitions, draw(st.permutations(members)), previous


def _ours(plan: dict[Any, list[Any]]) -> dict[str, list[int]]:
    return {consumer: sorted(owned) for consumer, owned in plan.items()}


@given(kafka_groups())
def test_range_deals_as_averagely(group: tuple[list[int], list[str], dict[str, list[int]]]) -> None:
    partitions, members, _ = group
    expected = kafka_assign(RangePartitionAssignor, partitions, members, None)
    assert _ours(averagely.assign(partitions, members)) == expected


@given(kafka_groups())
def test_round_robin_deals_as_kafka_round_robin(
    group: tuple[list[int], list[str], dict[str, list[int]]],
) -> None:
    partitions, members, _ = group
    expected = kafka_assign(RoundRobinPartitionAssignor, partitions, members, None)
    assert _ours(round_robin.assign(partitions, members)) == expected


@given(kafka_groups())
def test_kafka_sticky_never_keeps_more_than_ours_when_balanced(
    group: tuple[list[int], list[str], dict[str, list[int]]],
) -> None:
    partitions, members, previous = group
    theirs = kafka_assign(StickyPartitionAssignor, partitions, members, previous)
    ours = sticky.assign(partitions, members, previous)
    their_scores = score(partitions, members, previous, theirs)
    our_scores = score(partitions, members, previous, ours)
    assert our_scores.spread <= 1
    assert our_scores.stickiness_gap in (0, None)
    if their_scores.spread <= 1:
        assert our_scores.kept >= their_scores.kept


def test_the_kafka_sticky_example_of_its_docstring_keeps_as_much_as_ours() -> None:
    """kafka-python's own example 1 on one topic: 8 partitions, 3 consumers, C1 leaves."""
    partitions = list(range(8))
    previous = {"C0": [0, 3, 6], "C1": [1, 4, 7], "C2": [2, 5]}
    members = ["C0", "C2"]
    theirs = kafka_assign(StickyPartitionAssignor, partitions, members, previous)
    ours = sticky.assign(partitions, members, previous)
    assert score(partitions, members, previous, theirs).kept == 5
    assert score(partitions, members, previous, ours).kept == 5
    assert sorted(map(len, ours.values())) == sorted(map(len, theirs.values())) == [4, 4]
