"""Kafka's server-side `uniform` assignor (KIP-848, group.protocol=consumer), for a group whose
members all subscribe to the same topics: its homogeneous builder.

Origin: apache/kafka `group-coordinator/src/main/java/org/apache/kafka/coordinator/group/
assignor/UniformAssignor.java` and `UniformHomogeneousAssignmentBuilder.java`, with their tests
(`OptimizedUniformAssignmentBuilderTest`), read at commit 1eb7644349cb07139d6a3c1ad1986979647cac99
(trunk, version 4.0.0-SNAPSHOT, 25 October 2024: the snapshot read holds no 4.x release tag;
the homogeneous builder there does what it does at tag 3.9.0-rc3, where only helpers moved,
while the heterogeneous builder was reworked after 3.9 by KAFKA-17710). The facts carry over;
the code is ours. The broker runs it (it is the first, default entry of
`group.consumer.assignors`; a consumer picks it with `group.remote.assignor=uniform`).

The algorithm, with m members and n partitions of the subscribed topics:

1. Quotas: n div m each; the first n mod m members (in member order) get one more, whatever
   they held before.
2. Keep: each member walks what it held of the subscribed topics (topic after topic) and keeps
   the first `quota` partitions; the rest are revoked, appended after the partitions nobody
   held (those in topic order, then partition order).
3. Hand out: the members below quota, in member order, each take the next partitions of that
   list until their quota is met.

Balance comes first (counts differ by at most one), then stickiness: a member never both loses a
partition and gains one, and one that held no more than n div m keeps all of it. The stickiness
is not the best balance allows: the larger quotas go by member order, not to the members that
held more (sticky's `_quotas` does), so a member holding n div m + 1 after a change may lose one
that another member then receives.

Kafka reads three orders from Java hash sets and maps: the members (the group's member map), the
subscribed topics (a HashSet of topic ids) and each member's topics and partitions (its
assignment map). Which member gets the larger quota, which partition a member over quota keeps
and who receives which freed partition depend on them, so Kafka's plan is fixed only up to
those orders (its own tests pin them with sorted member maps and insertion-ordered assignments,
or assert balance alone). Here every order is the ids' sorted order: members by id, topics by
first appearance among the sorted queues (= sorted topic ids), partitions ascending (which is
also what a Java HashSet of small partition numbers gives). `homogeneous_plan` takes the orders
as arguments, so the tests can also hold it to Kafka's exact expected plans under the orders
Kafka's run had.

Topics: a queue id that is a tuple of two or more items is `(topic, ...)`, as Kafka's
`(topic, partition)`; every other id is in one topic (rebalancing.strategies.
kafka_subscriptions). In `assign` every member subscribes to every topic of `queues` (the
contract has no per-member subscriptions). `assign_subscribed` takes them, and with differing
subscriptions runs Kafka's `UniformHeterogeneousAssignmentBuilder` (uniform_heterogeneous): it
keeps every still-subscribed partition whatever the quotas, deals the free ones topic by topic
to the least-loaded subscribers, then moves partitions from the most to the least loaded
subscribers of each topic, so it balances each topic's subscribers rather than filling global
quotas (and, with overlapping subscriptions, may stop short of balance). Not rack-aware at
this commit (KAFKA-16694, May 2024, removed rack awareness from the server-side assignors): zones
are not read.
Runtime complexity: O(|Q| log |Q| + |C| log |C|) (the contract's sorts and each member's held
partitions sorted), O(|Q| + |C|) after them; `assign_subscribed` with differing subscriptions,
uniform_heterogeneous's.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from itertools import chain, islice
from typing import Any

from rebalancing.contract import ConsumerT, QueueT, prepare
from rebalancing.strategies.kafka_subscriptions import checked_subscriptions, topic_partitions
from rebalancing.strategies.rack_aware_range import topic_of
from rebalancing.strategies.uniform_heterogeneous import heterogeneous_plan


def assign(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
) -> dict[ConsumerT, list[QueueT]]:
    """Kafka's uniform assignor for a group whose members all subscribe to every topic of
    `queues`, with every order Kafka reads from a hash set taken as the ids' sorted order."""
    group = prepare(queues, consumers, previous)
    if not group.consumers:
        return {}
    held = group.kept_queues
    return homogeneous_plan(
        list(topic_partitions(group.queues).values()),
        group.consumers,
        {consumer: sorted(held[consumer]) for consumer in group.consumers if consumer in held},
    )


def assign_subscribed(
    queues: Iterable[QueueT],
    subscriptions: Mapping[ConsumerT, Iterable[Hashable]],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
) -> dict[ConsumerT, list[QueueT]]:
    """Kafka's uniform assignor with per-member subscriptions (member -> topics; rules:
    rebalancing.strategies.kafka_subscriptions): the homogeneous builder when every member
    subscribes to the same topics, else the heterogeneous one (uniform_heterogeneous), as
    Kafka's UniformAssignor chooses. What a member held of a topic it no longer subscribes to is
    taken away; the queues of a topic nobody subscribes to stay unassigned, as in Kafka."""
    group = prepare(queues, subscriptions.keys(), previous)
    all_topics = topic_partitions(group.queues)
    chosen = checked_subscriptions(group.consumers, subscriptions, all_topics)
    held = group.kept_queues
    if len({frozenset(topics) for topics in chosen.values()}) > 1:
        plan = heterogeneous_plan(all_topics, group.consumers, chosen, held)
        return {consumer: plan[consumer] for consumer in group.consumers}
    subscribed = set(next(iter(chosen.values()), ()))
    return homogeneous_plan(
        [partitions for topic, partitions in all_topics.items() if topic in subscribed],
        group.consumers,
        {
            consumer: sorted(q for q in held[consumer] if topic_of(q) in subscribed)
            for consumer in group.consumers
            if consumer in held
        },
    )


def homogeneous_plan(
    topics: Sequence[Sequence[QueueT]],
    members: Sequence[ConsumerT],
    held: Mapping[ConsumerT, Sequence[QueueT]],
) -> dict[ConsumerT, list[QueueT]]:
    """Kafka's homogeneous uniform builder over explicit orders: `topics` lists each subscribed
    topic's partitions (topics, then partitions, in the order Kafka would iterate them),
    `members` the members in Kafka's member order, `held` each member's partitions from its
    previous assignment that are still there and whose owner is still a member, in the order
    Kafka would read them (topic after topic). Returns each member's partitions, sorted.
    `assign` passes sorted orders; the tests pass the orders of Kafka's own test runs."""
    if not members:
        return {}
    queue_count = sum(map(len, topics))
    base, extra = divmod(queue_count, len(members))
    held_somewhere = set(chain.from_iterable(held.values()))
    unassigned = [q for q in chain.from_iterable(topics) if q not in held_somewhere]
    kept: dict[ConsumerT, list[QueueT]] = {}
    room: list[tuple[ConsumerT, int]] = []  # members below quota, in member order
    for index, member in enumerate(members):
        quota = base + 1 if index < extra else base
        owned = list(held.get(member, ()))
        kept[member] = owned[:quota]
        unassigned += owned[quota:]
        if len(owned) < quota:
            room.append((member, quota - len(owned)))
    free = iter(unassigned)
    for member, wanted in room:
        kept[member] += islice(free, wanted)
    leftover = next(free, _NOTHING_LEFT)
    if leftover is not _NOTHING_LEFT:  # cannot happen when `held` is what the docstring says
        raise ValueError(f"partition {leftover!r} was left unassigned: held is inconsistent")
    for owned in kept.values():
        owned.sort()
    return kept


_NOTHING_LEFT: Any = object()
