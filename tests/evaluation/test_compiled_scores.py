"""The compiled scores (rebalancing.evaluation.scoring.compiled_scores) against the reference
(rebalancing.evaluation.scoring.scores): the same rows on a thousand seeded scenarios (1,900 in
the thorough profile), some 14,000 runs of a strategy through a scenario per engine, broken plans
included, and the same scores for any plan the compiled path accepts."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from fractions import Fraction
from operator import attrgetter
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rebalancing.contract import CheckedPlan
from rebalancing.evaluation.scenarios.changes import ScenarioSettings, generate_scenarios
from rebalancing.evaluation.scoring import compiled_scores
from rebalancing.evaluation.scoring.compiled_scores import (
    NO_PLAN,
    ConsumerNumbers,
    IntegerGroup,
    score_exact,
    score_positions,
)
from rebalancing.evaluation.scoring.replay import ScoreRow, score_scenarios
from rebalancing.evaluation.scoring.scores import score
from rebalancing.strategies import STRATEGIES
from rebalancing.strategies.sac import Session
from tests.evaluation.test_scores import HASHABLE_JUNK, JUNK

SMALL = ScenarioSettings(queue_range=(1, 48), consumer_range=(1, 9), change_count_range=(1, 6))


def _breaking(name: str, every: int) -> Callable[..., Any]:
    """A registered strategy whose plans are broken one way or another on every `every`-th
    call, cycling through the ways (each run starts the cycle afresh)."""
    assign = STRATEGIES[name].assign
    calls = iter(range(10**9))

    def broken(queues: Any, consumers: Any, previous: Any = None) -> Any:
        call = next(calls)
        plan = assign(queues, consumers, previous)
        if call % every or not plan:
            return plan
        way = (call // every) % len(_BREAKS)
        return _BREAKS[way](dict(plan), list(queues))

    return broken


def _first(plan: dict[Any, Any]) -> Any:
    return next(iter(plan))


def _with(plan: dict[Any, Any], queue: Any) -> dict[Any, Any]:
    """`plan` with `queue` added to the first consumer's list."""
    first = _first(plan)
    plan[first] = [*plan[first], queue]
    return plan


def _raise(plan: dict[Any, Any], queues: list[Any]) -> Any:
    raise RuntimeError("broken on purpose")


_BREAKS: list[Callable[[dict[Any, Any], list[Any]], Any]] = [
    lambda plan, queues: _with(plan, queues[0]),  # a queue held twice (or by two consumers)
    lambda plan, queues: {**plan, _first(plan): plan[_first(plan)][1:]},  # an orphan
    lambda plan, queues: _with(plan, max(queues) + 1),  # an unknown queue id
    lambda plan, queues: _with(plan, -1),
    lambda plan, queues: _with(plan, 10**30),  # too large for an int64
    lambda plan, queues: _with(plan, 0.5),
    lambda plan, queues: _with(plan, Fraction(1, 2)),
    lambda plan, queues: _with(plan, "queue"),
    lambda plan, queues: _with(plan, None),
    lambda plan, queues: _with(plan, np.int64(max(queues) + 1)),
    lambda plan, queues: _with(plan, True),  # as a dict takes it: queue 1
    lambda plan, queues: {**plan, "consumer-unknown": []},  # a consumer outside the group
    lambda plan, queues: {key: value for key, value in list(plan.items())[1:]},  # one missing
    lambda plan, queues: {key: tuple(value) for key, value in plan.items()},  # not lists
    lambda plan, queues: {key: iter(value) for key, value in plan.items()},
    lambda plan, queues: {key: [float(queue) for queue in value] for key, value in plan.items()},
    lambda plan, queues: {key: list(map(np.int64, value)) for key, value in plan.items()},
    lambda plan, queues: [],  # no plan at all
    _raise,
]


def _reusing(every: int) -> Callable[..., Any]:
    """sticky, returning one dict that it changes in place at every call, with an unknown
    queue on every `every`-th call: its last plan must be read as it was, not as it is now."""
    assign = STRATEGIES["sticky"].assign
    plan: dict[Any, Any] = {}
    calls = iter(range(10**9))

    def reusing(queues: Any, consumers: Any, previous: Any = None) -> Any:
        fresh = assign(queues, consumers, previous)
        plan.clear()
        plan.update(fresh)
        if plan and next(calls) % every == 0:
            _with(plan, max(queues) + 1)
        return plan

    return reusing


