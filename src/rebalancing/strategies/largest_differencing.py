"""Karmarkar and Karp's largest differencing method (LDM) for m-way number partitioning: queue
weights (lag, bytes/s) split into |C| parts of sums as equal as it can make them.

Origin: N. Karmarkar, R. M. Karp, "The differencing method of set partitioning", Technical
Report UCB/CSD 82/113, University of California, Berkeley, 1982; the m-way form as described by
R. E. Korf, "Multi-way number partitioning", IJCAI 2009, and analysed by W. Michiels, J. Korst,
E. Aarts, J. van Leeuwen, "Performance ratios for the Karmarkar-Karp differencing method",
Electronic Notes in Discrete Mathematics 13, 2003. On random weights it leaves much smaller
differences than LPT (`lag_greedy`).

Each queue starts as a partial partition: |C| subsets, one holding the queue. While more than
one partial partition is left, the two whose largest and smallest subset sums differ most are
combined (ties: the one made first), the heaviest subset of one with the lightest of the other,
and so on down, so that their differences cancel. The last one's subsets go to the consumers:
the heaviest subset (ties: the one holding the lowest queue id) to the lowest consumer id, and
so on. Combining never widens the larger of the two differences, and a single queue's
difference is its weight, so (`bounded_load`) the most-loaded consumer carries at most the
least-loaded one's load plus the heaviest weight <= mean + heaviest. Consumers are treated
alike: it does not read capacities. Without weights every queue weighs 1 (balanced counts).
Ignores `previous` (apart from checking it).
Runtime complexity: O(|Q| log |Q| + |Q| |C| log |C|): |Q| - 1 combinations, each sorting
|C| subsets.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from itertools import count as counter
from typing import Any

from rebalancing.contract import ConsumerT, QueueT, empty_plan, prepare
from rebalancing.placement import check_placement

_Subset = tuple[float, int, Any]
"""(sum of weights, lowest queue position in it or |Q| when empty, its queue positions as
nested pairs): nesting makes a combination O(1) per subset, flattened once at the end."""


def assign(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
    *,
    weights: Mapping[QueueT, float] | None = None,
) -> dict[ConsumerT, list[QueueT]]:
    """Split the queues into |C| parts of near-equal weight by largest differencing."""
    group = prepare(queues, consumers, previous)
    placement = check_placement(group, weights=weights)
    plan: dict[ConsumerT, list[QueueT]] = empty_plan(group.consumers)
    if not group.consumers or not group.queues:
        return plan
    parts = len(group.consumers)
    empty: _Subset = (0.0, len(group.queues), None)
    made = counter()
    # (-difference, creation number, subsets heaviest first)
    heap: list[tuple[float, int, list[_Subset]]] = []
    for position, queue in enumerate(group.queues):
        weight = placement.weight(queue)
        subsets = [(weight, position, position)] + [empty] * (parts - 1)
        heap.append((-weight, next(made), subsets))
    heapq.heapify(heap)
    while len(heap) > 1:
        _, _, first = heapq.heappop(heap)
        _, _, second = heapq.heappop(heap)
        combined = [
            _joined(heavy, light) for heavy, light in zip(first, reversed(second), strict=True)
        ]
        combined.sort(key=_heaviest_first)
        heapq.heappush(heap, (combined[-1][0] - combined[0][0], next(made), combined))
    _, _, final = heap[0]
    for owned, subset in zip(plan.values(), final, strict=True):
        owned.extend(group.queues[position] for position in sorted(_positions(subset[2])))
    return plan


def _heaviest_first(subset: _Subset) -> tuple[float, int]:
    return (-subset[0], subset[1])


def _joined(one: _Subset, other: _Subset) -> _Subset:
    if one[2] is None:
        return other
    if other[2] is None:
        return one
    return (one[0] + other[0], min(one[1], other[1]), (one[2], other[2]))


def _positions(nested: Any) -> list[int]:
    """The queue positions of a subset's nested pairs (iteratively: nesting can be deep)."""
    found: list[int] = []
    stack = [nested]
    while stack:
        item = stack.pop()
        if item is None:
            continue
        if type(item) is tuple:
            stack.extend(item)
        else:
            found.append(item)
    return found
