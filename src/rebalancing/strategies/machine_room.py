"""RocketMQ's machine-room strategies: `AllocateMachineRoomNearby` around any inner strategy, and
`AllocateMessageQueueByMachineRoom`. A machine room is a zone.

Origin: apache/rocketmq `client/.../consumer/rebalance/AllocateMachineRoomNearby.java` and
`AllocateMessageQueueByMachineRoom.java` with its test (`AllocateMessageQueueByMachineRoomTest`);
facts carry over, the code is ours. RocketMQ computes one consumer's share; here the plan of
every consumer at once, which is the union of their shares. Both are classes whose instances
are assign functions (picklable, so every process can rebuild them).

**Nearby** (`Nearby(inner)`, registered around averagely as `machine_room_nearby` and around
lag_greedy as `machine_room_nearby_lag`), RocketMQ's plan: the queues of a room that has
consumers go only to that room's consumers, planned by `inner` among them; the queues of each
room without consumers go to every consumer ("no alive consumer to monopolize them"), planned
by `inner` among all, **room by room**, as RocketMQ's loop over those rooms calls its inner
strategy once per room: rooms A and B of one queue each, no consumer in either, consumers x and
y: around averagely x gets both. (Pooling those rooms' queues into one plan, as a first version
did, would give one each: more even, but not RocketMQ's plan.)
RocketMQ's queue lives on one broker, so in one room; here a queue's replicas may be in several
rooms. One near several rooms with consumers is given to one of them, the room whose consumers
hold the least so far per head (weight, or count without weights; per unit of capacity with
capacities), after every queue of one room is counted, in queue order, ties to the first room in
zone order: so each room has one plan, and the rooms' loads stay close. (Planning each set of
rooms on its own, as a first version did, stacked every set's extra queue on the same first
consumer.) A queue near every room with consumers is near all of them alike: such queues are
planned among all those consumers together, so zones that tell nothing change nothing. A queue
whose rooms all lack consumers counts in the first of them (zone order). RocketMQ refuses a
queue or a consumer without a room; here the queues without a zone are shared by everyone (one
more plan among every consumer) and a consumer without a zone takes only queues no room with
consumers is near. Each plan is made by `inner` on its own, with `previous` (already checked)
passed on, and `weights` and `capacities` when given (the inner must then accept them).
Balance: each plan is balanced when `inner` is (a room's own queues among its consumers, each
room without consumers among everyone), their sum is not, as in RocketMQ: every plan gives its
extra queues to the same first consumers, so two consumers of one room can differ by one queue
per plan they share (around averagely, room a1, a2 with one queue of their room and one queue of
a room without consumers: a1 gets both). Nor are the rooms balanced against each other.
Runtime complexity: O(|Q| x rooms + |Q| log |Q| + |C| log |C|) plus `inner`'s cost on each
plan.

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
from rebalancing.placement import Placement, check_placement


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
        """Each room's queues to its consumers; each room without consumers, and the queues
        without a zone, to everyone, one plan each."""
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
        queues_for = _rooms_for(group.queues, placement, consumers_in)
        extra: dict[str, Any] = {}
        if weights is not None:
            extra["weights"] = weights
        if capacities is not None:
            extra["capacities"] = capacities
        for room, room_queues in queues_for.items():
            if room is _EVERY_ROOM:
                readers = sorted(
                    consumer for room in consumers_in for consumer in consumers_in[room]
                )
            elif room is not _SHARED and room in consumers_in:
                readers = consumers_in[room]
            else:  # a room without consumers, or the queues without a zone
                readers = group.consumers
            planned = self.inner(room_queues, readers, group.previous, **extra)
            for consumer, owned in planned.items():
                plan[consumer].extend(owned)
        if len(queues_for) > 1:
            for owned in plan.values():
                owned.sort()
        return plan


_SHARED = object()
"""The key of the queues without a zone: planned among every consumer."""
_EVERY_ROOM = object()
"""The key of the queues near every room that has consumers: planned among all of them."""


def _rooms_for(
    queues: list[Any], placement: Placement[Any, Any], consumers_in: Mapping[Any, list[Any]]
) -> dict[Any, list[Any]]:
    """The queues of each plan, by key: a room with consumers (its queues, and those near it and
    other such rooms that it holds the least of per unit of its consumers' capacity so far:
    single-room queues counted first, then the others in the order given, ties to the first
    room in zone order), _EVERY_ROOM, a room without consumers (the queues whose first zone
    it is, none of their zones having consumers), or _SHARED (the queues without a zone)."""
    rooms: dict[Any, list[Any]] = {}
    held = dict.fromkeys(consumers_in, 0.0)
    contested: list[tuple[Any, list[Any]]] = []
    for queue in queues:
        zones = placement.zones_of(queue)
        near = [zone for zone in placement.zones if zone in zones and zone in consumers_in]
        if len(near) == 1:
            rooms.setdefault(near[0], []).append(queue)
            held[near[0]] += placement.weight(queue)
        elif near and len(near) == len(consumers_in):
            rooms.setdefault(_EVERY_ROOM, []).append(queue)
        elif near:
            contested.append((queue, near))
        elif zones:  # RocketMQ: a room without consumers, planned on its own among everyone
            first = next(zone for zone in placement.zones if zone in zones)
            rooms.setdefault(first, []).append(queue)
        else:
            rooms.setdefault(_SHARED, []).append(queue)
    capacity = {
        room: sum(map(placement.capacity, members)) for room, members in consumers_in.items()
    }
    for queue, near in contested:
        room = min(near, key=lambda zone: held[zone] / capacity[zone])
        rooms.setdefault(room, []).append(queue)
        held[room] += placement.weight(queue)
    return rooms


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