THOROUGH = settings.default.max_examples >= settings.get_profile("thorough").max_examples
"""HYPOTHESIS_PROFILE=thorough (make thorough): all 1,900 seeded scenarios below, each with every
strategy; by default 1,000 of them (the first part of each range), each with a share of them."""

ALWAYS = ("averagely", "sac", "sticky")
"""The registered strategies every scenario runs: the kernel engine's compiled twins (averagely,
sticky) and SAC, whose kernel gives its plans as positions; the others take turns (SHARES)."""

SHARES = 1 if THOROUGH else 3
"""Scenario i runs ALWAYS, the broken and reusing strategies, and every SHARES-th of the other
registered strategies from the (i % SHARES)-th: each meets a third of the scenarios by default,
at half the cost of a scenario with all of them (the per-strategy work is what costs here)."""


def _strategies(every: int, share: int = 0) -> dict[str, Any]:
    """The registered strategies of `share` (SHARES), broken copies of three of them, and one
    that reuses its plan."""
    others = [name for name in STRATEGIES if name not in ALWAYS]
    chosen: dict[str, Any] = {name: STRATEGIES[name] for name in ALWAYS}
    chosen.update({name: STRATEGIES[name] for name in others[share::SHARES]})
    for name in ("averagely", "sticky", "round_robin"):
        chosen[f"{name}_broken"] = _breaking(name, every)
    chosen["sticky_reusing"] = _reusing(every + 1)
    return chosen


_COMPARED = attrgetter(*(name for name in ScoreRow.__slots__ if name != "assign_micros"))
"""A row's fields but its timing, as a tuple (dataclasses.replace would cost more than the
comparison)."""


def _rows(
    engine: str, scenarios: range, every: int, views: str = "broker"
) -> Iterator[tuple[Any, ...]]:
    """The rows of `scenarios` with `engine`, each scenario with its share of the strategies,
    without their timings."""
    for share in range(SHARES):
        rows = score_scenarios(
            generate_scenarios(7, scenarios[share::SHARES], SMALL),
            _strategies(every, share),
            views,
            engine=engine,
        )
        yield from map(_COMPARED, rows)


def _seeded(first: int, end: int, by_default: int) -> range:
    return range(first, end if THOROUGH else first + by_default)


