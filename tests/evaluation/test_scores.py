"""Scores against hand-computed values and, for the optimum, against brute force."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rebalancing.contract import CheckedPlan
from rebalancing.evaluation.scoring.scores import (
    balance_degree,
    optimal_kept,
    read_and_score,
    read_plan,
    score,
    score_reading,
)
from rebalancing.strategies import averagely, sticky
from tests.groups import GroupCase, groups

SEED_QUEUES = [f"Q{n}" for n in range(1, 9)]


def test_balance_degree_is_the_population_standard_deviation() -> None:
    # counts 3, 3, 2: mean 8/3, squared deviations 1/9, 1/9, 4/9 -> sqrt(6/27)
    assert math.isclose(balance_degree([3, 3, 2]), math.sqrt(2 / 9))
    assert balance_degree([4, 4]) == 0.0
    assert balance_degree([5, 0, 0, 0]) == math.sqrt((3.75**2 + 3 * 1.25**2) / 4)
    assert balance_degree([]) is None


def test_seed_example_scores_after_c1_leaves() -> None:
    previous = sticky.assign(SEED_QUEUES, ["C0", "C1", "C2"])
    plan = sticky.assign(SEED_QUEUES, ["C0", "C2"], previous)
    scores = score(SEED_QUEUES, ["C0", "C2"], previous, plan)
    assert scores.balance_degree == 0.0
    assert scores.kept == 5  # C0 keeps Q1 Q4 Q7, C2 keeps Q3 Q6
    assert scores.stickiness == 5 / 8
    assert scores.optimal_stickiness == 5 / 8
    assert scores.stickiness_gap == 0.0
    assert (scores.moves, scores.revocations) == (0, 3)
    assert (scores.spread, scores.orphans, scores.duplicates) == (0, 0, 0)


def test_averagely_after_a_join_moves_queues_between_staying_consumers() -> None:
    queues = list(range(12))
    previous = averagely.assign(queues, ["a", "b", "c"])  # a: 0-3, b: 4-7, c: 8-11
    plan = averagely.assign(queues, ["a", "b", "c", "d"], previous)  # 0-2, 3-5, 6-8, 9-11
    scores = score(queues, ["a", "b", "c", "d"], previous, plan)
    assert scores.kept == 3 + 2 + 1  # a keeps 0-2, b keeps 4-5, c keeps 8
    assert scores.stickiness == 6 / 12
    assert scores.optimal_stickiness == 9 / 12  # quotas 3 each; a, b, c keep 3 each
    assert scores.stickiness_gap == 3 / 12
    assert scores.moves == scores.revocations == 6


def test_new_queues_and_queues_of_departed_consumers_count_as_not_kept() -> None:
    previous = {"a": [1, 2], "gone": [3]}
    plan = {"a": [1, 2], "b": [3, 4]}
    scores = score([1, 2, 3, 4], ["a", "b"], previous, plan)
    assert scores.stickiness == 2 / 4
    assert (scores.moves, scores.revocations) == (0, 1)


def test_stickiness_is_undefined_without_previous_or_queues() -> None:
    assert score([1, 2], ["a"], None, {"a": [1, 2]}).stickiness is None
    assert score([1, 2], ["a"], {"a": []}, {"a": [1, 2]}).stickiness is None
    empty = score([], ["a"], {"a": [1]}, {"a": []})
    assert (empty.stickiness, empty.optimal_stickiness, empty.stickiness_gap) == (None, None, None)


def test_no_consumers_leaves_every_queue_orphaned_and_balance_undefined() -> None:
    scores = score([1, 2], [], {"a": [1]}, {})
    assert (scores.balance_degree, scores.spread, scores.orphans) == (None, 0, 2)
    assert scores.revocations == 1


def test_a_broken_plan_shows_as_orphans_duplicates_and_unknown_ids() -> None:
    plan = {"a": [1, 2, 99], "b": [2], "stranger": [3]}
    scores = score([1, 2, 3, 4], ["a", "b", "c"], None, plan)
    assert scores.orphans == 1  # 4
    assert scores.duplicates == 1  # 2
    assert scores.unknown_queues == 1  # 99
    assert scores.unknown_consumers == 1  # stranger
    assert scores.spread == 3 - 0


def _every_balanced_plan(queue_count: int, consumers: list[str]) -> Iterator[tuple[str, ...]]:
    """Every assignment of queue 0..n-1 to consumers with counts differing by at most one."""
    base, extra = divmod(queue_count, len(consumers))
    counts = dict.fromkeys(consumers, 0)
    chosen: list[str] = []

    def extend(at_larger: int) -> Iterator[tuple[str, ...]]:
        if len(chosen) == queue_count:
            yield tuple(chosen)
            return
        for consumer in consumers:
            count = counts[consumer]
            opens_larger = count == base
            if count > base or (opens_larger and at_larger == extra):
                continue
            counts[consumer] += 1
            chosen.append(consumer)
            yield from extend(at_larger + opens_larger)
            chosen.pop()
            counts[consumer] -= 1

    yield from extend(0)


def _brute_force_optimal_kept(
    queues: list[int], consumers: list[str], previous: dict[str, list[int]]
) -> int:
    owner = {queue: consumer for consumer, owned in previous.items() for queue in owned}
    return max(
        sum(owner.get(queue) == holder for queue, holder in zip(queues, plan, strict=True))
        for plan in _every_balanced_plan(len(queues), consumers)
    )


def test_the_balanced_plan_enumeration_counts_what_combinatorics_says() -> None:
    # 5 queues over 3 consumers: counts (2, 2, 1) in 3 arrangements, 5! / (2! 2! 1!) plans each.
    assert len(list(_every_balanced_plan(5, ["a", "b", "c"]))) == 3 * 30
    assert len(set(_every_balanced_plan(8, list("abcde")))) == 10 * 5040


@st.composite
def small_groups(draw: st.DrawFn) -> tuple[list[int], list[str], dict[str, list[int]]]:
    """Up to 8 queues and 5 consumers; previous owners include a departed consumer and nobody."""
    queues = list(range(draw(st.integers(0, 8))))
    consumers = ["a", "b", "c", "d", "e"][: draw(st.integers(1, 5))]
    owners: list[Any] = [*consumers, "gone", None]
    previous: dict[str, list[int]] = {}
    for queue in [*queues, 100]:
        owner = draw(st.sampled_from(owners))
        if owner is not None:
            previous.setdefault(owner, []).append(queue)
    return queues, consumers, previous


@settings(max_examples=150)
@given(small_groups())
@example((list(range(8)), list("abcde"), {"a": [0, 1, 2, 3], "b": [4, 5], "gone": [6], "e": [7]}))
@example((list(range(8)), list("abc"), {"a": [0, 1, 2, 3, 4], "b": [5, 6, 7]}))
def test_optimal_kept_matches_brute_force_over_all_balanced_assignments(
    group: tuple[list[int], list[str], dict[str, list[int]]],
) -> None:
    queues, consumers, previous = group
    owner = {queue: consumer for consumer, owned in previous.items() for queue in owned}
    assert optimal_kept(queues, consumers, owner) == _brute_force_optimal_kept(
        queues, consumers, previous
    )


def test_a_previous_plan_holding_a_queue_twice_is_scored_not_refused() -> None:
    previous = {"a": [1, 2], "b": [2, 3]}  # a broken strategy's last plan
    scores = score([1, 2, 3], ["a", "b"], previous, {"a": [1, 2], "b": [3]})
    assert scores.kept == 3  # queue 2 counts as held by its first holder, "a"
    assert scores.duplicates == 0


def test_a_plan_given_as_iterators_is_read_once_and_scored_right() -> None:
    scores = score([1, 2, 3], ["a", "b"], None, {"a": iter([1, 2, 3]), "b": iter([])})
    assert (scores.spread, scores.balance_degree, scores.orphans) == (3, 1.5, 0)


def test_an_unhashable_entry_in_the_plan_or_in_previous_is_counted_not_raised() -> None:
    scores = score([1, 2], ["a"], {"a": [1, ["x"]]}, {"a": [1, 2, ["y"]]})
    assert (scores.unknown_queues, scores.kept, scores.orphans) == (1, 1, 0)


def _scores_by_definition(
    queues: list[int], consumers: list[str], previous: dict[str, list[int]] | None, plan: Any
) -> dict[str, Any]:
    """DESIGN.md's counting definitions, pair by pair, sharing no code with `score`."""
    holder: dict[int, str] = {}
    listed: dict[int, int] = {}
    for consumer, owned in plan.items():
        for queue in owned:
            listed[queue] = listed.get(queue, 0) + 1
            if queue in queues and queue not in holder:
                holder[queue] = consumer
    before: dict[int, str] = {}
    for consumer, owned in (previous or {}).items():
        for queue in owned:
            before.setdefault(queue, consumer)
    held_before = [queue for queue in queues if queue in before]
    kept = sum(1 for queue in held_before if holder.get(queue) == before[queue])
    changed = [queue for queue in held_before if holder.get(queue) != before[queue]]
    return {
        "kept": kept,
        "revocations": len(changed),
        "moves": sum(1 for queue in changed if before[queue] in consumers),
        "orphans": sum(1 for queue in queues if queue not in holder),
        "duplicates": sum(1 for queue in queues if listed.get(queue, 0) > 1),
        "unknown_queues": sum(count for queue, count in listed.items() if queue not in queues),
        "unknown_consumers": sum(1 for consumer in plan if consumer not in consumers),
    }


