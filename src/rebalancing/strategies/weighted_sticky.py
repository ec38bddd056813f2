"""Loads within a stated bound, then keep previous pairs: sticky assignment by weight (lag,
bytes/s) rather than by count.

Origin: this project, after the sticky rebalancing of RocketMQ's report and Kafka's
StickyAssignor (balance first, then stickiness), with load in place of count; the free queues
are placed by the LPT rule of `lag_greedy` (Graham 1969).

Fair share of consumer c: capacity(c) x total weight / total capacity.
0. A previous plan of this very group (the same consumers, every queue held by one of them)
   that keeps the promise below is kept whole: applied to its own plan with nothing changed,
   the strategy moves nothing. Without this rule the hand-out below can leave a consumer above
   its fair share, and step 1 would then move a queue although nothing had changed (the
   harness's stability score caught it).
1. Keep: each consumer (any order: they do not interact) keeps its previous queues still here,
   heaviest first (ties: lowest id), each one that still fits within its fair share (first fit
   decreasing: a queue that does not fit is skipped, lighter ones may still fit).
2. Hand out: the other queues, heaviest first (ties: lowest id), each to the consumer with the
   least load / capacity, ties broken by fewest queues, then lowest id.

Promise (`bounded_load`): every consumer's load / capacity <= total weight / total capacity +
heaviest weight / smallest capacity: kept load stays within the fair share, and each handed-out
queue goes to a consumer at or below the average. Without weights every queue weighs 1, so the
bound says counts <= mean + 1. A consumer's kept load only ever moves when keeping it would
exceed its fair share, or it left.
Runtime complexity: O(|Q| log |Q| + |Q| log |C|).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from rebalancing.contract import ConsumerT, QueueT, empty_plan, prepare
from rebalancing.placement import check_placement
from rebalancing.strategies.lag_greedy import place_heaviest_first


def assign(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
    *,
    weights: Mapping[QueueT, float] | None = None,
    capacities: Mapping[ConsumerT, float] | None = None,
) -> dict[ConsumerT, list[QueueT]]:
    """Keep previous queues within each consumer's fair share of the load, then place the rest
    heaviest first on the least-loaded consumer."""
    group = prepare(queues, consumers, previous)
    placement = check_placement(group, weights=weights, capacities=capacities)
    plan: dict[ConsumerT, list[QueueT]] = empty_plan(group.consumers)
    if not group.consumers:
        return plan
    weight = placement.weight
    capacity = [placement.capacity(consumer) for consumer in group.consumers]
    total_weight = sum(map(weight, group.queues))
    total_capacity = sum(capacity)
    kept_queues = group.kept_queues
    if _keeps_its_promise(group.consumers, group.queues, kept_queues, capacity, weight):
        for consumer, owned in plan.items():
            owned.extend(sorted(kept_queues.get(consumer, ())))
        return plan
    owned_lists = list(plan.values())
    load = [0.0] * len(capacity)
    kept: set[QueueT] = set()
    for index, consumer in enumerate(group.consumers):
        share = capacity[index] * (total_weight / total_capacity)  # no product past a float
        for queue in sorted(kept_queues.get(consumer, ()), key=lambda q: (-weight(q), q)):
            if load[index] + weight(queue) <= share:
                owned_lists[index].append(queue)
                load[index] += weight(queue)
                kept.add(queue)
    free = [queue for queue in group.queues if queue not in kept]
    place_heaviest_first(free, owned_lists, load, capacity, weight)
    for owned in owned_lists:
        owned.sort()
    return plan


def _keeps_its_promise(
    consumers: Sequence[ConsumerT],
    queues: Sequence[QueueT],
    kept_queues: Mapping[ConsumerT, Iterable[QueueT]],
    capacity: list[float],
    weight: Callable[[QueueT], float],
) -> bool:
    """Whether the previous plan (what each consumer of the group kept) is a plan of this very
    group, every consumer in it and every queue held, each consumer's load / capacity within
    heaviest weight / smallest capacity of the average, above and below. The strategy's own
    plans are: a queue is kept or handed out only to a consumer below its share (so none ends
    above the band), and all are handed to the least loaded (so none ends below it)."""
    if len(kept_queues) != len(consumers) or not queues:
        return False
    held = [list(kept_queues.get(consumer, ())) for consumer in consumers]
    if sum(map(len, held)) != len(queues):
        return False
    average = sum(map(weight, queues)) / sum(capacity)
    band = max(map(weight, queues)) / min(capacity) * (1 + 1e-9) + 1e-12 * average
    return all(
        abs(sum(map(weight, owned)) / share - average) <= band
        for owned, share in zip(held, capacity, strict=True)
    )
