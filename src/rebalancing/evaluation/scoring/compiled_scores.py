"""The scores of exact plans over integer queue ids, compiled with numba: the scoring core's
fast path.

rebalancing.evaluation.scoring.scores is the definition. This path takes only what it can show it
scores the same way, and returns None for anything else, which the caller then scores with
the reference:
- a group whose queues are ints in [0, a bound linear in |Q|) (`IntegerGroup.of`; the
  harness's queue ids are such ints);
- a plan whose keys are exactly the group's consumers and whose lists hold ints only, each a
  queue of the group and none held twice (what every working strategy returns);
- a previous plan that passed this path too (`Owners`: its consumer per queue id);
- or, instead of the plan's lists, the plan as positions in the group's queues
  (`score_positions`, ProtocolRun.positions: SAC's compiled kernel holds its plan so), whose
  queue ids are then taken from the group's array, not read back from the lists: the arrays
  are checked as the lists are, and the lists only for their consumers and counts (the run
  vouches that both are the same plan: ProtocolRun says so).
An int in a plan is taken at its integer value, as a dict takes it (True is queue 1); an int
subclass with an equality of its own would be read differently, and none is used as an id.
tests/evaluation/test_compiled_scores.py holds the two paths to identical rows on thousands of
seeded scenarios, broken strategies included.

Why: the reference inverts each plan into a dict and looks each queue up in the previous
plan's, some 150 ns a queue in CPython; here the plan is read into one int64 array (from
positions: gathered inside the compiled pass), checked and counted in one compiled pass, and
never inverted (CheckedPlan.of_checked_lists inverts it only if a strategy reads its owners).
Consumers are numbered per scenario, in the order they first appear, so that owners are
integers too.
Runtime complexity: O(|Q| + |C|) per plan: one pass at C speed to type-check the plan, one to
copy it into an array (neither from positions), one compiled pass over it and one over the
group's queues; plus the arrays indexed by queue id (up to 16 |Q| + 65,536 entries) and by
consumer number (every consumer the scenario has seen), made and cleared once per plan.
Needs numba and numpy (the spark and dev extras); compiled on first use, cached on disk.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate, chain
from typing import Any

import numpy as np
from numba import njit

from rebalancing.evaluation.scoring.scores import CountSums, Scores, scores_from_counts

NO_OWNER = -1
"""In an owner array: the queue id is held by nobody (or is no queue of the plan)."""

_SLACK = 65_536
"""Queue ids may reach 16 x |Q| + this before a group is left to the reference (the arrays
indexed by queue id stay linear in |Q|)."""


class ConsumerNumbers:
    """Consumer id -> a number, for one scenario: each consumer gets the next number when first
    seen, so that a consumer keeps its number from step to step, and equal ids share one."""

    def __init__(self) -> None:
        self.number_of: dict[Any, int] = {}

    def of(self, consumers: Sequence[Any]) -> Any:
        """The numbers of `consumers` (hashable ids), as an int64 array in their order."""
        number_of = self.number_of
        for consumer in consumers:
            if consumer not in number_of:
                number_of[consumer] = len(number_of)
        return np.fromiter(map(number_of.__getitem__, consumers), np.int64, len(consumers))


@dataclass(frozen=True, slots=True)
class IntegerGroup:
    """One step's group as arrays: its queue ids, which ids are queues of the group (`in_group`,
    indexed by id), its consumers (sorted) and their numbers in that order, the sets, and
    whether every queue id is a plain int (no bool, no int subclass: the ids an array gives
    back as they were, for rebalancing.evaluation.scoring.compiled_strategies)."""

    queue_ids: Any
    in_group: Any
    consumers: tuple[Any, ...]
    consumer_numbers: Any
    queue_set: frozenset[Any]
    consumer_set: frozenset[Any]
    plain: bool = False
    queues: Sequence[Any] = ()  # the queue ids themselves, sorted (what `queue_ids` holds)

    @staticmethod
    def of(
        queues: Sequence[Any],
        queue_set: frozenset[Any],
        consumers: tuple[Any, ...],
        consumer_set: frozenset[Any],
        numbers: ConsumerNumbers,
    ) -> IntegerGroup | None:
        """The group as arrays, or None when its queues are not ints in [0, bound) (`queues`
        and `consumers` sorted, distinct and hashable, checked already; the sets are theirs)."""
        queue_ids = _integers(queues)
        if queue_ids is None:
            return None
        bound = queues[-1] + 1 if queues else 0  # sorted: the highest id is the last
        if queues and (queues[0] < 0 or bound > 16 * len(queues) + _SLACK):
            return None
        in_group = np.zeros(bound, dtype=np.bool_)
        in_group[queue_ids] = True
        consumer_numbers = numbers.of(consumers)
        return IntegerGroup(
            queue_ids,
            in_group,
            consumers,
            consumer_numbers,
            queue_set,
            consumer_set,
            plain_ints(queues),
            queues,
        )

    def with_consumers(
        self, consumers: tuple[Any, ...], consumer_set: frozenset[Any], numbers: ConsumerNumbers
    ) -> IntegerGroup:
        """The same queues with other consumers (the step changed only those)."""
        if consumer_set is self.consumer_set:
            return self
        return IntegerGroup(
            self.queue_ids,
            self.in_group,
            consumers,
            numbers.of(consumers),
            self.queue_set,
            consumer_set,
            self.plain,
            self.queues,
        )


def plain_ints(ids: Iterable[Any]) -> bool:
    """Whether every one of `ids` is a plain int: no bool, no int subclass (an IntEnum), which
    an array, a dict and == take as ints but a plan must give back as they are."""
    return set(map(type, ids)) <= {int}


def _integers(ids: Sequence[Any]) -> Any | None:
    """`ids` as an int64 array when every one is an int that fits, else None. Python's sum
    types them at C speed: it stays an int only over ints (a float, a Fraction, a numpy
    integer make it something else; a str or None raise)."""
    try:
        if type(sum(ids)) is not int:
            return None
        return np.fromiter(ids, np.int64, len(ids))
    except (TypeError, OverflowError):
        return None


@dataclass(frozen=True, slots=True)
class Owners:
    """The plan in force as the compiled path reads a previous plan: its consumer's number per
    queue id (NO_OWNER where none), and whether it held any queue at all."""

    by_queue: Any
    holds_any: bool


NO_PLAN = Owners(np.full(0, NO_OWNER, dtype=np.int32), holds_any=False)
"""The previous plan of a scenario's first step: none."""


