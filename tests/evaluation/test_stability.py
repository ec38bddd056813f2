"""The stability score of the scoring core: after every step, the strategy is applied again to
its own plan with nothing changed (a protocol: its session rebalanced again with the same group);
it should move nothing, and must reach a fixed point within STABILITY_BOUND rebalances. A strategy
that oscillates is reported, and the verdict sets it aside; one that moves queues and then
settles pays for them in the verdict's last criterion."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rebalancing.evaluation.decision.systems import SYSTEM_VERDICTS
from rebalancing.evaluation.decision.verdict import decide
from rebalancing.evaluation.report.verdict_text import render_text
from rebalancing.evaluation.scenarios.changes import (
    Scenario,
    ScenarioSettings,
    generate_scenarios,
    scenario_seed,
)
from rebalancing.evaluation.scoring.aggregates import ALL_CHANGES, summarise
from rebalancing.evaluation.scoring.definitions import SCORES
from rebalancing.evaluation.scoring.replay import (
    STABILITY_BOUND,
    STABILITY_EVERY,
    score_scenario,
    score_scenarios,
)
from rebalancing.evaluation.scoring.scores import score
from rebalancing.strategies import STRATEGIES, averagely, round_robin

SMALL = ScenarioSettings(queue_range=(1, 60), consumer_range=(1, 12))


class Rotating:
    """An oracle that oscillates: round robin over the consumers rotated by a counter that every
    call advances, so the same input gets a different plan at each call."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(
        self, queues: Iterable[Any], consumers: Iterable[Any], previous: Any = None
    ) -> dict[Any, list[Any]]:
        ordered = sorted(consumers)
        self.calls += 1
        if not ordered:
            return {}
        shift = self.calls % len(ordered)
        rotated = ordered[shift:] + ordered[:shift]
        dealt = round_robin.assign(queues, range(len(rotated)))
        return {rotated[index]: owned for index, owned in dealt.items()}


def settles_in_a_second_round(
    queues: Iterable[Any], consumers: Iterable[Any], previous: Any = None
) -> dict[Any, list[Any]]:
    """A strategy whose plan depends on rounds: averagely's plan after a change, then, given a
    plan of exactly this group (every consumer, every queue), round robin's, which it keeps."""
    queues, consumers = list(queues), list(consumers)
    held = sorted(queue for owned in (previous or {}).values() for queue in owned)
    if previous is not None and set(previous) == set(consumers) and held == sorted(queues):
        return round_robin.assign(queues, consumers)
    return averagely.assign(queues, consumers)


def test_an_oscillating_strategy_moves_queues_when_nothing_changed_and_never_settles() -> None:
    rows = list(
        score_scenarios(
            generate_scenarios(3, range(10), SMALL), {"rotating": Rotating()}, stability_every=1
        )
    )
    groups_of_two = [row for row in rows if row.consumer_count > 1 and row.queue_count > 1]
    assert groups_of_two
    assert all((row.moves_when_unchanged or 0) > 0 for row in groups_of_two)
    assert all(row.rebalances_to_fixed_point == STABILITY_BOUND for row in groups_of_two)


def test_the_verdict_sets_aside_a_strategy_that_oscillates() -> None:
    scenarios = list(generate_scenarios(4, range(20), SMALL))
    chosen = {"rotating": Rotating(), "sticky": STRATEGIES["sticky"]}
    rows = score_scenarios(scenarios, chosen)  # every 4th step, as every run checks
    summary = summarise(rows)
    assert summary[("rotating", ALL_CHANGES)]["moves_when_unchanged"].max
    assert summary[("sticky", ALL_CHANGES)]["moves_when_unchanged"].max == 0
    verdict = decide(summary, SYSTEM_VERDICTS["any"], ["rotating", "sticky"])
    assert "rebalances to fixed point 4" in verdict.broken["rotating"]
    assert "sticky" not in verdict.broken
    assert verdict.recommended == ("sticky",)
    assert "rotating: rebalances to fixed point 4" in render_text(verdict, "p")


def test_a_strategy_that_moves_when_unchanged_but_settles_is_weighed_not_set_aside() -> None:
    scenarios = list(generate_scenarios(4, range(20), SMALL))
    chosen = {"two": settles_in_a_second_round, "round_robin": STRATEGIES["round_robin"]}
    summary = summarise(score_scenarios(scenarios, chosen, stability_every=1))
    assert summary[("two", ALL_CHANGES)]["moves_when_unchanged"].max
    verdict = decide(summary, SYSTEM_VERDICTS["any"], list(chosen))
    assert verdict.broken == {}


@settings(max_examples=15)
@given(base_seed=st.integers(0, 2**32), index=st.integers(0, 2**20))
def test_every_registered_strategy_moves_nothing_when_nothing_changed(
    base_seed: int, index: int
) -> None:
    for row in score_scenario(Scenario(base_seed, index, SMALL), STRATEGIES, stability_every=1):
        assert not row.failed
        stability = (row.moves_when_unchanged, row.rebalances_to_fixed_point)
        assert stability == (0, 0), (row.strategy, row.step, row.change)


