"""Kafka's assignor-test notation as the inputs of our strategies, and random Kafka groups.

Kafka's group-coordinator tests write an assignment as member -> {topic: partitions}
(`mkAssignment(mkTopicAssignment(topic1Uuid, 0, 1), ...)`); here `plan_of(A={"topic1": [0, 1]})`
gives the same as our plan, with `(topic, partition)` queue ids. `groups` draws topics, members
and a previous plan over a group that may have changed since (members that left, partitions
that went), for the properties of the server-side assignors' tests.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hypothesis import strategies as st

Plan = dict[Any, list[tuple[str, int]]]
Group = tuple[list[tuple[str, int]], list[str], Plan]


def partitions(counts: Mapping[str, int]) -> list[tuple[str, int]]:
    """The queues of topics with these partition counts: (topic, 0), (topic, 1), ..."""
    return [(topic, p) for topic, count in counts.items() for p in range(count)]


def plan_of(**members: Mapping[str, Sequence[int]]) -> Plan:
    """A plan from Kafka's mkAssignment form: member -> {topic: partitions}."""
    return {
        member: sorted((topic, p) for topic, parts in topics.items() for p in parts)
        for member, topics in members.items()
    }


@st.composite
def groups(draw: st.DrawFn) -> Group:
    """Up to four topics of 0-9 partitions, up to 7 members, and a previous plan whose owners
    may have left and whose topics had two partitions more."""
    counts = draw(st.dictionaries(st.sampled_from("tuvw"), st.integers(0, 9), max_size=4))
    members = draw(st.lists(st.sampled_from("ABCDEFG"), unique=True, max_size=7))
    before = partitions({topic: count + 2 for topic, count in counts.items()})
    owners = draw(st.lists(st.sampled_from([*"ABCDEFGH", None]), min_size=len(before)))
    previous: Plan = {}
    for queue, owner in zip(before, owners, strict=False):
        if owner is not None:
            previous.setdefault(owner, []).append(queue)
    return partitions(counts), members, previous
