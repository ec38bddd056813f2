"""The scores of one rebalance, exactly as the project defines them (docs/reference/scores.md).

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
as held by the first of them, in P's order). Whatever they hold, scoring never raises: a plan
value that is no iterable of queue ids (None, a number, a str: one id where a list belongs) is
one unknown queue, an unhashable entry an unknown queue, an unhashable consumer (a Mapping
that is not a dict) an unknown consumer, and a plan that is no Mapping holds nothing (every
queue an orphan); in P, such values and consumers hold nothing, and a P that is no Mapping is
no P.
Runtime complexity: O(|Q| + |C| + size of P), in passes at C speed for plans of lists (or
CheckedPlans) of known, distinct queues, what working strategies return; queue by queue
otherwise. A plan is read once (`read_plan`): the scoring core reuses the reading as the next
rebalance's P (`PlanReading.as_previous`).
"""

from __future__ import annotations

import contextlib
import math
import operator
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import filterfalse, repeat
from typing import Any, NamedTuple, TypeAlias, cast

from rebalancing.contract import CheckedPlan

IdSet: TypeAlias = set[Any] | frozenset[Any]
"""A group's queues or consumers as a set."""


@dataclass
class Scores:
    """Every score of one rebalance (see the module docstring for the definitions).

    Like the other records of the scoring core, not frozen: a frozen dataclass sets each field
    through `object.__setattr__` (some 0.2 us a field), and the core makes several records per
    rebalance, so freezing them cost 4-15% of its time. Nothing changes them once made."""

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
    """Population standard deviation of per-consumer queue counts; None for no consumers.

    sqrt(1/N * sum((x_i - mu)^2)) is computed as sqrt((N * sum(x_i^2) - (sum x_i)^2) / N^2),
    the same quantity: from exact integer sums, rounded once, in two passes at C speed.
    """
    values = list(counts)
    if not values:
        return None
    return _balance(len(values), sum(values), sum(map(operator.mul, values, values)))


def _balance(count: int, total: int, squares: int) -> float:
    """`balance_degree` from the exact sums of the counts and of their squares (count > 0)."""
    return math.sqrt((count * squares - total * total) / (count * count))


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
    still_there = previous_owner.keys() & queue_set
    held_by = Counter(map(previous_owner.__getitem__, still_there))
    return _optimum(len(queue_set), list(map(held_by.__getitem__, dict.fromkeys(consumers))))


def _optimum(queue_count: int, keepable: list[int]) -> int:
    """sum(min(keepable_i, base)) + min(extra, #{i : keepable_i > base}) (see `optimal_kept`)
    for the consumers' `keepable` counts."""
    if not keepable:
        return 0
    base, extra = divmod(queue_count, len(keepable))
    above_base = list(filter(base.__lt__, keepable))  # min(keepable_i, base) is base for these
    capped = sum(keepable) - sum(above_base) + base * len(above_base)
    return capped + min(extra, len(above_base))


@dataclass(slots=True)
class PreviousReading:
    """The previous assignment P as the scores read it: `owner` (queue -> its first holder in
    P's order) and `held` (consumer -> how many queues it is the first holder of). `queue_set`,
    when given, is a frozen set holding every queue of P: when the group after the change has
    that very set, no queue of P is gone, and nothing needs checking."""

    owner: Mapping[Any, Any]
    held: Mapping[Any, int]
    queue_set: frozenset[Any] | None = None


def read_previous(previous: Mapping[Any, Iterable[Any]] | None) -> PreviousReading:
    """Read P once, without judging it (see `first_owners`); a CheckedPlan inverts itself
    (once: its inversion is kept)."""
    if type(previous) is CheckedPlan:
        held = dict(zip(previous, map(len, previous.values()), strict=True))
        return PreviousReading(previous.owner, held)
    owner = first_owners(previous)
    return PreviousReading(owner, Counter(owner.values()))


def first_owners(previous: Mapping[Any, Iterable[Any]] | None) -> dict[Any, Any]:
    """queue -> consumer of `previous`, without judging it: a queue listed more than once
    counts as held by its first holder in `previous`' order; a value that is no iterable of
    queue ids, and an unhashable consumer, hold nothing, and a `previous` that is no Mapping
    holds nothing at all."""
    owner: dict[Any, Any] = {}
    if type(previous) is not dict and not isinstance(previous, Mapping):
        return owner
    for consumer, owned in reversed(list(previous.items())):  # the first holder last
        if not _is_queue_list(owned) or not _is_hashable(consumer):
            continue
        held = list(owned)
        try:
            owner.update(zip(held, repeat(consumer)))  # at C speed
        except TypeError:  # an unhashable entry is no queue: keep the others
            for queue in held:
                with contextlib.suppress(TypeError):
                    owner[queue] = consumer
    return owner


