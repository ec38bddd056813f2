"""The protocols' time scores in the rows, the summary and the verdict (issue 34 §2)."""

from __future__ import annotations

from rebalancing.evaluation.aggregates import METRICS
from rebalancing.evaluation.glossary import SCORES, SUMMARY_COLUMNS
from rebalancing.evaluation.replay import score_scenario
from rebalancing.evaluation.scenarios import Scenario, ScenarioSettings
from rebalancing.evaluation.verdict import SYSTEM_VERDICTS
from rebalancing.strategies import STRATEGIES

SMALL = ScenarioSettings(queue_range=(1, 60), consumer_range=(1, 8))
TIME_SCORES = (
    "claims",
    "steals",
    "seconds_to_balance",
    "queue_seconds_unowned",
    "queue_seconds_doubly_owned",
)
TIMED = ("event_hubs_balanced", "event_hubs_greedy", "kcl")


def test_rows_of_a_protocol_with_a_time_model_carry_its_time_scores_and_the_others_none() -> None:
    chosen = {name: STRATEGIES[name] for name in (*TIMED, "sac", "sticky")}
    rows = list(score_scenario(Scenario(5, 2, SMALL), chosen))
    for row in rows:
        values = [getattr(row, metric) for metric in TIME_SCORES]
        if row.strategy in TIMED:
            assert None not in values, row
            assert row.orphans == 0
            assert row.duplicates == 0
        elif row.strategy == "sac":
            assert values[:2] == [None, None]
            assert None not in values[2:]
        else:
            assert values == [None] * len(TIME_SCORES)


def test_the_time_scores_are_aggregated_shown_and_defined_with_units() -> None:
    shown = {column.metric for column in SUMMARY_COLUMNS}
    for metric in TIME_SCORES:
        assert metric in METRICS
        assert metric in shown
        assert SCORES[metric].better == "lower"
        assert SCORES[metric].unit
    assert SCORES["seconds_to_balance"].unit == "s"
    assert SCORES["queue_seconds_unowned"].unit == "queue-seconds"


def test_the_leaderless_systems_decide_on_time_after_balance() -> None:
    for system in ("azure-event-hubs", "aws-kcl"):
        criteria = SYSTEM_VERDICTS[system].criteria
        assert criteria.index("balance_degree") < criteria.index("seconds_to_balance")
        assert "queue_seconds_unowned" in criteria
        assert "queue_seconds_doubly_owned" in criteria
    assert "seconds_to_balance" in SYSTEM_VERDICTS["rabbitmq-sac"].criteria
    assert SYSTEM_VERDICTS["azure-event-hubs"].candidates() == (
        "event_hubs_balanced",
        "event_hubs_greedy",
    )
    assert SYSTEM_VERDICTS["aws-kcl"].candidates() == ("kcl",)