def test_cooperative_sticky_reaches_its_fixed_point_within_the_bound() -> None:
    chosen = {"cooperative_sticky": STRATEGIES["cooperative_sticky"]}
    rows = list(score_scenarios(generate_scenarios(5, range(40), SMALL), chosen, stability_every=1))
    assert any(row.rounds == 2 for row in rows), "some rebalances took both rounds"
    assert all(row.rebalances_to_fixed_point is not None for row in rows)
    assert all((row.rebalances_to_fixed_point or 0) < STABILITY_BOUND for row in rows)
    assert all(row.moves_when_unchanged == 0 for row in rows)


def test_a_strategy_that_settles_in_a_second_round_counts_one_rebalance_to_its_fixed_point() -> (
    None
):
    rows = list(
        score_scenarios(
            generate_scenarios(6, range(10), SMALL),
            {"two": settles_in_a_second_round},
            stability_every=1,
        )
    )
    moved = [row for row in rows if row.moves_when_unchanged]
    assert moved, "averagely's plan differs from round robin's somewhere"
    assert all(row.rebalances_to_fixed_point == 1 for row in moved)
    assert all(row.rebalances_to_fixed_point == 0 for row in rows if not row.moves_when_unchanged)


PROTOCOL = ("releases", "protocol_steps", "rounds", "converged", "queues_paused")


def test_the_stability_check_changes_no_other_score() -> None:
    """Applying a strategy again leaves its plan in force and its protocol state as they were:
    every other score equals those of the strategy's own history replayed without the check."""
    for index in range(6):
        scenario = Scenario(2, index, SMALL)
        scored = score_scenario(scenario, STRATEGIES, stability_every=1)
        rows = {(row.step, row.strategy): row for row in scored}
        for name, strategy in STRATEGIES.items():
            previous = None
            seed = scenario_seed(scenario.base_seed, scenario.index)
            session = strategy.open_session(seed=seed) if strategy.open_session else None
            for step in scenario.steps():
                row = rows[(step.index, name)]
                if session is not None:
                    run = session.rebalance(step.queues, step.consumers)
                    plan = run.owners
                    protocol = (run.releases, run.steps, run.rounds, run.converged)
                    assert protocol == tuple(getattr(row, key) for key in PROTOCOL[:4]), name
                    assert row.queues_paused == run.queues_paused
                else:
                    plan = strategy.assign(step.queues, step.consumers, previous)
                expected = asdict(score(step.queues, step.consumers, previous, plan))
                assert {key: getattr(row, key) for key in expected} == expected, name
                previous = plan


def test_a_failed_step_has_no_stability_score() -> None:
    def raising(queues: Any, consumers: Any, previous: Any = None) -> Any:
        raise RuntimeError("no plan")

    rows = list(score_scenario(Scenario(1, 1, SMALL), {"raising": raising}, stability_every=1))
    assert all(row.failed for row in rows)
    assert all(row.moves_when_unchanged is None for row in rows)
    assert all(row.rebalances_to_fixed_point is None for row in rows)


def test_a_strategy_that_cannot_take_its_own_plan_as_previous_is_unstable() -> None:
    def refuses_its_own_plan(queues: Any, consumers: Any, previous: Any = None) -> Any:
        if previous is not None and set(previous) == set(consumers):
            raise ValueError("no")
        return round_robin.assign(queues, consumers)

    rows = list(
        score_scenario(Scenario(1, 2, SMALL), {"refusing": refuses_its_own_plan}, stability_every=1)
    )
    held = [row for row in rows if not row.failed and row.queue_count and row.consumer_count]
    assert held
    for row in held:
        assert row.moves_when_unchanged == row.queue_count  # the group would lose every queue
        assert row.rebalances_to_fixed_point == STABILITY_BOUND


def test_the_glossary_states_the_bound_of_the_check() -> None:
    assert f"bound ({STABILITY_BOUND})" in SCORES["rebalances_to_fixed_point"].definition
    # reaching the bound is what makes the verdict set a strategy aside
    assert SCORES["rebalances_to_fixed_point"].broken_at == STABILITY_BOUND


def test_by_default_every_fourth_step_is_checked_the_same_steps_for_every_strategy() -> None:
    for index in range(20):
        scenario = Scenario(7, index, SMALL)
        seed = scenario_seed(7, index)
        for row in score_scenario(scenario, STRATEGIES):
            checked = (seed + row.step) % STABILITY_EVERY == 0
            assert (row.moves_when_unchanged is not None) == checked, (row.strategy, row.step)
            assert (row.rebalances_to_fixed_point is not None) == checked


@pytest.mark.parametrize("every", [0, -1, 1.5, "2"])
def test_a_check_interval_that_is_no_positive_integer_is_refused(every: Any) -> None:
    with pytest.raises(ValueError, match="stability_every must be a positive integer"):
        next(score_scenario(Scenario(1, 1, SMALL), STRATEGIES, stability_every=every))
