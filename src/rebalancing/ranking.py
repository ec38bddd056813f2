"""Queues as ranks, for strategies whose cost is the ids' own: `prepare`'s checks and results
with every queue id replaced by its position among the sorted queues (an int: cheap to hash,
compare and sort), and the tuning that makes reading `previous` that way fast at a million
queues (look-ups row by row, lists kept whole, a dict layout that keeps hashes).

Every check and message is the contract's (rebalancing.contract, which re-exports the names
here): only the representation differs. sticky and StickyGroup read their inputs this way.
Runtime complexity: O(|Q| log |Q| + |C| log |C| + size of previous), at C speed but for loops
over the consumers.
"""

from __future__ import annotations

import operator
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import cached_property
from itertools import accumulate, chain, compress, filterfalse, repeat, zip_longest
from typing import Any, Generic, cast

from rebalancing.contract import (
    CheckedPlan,
    ConsumerT,
    QueueT,
    SortedIds,
    _raise_for_first_unhashable,
    _refuse_a_queue_id_for_a_list,
    _warn_sharing_no_queue,
    sorted_distinct_ids,
)


def _dict_keeping_hashes() -> dict[Any, int]:
    """An empty dict in CPython's general layout, which keeps each key's hash in its table.
    A dict whose first key is a str takes the layout for str keys alone, which keeps no hash
    and reads each string again for its hash when the table grows and on every colliding
    probe: a third more time to make, a fifth more to look up, at a million string ids. A
    dict keeps the layout its first key chose, so one key that is no str, put in and taken
    out, chooses the general one."""
    table: dict[Any, int] = {_NOT_A_STR: 0}
    del table[_NOT_A_STR]
    return table


_NOT_A_STR = object()
"""The key that puts `_dict_keeping_hashes` in the general layout."""


@dataclass(frozen=True, eq=False)
class RankedQueues(Generic[QueueT]):
    """Queue ids checked as `prepare` checks them and sorted, with `rank`, each id's position
    in `ids`. A strategy that works on the ranks (ints: cheap to hash, compare and sort) and
    reads the ids back only to write its plan pays the ids' own costs (a tuple's hash is
    computed on every look-up, a comparison of strings or tuples reads both) once per call
    rather than once per step. `given` is the queues as the caller gave them, when kept (see
    `rank_queues`), so that a caller holding on to these can tell the same queues again.
    """

    ids: list[QueueT]
    given: Sequence[QueueT] | None = None

    @cached_property
    def rank(self) -> dict[QueueT, int]:
        """id -> its position in `ids`, made on first use (a plan with no previous needs
        none) and kept."""
        rank = _dict_keeping_hashes()
        rank.update(zip(self.ids, range(len(self.ids)), strict=True))
        return rank

    def were_given_as(self, queues: object) -> bool:
        """Whether `queues` is a list or tuple of the very objects of `given`, in the same
        order: then checking, sorting and ranking them again would give these ids and ranks
        (ids are immutable), and one pass of identity tests at C speed says so."""
        given = self.given
        return (
            given is not None
            and (type(queues) is list or type(queues) is tuple or type(queues) is SortedIds)
            and len(queues) == len(given)
            and all(map(operator.is_, queues, given))
        )


def rank_queues(
    queues: Iterable[QueueT], keep_given: bool = False, rank_now: bool = True
) -> RankedQueues[QueueT]:
    """The queues checked and sorted as `prepare` does (the same errors), and with `rank_now`
    ranked (the dict that ranks them also hashes them: no hash pass of their own). With
    `keep_given`, what `RankedQueues.were_given_as` needs: the caller's list or tuple itself
    when its ids came in sorted order (no copy), else a copy."""
    given_list = queues if type(queues) in (list, tuple, SortedIds) else None
    ids: list[QueueT] = sorted_distinct_ids(queues, "queue", hashed_next=rank_now)
    given: Sequence[QueueT] | None = None
    if keep_given and given_list is not None:
        given = ids if all(map(operator.is_, given_list, ids)) else tuple(given_list)
    ranked = RankedQueues(ids, given)
    if rank_now:
        try:
            ranked.rank  # noqa: B018 - made now, to hash every id
        except TypeError:  # only when `ids` are in the caller's order: sorting hashes them first
            _raise_for_first_unhashable(ids, "queue")
    return ranked


def _needs_ranks(previous: object) -> bool:
    """Whether `previous` may hold queues to look up (a mapping with consumers, or anything
    that is not a mapping: CheckedPlan refuses it later, with its message)."""
    return previous is not None and not (isinstance(previous, Mapping) and not previous)


