"""Kafka's StickyAssignor for a group whose members all subscribe to the same topics, with the
rack-aware rules of KIP-881 (Kafka 3.5+): balance first, then rack matching, then stickiness.

Origin: apache/kafka `clients/.../consumer/internals/AbstractStickyAssignor.java`
(`ConstrainedAssignmentBuilder`, `RackInfo`) and its tests (`AbstractStickyAssignorTest.
testRackAwareAssignmentWithUniformSubscription`, `StickyAssignorTest`), read at commit
1eb7644349cb07139d6a3c1ad1986979647cac99 (trunk, 4.0.0-SNAPSHOT, October 2024). The facts
carry over; the code is ours. (The adapter plans members with different subscriptions one
topic at a time; Kafka's GeneralAssignmentBuilder for that case is not reproduced.)

Quotas: |Q| div |C| each (min), |Q| mod |C| consumers get one more (max). Rack matching is on
when some consumer has a zone, some of those zones hold replicas, and not every queue has
replicas in the same zones (Kafka's useRackAwareAssignment).

1. Keep: consumer by consumer (sorted; Kafka walks its HashMap of members, so where members tie
   for the larger quotas its plan can differ from this one, as balanced and moving as few), its
   previous queues still here, without those whose replicas are not in its zone when rack
   matching is on (a consumer without a zone mismatches nothing), ordered by (partition, topic)
   for `(topic, partition)` ids (by id otherwise): fewer than min, keep all (the consumer is
   "under min"); max or more while fewer than |Q| mod |C| consumers got max, keep max; else keep
   min (and the consumer may still reach max: "at min").
2. Rack matching (when on): the free queues, sorted by id, then stably by how many consumers
   sit in their replicas' zones (fewest first); each goes to the next consumer under min whose
   zone holds it, round robin from where the last one was given; if none, to the first at-min
   consumer whose zone holds it. Queues no consumer matches stay free.
3. Round robin: the remaining free queues, in that order, go round the consumers under min
   (sorted), then one each to the at-min consumers, in order.

Counts differ by at most one; where balance allows, queues are read in their zone; then as
many previous pairs as those allow are kept (Kafka's stickiness is not the optimum that
`sticky` reaches: it keeps previous queues in order, not the best choice of them). Like Kafka's,
the plan is not always its own fixed point: a queue balance put outside its zones is released
at the next rebalance, changed or not, and dealt again by count (the harness's stability check
sees it; one rebalance later the plan settles).
Runtime complexity: O(|Q| log |Q| + |C| log |C|) without zones; with them, step 2 scans the
consumers under min for each free queue: O(|Q| x |C|) at most.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from rebalancing.contract import ConsumerT, QueueT, prepare
from rebalancing.placement import Placement, check_placement


def kafka_keep_order(queue: Any) -> tuple[Any, ...]:
    """Kafka keeps owned partitions in (partition, topic) order: this key gives that order for
    `(topic, int partition)` ids, and id order (after them) for any other id."""
    if type(queue) is tuple and len(queue) == 2 and type(queue[1]) is int:
        return (0, queue[1], queue[0])
    return (1, queue)


class _RackInfo:
    """Kafka's RackInfo: the zones, and how many consumers sit in each queue's replica zones."""

    def __init__(self, placement: Placement[Any, Any], queues: list[Any]) -> None:
        self.placement = placement
        consumers_in_zone: dict[Any, int] = {}
        for zone in placement.consumer_zone.values():
            consumers_in_zone[zone] = consumers_in_zone.get(zone, 0) + 1
        self.consumers_near: dict[Any, int] = {}
        self.on = False
        if consumers_in_zone:
            per_queue = [placement.zones_of(queue) for queue in queues]
            all_zones = frozenset().union(*per_queue)
            self.on = not all_zones.isdisjoint(consumers_in_zone) and any(
                zones != all_zones for zones in per_queue
            )
            self.consumers_near = {
                queue: sum(consumers_in_zone.get(zone, 0) for zone in zones)
                for queue, zones in zip(queues, per_queue, strict=True)
            }

    def mismatch(self, consumer: Any, queue: Any) -> bool:
        if not self.on:
            return False
        zone = self.placement.zone_of(consumer)
        return zone is not None and zone not in self.placement.zones_of(queue)

    def next_matching(self, queue: Any, consumers: list[Any], first: int) -> int:
        """Index of the first consumer of `consumers`, cyclically from `first`, whose zone
        holds `queue`; -1 when none does."""
        zones = self.placement.zones_of(queue)
        if not zones:
            return -1
        for step in range(len(consumers)):
            index = (first + step) % len(consumers)
            if self.placement.zone_of(consumers[index]) in zones:
                return index
        return -1


def assign(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
    *,
    consumer_zones: Mapping[ConsumerT, Any] | None = None,
    queue_zones: Mapping[QueueT, Collection[Any]] | None = None,
) -> dict[ConsumerT, list[QueueT]]:
    """Kafka's sticky assignment (uniform subscriptions), rack-aware when zones are given."""
    group = prepare(queues, consumers, previous)
    placement = check_placement(group, consumer_zones=consumer_zones, queue_zones=queue_zones)
    if not group.consumers:
        return {}
    racks = _RackInfo(placement, group.queues)
    minimum, over = divmod(len(group.queues), len(group.consumers))
    maximum = minimum + (1 if over else 0)
    plan: dict[ConsumerT, list[QueueT]] = {consumer: [] for consumer in group.consumers}
    under_min: list[ConsumerT] = []
    at_min: list[ConsumerT] = []
    got_max = 0
    kept_queues = group.kept_queues
    for consumer in group.consumers:
        owned = sorted(
            (q for q in kept_queues.get(consumer, ()) if not racks.mismatch(consumer, q)),
            key=kafka_keep_order,
        )
        if len(owned) < minimum:
            plan[consumer].extend(owned)
            under_min.append(consumer)
        elif len(owned) >= maximum and got_max < over:
            got_max += 1
            if got_max == over:
                at_min.clear()
            plan[consumer].extend(owned[:maximum])
        else:
            plan[consumer].extend(owned[:minimum])
            if got_max < over:
                at_min.append(consumer)
    taken = {queue for owned in plan.values() for queue in owned}
    free = [queue for queue in group.queues if queue not in taken]
    if racks.consumers_near:
        free.sort(key=lambda queue: racks.consumers_near.get(queue, 0))
    state = _Filling(plan, under_min, at_min, minimum, maximum, over, got_max)
    if racks.on:
        free = state.rack_matching_round_robin(free, racks)
    state.round_robin(free)
    for owned in plan.values():
        owned.sort()
    return plan


