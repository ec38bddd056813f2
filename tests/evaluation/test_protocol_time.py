"""The protocols' time scores in the rows, the summary and the verdict (issue 34 §2), and what
one event costs each protocol in seconds and moves (§4:
rebalancing.evaluation.scoring.protocol_time)."""

from __future__ import annotations

import math

import matplotlib
import pytest

from rebalancing.evaluation.decision.systems import SYSTEM_VERDICTS
from rebalancing.evaluation.report.tables import SUMMARY_COLUMNS
from rebalancing.evaluation.scenarios.changes import Scenario, ScenarioSettings
from rebalancing.evaluation.scoring import protocol_time
from rebalancing.evaluation.scoring.aggregates import METRICS, aggregate
from rebalancing.evaluation.scoring.definitions import SCORES
from rebalancing.evaluation.scoring.replay import score_scenario
from rebalancing.strategies import STRATEGIES
from rebalancing.strategies.event_hubs import (
    CYCLE_JITTER,
    LOAD_BALANCING_INTERVAL,
    PARTITION_OWNERSHIP_EXPIRATION_INTERVAL,
)
from rebalancing.strategies.kcl import FAILOVER_TIME_MILLIS
from rebalancing.strategies.pulsar_failover import (
    FAILOVER_DELAY_SECONDS,
    KEEP_ALIVE_INTERVAL_SECONDS,
)
from rebalancing.strategies.sac import CHECKS_BEFORE_DEAD, HANDOVER_SECONDS, HEARTBEAT_SECONDS

SMALL = ScenarioSettings(queue_range=(1, 60), consumer_range=(1, 8))
TIME_SCORES = (
    "claims",
    "steals",
    "seconds_to_balance",
    "queue_seconds_unowned",
    "queue_seconds_doubly_owned",
)
matplotlib.use("Agg")

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


# --- the leaderless protocols in seconds: one event on a settled group (issue 34 §4) ---------


@pytest.mark.parametrize("consumers", [1, 2, 5, 8])
def test_a_rolling_restart_restarts_every_consumer_once_a_quarter_at_a_time(
    consumers: int,
) -> None:
    steps = protocol_time.event_steps("rolling_restart", consumers, 12, seed=3)
    group = set(steps[0].consumers)
    batch = math.ceil(consumers / 4)
    assert len(steps) == 1 + 2 * math.ceil(consumers / batch)
    restarted: list[str] = []
    for leaving, rejoining in zip(steps[1::2], steps[2::2], strict=True):
        gone = group - set(leaving.consumers)
        assert 1 <= len(gone) <= batch
        assert set(rejoining.consumers) == group
        restarted += gone
    assert sorted(restarted) == sorted(group)


def test_a_join_adds_one_consumer_and_a_crash_removes_one_of_the_group() -> None:
    start, joined = protocol_time.event_steps("join", 6, 24, seed=1)
    assert len(joined.consumers) == 7
    assert set(start.consumers) < set(joined.consumers)
    start, crashed = protocol_time.event_steps("crash", 6, 24, seed=1)
    assert set(crashed.consumers) < set(start.consumers)
    assert len(crashed.consumers) == 5
    assert start.queues == crashed.queues == tuple(range(24))


def test_an_unknown_event_or_a_group_of_no_one_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="unknown event 'deploy'"):
        protocol_time.event_steps("deploy", 4, 16, seed=0)
    with pytest.raises(ValueError, match="consumers must be a positive integer, not 0"):
        protocol_time.event_steps("join", 0, 16, seed=0)
    with pytest.raises(ValueError, match="seeds must be a positive integer"):
        protocol_time.measure_all(seeds=0)


def test_the_same_seed_gives_the_same_costs_and_another_seed_other_ones() -> None:
    first = protocol_time.measure("event_hubs_balanced", "join", 8, seed=4)
    assert protocol_time.measure("event_hubs_balanced", "join", 8, seed=4) == first
    assert protocol_time.measure("event_hubs_balanced", "join", 8, seed=5) != first


@pytest.mark.parametrize("event", protocol_time.EVENTS)
def test_every_protocol_settles_every_event_and_only_the_super_stream_models_no_time(
    event: str,
) -> None:
    for protocol in protocol_time.PROTOCOLS:
        cost = protocol_time.measure(protocol, event, 5, seed=2)
        assert cost.converged, cost
        times = (
            cost.seconds_to_balance,
            cost.queue_seconds_unowned,
            cost.queue_seconds_doubly_owned,
        )
        if protocol in protocol_time.TIMED:
            assert all(value is not None and value >= 0 for value in times), cost
        else:
            assert times == (None, None, None), cost


@pytest.mark.parametrize("protocol", ["sac", "sac_newest", "sac_random"])
def test_sac_never_has_a_queue_doubly_owned_and_ends_every_event_balanced(protocol: str) -> None:
    for event in protocol_time.EVENTS:
        for seed in range(3):
            cost = protocol_time.measure(protocol, event, 6, seed)
            assert cost.queue_seconds_doubly_owned == 0.0
            assert cost.spread is not None
            assert cost.spread <= 1


