"""The scoring core: one row per (scenario, step, strategy), each strategy on its own history."""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping
from dataclasses import asdict
from types import MappingProxyType
from typing import Any

from rebalancing.contract import CheckedPlan, PreviousMismatchWarning, ProtocolRun, SortedIds
from rebalancing.evaluation.scenarios.changes import (
    INITIAL,
    Scenario,
    ScenarioSettings,
    generate_scenarios,
    scenario_seed,
)
from rebalancing.evaluation.scoring.replay import ROW_FIELDS, score_scenario, score_scenarios
from rebalancing.evaluation.scoring.scores import score
from rebalancing.strategies import STRATEGIES, Strategy, sac

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
        # None where a compiled twin made the plan untimed (replay.TIMED_EVERY)
        assert row.assign_micros is None or row.assign_micros >= 0
    assert any(row.assign_micros is None for row in rows)


def test_rows_repeat_the_scores_of_each_strategys_own_history() -> None:
    scenario = Scenario(2, 8, SMALL)
    rows = {(row.step, row.strategy): row for row in score_scenario(scenario, STRATEGIES)}
    for name, strategy in STRATEGIES.items():
        previous = None
        seed = scenario_seed(scenario.base_seed, scenario.index)
        session = strategy.open_session(seed=seed) if strategy.open_session else None
        for step in scenario.steps():
            if session is not None:  # a protocol strategy: one session carries its state
                plan = session.rebalance(step.queues, step.consumers).owners
            else:
                plan = strategy.assign(step.queues, step.consumers, previous)
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


NOT_BALANCING = {  # balance is not their promise
    "consistent_hash",  # RocketMQ's ring
    "event_hubs_balanced",  # azure-eventhub steals only below P // n: spread up to P mod n
    "event_hubs_greedy",
}


def test_every_strategy_is_exact_and_sticky_is_optimal_over_many_scenarios() -> None:
    rows = list(score_scenarios(generate_scenarios(5, range(60), SMALL), STRATEGIES))
    assert {row.strategy for row in rows} == set(STRATEGIES)
    for row in rows:
        assert (row.orphans, row.duplicates, row.unknown_queues, row.unknown_consumers) == (
            0,
            0,
            0,
            0,
        )
        assert row.spread is not None
        if "bounded_load" in STRATEGIES[row.strategy].promises:
            # every queue weighs 1 here: the promise is counts within mean + 1 (and, handed out
            # to the least loaded, none below mean - 1)
            assert row.spread <= 2, row
        elif row.strategy not in NOT_BALANCING:
            assert row.spread <= 1, row
        if row.strategy == "sticky":
            assert row.stickiness_gap in (None, 0.0)


def test_rows_are_generated_lazily() -> None:
    rows = score_scenarios(generate_scenarios(5, range(10**12), SMALL), STRATEGIES)
    first = next(rows)
    assert first.scenario == 0
    assert first.step == 0


def test_the_function_passed_is_the_one_that_runs_even_under_a_registered_name() -> None:
    calls: list[int] = []

    def mine(queues: Any, consumers: Any, previous: Any = None) -> dict[Any, list[Any]]:
        calls.append(1)
        return STRATEGIES["sticky"].assign(queues, consumers, previous)

    scenario = Scenario(3, 2, SMALL)
    rows = list(score_scenario(scenario, {"sac": mine}))
    checks = sum(row.moves_when_unchanged is not None for row in rows)  # sticky: one call each
    assert len(calls) == len(list(scenario.steps())) + checks == len(rows) + checks
    assert all(row.releases is None for row in rows), "not the registered SAC's protocol run"


def test_protocol_strategies_run_through_one_session_seeded_with_the_scenario() -> None:
    scenario = Scenario(2, 8, SMALL)
    for name, release in (("sac", "highest"), ("sac_random", "random")):
        rows = [row for row in score_scenario(scenario, STRATEGIES) if row.strategy == name]
        session = sac.Session(release=release, seed=scenario_seed(2, 8))
        for step, row in zip(scenario.steps(), rows, strict=True):
            run = session.rebalance(step.queues, step.consumers)
            protocol = (row.releases, row.protocol_steps, row.rounds, row.converged)
            assert protocol == (run.releases, run.steps, run.rounds, run.converged)


