"""The placement scores (zones, weights) against oracles that share no code with the module:
brute force over every plan of small groups, and worked examples computed by hand."""

from __future__ import annotations

import itertools
import math
import re
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from rebalancing.evaluation.scoring.placement_scores import (
    cross_zone_count,
    fewest_cross_zone,
    load_kept,
    load_moved,
    load_ratio,
    load_ratio_bound,
    topic_spread,
)
from rebalancing.strategies import STRATEGIES

ZONES = ["a", "b", "c"]


@st.composite
def zoned_groups(draw: Any, most_queues: int = 7, most_consumers: int = 4) -> dict[str, Any]:
    """Queues q0.., consumers c0.. in 1-3 zones (some with no zone, or missing from the map),
    each queue with a random replica set (maybe empty, with None entries, or missing)."""
    zones = ZONES[: draw(st.integers(1, 3))]
    queues = [f"q{n}" for n in range(draw(st.integers(0, most_queues)))]
    consumers = [f"c{n}" for n in range(draw(st.integers(1, most_consumers)))]
    consumer_zones = {
        consumer: zone
        for consumer in consumers
        if (zone := draw(st.sampled_from([*zones, None, "missing"]))) != "missing"
    }
    queue_zones: dict[str, list[str | None]] = {}
    for queue in queues:
        replicas = draw(st.lists(st.sampled_from([*zones, None]), max_size=3))
        if replicas or draw(st.booleans()):
            queue_zones[queue] = replicas
    return {
        "queues": queues,
        "consumers": consumers,
        "consumer_zones": consumer_zones,
        "queue_zones": queue_zones,
    }


def every_plan(queues: list[str], consumers: list[str]) -> list[dict[str, list[str]]]:
    plans = []
    for owners in itertools.product(consumers, repeat=len(queues)):
        plan: dict[str, list[str]] = {consumer: [] for consumer in consumers}
        for queue, owner in zip(queues, owners, strict=True):
            plan[owner].append(queue)
        plans.append(plan)
    return plans


def is_balanced(plan: dict[str, list[str]]) -> bool:
    counts = [len(held) for held in plan.values()]
    return max(counts) - min(counts) <= 1


def read_in_zone(group: dict[str, Any], plan: dict[str, list[str]]) -> int:
    """Queues whose consumer has a zone among the queue's replica zones (None is no zone)."""
    zone_of = group["consumer_zones"]
    return sum(
        1
        for consumer, held in plan.items()
        for queue in held
        if zone_of.get(consumer) is not None
        and zone_of[consumer] in group["queue_zones"].get(queue, [])
    )


# --- cross-zone count and its best value -------------------------------------------------------

# Two zones. Consumers x, y in zone a, z in zone b, w in no zone; queues q0..q4 have a replica
# in zone a only, q5 in zone b only. 6 queues over 4 consumers: counts 2, 2, 1, 1 (floor 1,
# 6 mod 4 = 2 consumers at 2).
WORKED = {
    "queues": ["q0", "q1", "q2", "q3", "q4", "q5"],
    "consumers": ["x", "y", "z", "w"],
    "consumer_zones": {"x": "a", "y": "a", "z": "b"},
    "queue_zones": {"q0": ["a"], "q1": ["a"], "q2": ["a"], "q3": ["a"], "q4": ["a"], "q5": ["b"]},
}


def test_worked_two_zone_example() -> None:
    # Best: x and y take the two counts of 2 (four a-queues in zone a), z takes q5 in zone b,
    # and w, in no zone, reads its one queue (the fifth a-queue) cross-zone: 1. No balanced
    # plan does better: w holds at least one queue and reads it cross-zone.
    best = {"x": ["q0", "q1"], "y": ["q2", "q3"], "z": ["q5"], "w": ["q4"]}
    zones = (WORKED["consumer_zones"], WORKED["queue_zones"])
    assert cross_zone_count(best, *zones) == 1
    assert fewest_cross_zone(WORKED["queues"], WORKED["consumers"], *zones) == 1
    # Giving the counts of 2 to z and w instead: x and y read one a-queue each in zone a, z
    # reads q5 in zone b and q4 cross-zone, w reads q2 and q3 cross-zone: 3.
    worse = {"x": ["q0"], "y": ["q1"], "z": ["q5", "q4"], "w": ["q2", "q3"]}
    assert cross_zone_count(worse, *zones) == 3
    # Without w, 6 queues over 3 consumers are 2 each: zone a holds 4 a-queues, z holds q5 and
    # the fifth a-queue cross-zone: still 1.
    assert fewest_cross_zone(WORKED["queues"], ["x", "y", "z"], *zones) == 1