@pytest.mark.parametrize(
    ("scenarios", "every", "views"),
    [
        (_seeded(0, 900, 500), 3, "broker"),  # mostly working plans, a broken one now and then
        (_seeded(900, 1500, 300), 1, "broker"),  # the broken strategies break every plan
        (_seeded(1500, 1900, 200), 2, "client"),  # each consumer rebalancing on its own view
    ],
)
def test_both_engines_give_the_same_rows_on_thousands_of_seeded_scenarios(
    scenarios: range, every: int, views: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcomes = {"compiled": 0, "reference": 0, "positions": 0}

    def counted(*arguments: Any) -> Any:
        scored = score_exact(*arguments)
        outcomes["compiled" if scored is not None else "reference"] += 1
        return scored

    def counted_positions(*arguments: Any) -> Any:
        scored = score_positions(*arguments)
        outcomes["positions" if scored is not None else "reference"] += 1
        return scored

    monkeypatch.setattr(compiled_scores, "score_exact", counted)
    monkeypatch.setattr(compiled_scores, "score_positions", counted_positions)
    compiled = list(_rows("kernel", scenarios, every, views))
    reference = list(_rows("reference", scenarios, every, views))
    assert len(compiled) == len(reference) > 0
    for mine, theirs in zip(compiled, reference, strict=True):
        assert mine == theirs
    # every way was taken, a compiled one for most plans (SAC's kernel gives positions)
    assert outcomes["compiled"] > outcomes["reference"] > 0
    assert outcomes["positions"] > 0


def test_the_positions_of_a_kernel_run_score_as_its_owners_do() -> None:
    """SAC's kernel gives its plan twice, as owners and as positions: on seeded sessions of
    joins, leaves and queue changes, both give the same scores and the same Owners."""
    for seed in range(60):
        random = np.random.default_rng(seed)
        session = Session(engine="kernel", release=("highest", "newest", "random")[seed % 3])
        numbers = ConsumerNumbers()
        owners_from_lists = owners_from_positions = NO_PLAN
        for _ in range(6):
            queues = sorted(random.choice(60, size=random.integers(1, 40), replace=False))
            queues = [int(queue) for queue in queues]
            consumers = sorted({f"c{number}" for number in random.integers(0, 12, size=5)})
            run = session.rebalance(queues, consumers)
            assert run.positions is not None
            group = _group(queues, consumers, numbers)
            from_lists = score_exact(group, run.owners, owners_from_lists, numbers)
            from_positions = score_positions(
                group, run.owners, run.positions, owners_from_positions, numbers
            )
            assert from_lists is not None
            assert from_positions is not None
            assert from_positions[0] == from_lists[0]
            assert from_positions[1].by_queue.tolist() == from_lists[1].by_queue.tolist()
            assert from_positions[1].holds_any == from_lists[1].holds_any
            owners_from_lists, owners_from_positions = from_lists[1], from_positions[1]


@pytest.mark.parametrize(
    ("grouped", "starts"),
    [
        ([0, 1], [0, 1, 2, 2]),  # a start too many: not the group's consumers
        ([0, 1], [0, 2]),  # a start too few
        ([0, 1], [1, 1, 2]),  # not starting at 0
        ([0, 1, 2], [0, 1, 2]),  # more positions than the starts cover
        ([0, 1], [0, 2, 1]),  # runs that end before the positions do
        ([0], [0, 2, 1]),  # a run past the positions, then one of negative length
        ([0, 1], [0, 3 * 2**61, 2]),  # a run past the positions (no overflow to hide it)
        ([0, -1], [0, 1, 2]),  # a negative position (numpy would read it from the end)
        ([0, 3], [0, 1, 2]),  # a position past the group's queues
        ([0, 0], [0, 1, 2]),  # a queue held twice
    ],
)
def test_positions_that_do_not_fit_the_group_are_left_to_the_reference(
    grouped: list[int], starts: list[int]
) -> None:
    """The compiled pass checks the arrays itself (numba checks no bounds): called as
    score_positions calls it, each misfit comes back as not exact."""
    numbers = ConsumerNumbers()
    group = _group([4, 5, 9], ["c", "d"], numbers)
    positions = np.array(grouped, np.int64), np.array(starts, np.int64)
    arrays = (*positions, group.consumer_numbers, NO_PLAN, numbers)
    assert compiled_scores._score_arrays(group, *arrays, by_position=True) is None


def test_positions_are_taken_only_for_their_own_plan() -> None:
    numbers = ConsumerNumbers()
    group = _group([4, 5, 9], ["c", "d"], numbers)
    positions = np.array([0, 2], np.int64), np.array([0, 1, 2], np.int64)
    plan = {"c": [4], "d": [9]}
    scored = score_positions(group, plan, positions, NO_PLAN, numbers)
    assert scored is not None
    assert scored[0] == score([4, 5, 9], ["c", "d"], None, plan)
    for other in ({"c": [4, 5], "d": []}, {"d": [9], "c": [4]}, {"c": [4]}):
        assert score_positions(group, other, positions, NO_PLAN, numbers) is None
    as_floats = np.array([0, 2], np.float64), positions[1]
    assert score_positions(group, plan, as_floats, NO_PLAN, numbers) is None
    as_lists: Any = [0, 2], [0, 1, 2]
    assert score_positions(group, plan, as_lists, NO_PLAN, numbers) is None


def test_an_unknown_engine_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="'compiled'"):
        next(score_scenarios(generate_scenarios(1, range(1)), dict(STRATEGIES), engine="compiled"))


def _group(queues: list[Any], consumers: list[str], numbers: ConsumerNumbers) -> Any:
    """IntegerGroup.of for sorted, distinct `queues` (as the scoring core gives them)."""
    ordered = tuple(sorted(consumers))
    return IntegerGroup.of(queues, frozenset(queues), ordered, frozenset(ordered), numbers)


@pytest.mark.parametrize(
    "queues",
    [["a", "b"], [0.5, 1], [-1, 2], [0, 10**30], [0, 2_000_000], [np.int64(1), 2], [0, None]],
)
def test_groups_of_anything_but_small_non_negative_ints_are_left_to_the_reference(
    queues: list[Any],
) -> None:
    assert _group(queues, ["c"], ConsumerNumbers()) is None