class _KindRecorder:
    """A session that records what the scoring core tells it, and plans round robin."""

    def __init__(self, change_aware: bool) -> None:
        self.calls: list[tuple[str, str | None]] = []
        if change_aware:
            self.apply_change = self._apply_change

    def _apply_change(self, queues: Any, consumers: Any, kind: str) -> ProtocolRun:
        self.calls.append(("apply_change", kind))
        return self._run(queues, consumers)

    def rebalance(self, queues: Any, consumers: Any) -> ProtocolRun:
        self.calls.append(("rebalance", None))
        return self._run(queues, consumers)

    @staticmethod
    def _run(queues: Any, consumers: Any) -> ProtocolRun:
        return ProtocolRun(STRATEGIES["round_robin"].assign(queues, consumers), 0, 0, 0, True)


def test_a_change_aware_session_is_told_each_steps_change_kind() -> None:
    scenario = Scenario(4, 2, SMALL)
    kinds = [step.kind for step in scenario.steps()]
    for change_aware in (True, False):
        sessions: list[_KindRecorder] = []

        def opened(
            seed: int, aware: bool = change_aware, made: list[_KindRecorder] = sessions
        ) -> _KindRecorder:
            made.append(_KindRecorder(aware))
            return made[-1]

        strategy = Strategy("recorder", STRATEGIES["round_robin"].assign, "a test", opened)
        list(score_scenario(scenario, {"recorder": strategy}, stability_every=10**9))
        (session,) = sessions
        expected = [
            ("apply_change", kind) if change_aware else ("rebalance", None) for kind in kinds
        ]
        assert session.calls == expected


def _holds_the_first_queue_twice(queues: Any, consumers: Any, previous: Any = None) -> Any:
    plan = STRATEGIES["round_robin"].assign(queues, consumers)
    if len(plan) > 1 and plan[min(plan)]:
        plan[max(plan)].append(plan[min(plan)][0])
    return plan


def test_a_plan_holding_a_queue_twice_is_scored_as_a_duplicate_at_every_step() -> None:
    settings = ScenarioSettings(queue_range=(5, 40), consumer_range=(2, 8))
    rows = list(
        score_scenarios(
            generate_scenarios(1, range(20), settings), {"broken": _holds_the_first_queue_twice}
        )
    )
    # The broken strategy holds one queue twice wherever there are two consumers or more; from
    # step 1 on, that plan is also the next step's previous.
    assert all(row.duplicates == (row.consumer_count > 1) for row in rows)
    assert any(row.step > 0 and row.duplicates for row in rows)
    assert all(not row.failed for row in rows)


def _raises_on_a_leave(queues: Any, consumers: Any, previous: Any = None) -> Any:
    if previous is not None and set(previous) - set(consumers):
        raise RuntimeError("cannot cope with a departure")
    return STRATEGIES["averagely"].assign(queues, consumers, previous)


def _returns_a_list(queues: Any, consumers: Any, previous: Any = None) -> Any:
    return list(queues)


def test_a_strategy_that_raises_or_returns_no_plan_fails_its_row_and_the_run_goes_on() -> None:
    settings = ScenarioSettings(
        queue_range=(5, 40), consumer_range=(2, 8), change_weights={"leave": 1.0, "join": 1.0}
    )
    strategies = {
        "raising": _raises_on_a_leave,
        "listing": _returns_a_list,
        "sticky": STRATEGIES["sticky"],
    }
    rows = list(score_scenarios(generate_scenarios(1, range(10), settings), strategies))
    failed = [row for row in rows if row.strategy == "raising" and row.failed]
    assert failed
    assert all(row.error == "RuntimeError: cannot cope with a departure" for row in failed)
    assert all(row.orphans == row.queue_count for row in failed), "an empty plan is scored"
    for row in failed:  # undefined, so that a failure never counts as perfectly balanced
        assert (row.balance_degree, row.spread, row.stickiness, row.stickiness_gap) == (None,) * 4
    listing = [row for row in rows if row.strategy == "listing"]
    assert all(row.failed and "returned list" in (row.error or "") for row in listing)
    assert not any(row.failed for row in rows if row.strategy == "sticky")