def score_exact(
    group: IntegerGroup, plan: Mapping[Any, list[Any]], previous: Owners, numbers: ConsumerNumbers
) -> tuple[Scores, Owners] | None:
    """The scores of `plan` (consumer -> lists of queues) against `previous`, and the plan's own
    Owners, when the plan is exact (see the module docstring); None otherwise."""
    consumers = tuple(plan)
    if consumers == group.consumers:  # what strategies return: every consumer, in id order
        plan_numbers = group.consumer_numbers
    elif len(plan) == len(group.consumer_set) and group.consumer_set.issuperset(consumers):
        plan_numbers = numbers.of(consumers)
    else:
        return None
    lists = plan.values()
    if not set(map(type, lists)) <= {list}:  # a list subclass might iterate otherwise
        return None
    starts = np.fromiter(accumulate(map(len, lists), initial=0), np.int64, len(lists) + 1)
    queues = list(chain.from_iterable(lists))  # one pass over the lists, then C-speed passes
    try:
        if type(sum(queues)) is not int:  # ints only (see `_integers`)
            return None
        flat = np.fromiter(queues, np.int64, len(queues))
    except (TypeError, OverflowError):
        return None
    return _score_arrays(group, flat, starts, plan_numbers, previous, numbers, by_position=False)


def score_positions(
    group: IntegerGroup,
    plan: Mapping[Any, list[Any]],
    positions: tuple[Any, Any],
    previous: Owners,
    numbers: ConsumerNumbers,
) -> tuple[Scores, Owners] | None:
    """score_exact of `plan` given also as its ProtocolRun.positions (every consumer of the
    group, in id order, with its queues as positions in the group's sorted queues): its queue
    ids are taken from the group's array by position rather than read back from the plan's
    lists, in the same compiled pass that checks them. None when the arrays do not fit the
    group, or the plan's consumers and counts are not theirs (its queues are not compared)."""
    grouped, starts = positions
    if type(grouped) is not np.ndarray or type(starts) is not np.ndarray:
        return None
    if grouped.dtype != np.int64 or starts.dtype != np.int64 or grouped.ndim != 1:
        return None
    if starts.shape != (len(group.consumers) + 1,) or tuple(plan) != group.consumers:
        return None
    bounds = starts.tolist()
    if list(map(len, plan.values())) != list(map(operator.sub, bounds[1:], bounds)):
        return None
    return _score_arrays(
        group, grouped, starts, group.consumer_numbers, previous, numbers, by_position=True
    )