@given(
    st.lists(st.integers(0, 12), unique=True, max_size=10),
    st.lists(st.sampled_from("abcdef"), unique=True, max_size=5),
    st.none() | st.dictionaries(st.sampled_from("abcdefg"), st.lists(st.integers(0, 14))),
    st.dictionaries(st.sampled_from("abcdefg"), st.lists(st.integers(0, 14), max_size=6)),
)
def test_counts_follow_the_definitions_on_any_plan_however_broken(
    queues: list[int],
    consumers: list[str],
    previous: dict[str, list[int]] | None,
    plan: dict[str, list[int]],
) -> None:
    scores = score(queues, consumers, previous, plan)
    expected = _scores_by_definition(queues, consumers, previous, plan)
    assert {name: getattr(scores, name) for name in expected} == expected
    # lists take the fast reading, tuples the queue-by-queue one: the same scores either way
    as_tuples = {consumer: tuple(owned) for consumer, owned in plan.items()}
    assert score(queues, consumers, previous, as_tuples) == scores


@given(st.lists(st.integers(0, 5000), max_size=300))
def test_balance_degree_from_integer_sums_is_the_definitions_value(counts: list[int]) -> None:
    if not counts:
        assert balance_degree(counts) is None
        return
    mean = sum(counts) / len(counts)
    by_definition = math.sqrt(sum((count - mean) ** 2 for count in counts) / len(counts))
    assert math.isclose(balance_degree(counts) or 0.0, by_definition, rel_tol=1e-12, abs_tol=1e-9)