def _held_by(queue_set: IdSet, previous: PreviousReading) -> Mapping[Any, int]:
    """previous consumer -> how many of its queues are still in Q (departed consumers too):
    P's own counts, less the queues that are gone."""
    if previous.queue_set is queue_set:
        return previous.held  # the same group's queues: none is gone
    gone = list(filterfalse(queue_set.__contains__, previous.owner))
    if not gone:
        return previous.held
    held = Counter(previous.held)
    held.subtract(map(previous.owner.__getitem__, gone))
    return held


@dataclass(slots=True)
class PlanReading:
    """What a plan says, read once against the group's `queue_set`: `holders` (queue of Q ->
    its first holder in the plan's order), the count of every consumer of C, and what is wrong
    with it. `owned` is the plan itself when it is exact and its keys are exactly C (what
    working strategies return)."""

    queue_set: IdSet
    holders: Mapping[Any, Any]
    counts: list[int]
    duplicates: int
    unknown_queues: int
    unknown_consumers: int
    owned: Mapping[Any, Sequence[Any]] | None = None

    @property
    def exact(self) -> bool:
        """Whether `holders` is the whole plan inverted: no duplicate and no unknown queue."""
        return not (self.duplicates or self.unknown_queues)

    def as_previous(self) -> PreviousReading:
        """This plan read as the next rebalance's P, for exact readings (where `holders` is the
        whole plan inverted): the scoring core reads each plan once."""
        if self.owned is not None:
            held: Mapping[Any, int] = dict(zip(self.owned, self.counts, strict=True))
        else:
            held = Counter(self.holders.values())
        frozen = self.queue_set if isinstance(self.queue_set, frozenset) else None
        return PreviousReading(self.holders, held, frozen)


def read_plan(
    queue_set: IdSet, consumer_set: IdSet, plan: Mapping[Any, Iterable[Any]]
) -> PlanReading:
    """Read `plan` once. A CheckedPlan, or lists of known, distinct queues (what every working
    strategy returns), are inverted at C speed; anything else is read queue by queue (a plan
    that is no Mapping as one that holds nothing)."""
    if type(plan) is not dict and not isinstance(plan, Mapping):
        plan = {}
    if len(plan) == len(consumer_set) and _all_in(plan.keys(), consumer_set):  # keys are C
        inverted = _inverted_if_distinct_lists(plan)
        if inverted is not None and queue_set.issuperset(inverted[0]):
            holders, owned = inverted
            counts = list(map(len, owned.values()))
            return PlanReading(queue_set, holders, counts, 0, 0, 0, owned)
    try:
        unknown_consumers = len(plan.keys() - consumer_set)
    except TypeError:  # an unhashable key (a Mapping that is not a dict): none of C
        unknown_consumers = sum(1 for consumer in plan if not _is_in(consumer, consumer_set))
    return _read_plan_queue_by_queue(queue_set, consumer_set, plan, unknown_consumers)


def _all_in(ids: Iterable[Any], id_set: IdSet) -> bool:
    """Whether every one of `ids` is in `id_set` (an unhashable one is not)."""
    try:
        return id_set.issuperset(ids)
    except TypeError:
        return False


def _is_in(identifier: Any, id_set: IdSet | Mapping[Any, Any]) -> bool:
    """`identifier in id_set`, False for an unhashable one."""
    try:
        return identifier in id_set
    except TypeError:
        return False


def _is_hashable(identifier: Any) -> bool:
    try:
        hash(identifier)
    except TypeError:
        return False
    return True


def _is_queue_list(owned: Any) -> bool:
    """Whether a plan's value can be a list of queue ids: an iterable, not a str or bytes (one
    id, whose characters are no queues)."""
    return isinstance(owned, Iterable) and not isinstance(owned, str | bytes)