def _score_arrays(
    group: IntegerGroup,
    flat: Any,
    starts: Any,
    plan_numbers: Any,
    previous: Owners,
    numbers: ConsumerNumbers,
    by_position: bool,
) -> tuple[Scores, Owners] | None:
    """The scores of a plan as arrays (`flat`: its queues, consumer after consumer, as ids or,
    `by_position`, as positions in the group's queues; `starts`: where each consumer's run
    starts, |C| + 1 entries; `plan_numbers`: the consumers' numbers), when it is exact."""
    queue_count = len(group.queue_set)
    owner_after, sum_array = _count_exact(
        flat,
        starts,
        by_position,
        plan_numbers,
        group.queue_ids,
        group.in_group,
        previous.by_queue,
        group.consumer_numbers,
        len(numbers.number_of),
    )
    sums = sum_array.tolist()
    if not sums[_EXACT]:
        return None
    kept = sums[_KEPT]
    size = flat.shape[0]
    count_sums = None
    if plan_numbers.shape[0]:
        squares, lowest, highest = sums[_SQUARES], sums[_LOWEST], sums[_HIGHEST]
        count_sums = CountSums(plan_numbers.shape[0], size, squares, lowest, highest)
    scores = scores_from_counts(
        queue_count,
        count_sums,
        best=sums[_BEST],
        previously_held=sums[_PREVIOUSLY_HELD],
        held_by_present=sums[_HELD_BY_PRESENT],
        kept=kept,
        kept_by_present=kept,  # every holder is in C
        has_previous=previous.holds_any,
        orphans=queue_count - size,
    )
    return scores, Owners(owner_after, size > 0)


# what `_count_exact` counts, by position in the array it returns
_EXACT, _KEPT, _PREVIOUSLY_HELD, _HELD_BY_PRESENT, _BEST, _SQUARES, _LOWEST, _HIGHEST = range(8)


@njit(cache=True)
def _count_exact(
    flat: Any,
    starts: Any,
    by_position: bool,
    plan_numbers: Any,
    queue_ids: Any,
    in_group: Any,
    owner_before: Any,
    consumer_numbers: Any,
    number_count: int,
) -> tuple[Any, Any]:
    """One pass over the plan (`flat`: its queues, consumer after consumer, as ids or,
    `by_position`, as positions in `queue_ids`; `starts`: where each consumer's run starts, and
    the end; `plan_numbers`: the consumers' numbers), one over the group's queues and one over
    its consumers: (the plan's owner per queue id, the sums, by position: exact (1 when the
    runs fit `flat`, every queue is one of the group and none is held twice, else 0 and
    nothing else counted), kept, previously held, held by a consumer of the group, the best
    any balanced plan keeps (scores._optimum), and the plan's counts' sum of squares, lowest
    and highest)."""
    sums = np.zeros(8, dtype=np.int64)
    bound = in_group.shape[0]
    owner_after = np.full(bound, NO_OWNER, dtype=np.int32)
    before_bound = owner_before.shape[0]
    consumers = plan_numbers.shape[0]
    if starts.shape[0] != consumers + 1 or starts[0] != 0 or starts[consumers] != flat.shape[0]:
        return owner_after, sums
    squares = 0
    lowest = starts[1] if consumers else 0
    highest = lowest
    for index in range(consumers):  # the runs first: each within `flat` (no bounds checks)
        if starts[index + 1] < starts[index]:  # compared, not subtracted: no overflow
            return owner_after, sums
        count = starts[index + 1] - starts[index]
        squares += count * count
        lowest = min(lowest, count)
        highest = max(highest, count)
    kept = 0
    for index in range(consumers):
        number = plan_numbers[index]
        for position in range(starts[index], starts[index + 1]):
            queue = flat[position]
            if by_position:
                if queue < 0 or queue >= queue_ids.shape[0]:
                    return owner_after, sums
                queue = queue_ids[queue]
            if queue < 0 or queue >= bound or not in_group[queue]:
                return owner_after, sums
            if owner_after[queue] != NO_OWNER:
                return owner_after, sums
            owner_after[queue] = number
            if queue < before_bound and owner_before[queue] == number:  # scores._kept_by_consumer
                kept += 1
    # per consumer: its queues in P still in Q (scores._held_by)
    held = np.zeros(number_count, dtype=np.int64)
    previously_held = 0
    for queue in queue_ids:
        if queue < before_bound:
            number = owner_before[queue]
            if number != NO_OWNER:
                held[number] += 1
                previously_held += 1
    # scores._optimum over the consumers' keepable counts: sum(min(keepable, base)) plus
    # min(extra, #{keepable > base})
    consumer_count = consumer_numbers.shape[0]
    held_by_present = 0
    best = 0
    if consumer_count:
        base = queue_ids.shape[0] // consumer_count
        extra = queue_ids.shape[0] % consumer_count
        above_base = 0
        for index in range(consumer_count):
            keepable = held[consumer_numbers[index]]
            held_by_present += keepable
            if keepable > base:
                best += base
                above_base += 1
            else:
                best += keepable
        best += min(extra, above_base)
    sums[_EXACT] = 1
    sums[_KEPT] = kept
    sums[_PREVIOUSLY_HELD] = previously_held
    sums[_HELD_BY_PRESENT] = held_by_present
    sums[_BEST] = best
    sums[_SQUARES] = squares
    sums[_LOWEST] = lowest
    sums[_HIGHEST] = highest
    return owner_after, sums
