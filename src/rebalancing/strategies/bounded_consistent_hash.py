"""Consistent hashing with bounded loads (Mirrokni, Thorup and Zadimoghaddam, "Consistent Hashing
with Bounded Loads", 2016/SODA 2018), with the tightest bound: counts differ by at most one.

The ring is consistent_hash's (RocketMQ's virtual nodes, MD5Hash and tie rule). A consumer has
room below |Q| div |C| + 1 queues until |Q| mod |C| consumers hold that many, and below
|Q| div |C| from then on: so no consumer ends above ceil(|Q| / |C|), exactly |Q| mod |C| end
with |Q| div |C| + 1, and the counts differ by at most one. Queues are placed one at a time in a
fixed order, by hash and then by id: a queue goes to the consumer of its ring point (the first
point at or after its hash) when that consumer has room, and otherwise walks on clockwise to the
first point whose consumer has room. A consumer whose virtual nodes all lost ties (equal hashes,
see consistent_hash) has no point; such consumers are reached, in id order, once every consumer
on the ring is full. Nothing of `previous` is kept (it is only checked): the plan depends on the
sets of queues and consumers alone, yet most queues stay put when the group changes, because
most ring owners stay the same and the order of placement does not change.

No anchor (Kafka, RocketMQ, RabbitMQ) ships this strategy; the paper's algorithm with
c = 1 + epsilon is here with the capacity ceil(|Q| / |C|) and the count at it capped as well.

Skipping full consumers: once a consumer is full its points are closed, and the first open point
at or after a position is found with a "next open point" union-find over the ring (path
compression), so walks do not step over the closed points one by one.
Runtime complexity: O(|Q| log |Q| + |C| v log(|C| v) + (|Q| + |C| v) log(|C| v)) in the worst
case (v = virtual_nodes), besides |C| v + |Q| hashes: each point is closed once, the consumers at
the smaller quota are swept once, and the |Q| lookups are amortised by path compression (close
to constant each in practice).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from rebalancing.contract import ConsumerT, QueueT, empty_plan, prepare
from rebalancing.strategies.consistent_hash import (
    DEFAULT_VIRTUAL_NODES,
    HashFunction,
    Ring,
    build_ring,
    check_ring_parameters,
    md5_hash,
    ring_positions,
)


@dataclass(frozen=True)
class BoundedConsistentHash:
    """Consistent hashing with tightly bounded loads and chosen ring parameters;
    `BoundedConsistentHash(...).assign` is a strategy. Parameters as for ConsistentHash."""

    virtual_nodes: int = DEFAULT_VIRTUAL_NODES
    hash_function: HashFunction = md5_hash

    def __post_init__(self) -> None:
        check_ring_parameters(self.virtual_nodes, self.hash_function)

    def assign(
        self,
        queues: Iterable[QueueT],
        consumers: Iterable[ConsumerT],
        previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
    ) -> dict[ConsumerT, list[QueueT]]:
        """Give each queue, in (hash, id) order, to the first consumer clockwise with room."""
        group = prepare(queues, consumers, previous)
        plan: dict[ConsumerT, list[QueueT]] = empty_plan(group.consumers)
        if not plan or not group.queues:
            return plan
        ring = build_ring(group.consumers, self.virtual_nodes, self.hash_function)
        positions = ring_positions(self.hash_function, map(str, group.queues))
        owner_indices = place_with_bounded_loads(ring, positions, len(group.consumers))
        owned_by_index = list(plan.values())
        for queue, owner_index in zip(group.queues, owner_indices, strict=True):
            owned_by_index[owner_index].append(queue)  # queues in sorted order: lists sorted
        return plan


def place_with_bounded_loads(ring: Ring, positions: list[int], consumer_count: int) -> list[int]:
    """The consumer index for each queue, given the queues' ring positions (in the order of the
    sorted queue ids, which breaks ties between equal positions)."""
    queue_count = len(positions)
    smaller_quota, larger_quota_count = divmod(queue_count, consumer_count)
    counts = [0] * consumer_count
    at_larger_quota = 0
    full = [False] * consumer_count
    point_count = len(ring.points)
    points_of: list[list[int]] = [[] for _ in range(consumer_count)]
    for point, owner in enumerate(ring.owners):
        points_of[owner].append(point)
    without_points = [index for index in range(consumer_count) if not points_of[index]]
    next_without_points = 0
    # next_open[p] == p: point p is open; else a point no further on than the first open one
    # at or after p. The sentinel point_count (past the highest point) is always "open".
    next_open = list(range(point_count + 1))

    def first_open(point: int) -> int:
        root = point
        while next_open[root] != root:
            root = next_open[root]
        while next_open[point] != root:  # path compression
            next_open[point], point = root, next_open[point]
        return root

    def close(consumer: int) -> None:
        full[consumer] = True
        for point in points_of[consumer]:
            next_open[point] = point + 1

    owners = [0] * queue_count
    placement_order = sorted(range(queue_count), key=positions.__getitem__)  # stable: ties by id
    ring_points = ring.first_points_at_or_after(positions)
    for queue_index in placement_order:
        point = first_open(ring_points[queue_index])
        if point == point_count:  # past the highest point: wrap round
            point = first_open(0)
        if point < point_count:
            consumer = ring.owners[point]
        else:  # every consumer on the ring is full
            while full[without_points[next_without_points]]:
                next_without_points += 1
            consumer = without_points[next_without_points]
        owners[queue_index] = consumer
        counts[consumer] += 1
        if counts[consumer] == smaller_quota + 1:
            close(consumer)
            at_larger_quota += 1
            if at_larger_quota == larger_quota_count:  # the larger quota is used up
                for other in range(consumer_count):
                    if not full[other] and counts[other] == smaller_quota:
                        close(other)
        elif counts[consumer] == smaller_quota and at_larger_quota == larger_quota_count:
            close(consumer)
    return owners


_DEFAULT = BoundedConsistentHash()


def assign(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
) -> dict[ConsumerT, list[QueueT]]:
    """Bounded-load consistent hashing with RocketMQ's ring defaults (10 virtual nodes, MD5)."""
    return _DEFAULT.assign(queues, consumers, previous)
