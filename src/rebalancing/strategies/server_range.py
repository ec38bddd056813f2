"""Kafka's server-side `range` assignor (KIP-848, group.protocol=consumer): per topic, contiguous
ranges of partitions to the members in order, co-partitioned when the topics have equal
partition counts.

Origin: apache/kafka `group-coordinator/src/main/java/org/apache/kafka/coordinator/group/
assignor/RangeAssignor.java` and its tests (`RangeAssignorTest`), read at commit
1eb7644349cb07139d6a3c1ad1986979647cac99 (trunk, version 4.0.0-SNAPSHOT, 25 October 2024: the
snapshot read holds no 4.x release tag; the file does the same at tag 3.9.0-rc3). The facts
carry over; the code is ours. The broker runs it (the second entry of the default
`group.consumer.assignors`; a consumer picks it with `group.remote.assignor=range`).

Whether it keeps current owners changed over Kafka's history. The first server-side range
assignor (KAFKA-14514, Kafka 3.6 to 3.8) was sticky: each member kept up to its quota of what it
held, then the rest was handed out. KAFKA-16944 ("Rewrite Range Assignor", July 2024, in 3.9
and in the commit read here) made it a plain range assignor again: the plan is computed from the
members and the topics alone and the current assignment is not read. This module is the
rewritten one: it checks `previous` and ignores it.

The algorithm, per topic with n partitions and the m members subscribed to it, in member order:
n div m partitions each, the first n mod m members one more, as consecutive ranges from
partition 0 on. When every member subscribes to every topic (always here: the contract has no
per-member subscriptions) and the topics have equal partition counts, each member gets the same
partition numbers of every topic: co-partitioning, which joins need. The plan is
rack_aware_range's without zones (the classic client RangeAssignor's); it is registered apart
because it runs on the broker under the consumer protocol, not in a client.

Member order: Kafka sorts members that have a `group.instance.id` (static members) by it, ahead
of the others, which it sorts by member id; nothing is read from a hash set, so Kafka's plan is
fully determined. Here members are sorted by id: give a static member its instance id, and to
reproduce Kafka's order in a group that mixes static and dynamic members use ids that sort the
static ones first, such as `(0, instance_id)` and `(1, member_id)`. `assign_subscribed` takes
per-member subscriptions, Kafka's heterogeneous path (each topic ranged over its own
subscribers). Not rack-aware at this commit (KAFKA-16694 removed rack awareness from the
server-side assignors in May 2024): zones are not read.
Topics: a queue id that is a tuple of two or more items is `(topic, ...)`; every other id is in
one topic (rebalancing.strategies.kafka_subscriptions).
Runtime complexity: O(|Q| log |Q| + |C| log |C|) (the contract's sorts), O(|Q| + T x |C|) after
them for T topics.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence

from rebalancing.contract import ConsumerT, QueueT, empty_plan, prepare
from rebalancing.strategies.kafka_subscriptions import checked_subscriptions, topic_partitions


def assign(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
) -> dict[ConsumerT, list[QueueT]]:
    """Kafka's server-side range assignor for a group whose members all subscribe to every
    topic of `queues`: per topic, consecutive ranges to the members in id order."""
    group = prepare(queues, consumers, previous)
    plan: dict[ConsumerT, list[QueueT]] = empty_plan(group.consumers)
    if not group.consumers:
        return plan
    for partitions in topic_partitions(group.queues).values():
        _deal_ranges(partitions, group.consumers, plan)
    for owned in plan.values():  # ascending already, unless one-item tuples mix with pairs
        owned.sort()
    return plan


def assign_subscribed(
    queues: Iterable[QueueT],
    subscriptions: Mapping[ConsumerT, Iterable[Hashable]],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
) -> dict[ConsumerT, list[QueueT]]:
    """Kafka's heterogeneous path: `subscriptions` maps each member to the topics it subscribes
    to (rules: rebalancing.strategies.kafka_subscriptions); each topic's partitions are ranged
    over its own subscribers, in id order. The queues of a topic that no member subscribes to
    stay unassigned, as in Kafka."""
    group = prepare(queues, subscriptions.keys(), previous)
    plan: dict[ConsumerT, list[QueueT]] = empty_plan(group.consumers)
    partitions_of = topic_partitions(group.queues)
    subscribers: dict[Hashable, list[ConsumerT]] = {}
    chosen = checked_subscriptions(group.consumers, subscriptions, partitions_of)
    for consumer, topics in chosen.items():
        for topic in topics:
            subscribers.setdefault(topic, []).append(consumer)
    for topic, members in subscribers.items():
        _deal_ranges(partitions_of[topic], members, plan)
    for owned in plan.values():
        owned.sort()
    return plan


def _deal_ranges(
    partitions: Sequence[QueueT], members: Sequence[ConsumerT], plan: dict[ConsumerT, list[QueueT]]
) -> None:
    """One topic: n div m consecutive partitions to each member in order, one more to the
    first n mod m of them (Kafka's addPartitionsToAssignment)."""
    base, extra = divmod(len(partitions), len(members))
    start = 0
    for index, member in enumerate(members):
        end = start + base + (1 if index < extra else 0)
        plan[member].extend(partitions[start:end])
        start = end