@given(groups())
def test_checked_plans_are_scored_as_the_plain_plans_they_stand_for(case: GroupCase) -> None:
    plan = sticky.assign(case.queues, case.consumers, case.previous)
    expected = score(case.queues, case.consumers, case.previous, plan)
    assert score(case.queues, case.consumers, CheckedPlan(case.previous), CheckedPlan(plan)) == (
        expected
    )
    # a checked plan can still hold queues outside the group: scored, not trusted
    if case.previous:
        assert score(case.queues, case.consumers, plan, CheckedPlan(case.previous)) == score(
            case.queues, case.consumers, plan, case.previous
        )


def test_a_previous_read_against_the_same_frozen_queue_set_skips_no_score() -> None:
    queues = frozenset(range(8))
    consumers = frozenset("abc")
    before = sticky.assign(queues, consumers)
    plan = sticky.assign(queues, ["a", "b", "c", "d"], before)
    previous = read_plan(queues, consumers, before).as_previous()
    assert previous.queue_set is queues
    reading = read_plan(queues, frozenset("abcd"), plan)
    shortcut = score_reading(frozenset("abcd"), previous, reading)
    assert shortcut == score(queues, "abcd", before, plan)


def test_read_and_score_finds_a_queue_outside_the_group_on_its_shortcut_too() -> None:
    queues, consumers = frozenset(range(6)), frozenset("ab")
    before = sticky.assign(queues, consumers)
    previous = read_plan(queues, consumers, before).as_previous()  # held every queue of Q
    stray = CheckedPlan({"a": [0, 1, 2, 99], "b": [3, 4, 5]})
    reading, scores = read_and_score(queues, consumers, previous, stray)
    assert not reading.exact
    assert (scores.unknown_queues, scores.orphans) == (1, 0)
    assert scores == score(queues, consumers, before, {"a": [0, 1, 2, 99], "b": [3, 4, 5]})
    fine = CheckedPlan(sticky.assign(queues, ["a", "b", "c"], before))
    reading, scores = read_and_score(queues, frozenset("abc"), previous, fine)
    assert reading.exact
    assert scores == score(queues, "abc", before, sticky.assign(queues, ["a", "b", "c"], before))