def test_a_pulsar_crash_waits_for_the_keep_alive_then_the_failover_delay() -> None:
    """The broker closes the crashed consumer's connection 1 to 2 keep-alive intervals (30 s)
    after the crash; its 4 partitions are unread until then and the delay after it, and every
    partition the removal shifts is unread for the delay. A join costs the delay alone."""
    assert "pulsar_failover" in protocol_time.TIMED
    for seed in range(4):
        cost = protocol_time.measure("pulsar_failover", "crash", 4, seed)
        assert cost.seconds_to_balance is not None
        assert cost.queue_seconds_unowned is not None
        detected = cost.seconds_to_balance - FAILOVER_DELAY_SECONDS
        assert KEEP_ALIVE_INTERVAL_SECONDS <= detected < 2 * KEEP_ALIVE_INTERVAL_SECONDS
        shifted = cost.moves  # partitions of consumers that stay, each handed over
        assert cost.queue_seconds_unowned == pytest.approx(
            4 * cost.seconds_to_balance + shifted * FAILOVER_DELAY_SECONDS
        )
        assert cost.queue_seconds_doubly_owned == 0.0
        joined = protocol_time.measure("pulsar_failover", "join", 4, seed)
        assert joined.seconds_to_balance == FAILOVER_DELAY_SECONDS
        assert joined.queue_seconds_unowned == pytest.approx(joined.moves * FAILOVER_DELAY_SECONDS)


@pytest.mark.parametrize(("consumers", "per_consumer"), [(2, 4), (3, 3), (5, 4), (8, 2)])
def test_newest_moves_only_a_newcomers_share_each_queue_walking_the_whole_line(
    consumers: int, per_consumer: int
) -> None:
    """A join to an evenly loaded SAC group under newest. The newcomer waits at the back of
    every FIFO: a released queue goes to the head, which is then over its ideal and releases
    the queue it got last, the same one, down the line."""
    queues = consumers * per_consumer
    share = queues // (consumers + 1)
    for seed in range(3):
        cost = protocol_time.measure("sac_newest", "join", consumers, seed, queues)
        assert cost.moves == share  # the fewest any balanced plan moves
        assert cost.releases == share * consumers
        assert cost.rounds == consumers


def test_on_a_crash_in_a_group_of_two_greedy_balances_sooner_than_balanced() -> None:
    """The survivor must take the crashed processor's 4 records once they expire (48-60 s after
    the crash: 60 s after its last cycle): greedy claims them all in its next cycle (at most
    12 s later), balanced one per cycle (3 more cycles of at least 10 s)."""
    longest_cycle = LOAD_BALANCING_INTERVAL * (1 + CYCLE_JITTER)
    expires_from = PARTITION_OWNERSHIP_EXPIRATION_INTERVAL - longest_cycle
    for seed in range(8):
        greedy = protocol_time.measure("event_hubs_greedy", "crash", 2, seed)
        balanced = protocol_time.measure("event_hubs_balanced", "crash", 2, seed)
        assert greedy.seconds_to_balance is not None
        assert balanced.seconds_to_balance is not None
        assert (
            expires_from
            <= greedy.seconds_to_balance
            <= (PARTITION_OWNERSHIP_EXPIRATION_INTERVAL + longest_cycle)
        )
        assert balanced.seconds_to_balance >= expires_from + 3 * LOAD_BALANCING_INTERVAL
        assert greedy.seconds_to_balance < balanced.seconds_to_balance


@pytest.mark.parametrize("protocol", ["event_hubs_balanced", "event_hubs_greedy", "kcl"])
def test_a_crashed_members_queues_wait_unowned_for_their_records_to_expire(
    protocol: str,
) -> None:
    """Event Hubs: ownership expires 60 s after the crashed processor's last cycle; KCL: a
    lease not renewed for the failover time (10 s) is expired; a graceful close (the rolling
    restart's) releases nothing earlier under KCL, and at once under Event Hubs."""
    wait = (
        FAILOVER_TIME_MILLIS / 1000
        if protocol == "kcl"
        else PARTITION_OWNERSHIP_EXPIRATION_INTERVAL - LOAD_BALANCING_INTERVAL * (1 + CYCLE_JITTER)
    )
    for seed in range(4):
        cost = protocol_time.measure(protocol, "crash", 4, seed)
        assert cost.seconds_to_balance is not None
        assert cost.seconds_to_balance >= wait
        assert cost.queue_seconds_unowned is not None
        assert cost.queue_seconds_unowned >= 4 * wait  # its 4 queues, all that time


