"""The compiled twins (rebalancing.evaluation.scoring.compiled_strategies) against their strategies'
references: the same plans on thousands of seeded groups, the same rows from the scoring core
with and without them, and the twin only where it may stand for the strategy."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from dataclasses import replace
from enum import IntEnum
from functools import lru_cache
from itertools import accumulate
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rebalancing.contract import SortedIds
from rebalancing.evaluation.scenarios.changes import (
    INITIAL,
    Scenario,
    ScenarioSettings,
    Step,
    generate_scenarios,
    scenario_seed,
)
from rebalancing.evaluation.scoring import compiled_strategies, runner
from rebalancing.evaluation.scoring.aggregates import ALL_CHANGES, summarise
from rebalancing.evaluation.scoring.compiled_scores import (
    NO_OWNER,
    NO_PLAN,
    ConsumerNumbers,
    IntegerGroup,
    Owners,
)
from rebalancing.evaluation.scoring.compiled_strategies import (
    averagely_twin,
    bounded_consistent_hash_twin,
    consistent_hash_twin,
    sticky_twin,
    twin_of,
)
from rebalancing.evaluation.scoring.replay import (
    TIMED_EVERY,
    TIMED_OFFSET,
    ScoreRow,
    score_scenario,
    score_scenarios,
)
from rebalancing.strategies import (
    STRATEGIES,
    averagely,
    bounded_consistent_hash,
    consistent_hash,
    sticky,
)


def _integer_group(
    queues: list[int], consumers: list[Any], numbers: ConsumerNumbers
) -> IntegerGroup:
    """The group as the compiled scores take it (its consumers numbered by `numbers`)."""
    sorted_queues, sorted_consumers = SortedIds(queues, "queue"), SortedIds(consumers, "consumer")
    group = IntegerGroup.of(
        sorted_queues, sorted_queues.as_set, sorted_consumers, sorted_consumers.as_set, numbers
    )
    assert group is not None
    return group


def _twin_plan(
    queues: list[int], consumers: list[Any], previous: dict[Any, list[int]] | None
) -> tuple[dict[Any, list[Any]], tuple[Any, Any]]:
    """The twin's plan and positions for a group, its previous plan given as owners: every
    consumer of `previous` numbered first (departed ones included), then the group's."""
    numbers = ConsumerNumbers()
    previous = previous or {}
    numbers.of(list(previous))
    bound = max([*queues, *(queue for owned in previous.values() for queue in owned), 0]) + 1
    by_queue = np.full(bound, NO_OWNER, dtype=np.int32)
    for consumer, owned in previous.items():
        for queue in owned:
            by_queue[queue] = numbers.number_of[consumer]
    group = _integer_group(queues, consumers, numbers)
    owners = Owners(by_queue, bool(previous))
    return sticky_twin(group, owners, len(numbers.number_of))


def _random_group(rng: random.Random) -> tuple[list[int], list[Any], dict[Any, list[int]] | None]:
    """A group and an exact previous plan over an earlier group: some consumers gone, some
    new, queues removed and added anywhere, previous lists of any length (unbalanced too)."""
    universe = rng.randint(1, 300)
    queue_count = rng.randint(0, min(universe, 120))
    queues = rng.sample(range(universe), queue_count)
    names = [f"c{number:03d}" for number in range(rng.randint(1, 40))]
    if rng.random() < 0.3:
        names = [rng.randint(-50, 50) for _ in range(len(names))]
        names = list(dict.fromkeys(names))
    consumers = rng.sample(names, rng.randint(1, len(names)))
    if rng.random() < 0.15:
        return queues, consumers, None
    earlier_queues = rng.sample(range(universe), rng.randint(0, universe))
    earlier_consumers = rng.sample(names, rng.randint(1, len(names)))
    previous: dict[Any, list[int]] = {consumer: [] for consumer in earlier_consumers}
    skew = rng.random()
    for queue in earlier_queues:
        if rng.random() < 0.1:
            continue  # held by nobody
        holder = earlier_consumers[
            0 if rng.random() < skew / 2 else rng.randrange(len(earlier_consumers))
        ]
        previous[holder].append(queue)
    for owned in previous.values():
        rng.shuffle(owned)
    return queues, consumers, previous


def test_the_sticky_twin_gives_the_references_plans_on_thousands_of_seeded_groups() -> None:
    kept_something = 0
    for seed in range(3000):
        queues, consumers, previous = _random_group(random.Random(seed))
        plan, (grouped, starts) = _twin_plan(queues, consumers, previous)
        expected = sticky.reference_assign(queues, consumers, previous)
        assert plan == expected, seed
        assert list(plan) == list(expected), seed  # consumers in id order, as the reference
        # the positions are the same plan: each consumer's run, as positions in the queues
        bounds = starts.tolist()
        assert len(bounds) == len(plan) + 1
        sorted_queues = sorted(queues)
        for consumer, start, end in zip(plan, bounds, bounds[1:], strict=False):
            assert [sorted_queues[position] for position in grouped[start:end]] == plan[consumer]
        kept_something += any(
            set(plan[consumer]) & set(previous.get(consumer, ())) for consumer in plan if previous
        )
    assert kept_something > 1000  # the keep step was exercised, not only the hand-out