# --- junk: a plan or a previous plan of anything scores, never raises -----------------------------

_GROUP_QUEUES = [0, 1, 2, "a", "b"]  # scored as a set: mixed kinds need no order here
_GROUP_CONSUMERS = ["x", "y", None]

HASHABLE_JUNK = st.one_of(
    st.sampled_from([*_GROUP_QUEUES, *_GROUP_CONSUMERS, True, 2.0, (0,), ("a", 1)]),
    st.integers(),
    st.floats(),  # nan included: never equal to itself
    st.text(max_size=3),
    st.binary(max_size=2),
    st.frozensets(st.integers(0, 2), max_size=2),
)
JUNK = st.recursive(
    HASHABLE_JUNK,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.sets(HASHABLE_JUNK, max_size=3),
        st.dictionaries(HASHABLE_JUNK, inner, max_size=2),
        st.lists(inner, max_size=3).map(iter),
    ),
    max_leaves=8,
)
JUNK_PLANS = st.one_of(
    st.dictionaries(HASHABLE_JUNK, JUNK, max_size=5),
    st.dictionaries(st.sampled_from(_GROUP_CONSUMERS), JUNK, max_size=3),
    JUNK,  # not even a mapping
)


class _UnhashableKeys(Mapping[Any, Any]):
    """A Mapping that is not a dict, whose keys are lists: no dict can hold such a plan."""

    def __init__(self, items: list[tuple[Any, Any]]) -> None:
        self._items = items

    def __getitem__(self, key: Any) -> Any:
        for held_key, value in self._items:
            if held_key == key:
                return value
        raise KeyError("no such key")

    def __iter__(self) -> Iterator[Any]:
        return (key for key, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)


@settings(max_examples=500)
@given(st.one_of(st.none(), JUNK_PLANS), JUNK_PLANS)
@example(None, {"x": None})
@example(None, {"x": 3})
@example({"x": 3}, {"x": [0]})
@example({"x": None, "y": [0, [1]]}, {"x": "ab", "y": b"a"})
@example(None, _UnhashableKeys([(["x"], [0, 1]), ("x", [2])]))
@example(_UnhashableKeys([(["x"], [0, 1]), ("y", [2])]), {"x": [0, 1, 2, "a", "b"]})
def test_a_plan_or_previous_plan_of_anything_is_scored_never_raised(
    previous: Any, plan: Any
) -> None:
    scores = score(_GROUP_QUEUES, _GROUP_CONSUMERS, previous, plan)
    counts = [
        scores.kept,
        scores.moves,
        scores.revocations,
        scores.orphans,
        scores.duplicates,
        scores.unknown_queues,
        scores.unknown_consumers,
    ]
    assert min(counts) >= 0
    assert scores.kept + scores.orphans <= len(_GROUP_QUEUES)


@pytest.mark.parametrize(
    ("plan", "unknown_queues", "orphans"),
    [
        ({"x": None}, 1, 2),  # no list at all: one entry, outside Q
        ({"x": 3}, 1, 2),
        ({"x": 1}, 1, 2),  # a queue id where a list of them belongs is no list of queues
        ({"x": "ab"}, 1, 2),  # a str is one entry, not its characters
        ({"x": [1, ["b"]], "y": ["a"]}, 1, 0),  # an unhashable entry is outside Q too
    ],
)
def test_a_plan_value_that_is_no_list_of_queues_shows_as_an_unknown_queue(
    plan: dict[str, Any], unknown_queues: int, orphans: int
) -> None:
    scores = score([1, "a"], ["x", "y"], None, plan)
    assert (scores.unknown_queues, scores.orphans) == (unknown_queues, orphans)


def test_a_previous_value_that_is_no_list_of_queues_holds_nothing() -> None:
    scores = score([1, 2], ["x"], {"x": 1, "y": None, "z": "12"}, {"x": [1, 2]})
    assert (scores.kept, scores.revocations, scores.stickiness) == (0, 0, None)
    assert score([1, 2], ["x"], "not a mapping", {"x": [1, 2]}).stickiness is None


def test_a_plan_that_is_no_mapping_leaves_every_queue_an_orphan() -> None:
    scores = score([1, 2], ["x"], None, [("x", [1, 2])])
    assert (scores.orphans, scores.unknown_queues) == (2, 0)
