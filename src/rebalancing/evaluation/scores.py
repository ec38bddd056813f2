"""The scores of one rebalance, exactly as ../shared/DESIGN.md defines them.

Given the queues Q and consumers C after a change, the plan A (consumer -> queues) a strategy
returned and the previous assignment P (consumer -> queues, before the change):

- balance degree: population standard deviation of the per-consumer counts over all of C
  (consumers without queues count as 0), sqrt(1/N * sum((x_i - mu)^2)); None when C is empty.
- stickiness: |{q in Q : q in P and A[q] == P[q]}| / |Q|; None when P or Q is empty.
- optimal stickiness: the most any assignment with spread <= 1 can keep, computed from counts
  alone (`optimal_kept`), sharing no code with any strategy; stickiness gap = optimal - achieved.
- moves: queues whose consumer changed although their previous consumer is still in C;
  revocations: every queue of P still in Q whose consumer changed.
- spread: max count - min count over C; orphans: queues of Q nobody holds; duplicates: queues
  held more than once; unknown queues / consumers: plan entries outside Q / C.

Neither the plan nor P is trusted: every score is computed from what they actually say, so a
broken strategy shows up as orphans, duplicates or unknown ids instead of an exception, and so
does the next step, whose P is that broken plan (a queue P lists under several consumers counts
as held by the first of them, in P's order).
Runtime complexity: O(|Q| + |C| + size of P).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import repeat
from typing import Any

_NOBODY = object()
"""Stands for 'no holder', distinct from every consumer id (None included)."""


@dataclass(frozen=True)
class Scores:
    """Every score of one rebalance (see the module docstring for the definitions)."""

    balance_degree: float | None
    spread: int | None
    stickiness: float | None
    optimal_stickiness: float | None
    stickiness_gap: float | None
    kept: int
    moves: int
    revocations: int
    orphans: int
    duplicates: int
    unknown_queues: int
    unknown_consumers: int


def balance_degree(counts: Iterable[int]) -> float | None:
    """Population standard deviation of per-consumer queue counts; None for no consumers."""
    values = list(counts)
    if not values:
        return None
    mean = sum(values) / len(values)
    return math.sqrt(sum((value - mean) ** 2 for value in values) / len(values))


def optimal_kept(
    queues: Iterable[Any], consumers: Iterable[Any], previous_owner: Mapping[Any, Any]
) -> int:
    """How many previous pairs the stickiest balanced assignment keeps.

    Each of the |C| consumers holds base = |Q| div |C| queues or one more, exactly
    extra = |Q| mod |C| of them one more. Consumer i can keep at most keepable_i (its previous
    queues still in Q) and at most its quota, and an extra place helps only a consumer whose
    keepable_i exceeds base. Every such bound is reached together, so the optimum is
    sum(min(keepable_i, base)) + min(extra, #{i : keepable_i > base}).
    """
    queue_set = set(queues)
    keepable = dict.fromkeys(consumers, 0)
    if not keepable:
        return 0
    for queue, owner in previous_owner.items():
        if queue in queue_set and owner in keepable:
            keepable[owner] += 1
    base, extra = divmod(len(queue_set), len(keepable))
    above_base = sum(1 for count in keepable.values() if count > base)
    return sum(min(count, base) for count in keepable.values()) + min(extra, above_base)


def first_owners(previous: Mapping[Any, Iterable[Any]] | None) -> dict[Any, Any]:
    """queue -> consumer of `previous`, without judging it: a queue listed more than once
    counts as held by its first holder in `previous`' order."""
    owner: dict[Any, Any] = {}
    for consumer, owned in reversed(list((previous or {}).items())):  # the first holder last
        held = list(owned)
        try:
            owner.update(zip(held, repeat(consumer)))  # at C speed
        except TypeError:  # an unhashable entry is no queue: keep the others
            for queue in held:
                with contextlib.suppress(TypeError):
                    owner[queue] = consumer
    return owner


def score(
    queues: Iterable[Any],
    consumers: Iterable[Any],
    previous: Mapping[Any, Iterable[Any]] | None,
    plan: Mapping[Any, Iterable[Any]],
) -> Scores:
    """Score `plan` for the group (`queues`, `consumers`) that `previous` was rebalanced into."""
    queue_set = set(queues)
    consumer_set = set(consumers)
    owner_before = first_owners(previous)

    holders: dict[Any, Any] = {}
    duplicates: set[Any] = set()
    unknown_queues = 0
    count_of = dict.fromkeys(consumer_set, 0)
    for consumer, owned in plan.items():
        count = 0
        for queue in owned:  # read once: the lists may be iterators
            count += 1
            try:
                known = queue in queue_set
            except TypeError:  # unhashable, so not a queue of the group
                known = False
            if not known:
                unknown_queues += 1
            elif queue in holders:
                duplicates.add(queue)
            else:
                holders[queue] = consumer
        if consumer in count_of:
            count_of[consumer] = count
    counts = list(count_of.values())

    previously_held = [queue for queue in queue_set if queue in owner_before]
    changed = [
        queue for queue in previously_held if holders.get(queue, _NOBODY) != owner_before[queue]
    ]
    kept = len(previously_held) - len(changed)
    moves = sum(1 for queue in changed if owner_before[queue] in consumer_set)

    stickiness = optimal = gap = None
    if queue_set and owner_before:
        best = optimal_kept(queue_set, consumer_set, owner_before)
        stickiness = kept / len(queue_set)
        optimal = best / len(queue_set)
        gap = (best - kept) / len(queue_set)
    return Scores(
        balance_degree=balance_degree(counts),
        spread=max(counts) - min(counts) if counts else 0,
        stickiness=stickiness,
        optimal_stickiness=optimal,
        stickiness_gap=gap,
        kept=kept,
        moves=moves,
        revocations=len(changed),
        orphans=len(queue_set) - len(holders),
        duplicates=len(duplicates),
        unknown_queues=unknown_queues,
        unknown_consumers=sum(1 for consumer in plan if consumer not in consumer_set),
    )