@given(
    st.lists(st.integers(0, 40), max_size=30, unique=True),
    st.lists(st.integers(0, 12), min_size=1, max_size=8, unique=True),
    st.lists(st.tuples(st.integers(0, 40), st.integers(0, 15)), max_size=40),
)
def test_the_sticky_twin_agrees_with_the_reference_on_any_small_group(
    queues: list[int], consumers: list[int], holdings: list[tuple[int, int]]
) -> None:
    previous: dict[Any, list[int]] = {}
    held: set[int] = set()
    for queue, consumer in holdings:
        if queue not in held:  # an exact previous plan: each queue held once
            held.add(queue)
            previous.setdefault(consumer, []).append(queue)
    plan, _ = _twin_plan(queues, consumers, previous)
    assert plan == sticky.reference_assign(queues, consumers, previous)


def test_the_averagely_twin_gives_rocketmqs_blocks_on_thousands_of_seeded_groups() -> None:
    for seed in range(2000):
        rng = random.Random(seed)
        universe = rng.randint(1, 400)
        queues = rng.sample(range(universe), rng.randint(0, min(universe, 150)))
        queues = queues[: rng.choice([len(queues), rng.randint(0, 8)])]  # fewer than consumers too
        consumers = rng.sample(range(1000), rng.randint(1, 60))
        numbers = ConsumerNumbers()
        group = _integer_group(queues, consumers, numbers)
        plan, (positions, starts) = averagely_twin(group, NO_PLAN, len(numbers.number_of))
        expected = averagely.assign(queues, consumers)
        assert plan == expected, seed
        assert list(plan) == list(expected), seed
        assert positions.tolist() == list(range(len(queues)))
        assert starts.tolist()[1:] == list(accumulate(map(len, expected.values())))


@pytest.mark.parametrize(
    ("twin", "strategy"),
    [
        (consistent_hash_twin, consistent_hash.assign),
        (bounded_consistent_hash_twin, bounded_consistent_hash.assign),
    ],
    ids=["consistent_hash", "bounded_consistent_hash"],
)
def test_the_consistent_hashing_twins_give_the_strategys_plans_on_hundreds_of_seeded_groups(
    twin: Any, strategy: Any
) -> None:
    """Every seed twice, so that the second call reads the cached ring and hashes; consumers
    named by strings and by ints (negative ones too), queue counts below the consumer count,
    at it and far above it."""
    for seed in range(400):
        queues, consumers, _ = _random_group(random.Random(seed))
        expected = strategy(queues, consumers)
        for _ in range(2):
            numbers = ConsumerNumbers()
            group = _integer_group(queues, consumers, numbers)
            plan, (grouped, starts) = twin(group, NO_PLAN, len(numbers.number_of))
            assert plan == expected, seed
            assert list(plan) == list(expected), seed
            bounds, sorted_queues = starts.tolist(), sorted(queues)
            for consumer, start, end in zip(plan, bounds, bounds[1:], strict=False):
                assert [sorted_queues[at] for at in grouped[start:end]] == plan[consumer]


def _coarse_hash(key: str) -> int:
    """MD5Hash folded onto 64 positions: virtual nodes and queues share positions often."""
    return consistent_hash.md5_hash(key) % 64


