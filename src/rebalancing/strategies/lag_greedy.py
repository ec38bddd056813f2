"""Largest weight first to the least-loaded consumer: Graham's LPT rule (longest processing time
first) with queue weights (lag, bytes/s) as the jobs and consumers as the machines.

Origin: R. L. Graham, "Bounds on multiprocessing timing anomalies", SIAM J. Appl. Math. 17(2),
1969: on identical machines LPT's makespan is at most (4/3 - 1/(3m)) times the optimum. The
lag-based assignors proposed for Kafka (KAFKA-5337's LagAwareAssignor, kafka-lag-based-assignor)
order partitions by lag the same way. With capacities (uniform machines), the least-loaded
consumer is the one with the least load / capacity (Gonzalez, Ibarra, Sahni, SIAM J. Comput.
6(1), 1977, LPT on uniform processors).

Queues in decreasing weight (ties: lowest id), each to the consumer with the least load /
capacity, ties broken by fewest queues, then lowest id (so queues of weight 0, or no weights at
all, are dealt round the consumers). Without weights every queue weighs 1: balanced counts.
Promise (`bounded_load`): every consumer's load / capacity <= total weight / total capacity +
heaviest weight / smallest capacity, since each queue goes to a consumer at or below the
average. Ignores `previous` (apart from checking it).
Runtime complexity: O(|Q| log |Q| + |Q| log |C|) (a heap of consumers).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping

from rebalancing.contract import ConsumerT, QueueT, empty_plan, prepare
from rebalancing.placement import check_placement


def assign(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
    *,
    weights: Mapping[QueueT, float] | None = None,
    capacities: Mapping[ConsumerT, float] | None = None,
) -> dict[ConsumerT, list[QueueT]]:
    """Heaviest queue first, each to the consumer with the least load / capacity."""
    group = prepare(queues, consumers, previous)
    placement = check_placement(group, weights=weights, capacities=capacities)
    plan: dict[ConsumerT, list[QueueT]] = empty_plan(group.consumers)
    if not group.consumers:
        return plan
    owned_lists = list(plan.values())
    capacity = [placement.capacity(consumer) for consumer in group.consumers]
    place_heaviest_first(
        group.queues, owned_lists, [0.0] * len(capacity), capacity, placement.weight
    )
    for owned in owned_lists:
        owned.sort()
    return plan


def place_heaviest_first(
    queues: list[QueueT],
    owned_lists: list[list[QueueT]],
    load: list[float],
    capacity: list[float],
    weight: Callable[[QueueT], float],
) -> None:
    """Append `queues` (in id order) to `owned_lists`, heaviest first (ties: lowest id), each
    to the consumer with the least load / capacity, then fewest queues, then lowest index;
    `load` (per consumer, in the lists' order) is updated as they go."""
    # (load / capacity, queue count, consumer index): the least-loaded consumer on top
    heap = [
        (load[index] / capacity[index], len(owned_lists[index]), index)
        for index in range(len(capacity))
    ]
    heapq.heapify(heap)
    for queue in sorted(queues, key=lambda queue: -weight(queue)):  # stable: ties in id order
        _, count, index = heapq.heappop(heap)
        owned_lists[index].append(queue)
        load[index] += weight(queue)
        heapq.heappush(heap, (load[index] / capacity[index], count + 1, index))