def test_a_queue_without_known_replicas_or_a_consumer_without_zone_is_always_cross_zone() -> None:
    plan = {"x": ["q0"], "y": ["q1"], "z": ["q2"]}
    consumer_zones = {"x": "a", "y": None}  # y: None, z: missing
    queue_zones = {"q0": [None], "q1": ["a"], "q2": ["a"]}  # q0's only replica has no zone
    assert cross_zone_count(plan, consumer_zones, queue_zones) == 3
    assert fewest_cross_zone(["q0", "q1", "q2"], ["x", "y", "z"], consumer_zones, queue_zones) == 2


def test_the_extra_slots_are_shared_across_zones() -> None:
    # 4 queues over 3 consumers: counts 2, 1, 1, one consumer at 2. Zones a and b each hold two
    # queues but only one of their consumers can take 2: 3 in-zone at best, and the member with
    # no zone reads the fourth queue cross-zone: 1 (not 0, as two zones at 2 would give).
    consumer_zones = {"x": "a", "y": "b", "w": None}
    queue_zones = {"q0": ["a"], "q1": ["a"], "q2": ["b"], "q3": ["b"]}
    queues = ["q0", "q1", "q2", "q3"]
    assert fewest_cross_zone(queues, ["x", "y", "w"], consumer_zones, queue_zones) == 1


def test_fewest_cross_zone_without_consumers_is_zero() -> None:
    assert fewest_cross_zone(["q0"], [], {}, {"q0": ["a"]}) == 0


@given(zoned_groups(), st.data())
def test_cross_zone_count_is_queues_read_outside_their_replica_zones(
    group: dict[str, Any], data: st.DataObject
) -> None:
    owners = [data.draw(st.sampled_from(group["consumers"])) for _ in group["queues"]]
    plan: dict[str, list[str]] = {consumer: [] for consumer in group["consumers"]}
    for queue, owner in zip(group["queues"], owners, strict=True):
        plan[owner].append(queue)
    zones = (group["consumer_zones"], group["queue_zones"])
    assert cross_zone_count(plan, *zones) == len(group["queues"]) - read_in_zone(group, plan)


@example(  # two zones that would both overflow into the one extra slot
    {
        "queues": ["q0", "q1", "q2", "q3", "q4"],
        "consumers": ["c0", "c1", "c2", "c3"],
        "consumer_zones": {"c0": "a", "c1": "b", "c2": None},
        "queue_zones": {"q0": ["b"], "q2": ["a"], "q3": ["a"], "q4": ["b"]},
    }
)
@given(zoned_groups())
def test_fewest_cross_zone_is_the_best_of_every_balanced_plan(group: dict[str, Any]) -> None:
    best_in_zone = max(
        read_in_zone(group, plan)
        for plan in every_plan(group["queues"], group["consumers"])
        if is_balanced(plan)
    )
    assert (
        fewest_cross_zone(
            group["queues"], group["consumers"], group["consumer_zones"], group["queue_zones"]
        )
        == len(group["queues"]) - best_in_zone
    )


ZONE_MATCHING_BALANCED = sorted(
    name
    for name, strategy in STRATEGIES.items()
    if {"balanced", "zone_matching"} <= strategy.promises
)


def test_some_strategy_promises_balance_and_zone_matching() -> None:
    assert "rack_aware_sticky" in ZONE_MATCHING_BALANCED


