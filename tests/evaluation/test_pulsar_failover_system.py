"""`--system pulsar-failover` in seconds: its candidate runs the broker's own session
(rebalancing.strategies.pulsar_failover.Session), whose rows carry the failover delay of every
hand-over and a crash's keep-alive detection; the system decides on balance, then the
partition-seconds unread, then the seconds to balance; and `any` compares those seconds with
the other protocols' on one clock."""

from __future__ import annotations

import pytest

from rebalancing.evaluation.command.compare import compare
from rebalancing.evaluation.command.profile import Profile
from rebalancing.evaluation.decision.systems import SYSTEM_VERDICTS
from rebalancing.evaluation.decision.verdict import decide
from rebalancing.evaluation.report.verdict_text import render_text
from rebalancing.evaluation.scenarios.changes import Scenario, ScenarioSettings
from rebalancing.evaluation.scoring.aggregates import ALL_CHANGES, Aggregate
from rebalancing.evaluation.scoring.replay import score_scenario
from rebalancing.strategies import STRATEGIES
from rebalancing.strategies.pulsar_failover import FAILOVER_DELAY_SECONDS
from tests.evaluation.test_verdict import exactly, metrics, summary_of

PULSAR = SYSTEM_VERDICTS["pulsar-failover"]
SMALL = ScenarioSettings(queue_range=(4, 24), consumer_range=(2, 6), change_count_range=(1, 3))
SECONDS = ("seconds_to_balance", "queue_seconds_unowned", "queue_seconds_doubly_owned")


def test_the_criteria_are_balance_then_partition_seconds_unread_then_seconds() -> None:
    assert PULSAR.criteria == (
        "load_ratio",
        "balance_degree",
        "queue_seconds_unowned",
        "seconds_to_balance",
        "queues_paused",
        "moves",
        "stickiness",
        "moves_when_unchanged",
    )
    assert ("seconds_to_balance", "mean") in PULSAR.shown
    assert ("queue_seconds_unowned", "mean") in PULSAR.shown
    assert PULSAR.protocol is None  # the candidate is the broker's own session


@pytest.mark.parametrize(
    ("mine", "reason"),
    [
        # unread partition-seconds decide, whatever the seconds and the pauses say
        ((20.0, 1.0, 1.0), "pulsar_failover: unowned 10.0 queue-seconds"),
        # level there: the seconds to balance decide before the pauses
        ((10.0, 30.0, 1.0), "pulsar_failover: time 3.00 s per rebalance"),
        # level on both: the pauses decide
        ((10.0, 3.0, 40.0), "pulsar_failover: paused 20"),
    ],
)
def test_the_order_decides(mine: tuple[float, float, float], reason: str) -> None:
    def scored(unowned: float, seconds: float, paused: float) -> dict[str, Aggregate]:
        return metrics(
            queue_seconds_unowned=exactly(unowned),
            seconds_to_balance=exactly(seconds),
            queues_paused=exactly(paused),
        )

    summary = summary_of(pulsar_failover=scored(10.0, 3.0, 20.0), mine=scored(*mine))
    verdict = decide(summary, PULSAR, ["pulsar_failover", "mine"])
    assert verdict.recommended == ("pulsar_failover",)
    assert verdict.reason.startswith(reason)


def test_every_row_has_the_brokers_seconds_and_a_crash_waits_for_the_keep_alive() -> None:
    chosen = {"pulsar_failover": STRATEGIES["pulsar_failover"]}
    crashes = 0
    for index in range(30):
        for row in score_scenario(Scenario(42, index, SMALL), chosen):
            assert row.queue_seconds_doubly_owned == 0.0
            assert row.seconds_to_balance is not None
            assert row.queue_seconds_unowned is not None
            if row.change == "crash" and row.moves:
                crashes += 1  # noticed 30 to 60 s later, dispatched after the delay
                assert row.seconds_to_balance >= 30.0 + FAILOVER_DELAY_SECONDS
                assert row.seconds_to_balance < 60.0 + FAILOVER_DELAY_SECONDS
    assert crashes > 3


def test_a_small_compare_run_decides_in_seconds() -> None:
    profile = Profile(
        system="pulsar-failover",
        scenarios=4,
        seed=1,
        strategies=("pulsar_failover",),
        settings=SMALL,
    )
    comparison = compare(profile)
    overall = comparison.summary[("pulsar_failover", ALL_CHANGES)]
    for metric in SECONDS:  # the broker's own session: its cold start counts too
        assert overall[metric].count == overall["balance_degree"].count
    assert (overall["seconds_to_balance"].mean or 0.0) >= FAILOVER_DELAY_SECONDS / 2
    assert overall["queue_seconds_doubly_owned"].max == 0.0
    verdict = comparison.verdict
    assert verdict.recommended == ("pulsar_failover",)
    assert verdict.table["pulsar_failover"][("seconds_to_balance", "mean")] is not None
    assert verdict.table["pulsar_failover"][("queue_seconds_unowned", "mean")] is not None
    text = render_text(verdict, profile.describe())
    assert all(column in text for column in ("time s", "unowned"))


def test_any_compares_pulsars_seconds_with_the_other_protocols_on_one_clock() -> None:
    profile = Profile(
        system="any",
        scenarios=4,
        seed=1,
        strategies=("pulsar_failover", "sac_newest", "round_robin"),
        settings=SMALL,
    )
    verdict = compare(profile).verdict
    for clocked in ("pulsar_failover", "sac_newest"):
        assert verdict.table[clocked][("seconds_to_balance", "mean")] is not None
    assert verdict.table["round_robin"][("seconds_to_balance", "mean")] is None
    (note,) = [note for note in verdict.notes if note.startswith("Time is")]
    assert "only pulsar_failover, sac_newest run one" in note
    assert "round_robin runs as a plain function, no time (n/a)" in note