@pytest.mark.parametrize(
    ("twin", "strategy"),
    [
        (consistent_hash_twin, consistent_hash.ConsistentHash(hash_function=_coarse_hash)),
        (
            bounded_consistent_hash_twin,
            bounded_consistent_hash.BoundedConsistentHash(hash_function=_coarse_hash),
        ),
    ],
    ids=["consistent_hash", "bounded_consistent_hash"],
)
def test_the_consistent_hashing_twins_keep_the_tie_rules_where_positions_collide(
    twin: Any, strategy: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The twins on a hash with many equal positions (the greatest consumer keeps a point
    several hash to; queues at one position placed by id), against the strategy on that hash."""
    monkeypatch.setattr(compiled_strategies, "md5_hash", _coarse_hash)
    for cached in (compiled_strategies._points_of, compiled_strategies._default_ring):
        monkeypatch.setattr(compiled_strategies, cached.__name__, lru_cache()(cached.__wrapped__))
    monkeypatch.setattr(
        compiled_strategies,
        "_queue_positions",
        lru_cache()(compiled_strategies._queue_positions.__wrapped__),
    )
    for seed in range(150):
        queues, consumers, _ = _random_group(random.Random(seed))
        numbers = ConsumerNumbers()
        group = _integer_group(queues, consumers, numbers)
        plan, _ = twin(group, NO_PLAN, len(numbers.number_of))
        assert plan == strategy.assign(queues, consumers), seed


def test_only_the_registrys_own_function_has_a_twin() -> None:
    assert twin_of(STRATEGIES["sticky"].assign) is sticky_twin
    assert twin_of(STRATEGIES["averagely"].assign) is averagely_twin
    assert twin_of(sticky.reference_assign) is None  # the definition itself runs as it is

    def my_sticky(queues: Any, consumers: Any, previous: Any = None) -> Any:
        return sticky.assign(queues, consumers, previous)

    assert twin_of(my_sticky) is None

    class Unhashable:
        __hash__ = None  # type: ignore[assignment]

        def __call__(self, *arguments: Any) -> Any:
            return {}

    assert twin_of(Unhashable()) is None


SETTINGS = ScenarioSettings(queue_range=(1, 96), consumer_range=(1, 12), change_count_range=(1, 6))


def _rows(scenarios: range, **options: Any) -> Iterator[ScoreRow]:
    strategies = {name: STRATEGIES[name] for name in ("averagely", "sticky", "sac")}
    for row in score_scenarios(generate_scenarios(5, scenarios, SETTINGS), strategies, **options):
        yield replace(row, assign_micros=0.0)


def _counting_twin_calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """The sticky twin, counting its calls in the dict returned."""
    calls = {"twin": 0}

    def counted(*arguments: Any) -> Any:
        calls["twin"] += 1
        return sticky_twin(*arguments)

    monkeypatch.setitem(compiled_strategies.TWINS, sticky.assign, counted)
    return calls


def test_the_scoring_core_gives_the_same_rows_with_the_twin_as_without(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _counting_twin_calls(monkeypatch)
    with_twin = list(_rows(range(400), stability_every=1))
    twin_calls = calls["twin"]
    monkeypatch.setattr(compiled_strategies, "TWINS", {})
    without = list(_rows(range(400), stability_every=1))
    reference = list(_rows(range(400), stability_every=1, engine="reference"))
    assert with_twin == without == reference
    sticky_rows = [row for row in with_twin if row.strategy == "sticky"]
    timed = [row for row in sticky_rows if _timed_step(row)]
    assert 0 < len(timed) < len(sticky_rows)
    # every step's rebalance but the timed sample's, and every stability check (each step
    # here), ran the twin
    assert twin_calls == 2 * len(sticky_rows) - len(timed)


def test_the_time_column_is_the_strategys_own_function_never_its_twin(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A strategy whose own function is slow (2 ms a call) and whose twin is fast: the rows time
    the own function on the seeded sample of steps, where it alone runs, and no other step."""
    calls = {"own": 0}

    def slow_sticky(queues: Any, consumers: Any, previous: Any = None) -> Any:
        calls["own"] += 1
        time.sleep(0.002)
        return sticky.assign(queues, consumers, previous)

    monkeypatch.setitem(compiled_strategies.TWINS, slow_sticky, sticky_twin)
    scenarios = generate_scenarios(5, range(40), SETTINGS)
    rows = list(score_scenarios(scenarios, {"slow": slow_sticky}))
    timed = [row for row in rows if _timed_step(row)]
    assert 0 < len(timed) < len(rows)
    assert calls["own"] == len(timed)  # the twin made every other plan, checks included
    first, *others = timed  # the function's first call in this process is a warm-up, untimed
    assert first.assign_micros is None
    assert all(row.assign_micros is not None and row.assign_micros >= 2000 for row in others)
    assert all(row.assign_micros is None for row in rows if not _timed_step(row))
    assert summarise(rows)[("slow", ALL_CHANGES)]["assign_micros"].count == len(others)


def _timed_step(row: ScoreRow) -> bool:
    """Whether the row's step is one of the timed sample (replay.TIMED_EVERY)."""
    seed = scenario_seed(row.base_seed, row.scenario)
    return (seed + row.step) % TIMED_EVERY == TIMED_OFFSET


def test_queue_ids_that_are_not_plain_ints_run_the_strategy_itself(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _counting_twin_calls(monkeypatch)

    # queue ids that include True: an int to numpy, but not the id a plan must give back
    scenario = Scenario(3, 1, SETTINGS)
    steps = [
        replace(step, queues=(True, *range(2, 1 + len(step.queues)))) for step in scenario.steps()
    ]
    monkeypatch.setattr(Scenario, "steps", lambda self: iter(steps))
    rows = list(score_scenario(scenario, {"sticky": STRATEGIES["sticky"]}))
    assert calls["twin"] == 0
    assert rows
    assert not any(row.failed for row in rows)


Queue = IntEnum("Queue", {f"q{number}": number for number in range(1, 9)})
"""Queue ids that are ints to numpy and to a dict, and yet are not the ints a twin gives back."""


def _typed(plan: dict[Any, list[Any]]) -> list[tuple[Any, list[tuple[type, Any]]]]:
    """`plan` with the type of every id: plans that are == may hold other objects."""
    return [
        ((type(consumer), consumer), [(type(queue), queue) for queue in owned])
        for consumer, owned in plan.items()
    ]


Groups = list[tuple[tuple[Any, ...], tuple[Any, ...]]]


def _scored_with_plans(
    groups: Groups, engine: str | None = None
) -> tuple[list[ScoreRow], list[dict[Any, list[Any]]]]:
    """The rows of a scenario of these groups for sticky alone (the stability check at every
    step, assign_micros left out), and the plans its rebalances gave, in order."""
    steps = [
        Step(index, INITIAL if index == 0 else "change", queues, consumers)
        for index, (queues, consumers) in enumerate(groups)
    ]
    in_force: list[dict[Any, list[Any]]] = []
    rebalance = runner.Runner.rebalance

    def recording(strategy_runner: Any, group: Any, views: Any, timed: bool) -> Any:
        attempt = rebalance(strategy_runner, group, views, timed)
        in_force.append(attempt.plan)
        return attempt

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Scenario, "steps", lambda self: iter(steps))
        patch.setattr(runner.Runner, "rebalance", recording)
        scored = score_scenario(
            Scenario(3, 1, SETTINGS),
            {"sticky": STRATEGIES["sticky"]},
            engine=engine,
            stability_every=1,
        )
        rows = [replace(row, assign_micros=0.0) for row in scored]
    return rows, in_force


def _sticky_plans(groups: Groups) -> list[dict[Any, list[Any]]]:
    """sticky.assign's plans for these groups, each from the one before."""
    plans: list[dict[Any, list[Any]]] = []
    previous = None
    for queues, consumers in groups:
        previous = sticky.assign(queues, consumers, previous)
        plans.append(previous)
    return plans


@pytest.mark.parametrize("first_queues", [(True, *range(2, 9)), tuple(Queue)], ids=["bool", "enum"])
def test_the_plans_in_force_hold_the_very_ids_sticky_gives_after_a_previous_plan_of_other_ints(
    first_queues: tuple[Any, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    # sticky keeps a previous plan's own objects (True, Queue.q3) where the group's queue is
    # equal to them (1, 3); a twin, reading the owners, would give the group's plain ints
    calls = _counting_twin_calls(monkeypatch)
    groups: Groups = [
        (first_queues, ("a", "b")),
        (tuple(range(1, 11)), ("a", "b", "c")),  # keeps some of step 0's ids
        (tuple(range(1, 12)), ("x", "y")),  # keeps nothing: plain ints from here on
        (tuple(range(1, 13)), ("x", "y", "z")),
    ]
    rows, in_force = _scored_with_plans(groups)
    assert not any(row.failed for row in rows)
    assert list(map(_typed, in_force)) == list(map(_typed, _sticky_plans(groups)))
    assert calls["twin"] > 0  # once the plan in force holds plain ints, the twin stands again


_CONSUMERS = (0, 1, 2, 3, 0.5, 1.5, 1.0, 2.0, True, False)
"""Consumer ids of mixed types, some equal to others: a step may bring back one that left
under an equal id of another type (1.0 for 1), which sticky takes as the same consumer."""

_GROUP_QUEUES = st.one_of(
    st.lists(st.integers(0, 40), max_size=30, unique=True),
    st.lists(st.integers(0, 40), min_size=2, max_size=30),  # an id twice: the step fails
    st.lists(st.integers(10**6, 10**6 + 40), min_size=1, max_size=3, unique=True),  # too sparse
    st.lists(st.sampled_from(list(Queue)), max_size=8, unique=True),  # ints, not plain ones
)


@given(
    st.lists(
        st.tuples(
            _GROUP_QUEUES.map(tuple),
            st.lists(st.sampled_from(_CONSUMERS), max_size=5, unique=True).map(tuple),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_with_the_twin_the_plans_in_force_and_the_rows_are_the_references_on_any_steps(
    groups: Groups,
) -> None:
    # failed steps, empty groups, groups the compiled scores leave to the reference, consumers
    # leaving and coming back under equal ids of other types: the kernel engine (the twin
    # where it may stand) puts in force the plans the reference engine does, with the same ids
    kernel_rows, kernel_plans = _scored_with_plans(groups, "kernel")
    reference_rows, reference_plans = _scored_with_plans(groups, "reference")
    assert kernel_rows == reference_rows
    assert list(map(_typed, kernel_plans)) == list(map(_typed, reference_plans))
