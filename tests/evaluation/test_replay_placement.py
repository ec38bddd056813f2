"""The scoring core with zones and weights: strategies get only the placement they declare, and
rows carry the placement scores as rebalancing.evaluation.scoring.placement_scores computes them."""

from __future__ import annotations

import math
from typing import Any

from rebalancing.evaluation.scenarios.changes import Scenario, ScenarioSettings, generate_scenarios
from rebalancing.evaluation.scoring import placement_scores
from rebalancing.evaluation.scoring.replay import score_scenario, score_scenarios
from rebalancing.strategies import STRATEGIES, Strategy, averagely

PLACED = ScenarioSettings(
    queue_range=(1, 40), consumer_range=(1, 8), zone_range=(2, 3), weights="zipf"
)
ZONE_SCORES = ("cross_zone_fraction", "cross_zone_gap")
LOAD_SCORES = ("load_ratio", "load_ratio_gap", "load_kept", "load_moved")


def test_strategies_are_passed_only_the_placement_they_declare() -> None:
    received: dict[str, list[frozenset[str]]] = {"plain": [], "weighted": []}

    def plain(queues: Any, consumers: Any, previous: Any = None) -> Any:
        received["plain"].append(frozenset())
        return averagely.assign(queues, consumers, previous)

    def weighted(queues: Any, consumers: Any, previous: Any = None, **inputs: Any) -> Any:
        received["weighted"].append(frozenset(inputs))
        return averagely.assign(queues, consumers, previous)

    strategies = {
        "plain": Strategy("plain", plain, "test"),
        "weighted": Strategy("weighted", weighted, "test", uses=frozenset({"weights"})),
    }
    rows = list(score_scenario(Scenario(1, 2, PLACED), strategies, stability_every=1))
    assert all(not row.failed for row in rows)
    assert received["weighted"]
    assert set(received["weighted"]) == {frozenset({"weights"})}  # in the stability check too


def _replayed(name: str, scenario: Scenario) -> list[tuple[Any, dict[Any, list[Any]]]]:
    """(step, plan) of the strategy run by hand with the step's placement it declares."""
    strategy = STRATEGIES[name]
    previous = None
    out = []
    for step in scenario.steps():
        available = {
            "consumer_zones": step.consumer_zones,
            "queue_zones": step.queue_zones,
            "weights": step.weights,
        }
        plan = strategy(step.queues, step.consumers, previous, **strategy.inputs_for(available))
        out.append((step, previous, plan))
        previous = plan
    return out


def test_rows_hold_the_placement_scores_of_the_plans() -> None:
    names = ("rack_aware_range", "weighted_sticky", "averagely")
    for index in range(6):
        scenario = Scenario(3, index, PLACED)
        rows = list(score_scenario(scenario, {name: STRATEGIES[name] for name in names}))
        for name in names:
            mine = [row for row in rows if row.strategy == name]
            for row, (step, previous, plan) in zip(mine, _replayed(name, scenario), strict=True):
                queues, consumers = step.queues, step.consumers
                crossing = placement_scores.cross_zone_count(
                    plan, step.consumer_zones, step.queue_zones
                )
                fewest = placement_scores.fewest_cross_zone(
                    queues, consumers, step.consumer_zones, step.queue_zones
                )
                assert row.cross_zone_fraction == crossing / len(queues)
                assert row.cross_zone_gap == (crossing - fewest) / len(queues)
                ratio = placement_scores.load_ratio(plan, step.weights)
                bound = placement_scores.load_ratio_bound(queues, consumers, step.weights)
                assert row.load_ratio == ratio
                assert row.load_ratio_gap == (None if ratio is None else ratio - bound)
                if previous is None:
                    assert row.load_kept is None
                    assert row.load_moved is None
                    continue
                assert row.load_kept == placement_scores.load_kept(previous, plan, step.weights)
                moved = placement_scores.load_moved(previous, plan, step.weights)
                total = math.fsum(step.weights[queue] for queue in queues)
                assert row.load_moved == moved / total


def test_without_zones_or_weights_their_scores_are_null_not_zero() -> None:
    plain = ScenarioSettings(queue_range=(1, 30), consumer_range=(1, 6))
    weights_only = ScenarioSettings(queue_range=(1, 30), consumer_range=(1, 6), weights="hot")
    zones_only = ScenarioSettings(queue_range=(1, 30), consumer_range=(1, 6), zone_range=(2, 2))
    strategies = {"averagely": STRATEGIES["averagely"]}
    for settings, null in (
        (plain, ZONE_SCORES + LOAD_SCORES),
        (weights_only, ZONE_SCORES),
        (zones_only, LOAD_SCORES),
    ):
        rows = list(score_scenarios(generate_scenarios(2, range(5), settings), strategies))
        for row in rows:
            assert all(getattr(row, score) is None for score in null), settings
        measured = {
            score for row in rows for score in ZONE_SCORES + LOAD_SCORES if getattr(row, score)
        }
        assert measured == set(ZONE_SCORES + LOAD_SCORES) - set(null) - {"load_ratio_gap"} or (
            measured == set(ZONE_SCORES + LOAD_SCORES) - set(null)
        ), settings


def test_a_failed_or_broken_plan_has_no_placement_scores() -> None:
    def broken(queues: Any, consumers: Any, previous: Any = None) -> Any:
        plan = averagely.assign(queues, consumers, previous)
        first = next(iter(plan))
        plan[first] = plan[first][1:]  # an orphan when it held any
        return plan

    def failing(queues: Any, consumers: Any, previous: Any = None) -> Any:
        raise RuntimeError("no")

    rows = list(score_scenario(Scenario(1, 1, PLACED), {"broken": broken, "failing": failing}))
    for row in rows:
        if row.failed or row.orphans:
            assert all(getattr(row, score) is None for score in ZONE_SCORES + LOAD_SCORES)
    assert any(row.orphans for row in rows)


def test_a_plan_that_leaves_out_its_idle_consumers_has_their_placement_scores() -> None:
    # a consumer with no queues, left out of the plan's keys, is still in the group: its load
    # is 0, so the load ratio and the load it kept are those of the plan with its empty key
    def terse(queues: Any, consumers: Any, previous: Any = None) -> Any:
        plan = averagely.assign(queues, consumers, previous)
        return {consumer: owned for consumer, owned in plan.items() if owned}

    few_queues = ScenarioSettings(
        queue_range=(2, 3), consumer_range=(4, 6), weights="hot", change_count_range=(2, 4)
    )
    strategies = {"terse": Strategy("terse", terse, "test"), "averagely": STRATEGIES["averagely"]}
    for index in range(4):
        rows = list(score_scenario(Scenario(5, index, few_queues), strategies))
        by_step: dict[int, dict[str, Any]] = {}
        for row in rows:
            by_step.setdefault(row.step, {})[row.strategy] = row
        for pair in by_step.values():
            for score in LOAD_SCORES:
                assert getattr(pair["terse"], score) == getattr(pair["averagely"], score), score