def _inverted_if_distinct_lists(
    plan: Mapping[Any, Iterable[Any]],
) -> tuple[Mapping[Any, Any], Mapping[Any, Sequence[Any]]] | None:
    """(queue -> consumer, the plan) for a CheckedPlan or a plan of lists that holds no queue
    twice; None for any other plan."""
    if type(plan) is CheckedPlan:
        return plan.owner, plan
    holders: dict[Any, Any] = {}
    size = 0
    for consumer, owned in plan.items():
        if type(owned) is not list:
            return None
        try:
            holders.update(zip(owned, repeat(consumer)))
        except TypeError:  # an unhashable entry
            return None
        size += len(owned)
    if len(holders) != size:
        return None
    return holders, cast("Mapping[Any, list[Any]]", plan)


def _read_plan_queue_by_queue(
    queue_set: IdSet,
    consumer_set: IdSet,
    plan: Mapping[Any, Iterable[Any]],
    unknown_consumers: int,
) -> PlanReading:
    holders: dict[Any, Any] = {}
    duplicates: set[Any] = set()
    unknown_queues = 0
    count_of = dict.fromkeys(consumer_set, 0)
    for consumer, owned in plan.items():
        if not _is_queue_list(owned):  # one entry, and no queue of the group
            unknown_queues += 1
            if _is_in(consumer, count_of):
                count_of[consumer] = 1
            continue
        holder = consumer if _is_hashable(consumer) else object()  # an unknown consumer
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
                holders[queue] = holder
        if holder in count_of:
            count_of[holder] = count
    counts = list(count_of.values())
    return PlanReading(
        queue_set, holders, counts, len(duplicates), unknown_queues, unknown_consumers
    )


def score(
    queues: Iterable[Any],
    consumers: Iterable[Any],
    previous: Mapping[Any, Iterable[Any]] | None,
    plan: Mapping[Any, Iterable[Any]],
) -> Scores:
    """Score `plan` for the group (`queues`, `consumers`) that `previous` was rebalanced into."""
    queue_set, consumer_set = set(queues), set(consumers)
    return read_and_score(queue_set, consumer_set, read_previous(previous), plan)[1]


def read_and_score(
    queue_set: IdSet,
    consumer_set: IdSet,
    previous: PreviousReading,
    plan: Mapping[Any, Iterable[Any]],
) -> tuple[PlanReading, Scores]:
    """`read_plan`, then `score_reading`, in one pass fewer where P held exactly the group's
    queues (the same frozen set, every queue held: the scoring core's common case) and `plan`
    is a CheckedPlan of C: looking up each of its queues in P, to count the kept pairs, then
    also proves that it holds no queue outside the group, which `read_plan` checks otherwise."""
    if (
        type(plan) is CheckedPlan
        and previous.queue_set is queue_set
        and len(previous.owner) == len(queue_set)
        and len(plan) == len(consumer_set)
        and consumer_set.issuperset(plan.keys())
    ):
        try:
            kept = _kept_by_consumer(plan, previous.owner, all_in_p=True)
        except KeyError:  # a queue P did not hold, so not one of the group: read it all
            pass
        else:
            counts = list(map(len, plan.values()))
            reading = PlanReading(queue_set, plan.owner, counts, 0, 0, 0, plan)
            return reading, _scores(consumer_set, previous, reading, kept, kept)
    reading = read_plan(queue_set, consumer_set, plan)
    return reading, score_reading(consumer_set, previous, reading)


def score_reading(consumer_set: IdSet, previous: PreviousReading, reading: PlanReading) -> Scores:
    """The scores from a plan already read and the previous plan already read (the scoring
    core reads each plan once, and reuses the reading as the next rebalance's `previous`)."""
    owner_before = previous.owner
    if not owner_before:  # no P: nothing to keep
        kept = kept_by_present = 0
    elif reading.owned is not None:  # exact, every holder in C: count consumer by consumer
        kept = kept_by_present = _kept_by_consumer(reading.owned, owner_before)
    else:
        holders = reading.holders
        kept = _kept(holders, owner_before)
        present = {queue: holder for queue, holder in holders.items() if holder in consumer_set}
        kept_by_present = _kept(present, owner_before)
    return _scores(consumer_set, previous, reading, kept, kept_by_present)


