"""RocketMQ's machine-room strategies: `AllocateMachineRoomNearby` around any inner strategy, and
`AllocateMessageQueueByMachineRoom`. A machine room is a zone.

Origin: apache/rocketmq `client/.../consumer/rebalance/AllocateMachineRoomNearby.java` and
`AllocateMessageQueueByMachineRoom.java` with its test (`AllocateMessageQueueByMachineRoomTest`);
facts carry over, the code is ours. RocketMQ computes one consumer's share; here the plan of
every consumer at once, which is the union of their shares. Both are classes whose instances
are assign functions (picklable, so every process can rebuild them).

**Nearby** (`Nearby(inner)`, registered around averagely as `machine_room_nearby` and around
lag_greedy as `machine_room_nearby_lag`): queues of a room that has consumers go only to that
room's consumers, planned by `inner` among them; queues of rooms without consumers go to every
consumer, planned by `inner` among all (RocketMQ: "no alive consumer to monopolize them").
RocketMQ's queue lives on one broker, so in one room; a queue whose replicas are in several
rooms here goes to the consumers of all those rooms that have any. RocketMQ refuses a queue or a
consumer without a room; here a queue without a zone is shared by everyone, and a consumer
without a zone takes only shared queues. Each group of queues (by the set of rooms it goes to)
is planned by `inner` on its own, with `previous` (already checked) passed on, and `weights` and
`capacities` when given (the inner must then accept them). Balanced within each room when
`inner` is; not across rooms. Runtime complexity: O(|Q| log |Q| + |C| log |C|) plus `inner`'s
cost on each group.

**By machine room** (`ByMachineRoom(rooms)`, registered with rooms=None as
`by_machine_room`): RocketMQ's consumers read only the queues of the rooms they are configured
for (`consumeridcs`); those, in sorted order, are dealt over every consumer (sorted), wherever
it runs: consumer i of n gets the i-th block of |Q| div n and, if i < |Q| mod n, also the queue
at n x (|Q| div n) + i. RocketMQ leaves the other rooms' queues to other groups; the contract
has every queue read, so here they are dealt the same way, after. `rooms=None`: the rooms where
the group has consumers. It filters by room, it does not match consumers to rooms. Ignores
`previous` (apart from checking it). Runtime complexity: O(|Q| log |Q| + |C| log |C|).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rebalancing.contract import ConsumerT, QueueT, empty_plan, prepare
from rebalancing.placement import check_placement


@dataclass(frozen=True)
class Nearby:
    """RocketMQ's AllocateMachineRoomNearby around `inner`, a strategy's assign function
    (a module-level function or a Strategy, so that the instance pickles)."""

    inner: Callable[..., dict[Any, list[Any]]]

    def __call__(
        self,
        queues: Iterable[QueueT],
        consumers: Iterable[ConsumerT],
        previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
        *,
        consumer_zones: Mapping[ConsumerT, Any] | None = None,
        queue_zones: Mapping[QueueT, Collection[Any]] | None = None,
        weights: Mapping[QueueT, float] | None = None,
        capacities: Mapping[ConsumerT, float] | None = None,
    ) -> dict[ConsumerT, list[QueueT]]:
        """Each room's queues to its consumers, the queues nobody is near to everyone."""
        group = prepare(queues, consumers, previous)
        placement = check_placement(
            group,
            consumer_zones=consumer_zones,
            queue_zones=queue_zones,
            weights=weights,
            capacities=capacities,
        )
        plan: dict[ConsumerT, list[QueueT]] = empty_plan(group.consumers)
        if not group.consumers:
            return plan
        consumers_in: dict[Any, list[ConsumerT]] = {}
        for consumer in group.consumers:  # sorted, so each room's list is too
            zone = placement.zone_of(consumer)
            if zone is not None:
                consumers_in.setdefault(zone, []).append(consumer)
        queues_for: dict[tuple[Any, ...], list[QueueT]] = {}
        for queue in group.queues:
            held = placement.zones_of(queue)
            near = tuple(zone for zone in placement.zones if zone in held and zone in consumers_in)
            queues_for.setdefault(near, []).append(queue)
        extra: dict[str, Any] = {}
        if weights is not None:
            extra["weights"] = weights
        if capacities is not None:
            extra["capacities"] = capacities
        for rooms, room_queues in queues_for.items():
            readers = (
                sorted(consumer for room in rooms for consumer in consumers_in[room])
                if rooms
                else group.consumers
            )
            planned = self.inner(room_queues, readers, group.previous, **extra)
            for consumer, owned in planned.items():
                plan[consumer].extend(owned)
        if len(queues_for) > 1:
            for owned in plan.values():
                owned.sort()
        return plan


@dataclass(frozen=True)
class ByMachineRoom:
    """RocketMQ's AllocateMessageQueueByMachineRoom for the rooms `rooms` (None: the rooms where
    the group has consumers), every other queue dealt after (see the module docstring)."""

    rooms: frozenset[Any] | None = None

    def __post_init__(self) -> None:
        if self.rooms is not None:
            if isinstance(self.rooms, str | bytes) or not isinstance(self.rooms, Collection):
                raise TypeError(f"rooms must be a collection of zones or None, not {self.rooms!r}")
            object.__setattr__(self, "rooms", frozenset(self.rooms))

    def __call__(
        self,
        queues: Iterable[QueueT],
        consumers: Iterable[ConsumerT],
        previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
        *,
        consumer_zones: Mapping[ConsumerT, Any] | None = None,
        queue_zones: Mapping[QueueT, Collection[Any]] | None = None,
    ) -> dict[ConsumerT, list[QueueT]]:
        """The rooms' queues dealt over every consumer, then the others the same way."""
        group = prepare(queues, consumers, previous)
        placement = check_placement(group, consumer_zones=consumer_zones, queue_zones=queue_zones)
        plan: dict[ConsumerT, list[QueueT]] = empty_plan(group.consumers)
        if not group.consumers:
            return plan
        read = self.rooms if self.rooms is not None else frozenset(placement.consumer_zone.values())
        in_rooms = [
            queue for queue in group.queues if not read.isdisjoint(placement.zones_of(queue))
        ]
        chosen = set(in_rooms)
        others = (
            [queue for queue in group.queues if queue not in chosen] if chosen else group.queues
        )
        owned_lists = list(plan.values())
        for dealt in (in_rooms, others):
            _deal_blocks_then_remainder(dealt, owned_lists)
        if chosen:
            for owned in owned_lists:
                owned.sort()
        return plan


def _deal_blocks_then_remainder(queues: list[Any], owned_lists: list[list[Any]]) -> None:
    """RocketMQ's ByMachineRoom split: consumer i gets queues[i*mod : i*mod + mod], plus
    queues[i + mod*n] when i < |queues| mod n."""
    count = len(owned_lists)
    block, remainder = divmod(len(queues), count)
    for index, owned in enumerate(owned_lists):
        owned.extend(queues[index * block : index * block + block])
        if index < remainder:
            owned.append(queues[index + block * count])