@pytest.mark.parametrize("name", ZONE_MATCHING_BALANCED)
@given(group=zoned_groups(most_queues=30, most_consumers=6), data=st.data())
def test_no_balanced_zone_matching_strategy_beats_fewest_cross_zone(
    name: str, group: dict[str, Any], data: st.DataObject
) -> None:
    strategy = STRATEGIES[name]
    previous = None
    if data.draw(st.booleans()):
        owners = data.draw(
            st.lists(st.sampled_from(["c0", "c1", "gone"]), min_size=len(group["queues"]))
        )
        previous = {owner: [] for owner in owners}
        for queue, owner in zip(group["queues"], owners, strict=False):
            previous[owner].append(queue)
    zones = {"consumer_zones": group["consumer_zones"], "queue_zones": group["queue_zones"]}
    plan = strategy(group["queues"], group["consumers"], previous, **strategy.inputs_for(zones))
    assert cross_zone_count(plan, **zones) >= fewest_cross_zone(
        group["queues"], group["consumers"], **zones
    )


# --- load ratio and its bound ------------------------------------------------------------------


def test_load_ratio_worked_examples() -> None:
    weights = {"q0": 5.0, "q1": 1.0, "q2": 1.0, "q3": 1.0}
    # total 8 over 2 consumers: mean 4; x carries 5 -> 5 / 4
    assert load_ratio({"x": ["q0"], "y": ["q1", "q2", "q3"]}, weights) == 1.25
    # the heaviest queue alone already weighs 5 > mean 4, so 1.25 is the best: the bound is tight
    assert load_ratio_bound(list(weights), ["x", "y"], weights) == 1.25
    # capacities 3 and 1: mean 8 / 4 = 2 per unit; x: 5 / 3, y: 3 / 1 -> 3 / 2
    assert load_ratio({"x": ["q0"], "y": ["q1", "q2", "q3"]}, weights, {"x": 3, "y": 1}) == 1.5
    # bound: heaviest 5 / largest capacity 3 / mean 2 = 5 / 6 < 1 -> 1 (x: all, 8 / 3 > 2)
    assert load_ratio_bound(list(weights), ["x", "y"], weights, {"x": 3, "y": 1}) == 1.0
    # weights 2, 2, 2 over 2 consumers: bound 1 (mean 3 >= heaviest 2), best 4 / 3: not tight
    even = {"q0": 2.0, "q1": 2.0, "q2": 2.0}
    assert load_ratio_bound(list(even), ["x", "y"], even) == 1.0
    assert math.isclose(load_ratio({"x": ["q0", "q1"], "y": ["q2"]}, even), 4 / 3)


def test_load_ratio_is_none_without_load_or_consumers() -> None:
    assert load_ratio({"x": ["q0"]}, {"q0": 0.0}) is None
    assert load_ratio({}, {}) is None
    assert load_ratio_bound(["q0"], [], {"q0": 1.0}) is None
    assert load_ratio_bound(["q0"], ["x"], {"q0": 0}) is None


@given(
    weights=st.lists(st.integers(0, 9), max_size=6),
    capacities=st.none() | st.lists(st.integers(1, 4), min_size=3, max_size=3),
    consumer_count=st.integers(1, 3),
)
def test_load_ratio_bound_is_at_most_the_best_plan(
    weights: list[int], capacities: list[int] | None, consumer_count: int
) -> None:
    queues = [f"q{n}" for n in range(len(weights))]
    consumers = [f"c{n}" for n in range(consumer_count)]
    weight = dict(zip(queues, weights, strict=True))
    capacity = dict(zip(consumers, capacities or [1] * 3, strict=False))
    total = sum(weights)
    bound = load_ratio_bound(queues, consumers, weight, capacity if capacities else None)
    if total == 0:
        assert bound is None
        return
    mean = total / sum(capacity.values())
    best = min(
        max(sum(weight[queue] for queue in plan[c]) / capacity[c] for c in consumers) / mean
        for plan in every_plan(queues, consumers)
    )
    assert bound is not None
    assert 1.0 <= bound <= best + 1e-9
    chosen = min(
        every_plan(queues, consumers),
        key=lambda plan: max(sum(weight[q] for q in plan[c]) / capacity[c] for c in consumers),
    )
    ratio = load_ratio(chosen, weight, capacity if capacities else None)
    assert ratio is not None
    assert math.isclose(ratio, best)


# --- load kept and moved -----------------------------------------------------------------------