class _ListKeyedPlan(Mapping[Any, Any]):
    """A plan no dict can be: a Mapping whose one key is a list."""

    def __getitem__(self, key: Any) -> Any:
        return [0]

    def __iter__(self) -> Iterator[Any]:
        return iter([["c"]])

    def __len__(self) -> int:
        return 1


def _returns_a_list_keyed_plan(queues: Any, consumers: Any, previous: Any = None) -> Any:
    return _ListKeyedPlan()


def _returns_queues_that_raise_when_read(queues: Any, consumers: Any, previous: Any = None) -> Any:
    def reading() -> Iterator[Any]:
        yield from queues
        raise RuntimeError("read too far")

    return MappingProxyType({consumer: reading() for consumer in consumers})


def test_a_plan_that_cannot_even_be_copied_fails_its_row_and_the_run_goes_on() -> None:
    strategies = {
        "list_keyed": _returns_a_list_keyed_plan,
        "raising_reader": _returns_queues_that_raise_when_read,
        "sticky": STRATEGIES["sticky"],
    }
    rows = list(score_scenarios(generate_scenarios(1, range(5), SMALL), strategies))
    for name, error in (("list_keyed", "TypeError"), ("raising_reader", "RuntimeError")):
        broken = [row for row in rows if row.strategy == name]
        assert broken
        assert all(row.failed and (row.error or "").startswith(error) for row in broken), name
    assert not any(row.failed for row in rows if row.strategy == "sticky")


def _holds_an_unhashable_queue(queues: Any, consumers: Any, previous: Any = None) -> Any:
    plan = STRATEGIES["averagely"].assign(queues, consumers)
    plan[min(plan)].append(["not", "a", "queue"])
    return plan


def test_a_plan_holding_an_unhashable_queue_is_scored_as_an_unknown_queue() -> None:
    settings = ScenarioSettings(queue_range=(5, 40), consumer_range=(2, 8))
    rows = list(
        score_scenarios(
            generate_scenarios(2, range(5), settings), {"odd": _holds_an_unhashable_queue}
        )
    )
    assert all(row.unknown_queues == 1 for row in rows)
    assert all(not row.failed for row in rows), "averagely ignores previous, so it never raises"


def test_rows_equal_each_plan_scored_on_its_own_over_many_scenarios() -> None:
    """The core reads each plan once and reuses what it can from the step before (the checked
    ids, the frozen queue set, the reading as the next previous): the rows must not show it."""
    chosen = {name: STRATEGIES[name] for name in ("averagely", "round_robin", "sticky")}
    for index in range(25):
        scenario = Scenario(6, index, SMALL)
        rows = {(row.step, row.strategy): row for row in score_scenario(scenario, chosen)}
        for name, strategy in chosen.items():
            previous = None
            for step in scenario.steps():
                plan = strategy.assign(step.queues, step.consumers, previous)
                expected = asdict(score(step.queues, step.consumers, previous, plan))
                row = rows[(step.index, name)]
                assert {key: getattr(row, key) for key in expected} == expected
                previous = plan


