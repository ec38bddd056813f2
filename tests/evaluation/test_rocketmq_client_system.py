"""`--system rocketmq-client`: its candidates run inside RocketMQ's client-side session
(rebalancing.protocols.rocketmq.client_session), so its rows carry seconds, and it decides on
balance, then the queue-seconds read by nobody, then read twice, then the seconds to balance."""

from __future__ import annotations

import pytest

from rebalancing.evaluation.command.compare import compare
from rebalancing.evaluation.command.profile import Profile
from rebalancing.evaluation.decision.systems import SYSTEM_VERDICTS
from rebalancing.evaluation.decision.verdict import decide
from rebalancing.evaluation.report.verdict_text import render_text
from rebalancing.evaluation.scenarios.changes import ScenarioSettings
from rebalancing.evaluation.scoring.aggregates import ALL_CHANGES, METRICS, Aggregate

CLIENT = SYSTEM_VERDICTS["rocketmq-client"]
SMALL = ScenarioSettings(queue_range=(4, 24), consumer_range=(2, 6), change_count_range=(1, 3))
SECONDS = ("seconds_to_balance", "queue_seconds_unowned", "queue_seconds_doubly_owned")
EMPTY = Aggregate(0, None, None, None, None, None, None, None, None, None)


def exactly(value: float) -> Aggregate:
    return Aggregate(10_000, value, 0.0, value, value, value, value, value, value, value)


def sound(unowned: float, read_twice: float, seconds: float) -> dict[str, Aggregate]:
    """A sound, balanced candidate with these time scores (everything else level)."""
    scores = {metric: EMPTY for metric in METRICS}
    for metric in ("orphans", "duplicates", "unknown_queues", "unknown_consumers", "failed"):
        scores[metric] = exactly(0)
    scores.update(
        balance_degree=exactly(0.3),
        moves=exactly(4.0),
        stickiness=exactly(0.5),
        assign_micros=exactly(50.0),
        queue_seconds_unowned=exactly(unowned),
        queue_seconds_doubly_owned=exactly(read_twice),
        seconds_to_balance=exactly(seconds),
    )
    return scores


def test_the_criteria_are_balance_then_read_by_nobody_then_read_twice_then_seconds() -> None:
    assert CLIENT.criteria[CLIENT.criteria.index("balance_degree") :] == (
        "balance_degree",
        "cross_zone_fraction",
        "queue_seconds_unowned",
        "queue_seconds_doubly_owned",
        "seconds_to_balance",
        "moves",
        "stickiness",
        "moves_when_unchanged",
    )
    assert CLIENT.views == "broker"  # the session's clients disagree on their own clocks


@pytest.mark.parametrize(
    ("averagely", "round_robin", "reason"),
    [
        # read by nobody decides, whatever read twice and the seconds say
        ((10.0, 50.0, 30.0), (20.0, 0.0, 1.0), "averagely: unowned 10.0 queue-seconds"),
        # level there: read twice decides before the seconds
        ((10.0, 5.0, 30.0), (10.0, 20.0, 1.0), "averagely: doubly owned 5.00 queue-seconds"),
        # level on both: the seconds decide
        ((10.0, 5.0, 3.0), (10.0, 5.0, 30.0), "averagely: time 3.00 s per rebalance"),
    ],
)
def test_the_order_decides(
    averagely: tuple[float, float, float], round_robin: tuple[float, float, float], reason: str
) -> None:
    summary = {
        ("averagely", ALL_CHANGES): sound(*averagely),
        ("round_robin", ALL_CHANGES): sound(*round_robin),
    }
    verdict = decide(summary, CLIENT)
    assert verdict.recommended == ("averagely",)
    assert verdict.reason.startswith(reason)


def test_a_small_compare_run_decides_in_seconds() -> None:
    profile = Profile(
        system="rocketmq-client",
        scenarios=4,
        seed=1,
        strategies=("averagely", "round_robin"),
        settings=SMALL,
    )
    comparison = compare(profile)
    for name in ("averagely", "round_robin"):
        overall = comparison.summary[(name, ALL_CHANGES)]
        # every rebalance but each scenario's cold start has its seconds, read twice included
        for metric in SECONDS:
            assert overall[metric].count == overall["balance_degree"].count - 4
        assert (overall["seconds_to_balance"].mean or 0.0) > 1.0  # seconds, not microseconds
        assert overall["queue_periods_read_twice"].max == 0  # no view model beside the session
    verdict = comparison.verdict
    assert verdict.table["averagely"][("seconds_to_balance", "mean")] is not None
    text = render_text(verdict, profile.describe())
    assert all(column in text for column in ("time s", "unowned", "doubly owned"))
    assert "client-side views" not in text
    assert "time" in verdict.reason  # level on the seconds, or decided there: named either way