def test_load_kept_and_moved_worked_example() -> None:
    weights = {"q0": 4.0, "q1": 1.0, "q2": 2.0, "q3": 3.0}  # q9 was removed: needs no weight
    previous = {"x": ["q0", "q1"], "y": ["q2"], "gone": ["q3"], "z": ["q9"]}
    plan = {"x": ["q0"], "y": ["q1", "q2", "q3"]}
    # could be kept: q0, q1 (x still here), q2 (y): 4 + 1 + 2 = 7; kept q0, q2: 6 -> 6 / 7.
    # q3's owner left, q9 no longer exists: neither counts.
    assert math.isclose(load_kept(previous, plan, weights) or 0, 6 / 7)
    # moved: q1 (x -> y) 1 and q3 (gone -> y) 3 = 4
    assert load_moved(previous, plan, weights) == 4.0
    assert load_kept(None, plan, weights) is None
    assert load_moved(None, plan, weights) == 0.0
    assert load_kept({"gone": ["q0"]}, plan, weights) is None  # nothing could be kept


@st.composite
def rebalances(draw: Any) -> tuple[dict[str, list[str]], dict[str, list[str]], dict[str, int]]:
    """A previous plan and a plan over partly overlapping queues and consumers, with weights."""
    queues = [f"q{n}" for n in range(draw(st.integers(0, 8)))]
    weights = {queue: draw(st.integers(0, 5)) for queue in queues}
    old = [*queues, "removed0", "removed1"]

    def split(ids: list[str], consumers: list[str]) -> dict[str, list[str]]:
        plan: dict[str, list[str]] = {consumer: [] for consumer in consumers}
        for queue in ids:
            plan[draw(st.sampled_from(consumers))].append(queue)
        return plan

    previous_ids = draw(st.lists(st.sampled_from(old), unique=True))
    previous = split(previous_ids, draw(st.sampled_from([["a", "b"], ["a", "b", "gone"]])))
    plan = split(queues, draw(st.sampled_from([["a"], ["a", "b"], ["a", "b", "new"]])))
    return previous, plan, weights


@given(rebalances())
def test_load_kept_is_one_and_nothing_moves_when_the_plan_is_kept(
    case: tuple[dict[str, list[str]], dict[str, list[str]], dict[str, int]],
) -> None:
    _, plan, weights = case
    moved = load_moved(plan, plan, weights)
    assert moved == 0.0
    assert isinstance(moved, float)
    assert load_kept(plan, plan, weights) == (1.0 if sum(weights.values()) > 0 else None)


@given(rebalances())
def test_moved_and_kept_weight_add_up_to_the_previously_owned_weight(
    case: tuple[dict[str, list[str]], dict[str, list[str]], dict[str, int]],
) -> None:
    previous, plan, weights = case
    owned_before = {q: owner for owner, held in previous.items() for q in held if q in weights}
    departed = sum(weights[q] for q, owner in owned_before.items() if owner not in plan)
    could = sum(weights[q] for q, owner in owned_before.items() if owner in plan)
    kept = load_kept(previous, plan, weights)
    moved = load_moved(previous, plan, weights)
    # every previously owned, still existing queue either stayed (kept weight) or moved; a
    # departed owner's queues all moved
    kept_weight = 0.0 if kept is None else kept * could
    assert math.isclose(moved + kept_weight, could + departed, abs_tol=1e-9)
    assert (kept is None) == (could == 0)


# --- topic spread ------------------------------------------------------------------------------


def test_topic_spread_worked_examples() -> None:
    # KAFKA-16277: two topics of two partitions over two consumers. Counts are 2 and 2 either
    # way, but one topic per consumer leaves each topic 2 - 0 = 2 apart.
    assert topic_spread({"x": [("t1", 0), ("t2", 0)], "y": [("t1", 1), ("t2", 1)]}) == 0
    assert topic_spread({"x": [("t1", 0), ("t1", 1)], "y": [("t2", 0), ("t2", 1)]}) == 2
    # a consumer holding nothing of t1 counts 0: 1 - 0
    assert topic_spread({"x": [("t1", 0)], "y": [("t1", 1)], "z": []}) == 1
    assert topic_spread({"x": [], "y": []}) == 0
    assert topic_spread({"x": ["orders-0"], "y": [("t1", 0)]}) is None
    assert topic_spread({"x": [("t1", 0, 1)]}) is None