class _Filling:
    """Steps 2 and 3: the consumers still to fill and the counts that decide who may take
    more (Kafka's unfilled member lists)."""

    def __init__(
        self,
        plan: dict[Any, list[Any]],
        under_min: list[Any],
        at_min: list[Any],
        minimum: int,
        maximum: int,
        over: int,
        got_max: int,
    ) -> None:
        self.plan = plan
        self.under_min = under_min  # sorted: built in consumer order
        self.at_min = sorted(at_min)
        self.minimum, self.maximum, self.over, self.got_max = minimum, maximum, over, got_max

    def rack_matching_round_robin(self, free: list[Any], racks: _RackInfo) -> list[Any]:
        """Give each free queue to a consumer of its zone within the quotas; return the rest."""
        left: list[Any] = []
        next_index = 0
        for queue in free:
            chosen = None
            index = racks.next_matching(queue, self.under_min, next_index)
            if index >= 0:
                chosen = self.under_min[index]
                count = len(self.plan[chosen]) + 1
                if count >= self.minimum:
                    del self.under_min[index]
                    if count < self.maximum and self.got_max < self.over:
                        self.at_min.append(chosen)
                else:
                    index += 1
                next_index = index % len(self.under_min) if self.under_min else 0
            elif self.at_min:
                first = racks.next_matching(queue, self.at_min, 0)
                if first >= 0:
                    chosen = self.at_min[first]
                    if len(self.plan[chosen]) + 1 == self.maximum:
                        del self.at_min[first]
                        self.got_max += 1
                        if self.got_max == self.over:
                            self.at_min.clear()
            if chosen is None:
                left.append(queue)
            else:
                self.plan[chosen].append(queue)
        return left

    def round_robin(self, free: list[Any]) -> None:
        """Deal `free` round the consumers under min, then to the at-min ones, one each."""
        position = 0  # Kafka's iterator over the consumers under min
        for queue in free:
            if position < len(self.under_min):
                chosen = self.under_min[position]
                position += 1
            elif not self.under_min and not self.at_min:
                raise RuntimeError(f"no consumer left to take queue {queue!r}: a bug")
            elif not self.under_min:
                chosen = self.at_min.pop(0)
            else:
                position = 1
                chosen = self.under_min[0]
            self.plan[chosen].append(queue)
            count = len(self.plan[chosen])
            if count == self.minimum:
                position -= 1
                del self.under_min[position]
                self.at_min.append(chosen)
            elif count == self.maximum:
                self.got_max += 1
