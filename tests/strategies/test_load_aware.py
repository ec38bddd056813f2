"""The load-aware strategies (lag_greedy, weighted_sticky, largest_differencing): their own
rules on exact examples, and the bound each states, on random groups."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rebalancing.strategies import lag_greedy, largest_differencing, weighted_sticky


def loads(plan: dict[Any, list[Any]], weights: dict[Any, float]) -> dict[Any, float]:
    return {consumer: sum(weights[queue] for queue in owned) for consumer, owned in plan.items()}


def test_lag_greedy_reproduces_the_lag_aware_example_of_kafka_5337() -> None:
    """The proposal's worked example: t0p0 lag 100,000, t0p1 60,000, t0p2 50,000, two
    consumers: C0 gets t0p0, C1 t0p1 and t0p2 (110,000), where range gives C0 160,000."""
    weights = {("t0", 0): 100_000, ("t0", 1): 60_000, ("t0", 2): 50_000}
    plan = lag_greedy.assign(list(weights), ["C0", "C1"], weights=weights)
    assert plan == {"C0": [("t0", 0)], "C1": [("t0", 1), ("t0", 2)]}


def test_lag_greedy_uses_load_over_capacity() -> None:
    weights = {"q1": 4, "q2": 4, "q3": 4}
    plan = lag_greedy.assign(
        list(weights), ["big", "small"], weights=weights, capacities={"big": 3, "small": 1}
    )
    # q1 -> big (0/3 ties 0/1, lowest id), q2 -> small (0 < 4/3), q3 -> big (4/3 < 4)
    assert plan == {"big": ["q1", "q3"], "small": ["q2"]}


def test_lag_greedy_without_weights_deals_queues_round_the_consumers() -> None:
    assert lag_greedy.assign(["q1", "q2", "q3", "q4", "q5"], ["a", "b"]) == {
        "a": ["q1", "q3", "q5"],
        "b": ["q2", "q4"],
    }


def test_zero_weights_are_still_spread_by_count() -> None:
    weights = dict.fromkeys(["q1", "q2", "q3", "q4"], 0)
    for assign in (lag_greedy.assign, weighted_sticky.assign, largest_differencing.assign):
        plan = assign(list(weights), ["a", "b"], weights=weights)
        assert sorted(map(len, plan.values())) == [2, 2], assign


def test_largest_differencing_beats_lpt_on_korf_s_example() -> None:
    """{8, 7, 6, 5, 4} in two: LPT leaves a difference of 4, differencing 2 (Korf 2009)."""
    weights = {"q8": 8, "q7": 7, "q6": 6, "q5": 5, "q4": 4}
    lpt = sorted(
        loads(lag_greedy.assign(list(weights), ["a", "b"], weights=weights), weights).values()
    )
    differencing = largest_differencing.assign(list(weights), ["a", "b"], weights=weights)
    assert lpt == [13, 17]
    assert sorted(loads(differencing, weights).values()) == [14, 16]


def test_weighted_sticky_keeps_previous_queues_within_each_fair_share() -> None:
    weights = {"q1": 5, "q2": 3, "q3": 2, "q4": 2}
    previous = {"a": ["q1", "q2", "q3", "q4"]}
    plan = weighted_sticky.assign(list(weights), ["a", "b"], previous, weights=weights)
    # fair share 6 each: a keeps q1 (5) and nothing else (8, 7, 7 > 6); q2 then q3 go to b
    # (0, then 3 < 5), q4 to a (5 ties 5, a holds fewer queues)
    assert plan == {"a": ["q1", "q4"], "b": ["q2", "q3"]}


def test_weighted_sticky_keeps_everything_when_nothing_changed() -> None:
    weights = {f"q{number}": number % 4 + 1 for number in range(12)}
    first = weighted_sticky.assign(list(weights), ["a", "b", "c"], weights=weights)
    assert weighted_sticky.assign(list(weights), ["a", "b", "c"], first, weights=weights) == first


def test_weighted_sticky_with_capacities_gives_each_a_fair_share_of_its_capacity() -> None:
    weights = dict.fromkeys([f"q{number}" for number in range(8)], 1)
    previous = {"big": [f"q{number}" for number in range(8)]}
    plan = weighted_sticky.assign(
        list(weights),
        ["big", "small"],
        previous,
        weights=weights,
        capacities={"big": 3, "small": 1},
    )
    assert len(plan["big"]) == 6
    assert plan["big"] == [f"q{number}" for number in range(6)]


def test_weighted_sticky_s_fair_share_does_not_overflow_with_large_capacities() -> None:
    """Issue 43: capacity x total weight (1e200 x 3e200) is past the largest float although the
    shares are not; computed as that product over the total capacity, every share was inf and
    the consumer kept all three queues, 3 against a bound of 2.5 (load / capacity)."""
    weights = dict.fromkeys(["q1", "q2", "q3"], 1e200)
    capacities = {"a": 1e200, "b": 1e200}
    previous = {"a": ["q1", "q2", "q3"], "b": []}
    plan = weighted_sticky.assign(
        list(weights), ["a", "b"], previous, weights=weights, capacities=capacities
    )
    # a keeps q1 (its share is 1.5e200), q2 and q3 go to the least loaded: b, then a (ties)
    assert plan == {"a": ["q1", "q3"], "b": ["q2"]}


@pytest.mark.parametrize(
    "assign", [lag_greedy.assign, weighted_sticky.assign], ids=["lag_greedy", "weighted_sticky"]
)
@given(st.integers(1, 40), st.integers(1, 8), st.integers(0, 2**32), st.booleans())
def test_every_load_over_capacity_stays_within_the_stated_bound(
    assign: Any, queue_count: int, consumer_count: int, seed: int, with_previous: bool
) -> None:
    rng = random.Random(seed)
    queues = [f"q{number}" for number in range(queue_count)]
    consumers = [f"c{number}" for number in range(consumer_count)]
    weights = {
        queue: rng.choice([0, 1, rng.random() * 100, rng.paretovariate(1.2)]) for queue in queues
    }
    capacities = {consumer: rng.choice([0.5, 1, 2, 7]) for consumer in consumers}
    previous = {rng.choice(consumers): [queue] for queue in queues} if with_previous else None
    plan = assign(queues, consumers, previous, weights=weights, capacities=capacities)
    bound = sum(weights.values()) / sum(capacities.values()) + max(weights.values()) / min(
        capacities.values()
    )
    for consumer, load in loads(plan, weights).items():
        assert load / capacities[consumer] <= bound * (1 + 1e-9)


@given(st.lists(st.floats(0, 1000), min_size=1, max_size=40), st.integers(1, 8))
def test_largest_differencing_leaves_at_most_the_heaviest_weight_between_any_two_consumers(
    values: list[float], consumer_count: int
) -> None:
    weights = {f"q{number}": value for number, value in enumerate(values)}
    consumers = [f"c{number}" for number in range(consumer_count)]
    spread = loads(largest_differencing.assign(list(weights), consumers, weights=weights), weights)
    assert max(spread.values()) - min(spread.values()) <= max(values) * (1 + 1e-9) + 1e-9


@given(st.integers(1, 40), st.integers(1, 8), st.integers(0, 2**32), st.booleans())
def test_weighted_sticky_given_its_own_plan_moves_nothing(
    queue_count: int, consumer_count: int, seed: int, with_capacities: bool
) -> None:
    rng = random.Random(seed)
    queues = [f"q{number}" for number in range(queue_count)]
    consumers = [f"c{number}" for number in range(consumer_count)]
    weights = {queue: rng.choice([0, 1, 7, rng.random() * 100]) for queue in queues}
    capacities = (
        {consumer: rng.choice([1, 2, 0.5]) for consumer in consumers} if with_capacities else None
    )
    previous = {consumers[0]: queues}  # lopsided: the first rebalance moves queues
    first = weighted_sticky.assign(
        queues, consumers, previous, weights=weights, capacities=capacities
    )
    again = weighted_sticky.assign(queues, consumers, first, weights=weights, capacities=capacities)
    assert again == first