# --- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("weights", "error", "culprit"),
    [
        ({"q0": -1.0, "q1": 1.0}, ValueError, "weights['q0']"),
        ({"q0": 1.0, "q1": math.nan}, ValueError, "weights['q1']"),
        ({"q0": 1.0, "q1": math.inf}, ValueError, "weights['q1']"),
        ({"q0": 1.0}, ValueError, "'q1'"),
        ({"q0": 1.0, "q1": "2"}, TypeError, "weights['q1']"),
        ({"q0": True, "q1": 1.0}, TypeError, "weights['q0']"),
        ({"q0": 1.0, "q1": 10**400}, ValueError, "weights['q1']"),  # past a float: not bare
        ({"q0": 1e308, "q1": 1e308}, ValueError, "weights sum past the largest float"),  # NaN
    ],
)
def test_a_bad_weight_is_refused_naming_the_queue(
    weights: dict[str, Any], error: type[Exception], culprit: str
) -> None:
    plan = {"x": ["q0"], "y": ["q1"]}
    calls = [
        lambda: load_ratio(plan, weights),
        lambda: load_ratio_bound(["q0", "q1"], ["x", "y"], weights),
        lambda: load_kept(plan, plan, weights),
        lambda: load_moved(plan, plan, weights),
    ]
    for call in calls:
        with pytest.raises(error, match=re.escape(culprit)):
            call()


def test_a_bad_capacity_is_refused_naming_the_consumer() -> None:
    with pytest.raises(ValueError, match=r"capacities\['y'\]"):
        load_ratio({"x": ["q0"], "y": []}, {"q0": 1}, {"x": 1, "y": 0})
    with pytest.raises(ValueError, match="'y'"):
        load_ratio_bound(["q0"], ["x", "y"], {"q0": 1}, {"x": 1})
    with pytest.raises(ValueError, match=r"capacities\['x'\]"):
        load_ratio({"x": ["q0"], "y": []}, {"q0": 1}, {"x": 10**400, "y": 1})
    with pytest.raises(ValueError, match=r"capacities\['y'\] is 5e-324: the total weight"):
        load_ratio({"x": ["q0"], "y": []}, {"q0": 1e300}, {"x": 1, "y": 5e-324})


def test_a_str_as_a_queues_zones_is_refused_naming_the_queue() -> None:
    with pytest.raises(TypeError, match=r"queue_zones\['q0'\]"):
        cross_zone_count({"x": ["q0"]}, {"x": "a"}, {"q0": "a"})
    with pytest.raises(TypeError, match=r"queue_zones\['q0'\]"):
        fewest_cross_zone(["q0"], ["x"], {"x": "a"}, {"q0": "a"})


def test_an_unhashable_zone_is_refused_naming_its_owner() -> None:
    with pytest.raises(TypeError, match=r"consumer_zones\['x'\]"):
        cross_zone_count({"x": ["q0"]}, {"x": ["a"]}, {"q0": ["a"]})
    with pytest.raises(TypeError, match=r"consumer_zones\['x'\]"):
        fewest_cross_zone(["q0"], ["x"], {"x": ["a"]}, {"q0": ["a"]})
    with pytest.raises(TypeError, match=r"queue_zones\['q0'\]"):
        fewest_cross_zone(["q0"], ["x"], {"x": "a"}, {"q0": [["a"]]})


def test_a_plan_that_is_not_exact_is_refused_naming_the_queue() -> None:
    with pytest.raises(ValueError, match="'q0' is held by both 'x' and 'y'"):
        cross_zone_count({"x": ["q0"], "y": ["q0"]}, {}, {})
    with pytest.raises(TypeError, match=r"plan\['x'\]"):
        topic_spread({"x": "q0"})
    with pytest.raises(ValueError, match="duplicate id 'q0' in queues"):
        fewest_cross_zone(["q0", "q0"], ["x"], {}, {})
    with pytest.raises(TypeError, match="consumers"):
        fewest_cross_zone(["q0"], "x", {}, {})
