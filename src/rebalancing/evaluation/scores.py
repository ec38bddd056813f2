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
Runtime complexity: O(|Q| + |C| + size of P), in C-speed passes for plans of lists of known,
distinct queues (what working strategies return); queue by queue otherwise.
"""

from __future__ import annotations

import contextlib
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import repeat
from typing import Any


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
    consumer_list = list(dict.fromkeys(consumers))
    return _optimum(len(queue_set), consumer_list, _held_by(queue_set, previous_owner))


def _held_by(queue_set: set[Any], previous_owner: Mapping[Any, Any]) -> Counter[Any]:
    """previous consumer -> how many of its queues are still in Q (departed consumers too)."""
    still_there = previous_owner.keys() & queue_set
    return Counter(map(previous_owner.__getitem__, still_there))


def _optimum(queue_count: int, consumers: list[Any], held_by: Counter[Any]) -> int:
    if not consumers:
        return 0
    keepable = list(map(held_by.__getitem__, consumers))
    base, extra = divmod(queue_count, len(consumers))
    above_base = len([count for count in keepable if count > base])
    return sum(min(count, base) for count in keepable) + min(extra, above_base)


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


@dataclass(frozen=True)
class PlanReading:
    """What a plan says, read once: `holders` (queue of Q -> its first holder in the plan's
    order), the count of every consumer of C, and what is wrong with it."""

    holders: dict[Any, Any]
    counts: list[int]
    duplicates: int
    unknown_queues: int
    unknown_consumers: int

    @property
    def exact(self) -> bool:
        """Whether `holders` is the whole plan inverted: no duplicate and no unknown queue."""
        return not (self.duplicates or self.unknown_queues)


def read_plan(queue_set: set[Any], consumer_set: set[Any], plan: Mapping[Any, Any]) -> PlanReading:
    """Read `plan` once. Lists of known, distinct queues (what every working strategy returns)
    are inverted at C speed; anything else is read queue by queue."""
    holders: dict[Any, Any] = {}
    unknown_consumers = len(plan.keys() - consumer_set)
    if unknown_consumers == 0 and len(plan) == len(consumer_set):  # keys are exactly C
        try:
            for consumer, owned in plan.items():
                if type(owned) is not list:
                    raise TypeError("not a list: read it queue by queue")
                holders.update(zip(owned, repeat(consumer)))
            counts = list(map(len, plan.values()))
            if sum(counts) == len(holders) and queue_set.issuperset(holders):
                return PlanReading(holders, counts, 0, 0, 0)
        except TypeError:  # an unhashable entry, or queues that are not a list
            pass
    return _read_plan_queue_by_queue(queue_set, consumer_set, plan, unknown_consumers)


def _read_plan_queue_by_queue(
    queue_set: set[Any], consumer_set: set[Any], plan: Mapping[Any, Any], unknown_consumers: int
) -> PlanReading:
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
    return PlanReading(
        holders, list(count_of.values()), len(duplicates), unknown_queues, unknown_consumers
    )


def score(
    queues: Iterable[Any],
    consumers: Iterable[Any],
    previous: Mapping[Any, Iterable[Any]] | None,
    plan: Mapping[Any, Iterable[Any]],
) -> Scores:
    """Score `plan` for the group (`queues`, `consumers`) that `previous` was rebalanced into."""
    queue_set, consumer_set = set(queues), set(consumers)
    reading = read_plan(queue_set, consumer_set, plan)
    return score_reading(queue_set, consumer_set, first_owners(previous), reading)


def score_reading(
    queue_set: set[Any],
    consumer_set: set[Any],
    owner_before: Mapping[Any, Any],
    reading: PlanReading,
) -> Scores:
    """The scores from a plan already read and the previous plan already inverted (the scoring
    core reuses each step's reading as the next step's `owner_before`)."""
    holders, counts = reading.holders, reading.counts
    held_by = _held_by(queue_set, owner_before)  # previous consumer -> its queues still in Q
    previously_held = sum(held_by.values())
    departed_held = previously_held - sum(map(held_by.__getitem__, consumer_set))
    kept_pairs = holders.items() & owner_before.items()  # queues of Q with the same consumer
    kept = len(kept_pairs)
    kept_from_departed = sum(1 for _, consumer in kept_pairs if consumer not in consumer_set)
    revocations = previously_held - kept
    moves = (previously_held - departed_held) - (kept - kept_from_departed)

    stickiness = optimal = gap = None
    if queue_set and owner_before:
        best = _optimum(len(queue_set), list(consumer_set), held_by)
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
        revocations=revocations,
        orphans=len(queue_set) - len(holders),
        duplicates=reading.duplicates,
        unknown_queues=reading.unknown_queues,
        unknown_consumers=reading.unknown_consumers,
    )
