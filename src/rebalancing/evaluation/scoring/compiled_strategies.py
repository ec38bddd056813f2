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
only its blocks' bounds, and saves the scores reading its plan back.
Runtime complexity: sticky's O(|Q| log |C| + |C| log |C| + number of consumer numbers),
averagely's O(|Q| + |C|).
Timing: a row's `assign_micros` is the twin's call, plan lists included.
Needs numba and numpy (the spark and dev extras); compiled on first use, cached on disk.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import accumulate, chain, repeat
from typing import Any

import numpy as np
from numba import njit

from rebalancing.evaluation.scoring.compiled_scores import NO_OWNER, IntegerGroup, Owners
from rebalancing.strategies import STRATEGIES

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
    queues = group.queue_ids[grouped].tolist()
    bounds = starts.tolist()
    plan = {
        consumer: queues[start:end]
        for consumer, start, end in zip(group.consumers, bounds, bounds[1:], strict=False)
    }
    return plan, (grouped, starts)


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


_TWIN_OF_NAME: dict[str, Twin] = {"sticky": sticky_twin, "averagely": averagely_twin}

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
