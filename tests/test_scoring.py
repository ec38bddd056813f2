"""The scoring core: one row per (scenario, step, strategy), each strategy on its own history."""

from __future__ import annotations

from dataclasses import asdict

from rebalancing.scenarios import INITIAL, Scenario, ScenarioSettings, generate_scenarios
from rebalancing.scores import score
from rebalancing.scoring import ROW_FIELDS, score_scenario, score_scenarios
from rebalancing.strategies import STRATEGIES

SMALL = ScenarioSettings(queue_range=(1, 200), consumer_range=(1, 30))


def test_one_row_per_step_and_strategy_in_order() -> None:
    scenario = Scenario(11, 3, SMALL)
    steps = list(scenario.steps())
    rows = list(score_scenario(scenario, STRATEGIES))
    assert len(rows) == len(steps) * len(STRATEGIES)
    expected = [(step.index, name) for step in steps for name in sorted(STRATEGIES)]
    assert [(row.step, row.strategy) for row in rows] == expected
    for row in rows:
        assert tuple(row.as_dict()) == ROW_FIELDS
        assert (row.base_seed, row.scenario) == (11, 3)
        assert row.assign_micros >= 0


def test_rows_repeat_the_scores_of_each_strategys_own_history() -> None:
    scenario = Scenario(2, 8, SMALL)
    rows = {(row.step, row.strategy): row for row in score_scenario(scenario, STRATEGIES)}
    for name, assign in STRATEGIES.items():
        previous = None
        for step in scenario.steps():
            plan = assign(step.queues, step.consumers, previous)
            row = rows[(step.index, name)]
            assert (row.change, row.queue_count, row.consumer_count) == (
                step.kind,
                len(step.queues),
                len(step.consumers),
            )
            expected = asdict(score(step.queues, step.consumers, previous, plan))
            assert {key: getattr(row, key) for key in expected} == expected
            previous = plan


def test_first_step_has_no_stickiness_and_later_steps_do() -> None:
    rows = list(score_scenario(Scenario(4, 1, SMALL), STRATEGIES))
    assert all(row.stickiness is None for row in rows if row.change == INITIAL)
    assert all(row.stickiness is not None for row in rows if row.change != INITIAL)


def test_every_strategy_is_exact_and_sticky_is_optimal_over_many_scenarios() -> None:
    rows = list(score_scenarios(generate_scenarios(5, range(60), SMALL), STRATEGIES))
    for row in rows:
        assert (row.orphans, row.duplicates, row.unknown_queues, row.unknown_consumers) == (
            0,
            0,
            0,
            0,
        )
        assert row.spread <= 1
        if row.strategy == "sticky":
            assert row.stickiness_gap in (None, 0.0)


def test_rows_are_generated_lazily() -> None:
    rows = score_scenarios(generate_scenarios(5, range(10**12), SMALL), STRATEGIES)
    first = next(rows)
    assert first.scenario == 0
    assert first.step == 0
