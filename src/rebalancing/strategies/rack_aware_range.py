"""Kafka's RangeAssignor with the rack-aware rules of KIP-881 (Kafka 3.5+), per topic.

Origin: apache/kafka `clients/.../consumer/RangeAssignor.java` and its tests
(`RangeAssignorTest`, `AbstractPartitionAssignorTest.useRackAwareAssignment`), read at commit
1eb7644349cb07139d6a3c1ad1986979647cac99 (trunk, 4.0.0-SNAPSHOT, October 2024). The facts
carry over; the code is ours.

Topics: a queue id that is a tuple of two or more items is `(topic, ...)`, as Kafka's
`(topic, partition)`; its topic is its first item. Every other id belongs to one topic (so with
ints or strings this is RocketMQ's averagely, zones aside). Within a topic the partitions come in
sorted order, the consumers in sorted order (Kafka: by group.instance.id, else member id: the
adapter passes that id).

Without zones, per topic: |P| div |C| partitions each, the first |P| mod |C| consumers one more,
in contiguous ranges. With zones (`consumer_zones`, `queue_zones`), Kafka's rules:

1. A topic needs rack matching when some consumer has a zone, some of those zones hold replicas
   of the topic, and not every partition of it has replicas in the same zones.
2. If any topic needs it, topics with the same number of partitions (all topics here share
   the same consumers) are co-partitioned: for each partition position p in turn, the first
   consumer (in order) whose zone holds partition p of every one of those topics, and who may
   take one more of each, gets all of them; a consumer that may take no more leaves the turn.
   A topic whose partition count no other topic shares, if it needs matching, is filled
   consumer by consumer: each takes the unassigned partitions it matches, in order, up to what
   it may still take.
3. Then every topic's remaining partitions are handed out the same way without the zone test.

"May take": quota |P| div |C|, plus one while fewer than |P| mod |C| consumers have gone over
the quota. A consumer without a zone matches every partition (Kafka's `racksMatch`); a queue
without replica zones matches only zone-less consumers. Balance per topic comes first
(counts per topic differ by at most one, as without zones), then rack matching, best effort.
Ignores `previous` (apart from checking it).
Runtime complexity: O(|Q| log |Q| + |C| log |C|) for the sorts, O(|Q| x |C|) at most for the
matching passes (each consumer scans its topics' unassigned partitions).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from itertools import groupby, islice
from typing import Any

from rebalancing.contract import ConsumerT, QueueT, empty_plan, prepare
from rebalancing.placement import Placement, check_placement


def topic_of(queue: Any) -> Any:
    """A queue's topic: the first item of a tuple id of two or more items, else None (every
    such id is in the one topic)."""
    if type(queue) is tuple and len(queue) >= 2:
        return queue[0]
    return None


class _TopicState:
    """One topic's partitions (sorted), what is left of them, and how many each consumer has:
    Kafka's TopicAssignmentState."""

    def __init__(self, partitions: list[Any], consumers: list[Any]) -> None:
        self.partitions = partitions
        self.unassigned = dict.fromkeys(partitions)  # ordered set
        self.counts = dict.fromkeys(consumers, 0)
        self.quota, self.remaining_extra = divmod(len(partitions), len(consumers))

    def may_take(self, consumer: Any) -> int:
        extra = 1 if self.remaining_extra > 0 else 0
        return max(0, self.quota + extra - self.counts[consumer])

    def give(self, consumer: Any, partitions: list[Any], plan: dict[Any, list[Any]]) -> None:
        plan[consumer].extend(partitions)
        self.counts[consumer] += len(partitions)
        if self.counts[consumer] > self.quota:
            self.remaining_extra -= 1
        for partition in partitions:
            del self.unassigned[partition]

    def fill(
        self,
        consumers: list[Any],
        plan: dict[Any, list[Any]],
        placement: Placement[Any, Any] | None,
    ) -> None:
        """Each consumer in turn takes the unassigned partitions it matches (all of them when
        `placement` is None), in order, up to what it may take."""
        for consumer in consumers:
            if not self.unassigned:
                return
            room = self.may_take(consumer)
            if room == 0:
                continue
            if placement is None:
                taken = list(islice(self.unassigned, room))
            else:
                taken = [p for p in self.unassigned if _matches(placement, consumer, p)][:room]
            if taken:
                self.give(consumer, taken, plan)


def _matches(placement: Placement[Any, Any], consumer: Any, partition: Any) -> bool:
    """Kafka's racksMatch: a consumer without a zone matches anything."""
    zone = placement.zone_of(consumer)
    return zone is None or zone in placement.zones_of(partition)


def _needs_rack_matching(placement: Placement[Any, Any], partitions: list[Any]) -> bool:
    """Kafka's useRackAwareAssignment for one topic (preferRackAwareLogic off)."""
    consumer_zones = set(placement.consumer_zone.values())
    if not consumer_zones:
        return False
    per_partition = [placement.zones_of(partition) for partition in partitions]
    all_zones = frozenset().union(*per_partition)
    if consumer_zones.isdisjoint(all_zones):
        return False
    return any(zones != all_zones for zones in per_partition)


def assign(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
    *,
    consumer_zones: Mapping[ConsumerT, Any] | None = None,
    queue_zones: Mapping[QueueT, Collection[Any]] | None = None,
) -> dict[ConsumerT, list[QueueT]]:
    """Kafka's range assignment per topic, rack-aware (KIP-881) when zones are given."""
    group = prepare(queues, consumers, previous)
    placement = check_placement(group, consumer_zones=consumer_zones, queue_zones=queue_zones)
    plan: dict[ConsumerT, list[QueueT]] = empty_plan(group.consumers)
    if not group.consumers:
        return plan
    states = [
        _TopicState(list(partitions), group.consumers)
        for _, partitions in groupby(group.queues, key=topic_of)
    ]
    needing = [_needs_rack_matching(placement, state.partitions) for state in states]
    if any(needing):
        by_count: dict[int, list[int]] = {}
        for index, state in enumerate(states):
            by_count.setdefault(len(state.partitions), []).append(index)
        for count, indices in by_count.items():
            if len(indices) > 1:
                chosen = [states[index] for index in indices]
                _co_partitioned(count, chosen, group.consumers, plan, placement)
            elif needing[indices[0]]:
                states[indices[0]].fill(group.consumers, plan, placement)
    for state in states:
        state.fill(group.consumers, plan, None)
    if any(needing):
        for owned in plan.values():
            owned.sort()
    return plan


def _co_partitioned(
    count: int,
    states: list[_TopicState],
    consumers: list[Any],
    plan: dict[Any, list[Any]],
    placement: Placement[Any, Any],
) -> None:
    """Kafka's assignCoPartitionedWithRackMatching: partition p of every topic of `states`
    to the first remaining consumer that matches all of them and may take one of each."""
    remaining = list(consumers)
    for position in range(count):
        chosen = next(
            (
                consumer
                for consumer in remaining
                if all(
                    _matches(placement, consumer, state.partitions[position])
                    and state.may_take(consumer) > 0
                    for state in states
                )
            ),
            None,
        )
        if chosen is None:
            continue
        for state in states:
            state.give(chosen, [state.partitions[position]], plan)
        if all(state.may_take(chosen) == 0 for state in states):
            remaining.remove(chosen)
            if not remaining:
                return
