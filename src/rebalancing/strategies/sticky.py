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

`reference_assign` runs the steps on the ids themselves: it is the definition. Strings and
tuples cost far more than ints to hash, compare and sort (a tuple's hash is computed again on
every look-up), so `assign` runs them on the queues' ranks instead (`assign_by_ranks`, ints
standing for the ids: each queue is hashed once to rank it, each previous queue once to look
it up, in an order close to the ranks', and the ids are read again only to write the plan, or
copied from previous with a list kept whole); int ids need no stand-in and take the
reference's path. A caller that keeps its group between rebalances keeps the ranks too
(`sticky_group.StickyGroup`). The refinement tests hold both to the definition's plans.
"""

from __future__ import annotations

import operator
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from itertools import chain, compress, filterfalse, islice, repeat
from typing import cast

from rebalancing.contract import ConsumerT, QueueT, SortedIds, empty_plan, prepare
from rebalancing.ranking import RankedGroup, prepare_ranked


def assign(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
) -> dict[ConsumerT, list[QueueT]]:
    """Balanced assignment that keeps as many valid previous queue -> consumer pairs as it can.

    Queue ids other than ints go to `assign_by_ranks`; int ids need no ranks to stand for them
    and go to `reference_assign` (so do the scoring core's, whose sorted ids and checked plans
    skip passes there). Both give the same plans."""
    if _int_ids(queues):
        return reference_assign(queues, consumers, previous)
    return assign_by_ranks(queues, consumers, previous)


def assign_by_ranks(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
) -> dict[ConsumerT, list[QueueT]]:
    """`reference_assign`'s plan, the steps run on the queues' ranks
    (`ranking.prepare_ranked`): ints hash, compare and sort at a fraction of the cost of
    strings or tuples, and each queue and each previous queue is hashed once. With nothing to
    keep, the ids are dealt out as they are."""
    group = prepare_ranked(queues, consumers, previous)
    if not group.consumers:
        return {}
    if not any(group.kept):  # every queue is free: step 3 alone, on the ids
        owned_lists: list[Sequence[QueueT]] = [()] * len(group.consumers)
        _hand_out_fewest_first(group.queues.ids, owned_lists)
        plan = dict(zip(group.consumers, owned_lists, strict=True))  # each one a new list,
        if all(owned_lists):
            return cast(dict[ConsumerT, list[QueueT]], plan)
        return {consumer: list(owned) for consumer, owned in plan.items()}  # or nothing: ()
    owned_ranks = assign_ranks(len(group.queues.ids), group.kept, group.unheld)
    return plan_of_ranks(group.consumers, owned_ranks, group.queues.ids, group)


def _int_ids(queues: Iterable[object]) -> bool:
    """Whether `queues` is a sequence (read without consuming it) whose first id is an int."""
    if type(queues) is range:
        return True
    return (
        (type(queues) is list or type(queues) is tuple or type(queues) is SortedIds)
        and len(queues) > 0
        and type(queues[0]) is int
    )


def assign_ranks(
    queue_count: int, kept: Sequence[Sequence[int]], unheld: list[int]
) -> list[Sequence[int]]:
    """The three steps on ranks 0 .. queue_count - 1: `kept` holds, for each consumer in id
    order, the ranks of its previous queues still here, ascending; `unheld` the other ranks,
    ascending (see `ranking.RankedGroup`). Returns each consumer's ranks, ascending: a
    sequence of `kept` that does not change is returned as it is, and none is changed (a
    caller may keep them). Consumer by consumer only where it must be: the lists over their
    quotas, and those handed queues."""
    keepable_counts = list(map(len, kept))
    quotas = _quotas(keepable_counts, queue_count)
    owned_lists = list(kept)
    taken_away: list[int] = []
    for index in compress(range(len(quotas)), map(operator.gt, keepable_counts, quotas)):
        owned, quota = owned_lists[index], quotas[index]
        owned_lists[index] = owned[:quota]  # the lowest ranks, up to the quota
        taken_away += owned[quota:]
    free = sorted(unheld + taken_away) if taken_away else unheld
    if free:
        _hand_out_fewest_first(free, owned_lists)
    return owned_lists


def plan_of_ranks(
    consumers: list[ConsumerT],
    owned_ranks: list[Sequence[int]],
    ids: list[QueueT],
    group: RankedGroup[QueueT, ConsumerT] | None = None,
) -> dict[ConsumerT, list[QueueT]]:
    """The plan: each consumer (in id order) with the ids of its ranks. A consumer that keeps
    its previous list whole (`owned_ranks` holds the very list of `group.kept`, whose ids
    `group.kept_ids` has) gets a copy of those ids; a long list of ranks is read by one
    `itemgetter` (its loop over the ranks is C's, where `map` calls `ids.__getitem__` once
    per rank: a third less time at a million queues), a short one by `map`, which makes one
    object for the cyclic collector where `itemgetter` makes three (with 10,000 lists of ten,
    those collections cost more than the calls save)."""
    plan: dict[ConsumerT, list[QueueT]] = empty_plan(consumers)
    id_of = ids.__getitem__
    if group is None or not group.kept_ids:  # no test per consumer: 10,000 lists of ten
        for owned, ranks in zip(plan.values(), owned_ranks, strict=True):
            owned.extend(
                map(id_of, ranks)
                if len(ranks) < ITEMGETTER_FROM
                else operator.itemgetter(*ranks)(ids)
            )
        return plan
    lists = zip(plan.values(), owned_ranks, group.kept, group.kept_ids, strict=True)
    for owned, ranks, kept_ranks, ids_of_kept in lists:
        if ranks is kept_ranks and ids_of_kept is not None:
            owned.extend(ids_of_kept)
        else:
            owned.extend(
                map(id_of, ranks)
                if len(ranks) < ITEMGETTER_FROM
                else operator.itemgetter(*ranks)(ids)
            )
    return plan


ITEMGETTER_FROM = 32
"""The fewest ranks that `plan_of_ranks` reads with an `itemgetter` rather than `map`."""


def reference_assign(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
) -> dict[ConsumerT, list[QueueT]]:
    """The definition: the three steps on the ids themselves, as the report states them.
    `assign` must give the very same plans (tests/strategies/test_sticky_refinement.py)."""
    group = prepare(queues, consumers, previous)
    if not group.consumers:
        return {}
    # consumer by consumer, in id order: its previous queues still here, then what it keeps of
    # them: the lowest ids, up to its quota (each list new and ascending)
    keepable = list(map(group.kept_queues.get, group.consumers, repeat(())))
    quotas = _quotas(list(map(len, keepable)), len(group.queues))
    owned_lists: list[Sequence[QueueT]] = [
        sorted(owned)[:quota] for owned, quota in zip(keepable, quotas, strict=True)
    ]
    kept = set(chain.from_iterable(owned_lists))
    free = list(filterfalse(kept.__contains__, group.queues)) if kept else group.queues
    if free:
        _hand_out_fewest_first(free, owned_lists)
    plan = dict(zip(group.consumers, owned_lists, strict=True))
    return cast(dict[ConsumerT, list[QueueT]], plan)  # lists: sorted() and the hand-out's


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


def _hand_out_fewest_first(free: list[QueueT], owned_lists: list[Sequence[QueueT]]) -> None:
    """Give each free queue in turn to the consumer with the fewest queues, ties lowest id
    (`owned_lists` is in consumer id order).

    Consumers holding `level` queues take one each, in id order, then the level rises and the
    consumers that already held that many join in. While no one joins, the same consumers take
    turns: consumer number k of the m taking gets every m-th queue of that stretch from the
    k-th on, one slice; the stretch ends where the next consumer joins or the queues run out.
    Each list that receives queues is replaced by a new, ascending one (the given ones must
    be ascending); the others are left as they are.
    """
    counts = list(map(len, owned_lists))
    by_count = sorted(range(len(counts)), key=counts.__getitem__)  # stable: ties in id order
    counts_by_count = list(map(counts.__getitem__, by_count))  # ascending
    taking: list[int] = []  # indices of the consumers taking turns, ascending
    joined = handed = 0
    level = counts_by_count[0]
    while handed < len(free):
        joining = bisect_right(counts_by_count, level, joined)  # all who hold `level` or fewer
        taking += by_count[joined:joining]
        joined = joining
        taking.sort()
        width = len(taking)
        if joined < len(by_count):  # deal up to the level where the next consumer joins in
            next_level = counts_by_count[joined]
            end = min(len(free), handed + (next_level - level) * width)
            level = next_level
        else:
            end = len(free)
        for position, index in enumerate(islice(taking, end - handed)):  # those who get some
            owned, received = owned_lists[index], free[handed + position : end : width]
            if owned:  # a new list: those of `owned_lists` may be kept by the caller
                received = [*owned, *received]
                if free[handed + position] < owned[-1]:  # two ascending runs, merged
                    received.sort()
            owned_lists[index] = received
        handed = end