def test_a_group_of_small_non_negative_ints_is_taken() -> None:
    group = _group([3, 0, 7], ["c", "d"], ConsumerNumbers())
    assert group is not None
    assert group.in_group.tolist() == [True, False, False, True, False, False, False, True]


def test_an_exact_plan_is_held_as_a_checked_plan_inverted_on_first_read() -> None:
    checked = CheckedPlan.of_checked_lists({"c": [1, 2], "d": [0]})
    assert dict(checked.items()) == {"c": (1, 2), "d": (0,)}
    assert dict(checked.owner) == {1: "c", 2: "c", 0: "d"}


_IDS = st.integers(min_value=0, max_value=12)
_CONSUMERS = st.lists(st.sampled_from("abcdef"), unique=True, max_size=5)


@st.composite
def _exact_plans(draw: st.DrawFn, queues: list[int], consumers: list[str]) -> dict[str, list[int]]:
    """An assignment of some of `queues` (none twice) to `consumers`, every consumer a key."""
    plan: dict[str, list[int]] = {consumer: [] for consumer in consumers}
    if consumers:
        for queue in draw(st.permutations(queues)):
            if draw(st.booleans()):
                plan[draw(st.sampled_from(consumers))].append(queue)
    return plan


@given(data=st.data())
@settings(max_examples=300, deadline=None)
def test_where_the_compiled_path_scores_a_plan_it_gives_the_reference_scores(
    data: st.DataObject,
) -> None:
    numbers = ConsumerNumbers()
    queues_before = sorted(data.draw(st.lists(_IDS, unique=True, max_size=10), "queues before"))
    consumers_before = data.draw(_CONSUMERS, "consumers before")
    before = _group(queues_before, consumers_before, numbers)
    previous = data.draw(_exact_plans(queues_before, consumers_before), "previous")
    assert before is not None
    first = score_exact(before, previous, NO_PLAN, numbers)
    assert first is not None
    assert first[0] == score(queues_before, consumers_before, None, previous)

    queues = sorted(data.draw(st.lists(_IDS, unique=True, max_size=10), "queues"))
    consumers = data.draw(_CONSUMERS, "consumers")
    group = _group(queues, consumers, numbers)
    assert group is not None
    plan = {  # anything: unknown and repeated queues, unknown and missing consumers
        consumer: data.draw(st.lists(st.integers(min_value=-2, max_value=14), max_size=6))
        for consumer in data.draw(st.lists(st.sampled_from("abcdefg"), unique=True))
    }
    if data.draw(st.booleans(), "exact"):  # half the time, a plan the compiled path takes
        plan = data.draw(_exact_plans(queues, consumers), "exact plan")
    scored = score_exact(group, plan, first[1], numbers)
    reference = score(queues, consumers, previous, plan)
    exact = reference.duplicates + reference.unknown_queues + reference.unknown_consumers == 0
    exact = exact and set(plan) == set(consumers)
    assert (scored is not None) == exact
    if scored is not None:
        assert scored[0] == reference


@given(data=st.data())
@settings(max_examples=300, deadline=None)
def test_a_plan_of_anything_is_left_to_the_reference_or_scored_as_it_scores(
    data: st.DataObject,
) -> None:
    """Junk values (None, numbers, strs, nested and unhashable entries, iterators) under the
    group's consumers or others: the compiled path returns None, never raises, or gives the
    reference's scores."""
    numbers = ConsumerNumbers()
    queues = sorted(data.draw(st.lists(_IDS, unique=True, max_size=8), "queues"))
    consumers = data.draw(_CONSUMERS, "consumers")
    group = _group(queues, consumers, numbers)
    assert group is not None
    keys = st.sampled_from(consumers) if consumers else HASHABLE_JUNK
    plan = data.draw(st.dictionaries(keys | HASHABLE_JUNK, JUNK, max_size=5), "plan")
    if data.draw(st.booleans(), "every consumer a key"):
        plan = {**{consumer: [] for consumer in consumers}, **plan}
    scored = score_exact(group, plan, NO_PLAN, numbers)  # it reads no value but lists
    if scored is not None:
        assert scored[0] == score(queues, consumers, None, plan)