@pytest.mark.parametrize("protocol", ["sac", "sac_newest", "sac_random"])
def test_a_sac_crash_waits_for_the_brokers_heartbeat_check(protocol: str) -> None:
    """The broker declares the crashed app's connection dead 2 to 3 heartbeat intervals (60 s)
    after the crash: its 4 queues are unread all that time, then released in 2 ms hand-overs;
    a join (nothing to detect) still settles in milliseconds."""
    for seed in range(4):
        cost = protocol_time.measure(protocol, "crash", 4, seed)
        assert cost.seconds_to_balance is not None
        assert cost.queue_seconds_unowned is not None
        hand_overs = HANDOVER_SECONDS * cost.rounds
        detected = cost.seconds_to_balance - hand_overs
        low, high = CHECKS_BEFORE_DEAD, CHECKS_BEFORE_DEAD + 1
        assert low * HEARTBEAT_SECONDS <= detected <= high * HEARTBEAT_SECONDS
        assert cost.queue_seconds_unowned == pytest.approx(
            4 * detected + HANDOVER_SECONDS * cost.releases
        )
        joined = protocol_time.measure(protocol, "join", 4, seed)
        assert (joined.seconds_to_balance or 0.0) < 1.0


@pytest.mark.parametrize("consumers", [2, 3, 6])
def test_i_mod_n_in_join_order_moves_nothing_on_a_join_to_a_group_with_a_consumer_per_queue(
    consumers: int,
) -> None:
    """Partition i stays with the consumer at place i of the join order: the newcomer, last,
    waits. In name order it takes its name's place, and shifts everyone after it."""
    name_order_moved = 0
    for seed in range(6):
        joined = protocol_time.measure("super_stream", "join", consumers, seed, consumers)
        assert joined.moves == 0
        name_order_moved += protocol_time.measure(
            "pulsar_failover", "join", consumers, seed, consumers
        ).moves
    assert name_order_moved > 0, "some newcomer's name sorts before another's"


@pytest.mark.parametrize("consumers", [2, 4, 7])
def test_i_mod_n_name_order_never_moves_fewer_than_join_order_on_a_join_and_the_same_on_a_crash(
    consumers: int,
) -> None:
    for seed in range(5):
        for queues in (consumers, 3 * consumers + 1, 4 * consumers):
            name_order, join_order = (
                protocol_time.measure(protocol, "join", consumers, seed, queues)
                for protocol in protocol_time.ORDERINGS
            )
            assert name_order.moves >= join_order.moves
            name_order, join_order = (
                protocol_time.measure(protocol, "crash", consumers, seed, queues)
                for protocol in protocol_time.ORDERINGS
            )
            assert name_order.moves == join_order.moves  # the join order is the names' so far


def test_the_summary_holds_the_median_and_p95_of_the_runs_and_the_tables_show_them() -> None:
    costs = protocol_time.measure_all(
        protocols=("kcl", "super_stream"), events=("join",), sizes=(2, 4), seeds=5
    )
    assert len(costs) == 2 * 2 * 5
    summaries = protocol_time.summarise(costs)
    assert [(s.protocol, s.consumers, s.runs) for s in summaries] == [
        ("kcl", 2, 5),
        ("kcl", 4, 5),
        ("super_stream", 2, 5),
        ("super_stream", 4, 5),
    ]
    kcl_four = summaries[1]
    seconds = aggregate(cost.seconds_to_balance for cost in costs[5:10])
    assert kcl_four.median["seconds_to_balance"] == seconds.p50
    assert kcl_four.p95["seconds_to_balance"] == seconds.p95
    assert summaries[2].median["seconds_to_balance"] is None
    table = protocol_time.markdown_table(summaries, "join", "seconds_to_balance")
    lines = table.splitlines()
    assert lines[0] == "| protocol | 2 x 8 | 4 x 16 |"
    assert lines[3] == "| `super_stream` | n/a | n/a |"
    median, tail = kcl_four.median["seconds_to_balance"], kcl_four.p95["seconds_to_balance"]
    assert f"{protocol_time.number(median)} ({protocol_time.number(tail)})" in lines[2]
    assert "### One consumer joins: queues moved" in protocol_time.markdown_tables(summaries)


def test_the_figures_have_a_panel_per_score_and_event_and_a_line_per_protocol() -> None:
    costs = protocol_time.measure_all(
        protocols=("sac_newest", "kcl", "pulsar_failover", "super_stream"),
        events=("join", "crash"),
        sizes=(2, 4),
        seeds=2,
    )
    summaries = protocol_time.summarise(costs)
    drawn = protocol_time.queue_seconds_figure(summaries)
    assert len(drawn.axes) == 2 * 2
    assert [line.get_label() for line in drawn.axes[0].get_lines()] == [
        "sac_newest",
        "kcl",
        "pulsar_failover",
    ]
    moves = protocol_time.orderings_figure(summaries)
    assert [line.get_label() for line in moves.axes[0].get_lines()] == list(protocol_time.ORDERINGS)
