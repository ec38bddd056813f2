"""Balance first, then keep previous pairs: the sticky rebalancing of RocketMQ's Summer of Code
report ("Apache RocketMQ rebalancing architecture optimization"), in the spirit of Kafka's
StickyAssignor.

1. Quotas: every consumer gets |Q| div |C|; the |Q| mod |C| larger quotas go to the consumers
   that can keep the most of their previous queues (ties: lowest id).
2. Keep: each consumer keeps its still-valid previous queues, the lowest ids first, up to its
   quota; what balance forbids is taken away.
3. Hand out: each free queue, in sorted order, goes to the consumer with the fewest queues
   (ties: lowest consumer id), exactly as the report's worked example does.

The result has counts that differ by at most one and keeps as many previous pairs as any
balanced assignment can. Every step works consumer by consumer on whole lists (slices, sorts,
set lookups at C speed), never queue by queue in Python: step 3 needs no heap, because the picks
of "fewest first, then lowest id" come in ascending (count, consumer) order, so between two
counts that some consumer starts from, the free queues are dealt round the same consumers, and
each one's share is one slice with a step.
Runtime complexity: O(|Q| log |Q| + |C| log |C|) (the sorts), O(|Q| + |C| x distinct counts)
after them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import chain, filterfalse, repeat

from rebalancing.contract import ConsumerT, QueueT, prepare


def assign(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
) -> dict[ConsumerT, list[QueueT]]:
    """Balanced assignment that keeps as many valid previous queue -> consumer pairs as it can."""
    group = prepare(queues, consumers, previous)
    if not group.consumers:
        return {}
    # consumer by consumer, in id order: its previous queues still here, then what it keeps of
    # them: the lowest ids, up to its quota (each list new and ascending)
    keepable = list(map(group.kept_queues.get, group.consumers, repeat(())))
    quotas = _quotas(list(map(len, keepable)), len(group.queues))
    owned_lists = [sorted(owned)[:quota] for owned, quota in zip(keepable, quotas, strict=True)]
    kept = set(chain.from_iterable(owned_lists))
    free = list(filterfalse(kept.__contains__, group.queues)) if kept else group.queues
    if free:
        _hand_out_fewest_first(free, owned_lists)
        if kept:  # kept queues, then handed-out ones: two ascending runs, merged
            for owned in owned_lists:
                owned.sort()
    return dict(zip(group.consumers, owned_lists, strict=True))


def _quotas(keepable_counts: list[int], queue_count: int) -> list[int]:
    """Quota per consumer (in id order): |Q| div |C|, plus one for the |Q| mod |C| consumers
    that can keep the most of their previous queues (ties: lowest id)."""
    base, extra = divmod(queue_count, len(keepable_counts))
    quotas = [base] * len(keepable_counts)
    if extra:
        # a stable sort, reversed stably too: equal counts stay in id order
        most_keepable_first = sorted(
            range(len(keepable_counts)), key=keepable_counts.__getitem__, reverse=True
        )
        for index in most_keepable_first[:extra]:
            quotas[index] = base + 1
    return quotas


def _hand_out_fewest_first(free: list[QueueT], owned_lists: list[list[QueueT]]) -> None:
    """Give each free queue in turn to the consumer with the fewest queues, ties lowest id
    (`owned_lists` is in consumer id order).

    Consumers holding `level` queues take one each, in id order, then the level rises and the
    consumers that already held that many join in. While no one joins, the same consumers take
    turns: consumer number k of the m taking gets every m-th queue of that stretch from the
    k-th on, one slice; the stretch ends where the next consumer joins or the queues run out.
    """
    counts = list(map(len, owned_lists))
    by_count = sorted(range(len(counts)), key=counts.__getitem__)  # stable: ties in id order
    taking: list[int] = []  # indices of the consumers taking turns, ascending
    joined = handed = 0
    level = counts[by_count[0]]
    while handed < len(free):
        while joined < len(by_count) and counts[by_count[joined]] <= level:
            taking.append(by_count[joined])
            joined += 1
        taking.sort()
        width = len(taking)
        if joined < len(by_count):  # deal up to the level where the next consumer joins in
            next_level = counts[by_count[joined]]
            end = min(len(free), handed + (next_level - level) * width)
            level = next_level
        else:
            end = len(free)
        for position, index in enumerate(taking):
            owned_lists[index].extend(free[handed + position : end : width])
        handed = end
