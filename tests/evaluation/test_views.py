"""Client-side against broker-side rebalancing: what inconsistent views cost."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rebalancing.evaluation.scenarios.changes import Scenario, ScenarioSettings
from rebalancing.evaluation.scenarios.views import ViewSettings, client_side_rebalance
from rebalancing.evaluation.scoring.replay import score_scenario
from rebalancing.strategies import STRATEGIES, averagely

SMALL = ScenarioSettings(queue_range=(1, 60), consumer_range=(1, 12))
ALWAYS_STALE = ViewSettings(stale_probability=1.0, queue_stale_probability=0.5, max_delay=3)
VIEW_COLUMNS = ("queue_periods_read_twice", "queue_periods_unread", "periods_to_agree")


def test_a_consumer_with_a_stale_list_reads_a_queue_a_newcomer_also_reads() -> None:
    """c joins a, b over q0..q3. b still sees [a, b] for one period and takes q2, q3 (averagely
    over two); a and c see [a, b, c]: a takes q0, q1 and c takes q3. So q3 is read twice in that
    period, no queue is unread, and the group agrees after one period on averagely's plan."""
    outcome = client_side_rebalance(
        averagely.assign,
        ["q0", "q1", "q2", "q3"],
        ["a", "b", "c"],
        ["q0", "q1", "q2", "q3"],
        ["a", "b"],
        {"a": ["q0", "q1"], "b": ["q2", "q3"]},
        {"a": (0, 0), "b": (1, 0), "c": (0, 0)},
    )
    assert (outcome.queue_periods_read_twice, outcome.queue_periods_unread) == (1, 0)
    assert outcome.periods_to_agree == 1
    assert outcome.plan == {"a": ["q0", "q1"], "b": ["q2"], "c": ["q3"]}


def test_a_newcomer_missing_from_its_own_view_reads_nothing_and_new_queues_go_unread() -> None:
    """c's own list is stale for two periods (it does not see itself: it takes nothing) and a's
    queue list misses the new queue q2 for one period."""
    outcome = client_side_rebalance(
        averagely.assign,
        ["q0", "q1", "q2"],
        ["a", "c"],
        ["q0", "q1"],
        ["a"],
        {"a": ["q0", "q1"]},
        {"a": (0, 1), "c": (2, 0)},
    )
    # period 0: a (queues q0, q1; consumers a, c) takes q0; c takes nothing: q1, q2 unread;
    # period 1: a (current) takes q0, q1; c still nothing: q2 unread
    assert (outcome.queue_periods_read_twice, outcome.queue_periods_unread) == (0, 3)
    assert outcome.periods_to_agree == 2
    assert outcome.plan == {"a": ["q0", "q1"], "c": ["q2"]}


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10**6), st.integers(0, 10**6))
def test_broker_side_never_reads_a_queue_twice_or_leaves_one_unread(seed: int, index: int) -> None:
    for row in score_scenario(Scenario(seed, index, SMALL), STRATEGIES, "broker"):
        assert row.views == "broker"
        assert tuple(getattr(row, column) for column in VIEW_COLUMNS) == (0, 0, 0)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10**6), st.integers(0, 10**6))
def test_client_side_settles_on_the_broker_plan_for_client_side_strategies(
    seed: int, index: int
) -> None:
    scenario = Scenario(seed, index, SMALL)
    client = list(score_scenario(scenario, STRATEGIES, "client", ALWAYS_STALE))
    broker = list(score_scenario(scenario, STRATEGIES, "broker"))
    for on_client, on_broker in zip(client, broker, strict=True):
        strategy = STRATEGIES[on_client.strategy]
        assert on_client.views == ("client" if strategy.client_side else "broker")
        same = ("kept", "moves", "orphans", "duplicates", "spread", "stickiness")
        assert [getattr(on_client, name) for name in same] == [
            getattr(on_broker, name) for name in same
        ]
        if not strategy.client_side or on_client.step == 0:
            assert tuple(getattr(on_client, column) for column in VIEW_COLUMNS) == (0, 0, 0)


def test_stale_views_cost_something_somewhere_and_fresh_views_nothing() -> None:
    fresh = ViewSettings(stale_probability=0.0, queue_stale_probability=0.0)
    rows = [
        row
        for index in range(30)
        for row in score_scenario(
            Scenario(3, index, SMALL),
            {"averagely": STRATEGIES["averagely"]},
            "client",
            ALWAYS_STALE,
        )
    ]
    assert sum(row.queue_periods_read_twice + row.queue_periods_unread for row in rows) > 0
    assert all(row.periods_to_agree <= 3 for row in rows)
    rows = [
        row
        for index in range(30)
        for row in score_scenario(
            Scenario(3, index, SMALL), {"averagely": STRATEGIES["averagely"]}, "client", fresh
        )
    ]
    assert all(tuple(getattr(row, column) for column in VIEW_COLUMNS) == (0, 0, 0) for row in rows)


def test_every_strategy_meets_the_same_views() -> None:
    chosen = {name: STRATEGIES[name] for name in ("averagely", "round_robin")}
    first = list(score_scenario(Scenario(5, 2, SMALL), chosen, "client", ALWAYS_STALE))
    again = list(score_scenario(Scenario(5, 2, SMALL), chosen, "client", ALWAYS_STALE))
    assert [row.periods_to_agree for row in first] == [row.periods_to_agree for row in again]
    by_step: dict[int, set[int]] = {}
    for row in first:
        by_step.setdefault(row.step, set()).add(row.periods_to_agree)
    assert all(len(values) == 1 for values in by_step.values())


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"stale_probability": 1.5}, ValueError, "stale_probability"),
        ({"queue_stale_probability": -0.1}, ValueError, "queue_stale_probability"),
        ({"max_delay": 0}, ValueError, "max_delay"),
        ({"max_delay": 2.5}, TypeError, "max_delay"),
    ],
)
def test_bad_view_settings_name_the_setting(
    arguments: dict[str, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        ViewSettings(**arguments)  # type: ignore[arg-type]


def test_an_unknown_view_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown views 'peer'"):
        list(score_scenario(Scenario(1, 1, SMALL), STRATEGIES, "peer"))