def test_strategies_get_checked_ids_and_their_last_plan_checked() -> None:
    seen: list[tuple[Any, Any, Any]] = []
    returned: list[dict[Any, list[Any]]] = []

    def recording(queues: Any, consumers: Any, previous: Any = None) -> dict[Any, list[Any]]:
        seen.append((queues, consumers, previous))
        returned.append(STRATEGIES["sticky"].assign(queues, consumers, previous))
        return returned[-1]

    scenario = Scenario(3, 5, SMALL)
    rows = list(score_scenario(scenario, {"recording": recording}, stability_every=1))
    steps_seen, steps_returned = _step_calls(rows, seen), _step_calls(rows, returned)
    for (queues, consumers, _), step in zip(steps_seen, scenario.steps(), strict=True):
        assert type(queues) is SortedIds
        assert type(consumers) is SortedIds
        assert (queues, consumers) == (tuple(sorted(step.queues)), tuple(sorted(step.consumers)))
    assert steps_seen[0][2] is None
    for (_, _, previous), plan in zip(steps_seen[1:], steps_returned, strict=False):
        assert type(previous) is CheckedPlan
        assert previous == {consumer: tuple(owned) for consumer, owned in plan.items()}
    # the stability check applies the strategy again to the same ids and its plan, checked
    for (queues, consumers, previous), step_call, plan in zip(
        seen[1::2], seen[::2], returned[::2], strict=True
    ):
        assert queues is step_call[0]
        assert consumers is step_call[1]
        assert type(previous) is CheckedPlan
        assert previous == {consumer: tuple(owned) for consumer, owned in plan.items()}


def _step_calls(rows: list[Any], calls: list[Any]) -> list[Any]:
    """The calls of a strategy that its steps made, without those of the stability check (one
    after each checked step, for a strategy that is its own fixed point)."""
    steps: list[Any] = []
    remaining = iter(calls)
    for row in rows:
        steps.append(next(remaining))
        if row.moves_when_unchanged is not None:
            assert row.rebalances_to_fixed_point == 0
            next(remaining)
    assert next(remaining, None) is None
    return steps


def test_a_plan_that_fails_the_check_is_passed_on_as_it_was() -> None:
    received: list[Any] = []
    returned: list[Any] = []

    def twice(queues: Any, consumers: Any, previous: Any = None) -> Any:
        received.append(previous)
        returned.append(_holds_the_first_queue_twice(queues, consumers, previous))
        return returned[-1]

    settings = ScenarioSettings(queue_range=(5, 40), consumer_range=(2, 8))
    scenario = next(
        scenario
        for scenario in generate_scenarios(1, range(50), settings)
        if len(list(scenario.steps())) > 2
    )
    rows = list(score_scenario(scenario, {"twice": twice}))
    received, returned = _step_calls(rows, received), _step_calls(rows, returned)
    for previous, plan, row in zip(received[1:], returned, rows, strict=False):
        if row.duplicates:
            assert previous is plan  # for the strategy to judge, as it would be without the core
        else:
            assert type(previous) is CheckedPlan


def test_scoring_shows_no_mismatch_warning_where_every_queue_of_a_plan_is_gone() -> None:
    """A consumer's own view of the previous plan (client views) holds only its queues, and a
    change can remove every one of them: the contract's warning that previous may hold ids of
    another form is not shown for the scoring core's own plans, nor does it fail a row."""
    removing = ScenarioSettings(
        queue_range=(4, 12),
        consumer_range=(3, 12),
        change_weights={"queues_removed": 1.0, "mixed": 1.0},
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for views in ("client", "broker"):
            for row in score_scenarios(
                generate_scenarios(4, range(60), removing), STRATEGIES, views
            ):
                assert not row.failed, row.error
    assert [warning for warning in caught if warning.category is PreviousMismatchWarning] == []


def test_a_functions_first_call_in_the_process_is_not_timed_and_the_others_are() -> None:
    import time

    calls: list[int] = []

    def slow_to_warm_up(queues: Any, consumers: Any, previous: Any = None) -> dict[Any, list[Any]]:
        if not calls:
            time.sleep(0.2)  # a first call importing and compiling what it needs
        calls.append(1)
        return STRATEGIES["round_robin"].assign(queues, consumers, previous)

    scenario = next(
        Scenario(5, index, SMALL)
        for index in range(100)
        if len(list(Scenario(5, index, SMALL).steps())) >= 3
    )
    first, *later = score_scenario(scenario, {"warming": slow_to_warm_up})
    assert first.assign_micros is None
    assert later
    assert all(row.assign_micros is not None for row in later)
    assert max(row.assign_micros or 0 for row in later) < 200_000
    again = list(score_scenario(scenario, {"warming": slow_to_warm_up}))  # warm now: all timed
    assert all(row.assign_micros is not None for row in again)
