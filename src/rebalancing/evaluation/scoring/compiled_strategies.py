"""Compiled twins of strategies, for the scoring core's integer groups: the same plans as the
strategy's own `assign`, computed with numba from the arrays the compiled scores already hold.

The strategy's module stays the definition. A twin runs only where the scoring core counts
compiled (`engine="kernel"`), for the registry's very function (a caller's own function, even
one named like it, runs as given), on a group of plain int queue ids (`IntegerGroup.plain`)
whose previous plan the compiled scores read (`Owners`: its consumer's number per queue id)
and holds plain ints too (sticky keeps a previous plan's own objects, True or an IntEnum
member, where the group's queue equals them; a twin gives back ints), with no placement
inputs. Anywhere else the strategy's `assign` runs. The twin gives its plan
both as lists and as positions in the group's sorted queues (ProtocolRun.positions' form), so
the compiled scores take it without reading the lists back.
tests/evaluation/test_compiled_strategies.py holds each twin to its strategy's reference on
thousands of seeded groups, and the scoring core's rows with twins to those without.

Why: in the harness the previous plan is already an array of owners and the queues an array
of ids, so sticky's three steps are three passes over arrays, where its Python reference
builds a set of the kept queues and a list per consumer (about 70 µs a call on the
harness's default groups, 14% of a worker's time; issue 35); averagely's twin needs no kernel,
only its blocks' bounds, and saves the scores reading its plan back. The consistent-hashing
twins run the strategies' own ring and placement, but hash each consumer set's ring and each
queue once a run instead of at every call (issue 40: their hashing was 85% of the tutorial
profile's scoring time).
Runtime complexity: sticky's O(|Q| log |C| + |C| log |C| + number of consumer numbers),
averagely's O(|Q| + |C|), the consistent-hashing ones' their strategies' without the hashing.
Timing: a twin's call is never timed; on a seeded sample of the steps the strategy's own
`assign` runs instead and is timed (rebalancing.evaluation.scoring.replay.TIMED_EVERY), so a
row's `assign_micros` is the strategy's own call or None.
Needs numba and numpy (the spark and dev extras); compiled on first use, cached on disk.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from itertools import accumulate, chain, repeat
from typing import Any

import numpy as np
from numba import njit

from rebalancing.evaluation.scoring.compiled_scores import NO_OWNER, IntegerGroup, Owners
from rebalancing.strategies import STRATEGIES
from rebalancing.strategies.consistent_hash import DEFAULT_VIRTUAL_NODES, md5_hash

Twin = Callable[[IntegerGroup, Owners, int], tuple[dict[Any, list[Any]], tuple[Any, Any]]]
"""(the group, its previous plan's owners, how many consumer numbers the scenario has given)
-> (the plan, its positions: each consumer's queues as positions in the group's sorted queues,
consumer after consumer in id order, and where each consumer's run starts, |C| + 1 entries)."""


@njit(cache=True)
def _sticky_positions(
    queue_ids: Any, consumer_numbers: Any, owner_before: Any, number_count: int
) -> tuple[Any, Any]:
    """rebalancing.strategies.sticky's three steps over positions in the sorted queues:
    quotas (|Q| div |C|, one more for the |Q| mod |C| consumers that can keep the most, ties
    lowest id), keep (each consumer its previous queues still here, lowest first, up to its
    quota), hand out (each free queue in order to the consumer with the fewest, ties lowest
    id: a binary heap keyed by count x |C| + index). Returns (positions grouped by consumer,
    each group ascending; where each group starts)."""
    queue_count = queue_ids.shape[0]
    consumer_count = consumer_numbers.shape[0]
    index_of = np.full(number_count, -1, dtype=np.int64)  # consumer number -> index in the group
    for index in range(consumer_count):
        index_of[consumer_numbers[index]] = index
    before_bound = owner_before.shape[0]
    holder = np.full(queue_count, -1, dtype=np.int64)  # per position: its keeper, if any
    keepable = np.zeros(consumer_count, dtype=np.int64)
    for position in range(queue_count):
        queue = queue_ids[position]
        if queue < before_bound:
            number = owner_before[queue]
            if number != NO_OWNER and index_of[number] >= 0:
                holder[position] = index_of[number]
                keepable[index_of[number]] += 1
    base = queue_count // consumer_count
    extra = queue_count % consumer_count
    quota = np.full(consumer_count, base, dtype=np.int64)
    if extra:  # a stable sort: equal counts stay in id order, as sticky._quotas keeps them
        most_keepable_first = np.argsort(-keepable, kind="mergesort")
        for rank in range(extra):
            quota[most_keepable_first[rank]] += 1
    owner = np.full(queue_count, -1, dtype=np.int64)
    counts = np.zeros(consumer_count, dtype=np.int64)
    for position in range(queue_count):
        index = holder[position]
        if index >= 0 and counts[index] < quota[index]:
            owner[position] = index
            counts[index] += 1
    # the heap of (count, index) as count x |C| + index: the smallest is the fewest, lowest id
    heap = np.empty(consumer_count, dtype=np.int64)
    for index in range(consumer_count):
        heap[index] = counts[index] * consumer_count + index
    heap.sort()  # a sorted array is a heap
    for position in range(queue_count):
        if owner[position] >= 0:
            continue
        index = heap[0] % consumer_count
        owner[position] = index
        heap[0] += consumer_count  # one more queue: sift the root down
        _sift_down(heap, 0)
    starts = np.zeros(consumer_count + 1, dtype=np.int64)
    for position in range(queue_count):
        starts[owner[position] + 1] += 1
    for index in range(consumer_count):
        starts[index + 1] += starts[index]
    grouped = np.empty(queue_count, dtype=np.int64)
    filled = starts[:consumer_count].copy()
    for position in range(queue_count):
        index = owner[position]
        grouped[filled[index]] = position
        filled[index] += 1
    return grouped, starts


@njit(cache=True)
def _sift_down(heap: Any, root: int) -> None:
    """Restore the min-heap order of `heap` below `root`, whose key grew."""
    size = heap.shape[0]
    key = heap[root]
    while True:
        child = 2 * root + 1
        if child >= size:
            break
        if child + 1 < size and heap[child + 1] < heap[child]:
            child += 1
        if heap[child] >= key:
            break
        heap[root] = heap[child]
        root = child
    heap[root] = key


def sticky_twin(
    group: IntegerGroup, previous: Owners, number_count: int
) -> tuple[dict[Any, list[Any]], tuple[Any, Any]]:
    """sticky.assign's plan for `group` from the plan `previous` holds (see `Twin`)."""
    grouped, starts = _sticky_positions(
        group.queue_ids, group.consumer_numbers, previous.by_queue, number_count
    )
    return _plan_of_grouped(group, grouped, starts)


def averagely_twin(
    group: IntegerGroup, previous: Owners, number_count: int
) -> tuple[dict[Any, list[Any]], tuple[Any, Any]]:
    """averagely.assign's plan for `group` (it ignores `previous`): consumer i of n takes the
    i-th block of the sorted queues, the first |Q| mod n blocks one queue longer (RocketMQ's
    formula; with fewer queues than consumers, the first |Q| take one each). The positions are
    0 .. |Q| - 1 in order, so no kernel is needed: only the blocks' bounds."""
    queue_count, consumer_count = group.queue_ids.shape[0], len(group.consumers)
    base, remainder = divmod(queue_count, consumer_count)
    sizes = chain(repeat(base + 1, remainder), repeat(base, consumer_count - remainder))
    bounds = list(accumulate(sizes, initial=0))
    queues = list(group.queues)  # the ids themselves: no int made per queue
    plan = {
        consumer: queues[start:end]
        for consumer, start, end in zip(group.consumers, bounds, bounds[1:], strict=False)
    }
    positions = np.arange(queue_count, dtype=np.int64), np.array(bounds, dtype=np.int64)
    return plan, positions


RINGS_CACHED = 4096
"""Rings (one per set of consumers) the consistent-hashing twins keep, least recently used out."""

MEMBERS_CACHED = 1 << 16
"""Consumers whose virtual nodes' ring positions the consistent-hashing twins keep."""

QUEUE_HASHES_CACHED = 4096
"""Queue sets whose ring positions the consistent-hashing twins keep."""


@lru_cache(maxsize=MEMBERS_CACHED)
def _points_of(name: str) -> tuple[int, ...]:
    """The ring positions of a consumer's virtual nodes (keys f"{name}-{replica}", MD5Hash),
    replicas ascending: a consumer stays in its scenario's group over most of its changes."""
    return tuple(md5_hash(f"{name}-{replica}") for replica in range(DEFAULT_VIRTUAL_NODES))


@lru_cache(maxsize=RINGS_CACHED)
def _default_ring(names: tuple[str, ...]) -> tuple[Any, Any]:
    """consistent_hash's ring (build_ring with its defaults: 10 virtual nodes, MD5Hash) of the
    sorted consumers whose str forms are `names` (the ring depends on nothing else), as arrays:
    its points ascending and each one's consumer index; of equal points the greatest index
    stays, as build_ring's tie rule says."""
    positions = np.array([point for name in names for point in _points_of(name)], dtype=np.int64)
    indices = np.repeat(np.arange(len(names), dtype=np.int64), DEFAULT_VIRTUAL_NODES)
    order = np.lexsort((indices, positions))  # by position, then by consumer index
    positions, indices = positions[order], indices[order]
    last_of_equals = np.append(positions[1:] != positions[:-1], True)
    return positions[last_of_equals], indices[last_of_equals]


@lru_cache(maxsize=QUEUE_HASHES_CACHED)
def _queue_positions(queues: tuple[int, ...]) -> Any:
    """The queues' ring positions as consistent_hash computes them (MD5Hash of str(queue)), as
    an array: a scenario's queues stay the same over most of its steps."""
    return np.array([md5_hash(str(queue)) for queue in queues], dtype=np.int64)


@njit(cache=True)
def _ring_owners(points: Any, point_owners: Any, positions: Any) -> Any:
    """consistent_hash's routing (Ring.owner_indices): each position's consumer is that of the
    first point at or after it, else of the lowest point."""
    owners = np.empty(positions.shape[0], dtype=np.int64)
    firsts = np.searchsorted(points, positions)  # side="left": bisect_left
    for index in range(positions.shape[0]):
        point = firsts[index]
        owners[index] = point_owners[point if point < points.shape[0] else 0]
    return owners


@njit(cache=True)
def _bounded_owners(points: Any, point_owners: Any, positions: Any, consumer_count: int) -> Any:
    """bounded_consistent_hash.place_with_bounded_loads over arrays, loop for loop: queues in
    (position, id) order, each to the first open point at or after its own (a "next open point"
    union-find with path compression, wrapping round), else to the first consumer without a
    point that is not full; a consumer closes at the larger quota, and every one at the smaller
    quota once the larger quota is used up."""
    queue_count = positions.shape[0]
    smaller_quota = queue_count // consumer_count
    larger_quota_count = queue_count % consumer_count
    point_count = points.shape[0]
    counts = np.zeros(consumer_count, dtype=np.int64)
    full = np.zeros(consumer_count, dtype=np.bool_)
    has_point = np.zeros(consumer_count, dtype=np.bool_)
    for point in range(point_count):
        has_point[point_owners[point]] = True
    without_points = np.empty(consumer_count, dtype=np.int64)
    without_count = 0
    for consumer in range(consumer_count):
        if not has_point[consumer]:
            without_points[without_count] = consumer
            without_count += 1
    next_without_points = 0
    points_of, points_start = _grouped_by_owner(point_owners, consumer_count)
    next_open = np.arange(point_count + 1)
    at_larger_quota = 0
    owners = np.zeros(queue_count, dtype=np.int64)
    order = np.argsort(positions, kind="mergesort")  # stable: ties by id
    ring_points = np.searchsorted(points, positions)
    for queue_index in order:
        point = _first_open(next_open, ring_points[queue_index])
        if point == point_count:  # past the highest point: wrap round
            point = _first_open(next_open, 0)
        if point < point_count:
            consumer = point_owners[point]
        else:  # every consumer on the ring is full
            while full[without_points[next_without_points]]:
                next_without_points += 1
            consumer = without_points[next_without_points]
        owners[queue_index] = consumer
        counts[consumer] += 1
        if counts[consumer] == smaller_quota + 1:
            _close(full, next_open, points_of, points_start, consumer)
            at_larger_quota += 1
            if at_larger_quota == larger_quota_count:  # the larger quota is used up
                for other in range(consumer_count):
                    if not full[other] and counts[other] == smaller_quota:
                        _close(full, next_open, points_of, points_start, other)
        elif counts[consumer] == smaller_quota and at_larger_quota == larger_quota_count:
            _close(full, next_open, points_of, points_start, consumer)
    return owners


@njit(cache=True)
def _first_open(next_open: Any, point: int) -> int:
    """place_with_bounded_loads' first_open: the root of `point`, compressing the path."""
    root = point
    while next_open[root] != root:
        root = next_open[root]
    while next_open[point] != root:
        following = next_open[point]
        next_open[point] = root
        point = following
    return root


@njit(cache=True)
def _close(full: Any, next_open: Any, points_of: Any, points_start: Any, consumer: int) -> None:
    """place_with_bounded_loads' close: the consumer is full, each of its points links on
    (its points: points_of[points_start[consumer]:points_start[consumer + 1]])."""
    full[consumer] = True
    for point in points_of[points_start[consumer] : points_start[consumer + 1]]:
        next_open[point] = point + 1


@njit(cache=True)
def _grouped_by_owner(owners: Any, consumer_count: int) -> tuple[Any, Any]:
    """(positions grouped by consumer, each group ascending; where each group starts): a
    counting sort of the positions 0 .. |Q| - 1 by their consumer index."""
    starts = np.zeros(consumer_count + 1, dtype=np.int64)
    for position in range(owners.shape[0]):
        starts[owners[position] + 1] += 1
    for index in range(consumer_count):
        starts[index + 1] += starts[index]
    grouped = np.empty(owners.shape[0], dtype=np.int64)
    filled = starts[:consumer_count].copy()
    for position in range(owners.shape[0]):
        index = owners[position]
        grouped[filled[index]] = position
        filled[index] += 1
    return grouped, starts


def _plan_of_grouped(
    group: IntegerGroup, grouped: Any, starts: Any
) -> tuple[dict[Any, list[Any]], tuple[Any, Any]]:
    """The plan of positions grouped by consumer, with those positions (see `Twin`)."""
    queues = group.queue_ids[grouped].tolist()
    bounds = starts.tolist()
    plan = {
        consumer: queues[start:end]
        for consumer, start, end in zip(group.consumers, bounds, bounds[1:], strict=False)
    }
    return plan, (grouped, starts)


def consistent_hash_twin(
    group: IntegerGroup, previous: Owners, number_count: int
) -> tuple[dict[Any, list[Any]], tuple[Any, Any]]:
    """consistent_hash.assign's plan for `group` (it ignores `previous`): its ring and routing,
    with each consumer set's ring and each queue set's hashes computed once a run rather than
    at every call (hashing was about 90% of the strategy's time on the tutorial's profile)."""
    points, point_owners = _default_ring(tuple(map(str, group.consumers)))
    positions = _queue_positions(tuple(group.queues))
    owners = _ring_owners(points, point_owners, positions)
    return _plan_of_grouped(group, *_grouped_by_owner(owners, len(group.consumers)))


def bounded_consistent_hash_twin(
    group: IntegerGroup, previous: Owners, number_count: int
) -> tuple[dict[Any, list[Any]], tuple[Any, Any]]:
    """bounded_consistent_hash.assign's plan for `group` (it ignores `previous`): its placement
    compiled, on the cached ring and hashes of `consistent_hash_twin`."""
    points, point_owners = _default_ring(tuple(map(str, group.consumers)))
    positions = _queue_positions(tuple(group.queues))
    owners = _bounded_owners(points, point_owners, positions, len(group.consumers))
    return _plan_of_grouped(group, *_grouped_by_owner(owners, len(group.consumers)))


_TWIN_OF_NAME: dict[str, Twin] = {
    "sticky": sticky_twin,
    "averagely": averagely_twin,
    "consistent_hash": consistent_hash_twin,
    "bounded_consistent_hash": bounded_consistent_hash_twin,
}

TWINS: dict[Callable[..., Any], Twin] = {
    STRATEGIES[name].assign: _TWIN_OF_NAME[name]
    for name, strategy in STRATEGIES.items()
    if strategy.compiled_twin
}
"""A registered strategy's `assign` -> its compiled twin: those the registry marks
`compiled_twin` (the verdict reads the same mark), each of which must have one here."""


def twin_of(assign: Callable[..., Any]) -> Twin | None:
    """The compiled twin of this very function, or None (a callable that cannot be hashed has
    none)."""
    try:
        return TWINS.get(assign)
    except TypeError:
        return None