def _scores(
    consumer_set: IdSet,
    previous: PreviousReading,
    reading: PlanReading,
    kept: int,
    kept_by_present: int,
) -> Scores:
    """The scores, given how many queues the plan keeps with their consumer in P (`kept`), and
    how many of those that consumer is in C (`kept_by_present`)."""
    queue_set, counts = reading.queue_set, reading.counts
    held_by = _held_by(queue_set, previous)  # previous consumer -> its queues still in Q
    keepable = list(map(held_by.get, consumer_set, repeat(0)))  # the same for each one of C
    count_sums = None
    if counts:
        squares = sum(map(operator.mul, counts, counts))
        count_sums = CountSums(len(counts), sum(counts), squares, min(counts), max(counts))
    return scores_from_counts(
        len(queue_set),
        count_sums,
        best=_optimum(len(queue_set), keepable),
        previously_held=sum(held_by.values()),
        held_by_present=sum(keepable),
        kept=kept,
        kept_by_present=kept_by_present,
        has_previous=bool(previous.owner),
        orphans=len(queue_set) - len(reading.holders),
        duplicates=reading.duplicates,
        unknown_queues=reading.unknown_queues,
        unknown_consumers=reading.unknown_consumers,
    )


class CountSums(NamedTuple):
    """The per-consumer counts of a plan over C (C not empty) as the scores use them."""

    consumers: int
    total: int
    squares: int  # the sum of the squared counts
    lowest: int
    highest: int


def scores_from_counts(
    queue_count: int,
    count_sums: CountSums | None,
    *,
    best: int,
    previously_held: int,
    held_by_present: int,
    kept: int,
    kept_by_present: int,
    has_previous: bool,
    orphans: int,
    duplicates: int = 0,
    unknown_queues: int = 0,
    unknown_consumers: int = 0,
) -> Scores:
    """The scores from the counts they are made of, however they were counted (here from
    dicts; in rebalancing.evaluation.scoring.compiled_scores from arrays): the per-consumer counts'
    sums (None for no consumers), `best` (`_optimum` of the consumers' keepable counts),
    `previously_held` (the queues of Q that P held, departed consumers included),
    `held_by_present` (those held by a consumer of C), `kept` and `kept_by_present` (see
    `_scores`), and whether P held any queue at all."""
    stickiness = optimal = gap = None
    if queue_count and has_previous:
        stickiness = kept / queue_count
        optimal = best / queue_count
        gap = (best - kept) / queue_count
    balance = spread = None
    if count_sums is not None:
        consumers, total, squares, lowest, highest = count_sums
        balance, spread = _balance(consumers, total, squares), highest - lowest
    return Scores(
        balance_degree=balance,
        spread=spread if spread is not None else 0,
        stickiness=stickiness,
        optimal_stickiness=optimal,
        stickiness_gap=gap,
        kept=kept,
        moves=held_by_present - kept_by_present,
        revocations=previously_held - kept,
        orphans=orphans,
        duplicates=duplicates,
        unknown_queues=unknown_queues,
        unknown_consumers=unknown_consumers,
    )


_NOT_HELD: Any = object()
"""Held by nobody in P (distinct from every consumer id, None included)."""


def _kept(holders: Mapping[Any, Any], owner_before: Mapping[Any, Any]) -> int:
    """|{q : A[q] == P[q]}| over the queues `holders` maps to their holder in A (an id is
    equal to itself, as in a dict)."""
    kept = 0
    for queue, holder in holders.items():
        before = owner_before.get(queue, _NOT_HELD)
        if before is holder or before == holder:
            kept += 1
    return kept


def _kept_by_consumer(
    plan: Mapping[Any, Iterable[Any]], owner_before: Mapping[Any, Any], all_in_p: bool = False
) -> int:
    """`_kept` for a plan that holds no queue twice, at C speed: for each consumer, how many
    of its queues P gave it too. It is

        sum(countOf(map(owner_before.get, queues, repeat(_NOT_HELD)), consumer)
            for consumer, queues in plan.items())

    with the loop over the consumers run by `map` as well (plans hold few queues a consumer).
    `all_in_p`: every queue of the plan is one of P, so the lookups need no default (a KeyError
    says otherwise).
    """
    if all_in_p:
        consumers_before = map(map, repeat(owner_before.__getitem__), plan.values())
    else:
        lookup, not_held = repeat(owner_before.get), repeat(repeat(_NOT_HELD))
        consumers_before = map(map, lookup, plan.values(), not_held)
    return sum(map(operator.countOf, consumers_before, plan.keys()))