@dataclass(frozen=True)
class RankedGroup(Generic[QueueT, ConsumerT]):
    """The inputs of one rebalance as `prepare_ranked` gives them: the queues ranked, the
    consumers sorted; `kept`, for each consumer in that order, the ranks of its previous
    queues that still exist, ascending (`Group.kept_queues`, ranked and sorted); `unheld`, the
    ranks, ascending, of the queues that no consumer here held before (new ones, and those of
    consumers that left). Each list is new (the caller may keep or change it), or () for a
    consumer that kept nothing. `kept_ids`, when given, holds for each consumer the queues
    of previous that `kept` ranks, in the same order, when previous lists exactly those
    (ascending, none departed), else None: a plan that keeps a list whole copies these
    rather than reading each id back from its rank."""

    queues: RankedQueues[QueueT]
    consumers: list[ConsumerT]
    kept: list[Sequence[int]]
    unheld: list[int]
    kept_ids: Sequence[Sequence[QueueT] | None] = ()


def prepare_ranked(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None,
    keep_given: bool = False,
) -> RankedGroup[QueueT, ConsumerT]:
    """`prepare`, every check and message the same, with the queues as ranks: previous's
    queues are looked up once in the ranks, which tells the departed ones and, counted in a
    set of ranks, the ones held twice, with no inversion of `previous` (one dict insertion per
    queue held, the costliest pass at a million tuple ids). With no previous, the queues are
    not ranked at all. `keep_given`: see `rank_queues`.
    Runtime complexity: O(|Q| log |Q| + |C| log |C| + size of previous), at C speed but for
    loops over the consumers.
    """
    needs_ranks = _needs_ranks(previous)
    ranked = rank_queues(queues, keep_given, rank_now=needs_ranks)
    sorted_consumers: list[ConsumerT] = sorted_distinct_ids(consumers, "consumer")
    absent = len(ranked.ids)  # the rank of a queue that is not there
    if not needs_ranks:
        nothing_kept: list[Sequence[int]] = [()] * len(sorted_consumers)
        return RankedGroup(ranked, sorted_consumers, nothing_kept, list(range(absent)))
    listed, held, read = _checked_ranks(previous, ranked, bool(sorted_consumers))
    rank_lists, in_order = _sorted_telling_those_in_order(list(listed.values()))
    if absent in held:
        rank_lists, in_order = _without_departed(rank_lists, in_order, absent)
    ranks_of = dict(zip(listed, rank_lists, strict=True))
    return RankedGroup(
        ranked,
        sorted_consumers,
        kept=list(map(ranks_of.get, sorted_consumers, repeat(()))),
        unheld=_unheld(ranks_of, held, absent, sorted_consumers),
        kept_ids=_ids_kept_whole(ranks_of, read, in_order, sorted_consumers),
    )


def _checked_ranks(
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None,
    ranked: RankedQueues[QueueT],
    has_consumers: bool,
) -> tuple[dict[ConsumerT, list[int]], set[int], Mapping[ConsumerT, Sequence[QueueT]]]:
    """What `_ranks_of` gives for `previous` (consumer -> its queues' ranks, lists of our own
    in previous's order, and the set of them) and the mapping its queues were read from,
    `previous` checked as `prepare` checks it: a CheckedPlan as it is, any other mapping for
    a queue id where a list belongs, a queue held twice and, when a queue could move at all
    (`has_consumers`), for sharing no queue with the group."""
    absent = len(ranked.ids)
    if type(previous) is CheckedPlan or previous is None:
        read: Mapping[ConsumerT, Sequence[QueueT]] = previous or {}
        return (*_ranks_of(read, ranked.rank, absent), read)
    _refuse_a_queue_id_for_a_list(previous, ranked.ids)
    listed, held, read = _ranks_of_checked(previous, ranked.rank, absent)
    if ranked.ids and has_consumers and listed:  # else no queue can move
        _warn_if_all_absent(held, absent, listed, read, ranked.ids)
    return listed, held, read


def _sorted_telling_those_in_order(
    rank_lists: list[list[int]],
) -> tuple[list[list[int]], list[bool]]:
    """Each consumer's ranks ascending, and for each whether previous listed them so already
    (told from WHOLE_LISTS_FROM queues per consumer on average; below, all False). The lists
    are `_ranks_of`'s own and are sorted where they are: sorted copies of 10,000 short lists
    would make the cyclic collector run (measured: 13 ms against 2 ms in place)."""
    tell = sum(map(len, rank_lists)) >= WHOLE_LISTS_FROM * len(rank_lists)
    as_listed = list(map(list.copy, rank_lists)) if tell else []  # copies and == at C speed
    for ranks in rank_lists:
        ranks.sort()
    if not tell:
        return rank_lists, [False] * len(rank_lists)
    return rank_lists, list(map(operator.eq, rank_lists, as_listed))


