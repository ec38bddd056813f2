"""sticky's fast paths against its definition (Impl => Spec, as for the SAC kernel).

`sticky.reference_assign` runs the report's steps on the ids themselves: it is the definition.
`sticky.assign` runs them on the queues' ranks, and `StickyGroup` keeps the ranks and the last
plan from one rebalance to the next. Both must give the very same plans as the definition, on
thousands of seeded groups (ints, strings and tuples as ids; previous plans naming departed
consumers, removed queues, queues held by no one, in any order) and seeded rebalance sequences,
and must touch the ids no more than the promise of each says (counted, not timed).
"""

from __future__ import annotations

import operator
import random
from collections.abc import Callable
from functools import total_ordering
from itertools import chain
from types import MappingProxyType
from typing import Any, ClassVar

import numpy
import pytest
from hypothesis import given

from rebalancing import ranking
from rebalancing.contract import PreviousMismatchWarning
from rebalancing.strategies import sticky
from rebalancing.strategies.sticky_group import StickyGroup
from tests.groups import GroupCase, groups

SEEDED_GROUPS = 4000
SEEDED_SEQUENCES = 300
STEPS_PER_SEQUENCE = 12


def _id_maker(kind: int, rng: random.Random) -> Callable[[int], Any]:
    """Queue ids of one kind: ints, strings, (topic, partition) or (topic, broker, queue)."""
    if kind == 0:
        return lambda number: number * 7 - 300
    if kind == 1:
        return lambda number: f"q{number:05d}"
    if kind == 2:
        topics = [f"topic-{number:03d}" for number in rng.sample(range(1000), 4)]
        return lambda number: (topics[number % len(topics)], number // len(topics))
    return lambda number: ("orders", f"broker-{number % 3}", number // 3)


def _seeded_group(seed: int) -> GroupCase:
    """A group after a change, with a previous plan that a real caller could pass: sizes from
    empty to a few hundred queues, consumers that left, queues removed, queues held by no
    one, previous lists in any order, and inputs in any order."""
    rng = random.Random(seed)
    make_queue = _id_maker(rng.randrange(4), rng)
    queue_numbers = rng.sample(range(1000), rng.choice([0, 1, 2, 5, 17, 60, 300]))
    queues = [make_queue(number) for number in queue_numbers]
    consumer_count = rng.choice([0, 1, 2, 3, 7, 12, 40])
    consumers = [f"c{number:03d}" for number in rng.sample(range(200), consumer_count)]
    if rng.random() < 0.15:
        return GroupCase(queues, consumers, None)
    departed = [f"gone{number}" for number in range(rng.randrange(3))]
    owners = [*rng.sample(consumers, rng.randrange(len(consumers) + 1)), *departed]
    removed = [make_queue(1000 + number) for number in range(rng.randrange(4))]
    previous: dict[Any, list[Any]] = {owner: [] for owner in owners}
    if owners:
        held_by_no_one = rng.random() * 0.3
        for queue in queues + removed:
            if rng.random() >= held_by_no_one:
                previous[rng.choice(owners)].append(queue)
    if rng.random() < 0.7:  # plans a strategy returned are sorted; a caller's may not be
        for owned in previous.values():
            owned.sort()
    return GroupCase(queues, consumers, previous)


ROWS = pytest.mark.parametrize(
    "rows_from", [0, ranking.ROWS_FROM], ids=["rows-from-any-size", "rows-from-default"]
)
"""Look-ups of previous row by row (`ranking._ranks_of`) from any plan size, and from the
default size (above the plans of these tests): both orders held to the definition."""


@ROWS
@pytest.mark.parametrize("block", range(8))
def test_assign_gives_the_definition_s_plan_on_thousands_of_seeded_groups(
    block: int, rows_from: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ranking, "ROWS_FROM", rows_from)
    for seed in range(block, SEEDED_GROUPS, 8):
        case = _seeded_group(seed)
        expected = sticky.reference_assign(case.queues, case.consumers, case.previous)
        for fast in (sticky.assign_by_ranks, sticky.assign):
            got = fast(case.queues, case.consumers, case.previous)
            assert got == expected, f"{fast.__name__}, seed {seed}"
            assert all(type(owned) is list for owned in got.values()), f"seed {seed}"


def _group_after_a_made_plan(seed: int) -> GroupCase:
    """A group after a change, its previous plan one that a strategy made over the queues of
    before: dealt round the consumers (sticky's hand-out, round robin), in runs (range,
    averagely), or nearly all on one consumer; then a consumer leaves or joins, or queues are
    removed or added (the removed ones may be any consumer's first)."""
    rng = random.Random(seed)
    make_queue = _id_maker(rng.randrange(4), rng)
    before = sorted(
        make_queue(number) for number in rng.sample(range(1000), rng.choice([1, 2, 17, 60, 300]))
    )
    consumers = [
        f"c{number:03d}" for number in rng.sample(range(200), rng.choice([1, 2, 3, 7, 40]))
    ]
    count = len(consumers)
    shape = rng.choice(["round", "runs", "one holds most"])
    if shape == "round":
        lists = [before[index::count] for index in range(count)]
    elif shape == "runs":
        size = -(-len(before) // count)
        lists = [before[index * size : (index + 1) * size] for index in range(count)]
    else:
        lists = [before[count - 1 :], *([queue] for queue in before[: count - 1])]
    previous = dict(zip(consumers, lists, strict=False))
    change = rng.choice(["leave", "join", "removed", "added"])
    queues = list(before)
    if change == "leave":
        consumers = [consumer for consumer in consumers if consumer != rng.choice(consumers)]
    elif change == "join":
        consumers = [*consumers, "new"]
    elif change == "removed":
        queues = [queue for queue in before if rng.random() < 0.8]
    else:
        queues = sorted({*before, *(make_queue(1000 + number) for number in range(5))})
    return GroupCase(queues, consumers, previous)


@ROWS
@pytest.mark.parametrize("block", range(4))
def test_assign_gives_the_definition_s_plan_after_plans_that_strategies_make(
    block: int, rows_from: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ranking, "ROWS_FROM", rows_from)
    for seed in range(block, SEEDED_GROUPS // 2, 4):
        case = _group_after_a_made_plan(seed)
        expected = sticky.reference_assign(case.queues, case.consumers, case.previous)
        assert sticky.assign(case.queues, case.consumers, case.previous) == expected, seed


@given(groups())
def test_assign_gives_the_definition_s_plan_on_hypothesis_groups(case: GroupCase) -> None:
    expected = sticky.reference_assign(case.queues, case.consumers, case.previous)
    assert sticky.assign_by_ranks(case.queues, case.consumers, case.previous) == expected
    assert sticky.assign(case.queues, case.consumers, case.previous) == expected


def _next_membership(
    rng: random.Random, queues: list[Any], consumers: list[str], make_queue: Callable[[int], Any]
) -> tuple[list[Any], list[str]]:
    """One membership change: members join or leave (one or a burst), queues are added or
    removed, or nothing changes; the queues are often the very list given before."""
    change = rng.choice(["join", "leave", "burst", "queues", "same", "equal copy", "shuffled"])
    if change == "join":
        return queues, [*consumers, f"j{rng.randrange(10**6):06d}"]
    if change == "leave" and consumers:
        return queues, [c for c in consumers if c != rng.choice(consumers)]
    if change == "burst":
        joined = [f"j{rng.randrange(10**6):06d}" for _ in range(rng.randrange(1, 6))]
        return queues, sorted(set(rng.sample(consumers, len(consumers) // 2) + joined))
    if change == "queues":
        kept = rng.sample(queues, len(queues) * 3 // 4)
        added = {make_queue(rng.randrange(2000)) for _ in range(rng.randrange(8))}
        return sorted(set(kept) | added), consumers
    if change == "equal copy":  # equal ids, other list: ranked again, same plan
        return list(queues), consumers
    if change == "shuffled":
        return rng.sample(queues, len(queues)), consumers
    return queues, consumers


@pytest.mark.parametrize("block", range(4))
def test_a_sticky_group_gives_assign_s_plan_after_its_last_one_step_after_step(block: int) -> None:
    for seed in range(block, SEEDED_SEQUENCES, 4):
        rng = random.Random(seed)
        start = _seeded_group(seed)
        make_queue = _id_maker(rng.randrange(4), rng)
        queues = sorted({make_queue(number) for number in rng.sample(range(1000), 50)})
        consumers = start.consumers
        previous = start.previous if rng.random() < 0.5 else None
        group: StickyGroup[Any, str] = StickyGroup(previous)
        for step in range(STEPS_PER_SEQUENCE):
            expected = sticky.reference_assign(queues, consumers, previous)
            got = group.assign(queues, consumers)
            assert got == expected, f"seed {seed}, step {step}"
            previous = expected
            queues, consumers = _next_membership(rng, queues, consumers, make_queue)


def test_a_sticky_group_over_the_same_queues_neither_sorts_nor_hashes_them_again() -> None:
    queues = [CountedId(number) for number in range(200)]
    consumers = [f"c{number}" for number in range(7)]
    group: StickyGroup[CountedId, str] = StickyGroup()
    group.assign(queues, consumers)
    CountedId.reset()
    group.assign(queues, consumers[1:])  # one member leaves
    group.assign(queues, consumers)  # and comes back
    assert CountedId.counts == {"hash": 0, "compare": 0}


def test_assign_by_ranks_hashes_each_queue_once_and_each_previous_queue_once() -> None:
    queues = [CountedId(number) for number in range(300)]
    consumers = [f"c{number}" for number in range(9)]
    previous = sticky.assign(queues, consumers)
    CountedId.reset()
    sticky.assign_by_ranks(queues, consumers[:4] + consumers[5:], previous)  # one leaves
    # the ranks' dict hashes each queue, and each previous queue is looked up once
    assert CountedId.counts["hash"] == len(queues) + len(queues)
    # the queues, given in order, are compared once with their neighbour, and never after
    assert CountedId.counts["compare"] == len(queues) - 1


def test_previous_queues_are_looked_up_row_by_row_when_dealt_round_else_run_by_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ranking, "ROWS_FROM", 300)  # rows for a plan of 300 queues
    queues = [CountedId(number) for number in range(300)]
    consumers = [f"c{number}" for number in range(9)]
    dealt_round = sticky.assign(queues, consumers)  # c0 holds 0, 9, 18, ...; c1 1, 10, ...
    runs = [list(range(start, min(start + 34, 300))) for start in range(0, 300, 34)]
    in_runs = {
        consumer: [queues[number] for number in run]
        for consumer, run in zip(consumers, runs, strict=True)
    }
    # the longest list first (c0's, 34 queues): it tells which; then the others
    orders = {
        "dealt round": (dealt_round, [*range(0, 300, 9), *(n for n in range(300) if n % 9)]),
        "in runs": (in_runs, list(range(300))),
    }
    for name, (previous, order) in orders.items():
        CountedId.reset()
        sticky.assign_by_ranks(queues, consumers[:4] + consumers[5:], previous)  # one leaves
        assert CountedId.hashed[len(queues) :] == order, name  # after ranking the queues
    monkeypatch.setattr(ranking, "ROWS_FROM", 301)  # a smaller plan: its own order
    CountedId.reset()
    sticky.assign_by_ranks(queues, consumers[:4] + consumers[5:], dealt_round)
    plan_order = [queue.number for queue in chain(*dealt_round.values())]
    assert CountedId.hashed[len(queues) :] == plan_order


def test_a_list_kept_whole_holds_previous_s_very_ids_as_the_definition_s_does() -> None:
    queues = [f"q{number:04d}" for number in range(400)]  # long lists: 100 each
    consumers = ["a", "b", "c", "d"]
    made = sticky.assign(queues, consumers)
    # equal ids, other objects (a plan read back from a file): neither the queues' nor made's
    previous = {consumer: ["".join(queue) for queue in owned] for consumer, owned in made.items()}
    grown = [*queues, "q0400", "q0401"]  # two queues added: a and b take them, c and d keep
    expected = sticky.reference_assign(grown, consumers, previous)
    got = sticky.assign(grown, consumers, previous)
    assert got == expected
    kept_whole = [consumer for consumer in consumers if got[consumer] == previous[consumer]]
    assert kept_whole == ["c", "d"]
    for consumer in kept_whole:
        assert all(map(operator.is_, got[consumer], previous[consumer]))
        assert all(map(operator.is_, expected[consumer], previous[consumer]))


def test_a_queue_list_changed_in_place_is_checked_and_ranked_again() -> None:
    queues = ["q1", "q2", "q3", "q4", "q5"]
    group: StickyGroup[str, str] = StickyGroup()
    plan = group.assign(queues, ["a", "b"])
    for change in (lambda: queues.__setitem__(1, "q9"), lambda: queues.append("q0")):
        change()
        expected = sticky.reference_assign(queues, ["a", "b"], plan)
        plan = group.assign(queues, ["a", "b"])
        assert plan == expected
    queues.append("q1")
    with pytest.raises(ValueError, match="duplicate queue id 'q1'"):
        group.assign(queues, ["a", "b"])


def test_a_plan_changed_by_the_caller_does_not_change_the_group_s_next_one() -> None:
    queues = list(range(12))
    group: StickyGroup[int, str] = StickyGroup()
    first = group.assign(queues, ["a", "b", "c"])
    expected = sticky.assign(queues, ["a", "b"], first)
    first["a"].clear()
    first["b"].append(99)
    assert group.assign(queues, ["a", "b"]) == expected


REFUSED = [
    ([1, 1], ["a"], None),
    ([1, 2], ["a", "a"], None),
    ([1, [2]], ["a"], None),
    ([[2], [1]], ["a"], None),
    ([{}, {}], ["a"], None),
    ([1.0, float("nan"), 0.5], ["a"], None),
    ([frozenset({1}), frozenset({2})], ["a"], None),
    ([1, "x"], ["a"], None),
    ("queues", ["a"], None),
    ([1, 2], ["a", "b"], {"a": [1], "b": [1]}),
    ([1, 2], ["a"], {"a": [2], "gone": [2]}),
    ([1, 2], ["a"], {"a": [1, 1]}),
    ([1, 2], ["a"], {"a": [9], "gone": [9]}),
    ([1, 2], ["a"], {"a": [9, 9]}),
    ([1, 2], ["a"], {"a": [1, [2]]}),
    ([1, 2], ["a"], {"a": 2}),
    ([1, 2], ["a"], {"a": "12"}),
    ([("t", 0), ("t", 1)], ["a"], {"a": ("t", 1)}),
    ([1, 2], ["a"], [("a", [1])]),
    ([1, 2], ["a"], "iterators"),  # a mapping of iterators: each read once
]


@pytest.mark.parametrize(("queues", "consumers", "previous"), REFUSED)
def test_assign_and_a_sticky_group_refuse_what_the_definition_refuses_with_its_message(
    queues: Any, consumers: Any, previous: Any
) -> None:
    def refusal(call: Callable[[Any, Any, Any], object]) -> tuple[type, str]:
        fresh_previous = previous
        if previous == "iterators":
            fresh_previous = MappingProxyType({"a": iter([1]), "b": iter([2, 1])})
        with pytest.raises((TypeError, ValueError)) as refused:
            call(queues, consumers, fresh_previous)
        return refused.type, str(refused.value)

    expected = refusal(sticky.reference_assign)
    assert refusal(sticky.assign_by_ranks) == expected
    assert refusal(sticky.assign) == expected
    assert refusal(lambda q, c, p: StickyGroup(p).assign(q, c)) == expected


def test_a_sticky_group_checks_the_consumers_even_over_the_same_queues() -> None:
    group: StickyGroup[int, str] = StickyGroup()
    queues = [1, 2, 3]
    group.assign(queues, ["a"])
    with pytest.raises(ValueError, match="duplicate consumer id 'b'"):
        group.assign(queues, ["b", "b"])


def test_a_sticky_group_made_with_another_form_of_ids_warns_as_assign_does() -> None:
    with pytest.warns(PreviousMismatchWarning, match="ids of another form"):
        StickyGroup({"a": ["orders-0"]}).assign([("orders", 0)], ["a"])


@total_ordering
class CountedId:
    """A queue id that counts how often it is hashed and compared, across all instances."""

    counts: ClassVar[dict[str, int]] = {"hash": 0, "compare": 0}
    hashed: ClassVar[list[int]] = []  # the numbers of the ids hashed, in turn

    def __init__(self, number: int) -> None:
        self.number = number

    @classmethod
    def reset(cls) -> None:
        cls.counts = {"hash": 0, "compare": 0}
        cls.hashed = []

    def __hash__(self) -> int:
        CountedId.counts["hash"] += 1
        CountedId.hashed.append(self.number)
        return hash(self.number)

    def __eq__(self, other: object) -> bool:
        CountedId.counts["compare"] += 1
        return isinstance(other, CountedId) and self.number == other.number

    def __lt__(self, other: CountedId) -> bool:
        CountedId.counts["compare"] += 1
        return self.number < other.number

    def __repr__(self) -> str:
        return f"CountedId({self.number})"


@pytest.mark.parametrize(
    ("first", "then"),
    [
        (list(range(300)), [float(number) for number in range(300)]),  # long lists kept whole
        ([False, True, 2], [0, 1, 2]),  # int ids take the definition's path
        (list(range(8)), [numpy.int64(number) for number in range(8)]),
    ],
    ids=["int then float", "bool then int", "int then numpy"],
)
def test_a_sticky_group_returns_the_caller_s_ids_where_assign_may_return_previous_s(
    first: list[Any], then: list[Any]
) -> None:
    """Issue 43: the plans are equal, not made of the same objects. StickyGroup's ids are this
    call's queues; sticky.assign keeps previous's ids for queues kept (its definition does)."""
    consumers = ["a", "b"]
    made: StickyGroup[Any, str] = StickyGroup()
    last = made.assign(first, consumers)
    for group in (made, StickyGroup(last)):  # the group's own last plan, or one it was given
        got = group.assign(then, consumers)
        expected = sticky.assign(then, consumers, last)
        assert got == expected
        assert all(
            any(queue is given for given in then) for owned in got.values() for queue in owned
        )
    from_previous = [
        queue
        for owned in expected.values()
        for queue in owned
        if all(queue is not given for given in then)
    ]
    assert from_previous or type(then[0]) is numpy.int64  # numpy ids take the ranks' path
