"""Balance first, then keep previous pairs: the sticky rebalancing of RocketMQ's Summer of Code
report (../shared/seeds/rocketmq-sticky-rebalancing.txt), in the spirit of Kafka's StickyAssignor.

1. Quotas: every consumer gets |Q| div |C|; the |Q| mod |C| larger quotas go to the consumers
   that can keep the most of their previous queues (ties: lowest id).
2. Keep: each consumer keeps its still-valid previous queues, the lowest ids first, up to its
   quota; what balance forbids is taken away.
3. Hand out: each free queue, in sorted order, goes to the consumer with the fewest queues
   (ties: lowest consumer id), exactly as the report's worked example does.

The result has counts that differ by at most one and keeps as many previous pairs as any
balanced assignment can. Step 3 needs no heap: the picks of "fewest first, then lowest id" come
in ascending (count, consumer) order, so the free queues are dealt level by level.
Runtime complexity: O(|Q| log |Q| + |C| log |C|) (the sorts), O(|Q| + |C|) after them.
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Iterable, Mapping

from rebalancing.contract import ConsumerT, QueueT, empty_plan, prepare


def assign(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
) -> dict[ConsumerT, list[QueueT]]:
    """Balanced assignment that keeps as many valid previous queue -> consumer pairs as it can."""
    group = prepare(queues, consumers, previous)
    plan: dict[ConsumerT, list[QueueT]] = empty_plan(group.consumers)
    if not plan:
        return plan
    keepable = dict.fromkeys(group.consumers, 0)
    for owner in group.kept_owner.values():
        keepable[owner] += 1
    quota = _quotas(keepable, len(group.queues))

    free: list[QueueT] = []
    for queue in group.queues:
        if queue in group.kept_owner:
            owner = group.kept_owner[queue]
            if len(plan[owner]) < quota[owner]:
                plan[owner].append(queue)
                continue
        free.append(queue)
    _hand_out_fewest_first(free, plan, group.consumers)
    for owned in plan.values():
        owned.sort()
    return plan


def _quotas(keepable: dict[ConsumerT, int], queue_count: int) -> dict[ConsumerT, int]:
    """Quota per consumer: |Q| div |C|, plus one for the |Q| mod |C| consumers that can keep
    the most of their previous queues (ties: lowest id; `keepable` is in ascending id order)."""
    base, extra = divmod(queue_count, len(keepable))
    by_most_keepable = sorted(keepable, key=lambda consumer: -keepable[consumer])  # stable
    larger = set(by_most_keepable[:extra])
    return {consumer: base + 1 if consumer in larger else base for consumer in keepable}


def _hand_out_fewest_first(
    free: list[QueueT], plan: dict[ConsumerT, list[QueueT]], consumers: list[ConsumerT]
) -> None:
    """Give each free queue in turn to the consumer with the fewest queues, ties lowest id.

    Consumers holding `level` queues take one each, in id order, then the level rises and the
    consumers that already held that many join in.
    """
    by_count = sorted(range(len(consumers)), key=lambda index: len(plan[consumers[index]]))
    taking: list[int] = []  # consumer indices at the current level, ascending
    next_waiting = 0
    handed = 0
    level = len(plan[consumers[by_count[0]]])
    while handed < len(free):
        while (
            next_waiting < len(by_count) and len(plan[consumers[by_count[next_waiting]]]) <= level
        ):
            insort(taking, by_count[next_waiting])
            next_waiting += 1
        for index in taking:
            if handed == len(free):
                break
            plan[consumers[index]].append(free[handed])
            handed += 1
        level += 1