def _without_departed(
    rank_lists: list[list[int]], in_order: list[bool], absent: int
) -> tuple[list[list[int]], list[bool]]:
    """The sorted `rank_lists` without the departed queues, which all have the rank `absent`
    and so come last, cut off where they are; a list that lost some is no longer previous's
    list whole (its `in_order` turns False)."""
    in_order = list(in_order)
    for index, ranks in enumerate(rank_lists):
        if ranks and ranks[-1] == absent:
            del ranks[bisect_left(ranks, absent) :]
            in_order[index] = False
    return rank_lists, in_order


def _unheld(
    ranks_of: dict[ConsumerT, list[int]],
    held: AbstractSet[int],
    absent: int,
    consumers: list[ConsumerT],
) -> list[int]:
    """The ranks, ascending, of the queues no consumer of `consumers` held before: those that
    no consumer of previous held (`held` is every rank previous holds), and those of previous's
    consumers that are not in `consumers`."""
    held_here = len(held) - (absent in held)
    unheld = [] if held_here == absent else list(_never_held(held, absent))
    left = ranks_of.keys() - set(consumers)
    for consumer in left:
        unheld += ranks_of[consumer]
    if left:
        unheld.sort()
    return unheld


def _ids_kept_whole(
    ranks_of: dict[ConsumerT, list[int]],
    read: Mapping[ConsumerT, Sequence[QueueT]],
    in_order: list[bool],
    consumers: list[ConsumerT],
) -> Sequence[Sequence[QueueT] | None]:
    """`RankedGroup.kept_ids`: for each of `consumers`, its queue ids as `read` lists them
    when `in_order` says that list is its ranks whole, else None; () when none is."""
    if not any(in_order):
        return ()
    ids_of = dict(compress(zip(ranks_of, read.values(), strict=True), in_order))
    return list(map(ids_of.get, consumers))


WHOLE_LISTS_FROM = 64
"""The fewest queues per consumer of previous, on average, from which `prepare_ranked` tells
the lists kept whole (`RankedGroup.kept_ids`, by comparing each list with its sorted self):
on lists of ten or so the copies cost what copying the ids back saves, and 10,000 consumers
of 10 queues each (Kafka's broker-side benchmark) would pay them for nothing."""


def _never_held(held: AbstractSet[int], queue_count: int) -> Iterator[int]:
    """The ranks below `queue_count` that are not in `held`, ascending."""
    return filterfalse(held.__contains__, range(queue_count))


def _ranks_of(
    plan: Mapping[ConsumerT, Sequence[QueueT]], rank: dict[QueueT, int], absent: int
) -> tuple[dict[ConsumerT, list[int]], set[int]]:
    """consumer -> the ranks of its queues in `plan`, a list of its own (`absent` for a queue
    not ranked), and the set of those ranks: one look-up per queue of the plan, at C speed.

    The longest list is looked up first, and tells the order of the others: consumer after
    consumer (the plan's own order), or, when its queues lie far apart (the plan deals the
    queues round the consumers, as sticky's hand-out and round robin do), row by row: the
    first queue of every consumer, then the second. Row by row visits `rank`'s entries (stored
    in rank order) and, mostly, the ids themselves nearly in order rather than jumping across
    all of them for each consumer: a third less time at a million string or tuple ids.
    Either order gives the same ranks."""
    owned_lists = list(plan.values())
    lengths = list(map(len, owned_lists))
    if not owned_lists:
        return {}, set()
    rank_of = cast(Callable[[object, int], int], rank.get)  # `absent` if not ranked
    longest = lengths.index(max(lengths))
    longest_ranks = list(map(rank_of, owned_lists[longest], repeat(absent)))
    owned_lists[longest], lengths[longest] = (), 0  # looked up: none of the rows' or runs'
    per_consumer: list[list[int]]
    if _dealt_round(longest_ranks, lengths, absent):
        width = len(owned_lists)
        rows = chain.from_iterable(zip_longest(*owned_lists, fillvalue=_NO_QUEUE))
        ranks = list(map(rank_of, rows, repeat(absent)))
        ends = map(operator.add, range(width), map(operator.mul, lengths, repeat(width)))
        per_consumer = list(map(ranks.__getitem__, map(slice, range(width), ends, repeat(width))))
        held = set(chain.from_iterable(per_consumer))  # not `ranks`: the rows' padding
    else:
        ranks = list(map(rank_of, chain.from_iterable(owned_lists), repeat(absent)))
        bounds = list(accumulate(lengths, initial=0))
        per_consumer = list(map(ranks.__getitem__, map(slice, bounds, bounds[1:])))
        held = set(ranks)
    per_consumer[longest] = longest_ranks
    held.update(longest_ranks)
    return dict(zip(plan.keys(), per_consumer, strict=True)), held


ROWS_FROM = 250_000
"""The fewest queues of a plan that `_ranks_of` may look up row by row. Below, `rank` and
the ids mostly stay in the caches whatever the order, and the rows cost more than they save:
they hold an iterator per consumer at once, objects that make the cyclic collector run
(Kafka's broker-side shape, 100,000 partitions over 10,000 members: 4% slower by rows)."""

_NO_QUEUE = object()
"""Stands in the rows of `_ranks_of` for the queues a consumer with fewer has not: looked up,
it is `absent`, and no consumer's ranks include it."""


def _dealt_round(sample: list[int], other_lengths: list[int], absent: int) -> bool:
    """Whether a plan deals its queues round the consumers, its longest list having the ranks
    `sample` (`absent`: a queue not ranked) and the others the lengths `other_lengths` (0 for
    the longest): the queues of `sample` spread over more than twice as many ranks as there
    are of them (others' queues lie between them), in a plan of ROWS_FROM queues or more, and
    rows that pad no more than the plan holds (one consumer holding far more than the others
    would make every row as long as its list)."""
    width = len(other_lengths)
    held = len(sample) + sum(other_lengths)
    if held < ROWS_FROM or len(sample) * width > 2 * held:
        return False
    present = list(filter(absent.__gt__, sample))
    return len(present) > 1 and max(present) - min(present) > 2 * len(present)


def _ranks_of_checked(
    previous: Mapping[ConsumerT, Iterable[QueueT]], rank: dict[QueueT, int], absent: int
) -> tuple[dict[ConsumerT, list[int]], set[int], Mapping[ConsumerT, Sequence[QueueT]]]:
    """`_ranks_of(previous)`, having checked `previous` as CheckedPlan does and raising what
    it raises, and the mapping its queues were read from (`previous`, a dict of lists and
    tuples, or its CheckedPlan: an iterable may be read only once). A dict of lists and
    tuples is checked by counting: each queue held once means as many distinct ranks as
    ranked queues held, and as many distinct departed queues as departed ones held.
    Anything else, or a count that is off, goes through CheckedPlan."""
    if type(previous) is dict and set(map(type, previous.values())) <= {list, tuple}:
        try:
            ranks_of, held = _ranks_of(previous, rank, absent)
        except TypeError:  # an unhashable queue: CheckedPlan names it
            pass
        else:
            if _each_queue_held_once(ranks_of, held, previous, absent):
                return ranks_of, held, previous
            CheckedPlan(previous)
            raise RuntimeError("previous holds a queue twice by count, yet CheckedPlan found none")
    checked = CheckedPlan(previous)
    return (*_ranks_of(checked, rank, absent), checked)


def _each_queue_held_once(
    ranks_of: dict[ConsumerT, list[int]],
    held: set[int],
    previous: Mapping[ConsumerT, Iterable[QueueT]],
    absent: int,
) -> bool:
    """Whether no queue of `previous` is held twice, `ranks_of` being its ranks and `held` the
    set of them: as many ranks in the set as queues held, but for departed queues, which share
    the rank `absent` and are told apart by a set of their own."""
    held_count = sum(map(len, ranks_of.values()))
    if absent not in held:
        return len(held) == held_count
    departed = sum(map(operator.countOf, ranks_of.values(), repeat(absent)))
    if len(held) - 1 != held_count - departed:
        return False
    departed_queues = [
        queue
        for owned, ranks in zip(previous.values(), ranks_of.values(), strict=True)
        if absent in ranks
        for queue, queue_rank in zip(owned, ranks, strict=True)
        if queue_rank == absent
    ]
    return len(set(departed_queues)) == departed


def _warn_if_all_absent(
    held: set[int],
    absent: int,
    ranks_of: dict[ConsumerT, list[int]],
    previous: Mapping[ConsumerT, Iterable[QueueT]],
    sorted_queues: list[QueueT],
) -> None:
    """`_warn_if_sharing_no_queue` for a previous already ranked: the same warning when it
    holds queues and all are absent (`held`, the set of its ranks, is {absent})."""
    if held == {absent}:
        held_count = sum(map(len, ranks_of.values()))
        first_held = next(chain.from_iterable(previous.values()))
        _warn_sharing_no_queue(held_count, first_held, sorted_queues)
