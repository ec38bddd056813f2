"""The verdict's logic on hand-made aggregates whose right answer is known: a dominated strategy,
a tie within noise, a system that excludes candidates, a broken plan set aside, a win on the
system's first deciding score, a tie broken only by a large speed difference; and the rendering
a person reads (at most about 30 lines, the conclusion last)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rebalancing.evaluation.decision.differences import compare
from rebalancing.evaluation.decision.systems import SYSTEM_VERDICTS, how_to_run
from rebalancing.evaluation.decision.verdict import decide, ranking
from rebalancing.evaluation.report.verdict_text import conclusion, render_markdown, render_text
from rebalancing.evaluation.scoring.aggregates import ALL_CHANGES, METRICS, Aggregate
from rebalancing.evaluation.scoring.definitions import SCORES
from rebalancing.strategies import DEFAULT_STRATEGIES, STRATEGIES, SYSTEMS

EMPTY = Aggregate(0, None, None, None, None, None, None, None, None, None)


def spread_around(mean: float, stddev: float, count: int = 10_000) -> Aggregate:
    """An aggregate of `count` values with this mean and standard deviation."""
    return Aggregate(
        count,
        mean,
        stddev,
        mean - 3 * stddev,
        mean - 2.3 * stddev,
        mean - 1.6 * stddev,
        mean,
        mean + 1.6 * stddev,
        mean + 2.3 * stddev,
        mean + 3 * stddev,
    )


def exactly(value: float, count: int = 10_000) -> Aggregate:
    return Aggregate(count, value, 0.0, value, value, value, value, value, value, value)


def metrics(**given: Aggregate) -> dict[str, Aggregate]:
    """Every metric: sound plans (zeros) unless given; protocol metrics empty."""
    base = {metric: EMPTY for metric in METRICS}
    for metric in ("orphans", "duplicates", "unknown_queues", "unknown_consumers", "failed"):
        base[metric] = exactly(0)
    base["assign_micros"] = spread_around(50.0, 5.0)
    base["balance_degree"] = exactly(0.3)
    base["queues_paused"] = spread_around(50.0, 10.0)
    return {**base, **given}


def summary_of(**strategies: dict[str, Aggregate]) -> dict[tuple[str, str], dict[str, Aggregate]]:
    return {(name, ALL_CHANGES): values for name, values in strategies.items()}


def test_a_strategy_worse_on_one_score_and_equal_on_the_others_is_dominated() -> None:
    summary = summary_of(
        sticky=metrics(moves=spread_around(8.0, 4.0), stickiness=spread_around(0.7, 0.2)),
        round_robin=metrics(moves=spread_around(40.0, 10.0), stickiness=spread_around(0.2, 0.2)),
    )
    verdict = decide(summary, SYSTEM_VERDICTS["kafka-eager"])
    assert verdict.recommended == ("sticky",)
    assert verdict.dominated == {"round_robin": ["sticky"]}
    assert verdict.reason.startswith("sticky: moves 8 queues per rebalance against 40 queues")
    assert conclusion(verdict).startswith("Use sticky.")


def test_differences_within_the_noise_are_a_tie_and_nobody_is_dominated() -> None:
    summary = summary_of(
        sticky=metrics(moves=spread_around(8.0, 40.0), stickiness=spread_around(0.7, 0.3)),
        averagely=metrics(moves=spread_around(8.5, 40.0), stickiness=spread_around(0.699, 0.3)),
    )
    verdict = decide(summary, SYSTEM_VERDICTS["rocketmq-broker"])
    assert verdict.is_tie
    assert set(verdict.recommended) == {"sticky", "averagely"}
    assert verdict.dominated == {}
    assert "No difference the scenarios can tell between" in verdict.reason
    assert conclusion(verdict).startswith("Tie.")


def test_the_same_difference_with_more_scenarios_is_told_apart() -> None:
    few = summary_of(
        sticky=metrics(moves=spread_around(8.0, 40.0, count=100)),
        averagely=metrics(moves=spread_around(9.0, 40.0, count=100)),
    )
    many = summary_of(
        sticky=metrics(moves=spread_around(8.0, 40.0, count=1_000_000)),
        averagely=metrics(moves=spread_around(9.0, 40.0, count=1_000_000)),
    )
    assert decide(few, SYSTEM_VERDICTS["rocketmq-broker"]).is_tie
    assert decide(many, SYSTEM_VERDICTS["rocketmq-broker"]).recommended == ("sticky",)


def test_a_system_leaves_out_the_strategies_that_cannot_run_there() -> None:
    summary = summary_of(
        sticky=metrics(moves=exactly(1.0)),
        averagely=metrics(moves=exactly(20.0)),
        sac=metrics(moves=exactly(0.0), releases=exactly(3.0), converged=exactly(1.0)),
    )
    client = decide(summary, SYSTEM_VERDICTS["rocketmq-client"])
    assert client.candidates == ("averagely",)
    assert client.not_candidates == ("sac", "sticky")
    assert client.recommended == ("averagely",)
    rabbitmq = decide(summary, SYSTEM_VERDICTS["rabbitmq-sac"])
    assert rabbitmq.candidates == ("sac",)


def test_the_first_deciding_score_wins_over_the_later_ones() -> None:
    # consistent hashing moves less but is out of balance: balance decides first
    summary = summary_of(
        sticky=metrics(moves=spread_around(8.0, 2.0)),
        consistent_hash=metrics(
            moves=spread_around(6.0, 2.0), balance_degree=spread_around(4.5, 1.0)
        ),
    )
    verdict = decide(summary, SYSTEM_VERDICTS["kafka-eager"])
    assert verdict.recommended == ("sticky",)
    assert verdict.dominated == {}  # better on moves, worse on balance: not dominated
    assert verdict.reason.startswith("sticky: balance 0.30 queues per rebalance against 4.50")


def test_a_candidate_with_broken_plans_is_set_aside_and_named() -> None:
    summary = summary_of(
        sticky=metrics(moves=exactly(9.0)),
        mine=metrics(moves=exactly(0.0), orphans=spread_around(0.1, 1.0)),
    )
    verdict = decide(summary, SYSTEM_VERDICTS["any"])
    assert verdict.recommended == ("sticky",)
    assert "orphans" in verdict.broken["mine"]
    text = render_text(verdict, "p")
    assert "Set aside, a score that must be 0 was not: mine: orphans" in text


def test_a_tie_is_broken_by_time_only_when_one_is_at_least_twice_as_fast() -> None:
    fast = metrics(assign_micros=spread_around(10.0, 1.0))
    slow = metrics(assign_micros=spread_around(100.0, 10.0))
    slightly_slower = metrics(assign_micros=spread_around(15.0, 1.0))
    by_speed = decide(summary_of(a=fast, b=slow), SYSTEM_VERDICTS["rocketmq-broker"])
    assert by_speed.recommended == ("a",)
    assert "faster" in by_speed.reason
    close = decide(summary_of(a=fast, b=slightly_slower), SYSTEM_VERDICTS["rocketmq-broker"])
    assert close.is_tie


def test_a_tie_is_broken_by_time_whether_or_not_a_compiled_twin_made_the_plans() -> None:
    # every time is the strategy's own function's (the scoring core times it, never a twin, on
    # a seeded sample of steps): sticky's against a Python copy's is a fair comparison
    fast = metrics(assign_micros=spread_around(10.0, 1.0))
    slow = metrics(assign_micros=spread_around(100.0, 10.0))
    mixed = decide(summary_of(sticky=fast, my_sticky=slow), SYSTEM_VERDICTS["rocketmq-broker"])
    assert mixed.recommended == ("sticky",)
    assert "faster" in mixed.reason


def test_the_strategies_timed_as_twins_are_those_with_a_compiled_twin() -> None:
    from rebalancing.evaluation.scoring.compiled_strategies import twin_of

    twinned = {  # a protocol's session rebalances, never its `assign`: it runs no twin
        name
        for name, strategy in STRATEGIES.items()
        if strategy.open_session is None and twin_of(strategy.assign) is not None
    }
    assert twinned == {name for name, strategy in STRATEGIES.items() if strategy.compiled_twin}


def test_the_table_orders_means_that_print_alike_by_the_next_deciding_score() -> None:
    # paused 150.05 and 150.07 both print as 150: the reader sees them level, so moves orders
    summary = summary_of(
        sticky=metrics(moves=spread_around(5.0, 1.0), queues_paused=spread_around(100.0, 1.0)),
        averagely=metrics(moves=exactly(49.9), queues_paused=exactly(150.049)),
        bounded=metrics(moves=exactly(19.8), queues_paused=exactly(150.066)),
    )
    verdict = decide(summary, SYSTEM_VERDICTS["kafka-eager"])
    assert ranking(verdict) == ["sticky", "bounded", "averagely"]


def test_the_reason_names_the_scores_they_are_level_on_only_where_the_table_shows_them() -> None:
    # `any` decides on converged first, but its table has no converged column
    summary = summary_of(
        fast=metrics(converged=exactly(1.0), queues_paused=spread_around(50.0, 5.0)),
        slow=metrics(converged=exactly(1.0), queues_paused=spread_around(125.0, 5.0)),
    )
    verdict = decide(summary, SYSTEM_VERDICTS["any"])
    assert verdict.recommended == ("fast",)
    assert "converged" not in {metric for metric, _ in verdict.system.shown}
    assert "level on balance)" in verdict.reason
    assert "converged" not in verdict.reason


def test_every_system_of_the_registry_has_a_verdict_and_candidates() -> None:
    assert set(SYSTEM_VERDICTS) == {*SYSTEMS, "any"}
    for name, system in SYSTEM_VERDICTS.items():
        assert system.candidates(), name
        for metric in system.criteria:
            assert metric in SCORES
    assert "sac_spec" not in SYSTEM_VERDICTS["any"].candidates()
    cooperative = SYSTEM_VERDICTS["kafka-cooperative"].candidates()
    assert "cooperative_sticky" in cooperative
    assert "sticky" not in cooperative  # its cooperative form is cooperative_sticky
    client = SYSTEM_VERDICTS["rocketmq-client"].candidates()
    assert all(STRATEGIES[name].client_side for name in client)


def test_strategies_reading_zones_or_weights_are_no_candidates_until_scenarios_carry_them() -> None:
    for name, system in SYSTEM_VERDICTS.items():
        chosen = system.strategies(system.candidates())  # kafka's: PROTOCOL:ASSIGNOR pairs
        assert not [strategy.name for strategy in chosen if strategy.uses], name
    assert "kafka-eager" in (STRATEGIES["rack_aware_sticky"].systems or ())


def test_the_terminal_verdict_is_short_and_ends_with_the_conclusion() -> None:
    # every strategy `--system any` scores (the zone and load strategies wait for scenarios
    # that carry zones and weights: DEFAULT_STRATEGIES leaves them out)
    summary = summary_of(
        **{
            name: metrics(moves=spread_around(float(index), 1.0))
            for index, name in enumerate(DEFAULT_STRATEGIES)  # what a run of `any` scores
        }
    )
    verdict = decide(summary, SYSTEM_VERDICTS["any"])
    text = render_text(verdict, "64 queues, 4-12 consumers")
    lines = text.splitlines()
    assert len(lines) <= 30
    assert all(len(line) <= 120 for line in lines), max(lines, key=len)
    assert conclusion(verdict).split()[0] in lines[-3] + lines[-2] + lines[-1]
    markdown = render_markdown(verdict, "64 queues")
    assert markdown.splitlines()[-1].startswith("**Use ")


@given(
    st.floats(0, 100),
    st.floats(0.01, 10),
    st.floats(0, 100),
    st.floats(0.01, 10),
    st.integers(2, 10**6),
)
def test_a_comparison_is_antisymmetric(
    first_mean: float, first_deviation: float, second_mean: float, second_deviation: float, n: int
) -> None:
    score = SCORES["moves"]
    first = spread_around(first_mean, first_deviation, n)
    second = spread_around(second_mean, second_deviation, n)
    forth, back = compare(first, second, score), compare(second, first, score)
    assert forth.better == -back.better
    assert math.isclose(forth.half_width, back.half_width)
    if forth.better:
        assert abs(forth.difference) > forth.half_width


@pytest.mark.parametrize("better", ["lower", "higher"])
def test_which_side_is_better_follows_the_score(better: str) -> None:
    score = SCORES["moves" if better == "lower" else "stickiness"]
    low, high = exactly(1.0), exactly(2.0)
    assert compare(low, high, score).better == (-1 if better == "lower" else 1)


def test_broker_side_rocketmq_runs_only_the_two_strategies_its_broker_registers() -> None:
    # apache/rocketmq at 8fc57f1468: the broker's QueryAssignmentProcessor serves AVG and
    # AVG_BY_CIRCLE by getName() and gives allocate() no previous plan; anything else needs a
    # build of the broker
    for name, served in (
        ("averagely", "AllocateMessageQueueAveragely"),
        ("round_robin", "AllocateMessageQueueAveragelyByCircle"),
    ):
        text = how_to_run("rocketmq-broker", name) or ""
        assert text.startswith("RocketMQ's broker plans with it for consumers calling ")
        assert text.endswith(
            f"setClientRebalance(false) and setAllocateMessageQueueStrategy with {served}."
        )
    for name in ("sticky", "consistent_hash", "bounded_consistent_hash"):
        text = how_to_run("rocketmq-broker", name) or ""
        assert text.startswith("RocketMQ's broker plans only with AllocateMessageQueueAveragely")
        assert "in a build of your broker" in text
        assert text.endswith(
            "setClientRebalance(false) and setAllocateMessageQueueStrategy with "
            "a strategy of the same getName()."
        )
    assert "use RocketMQ's client-side AllocateMessageQueueConsistentHash" in (
        how_to_run("rocketmq-broker", "consistent_hash") or ""
    )
    # a port of a plan that keeps queues in place keeps the last plan itself; one that ignores
    # the previous plan (client_side) needs none
    assert "keeps the last plan (allocate() gets none)" in (
        how_to_run("rocketmq-broker", "sticky") or ""
    )
    assert "allocate()" not in (how_to_run("rocketmq-broker", "bounded_consistent_hash") or "")
    assert how_to_run("rocketmq-client", "consistent_hash") == (
        "RocketMQ ships it: AllocateMessageQueueConsistentHash."
    )
    assert how_to_run("rocketmq-client", "sticky") == (
        "RocketMQ has no sticky: port rebalancing.strategies.sticky (its docstring gives the "
        "algorithm) to an AllocateMessageQueueStrategy on every client."
    )


def test_the_verdict_says_how_to_run_the_recommendation_on_its_system() -> None:
    assert "kafka_python_assignor('sticky')" in (how_to_run("kafka-eager", "sticky") or "")
    cooperative = how_to_run("kafka-cooperative", "averagely") or ""
    assert "kafka_python_assignor('averagely', cooperative=True)" in cooperative
    assert "AllocateMessageQueueAveragely" in (how_to_run("rocketmq-client", "averagely") or "")
    ported = how_to_run("rocketmq-client", "bounded_consistent_hash") or ""
    assert "port rebalancing.strategies.bounded_consistent_hash" in ported
    assert "release='newest'" in (how_to_run("rabbitmq-sac", "sac_newest") or "")
    assert how_to_run("any", "sticky") is None
    assert how_to_run("kafka-eager", "my.module:assign") is None
    summary = summary_of(sticky=metrics(moves=exactly(1.0)), averagely=metrics(moves=exactly(9.0)))
    text = render_text(decide(summary, SYSTEM_VERDICTS["kafka-eager"]), "p")
    assert text.splitlines()[-1].endswith("follows the same rules.")


def test_pulsar_failover_is_a_system_whose_candidate_is_its_own_rule() -> None:
    """On Pulsar the broker's rule decides: the registered strategy (every consumer at one level)
    is the candidate, and a user's variant with priority levels can be compared with it."""
    system = SYSTEM_VERDICTS["pulsar-failover"]
    assert system.candidates() == ("pulsar_failover",)
    assert "pulsar-failover" in SYSTEMS
    assert not SYSTEM_VERDICTS["rabbitmq-sac"].accepts(STRATEGIES["pulsar_failover"])
    assert not system.accepts(STRATEGIES["super_stream"])  # join order is RabbitMQ's
    summary = summary_of(
        pulsar_failover=metrics(queues_paused=spread_around(20.0, 5.0)),
        mine=metrics(queues_paused=spread_around(30.0, 5.0)),
    )
    verdict = decide(summary, system, ["pulsar_failover", "mine"])
    assert verdict.recommended == ("pulsar_failover",)
    assert verdict.reason.startswith("pulsar_failover: paused 20")


def test_the_choosing_page_covers_every_system(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util
    from pathlib import Path

    script = Path(__file__).parents[2] / "benchmarks" / "choosing_a_strategy.py"
    monkeypatch.syspath_prepend(str(script.parent))  # as when run: its folder's shared.py
    spec = importlib.util.spec_from_file_location("choosing_a_strategy", script)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert set(module.SYSTEM_ORDER) == set(SYSTEM_VERDICTS) - {"any"}
    page = (script.parents[1] / "docs" / "choosing-a-strategy.md").read_text(encoding="utf-8")
    for system in module.SYSTEM_ORDER:
        assert f"(`--system {system}`) {{#{system}}}" in page, system


def test_a_difference_too_small_to_act_on_is_level_however_many_scenarios() -> None:
    summary = summary_of(
        balanced=metrics(
            balance_degree=spread_around(0.38, 0.01, 10**7), moves=spread_around(30.0, 5.0)
        ),
        greedy=metrics(
            balance_degree=spread_around(0.39, 0.01, 10**7), moves=spread_around(10.0, 5.0)
        ),
    )
    verdict = decide(summary, SYSTEM_VERDICTS["rocketmq-broker"])
    assert verdict.recommended == ("greedy",)
    assert "level on balance" in verdict.reason


def test_a_nan_mean_is_no_number_to_compare_whichever_side_it_is_on() -> None:
    nan = Aggregate(10, math.nan, 0.0, *(math.nan,) * 7)
    score = SCORES["balance_degree"]
    assert compare(nan, exactly(1.0), score).better == 0
    assert compare(exactly(1.0), nan, score).better == 0


def test_a_set_left_with_members_that_differ_is_no_clean_tie() -> None:
    summary = summary_of(
        noisy=metrics(balance_degree=spread_around(0.5, 1.0, 3), moves=spread_around(0.5, 5.0, 3)),
        precise_high=metrics(
            balance_degree=spread_around(1.0, 0.01, 1000), moves=spread_around(3.0, 0.01, 1000)
        ),
        precise_low=metrics(
            balance_degree=spread_around(1.2, 0.01, 1000), moves=spread_around(2.0, 0.01, 1000)
        ),
    )
    verdict = decide(summary, SYSTEM_VERDICTS["kafka-cooperative"])
    assert verdict.is_tie
    assert verdict.reason.startswith("No clear winner among")
    assert "No difference the scenarios can tell" not in verdict.reason


ZONES_AND_WEIGHTS = frozenset({"consumer_zones", "queue_zones", "weights"})


def test_strategies_reading_zones_or_weights_are_candidates_when_scenarios_carry_them() -> None:
    cooperative = SYSTEM_VERDICTS["kafka-cooperative"].candidates(carried=ZONES_AND_WEIGHTS)
    assert {"rack_aware_range", "rack_aware_sticky", "lag_greedy"} <= set(cooperative)
    client = SYSTEM_VERDICTS["rocketmq-client"].candidates(
        carried={"consumer_zones", "queue_zones"}
    )
    assert {"machine_room_nearby", "by_machine_room"} <= set(client)
    assert "lag_greedy" not in client  # weights not carried
    weighted = SYSTEM_VERDICTS["any"].candidates(carried={"weights"})
    assert {"lag_greedy", "weighted_sticky", "largest_differencing"} <= set(weighted)
    assert "machine_room_nearby_lag" not in weighted  # it needs zones too
    assert not {"rack_aware_range", "machine_room_nearby"} & set(weighted)


def test_with_zones_the_cross_zone_fraction_decides_on_kafka_and_rocketmq() -> None:
    summary = summary_of(
        rack_aware_range=metrics(
            moves=spread_around(8.0, 4.0), cross_zone_fraction=spread_around(0.05, 0.05)
        ),
        averagely=metrics(
            moves=spread_around(8.0, 4.0), cross_zone_fraction=spread_around(0.6, 0.1)
        ),
    )
    for system in ("kafka-eager", "kafka-cooperative", "rocketmq-broker", "rocketmq-client"):
        verdict = decide(summary, SYSTEM_VERDICTS[system])
        assert "cross_zone_fraction" in verdict.system.criteria, system
        assert verdict.recommended == ("rack_aware_range",), system
        assert verdict.dominated == {"averagely": ["rack_aware_range"]}, system
        assert "cross-zone" in render_text(verdict, "the group"), system
    pulsar = decide(summary, SYSTEM_VERDICTS["pulsar-failover"], ["rack_aware_range", "averagely"])
    assert "cross_zone_fraction" not in pulsar.system.criteria  # its clients know no zones


def test_with_weights_the_load_ratio_decides_on_every_system() -> None:
    summary = summary_of(
        lag_greedy=metrics(load_ratio=spread_around(1.1, 0.1)),
        averagely=metrics(load_ratio=spread_around(2.5, 0.5)),
    )
    for name, system in SYSTEM_VERDICTS.items():
        verdict = decide(summary, system, ["lag_greedy", "averagely"])
        assert "load_ratio" in verdict.system.criteria, name
        assert "cross_zone_fraction" not in verdict.system.criteria, name  # no zone values
        assert verdict.recommended == ("lag_greedy",), name


def test_without_zones_and_weights_the_verdict_is_what_it_was() -> None:
    """Placement criteria with no value in the run are left out, so they neither decide nor
    show (the glossary says which scores need zones or weights: Score.needs)."""
    measured = {"stickiness": spread_around(0.5, 0.1), "moves_when_unchanged": exactly(0)}
    summary = summary_of(
        sticky=metrics(moves=spread_around(8.0, 4.0), **measured),
        round_robin=metrics(moves=spread_around(40.0, 10.0), **measured),
    )
    verdict = decide(summary, SYSTEM_VERDICTS["kafka-cooperative"])
    assert verdict.system.criteria == (
        "balance_degree",
        "moves",
        "stickiness",
        "moves_when_unchanged",
    )
    needing = {metric for metric, score in SCORES.items() if score.needs}
    assert needing == {
        "cross_zone_fraction",
        "cross_zone_gap",
        "load_ratio",
        "load_ratio_gap",
        "load_kept",
        "load_moved",
    }
    assert not needing & {metric for metric, _ in verdict.system.shown}
    assert "cross-zone" not in render_text(verdict, "the group")


def test_the_terminal_verdict_with_zones_and_weights_is_short_too() -> None:
    chosen = SYSTEM_VERDICTS["any"].candidates(carried=ZONES_AND_WEIGHTS)
    summary = summary_of(
        **{
            name: metrics(
                moves=spread_around(float(index), 1.0),
                cross_zone_fraction=spread_around(0.5 - index / 100, 0.1),
                load_ratio=spread_around(1 + index / 10, 0.2),
            )
            for index, name in enumerate(chosen)
        }
    )
    verdict = decide(summary, SYSTEM_VERDICTS["any"])
    lines = render_text(verdict, "64 queues, 4-12 consumers, 2-3 zones, zipf weights").splitlines()
    assert len(lines) <= 30
    assert all(len(line) <= 120 for line in lines), max(lines, key=len)
    header = next(line for line in lines if line.startswith("strategy "))
    assert "cross-zone" in header
    assert "load ratio" in header


def test_with_weights_the_balance_of_counts_decides_nothing_but_stays_shown() -> None:
    # level on load, weighted_sticky keeps far more; lag_greedy's counts are the more even:
    # with weights, equal counts of unequal queues are not the goal, so moves decide
    summary = summary_of(
        lag_greedy=metrics(
            load_ratio=spread_around(2.10, 0.5),
            balance_degree=spread_around(2.1, 0.5),
            moves=spread_around(25.8, 5.0),
        ),
        weighted_sticky=metrics(
            load_ratio=spread_around(2.12, 0.5),
            balance_degree=spread_around(3.9, 0.5),
            moves=spread_around(8.4, 3.0),
        ),
    )
    verdict = decide(summary, SYSTEM_VERDICTS["kafka-eager"], ["lag_greedy", "weighted_sticky"])
    assert "balance_degree" not in verdict.system.criteria
    assert ("balance_degree", "mean") in verdict.system.shown
    assert verdict.recommended == ("weighted_sticky",)
    without_weights = summary_of(
        lag_greedy=metrics(balance_degree=spread_around(2.1, 0.5), moves=spread_around(25.8, 5)),
        weighted_sticky=metrics(balance_degree=spread_around(3.9, 0.5), moves=spread_around(8, 3)),
    )
    verdict = decide(
        without_weights, SYSTEM_VERDICTS["kafka-eager"], ["lag_greedy", "weighted_sticky"]
    )
    assert "balance_degree" in verdict.system.criteria


def test_moves_when_nothing_changed_are_a_cost_and_no_fixed_point_sets_aside() -> None:
    settles = metrics(
        moves_when_unchanged=spread_around(0.07, 0.5),
        rebalances_to_fixed_point=Aggregate(10_000, 0.03, 0.2, 0, 0, 0, 0, 0, 1, 1),
    )
    steady = metrics(moves_when_unchanged=exactly(0), rebalances_to_fixed_point=exactly(0))
    verdict = decide(summary_of(settles=settles, steady=steady), SYSTEM_VERDICTS["kafka-eager"])
    assert verdict.broken == {}
    assert verdict.recommended == ("steady",)  # level on everything else
    assert verdict.system.criteria[-1] == "moves_when_unchanged"
    oscillates = metrics(
        moves_when_unchanged=spread_around(3.0, 0.5),
        rebalances_to_fixed_point=Aggregate(10_000, 0.1, 0.3, 0, 0, 0, 0, 0, 1, 4),
    )
    verdict = decide(summary_of(oscillates=oscillates, steady=steady), SYSTEM_VERDICTS["any"])
    assert "rebalances to fixed point 4" in verdict.broken["oscillates"]
    assert verdict.recommended == ("steady",)


def test_under_any_system_a_protocol_that_settles_in_minutes_is_not_free() -> None:
    # Event Hubs pauses nothing (a claim is not a pause) but takes 30 s to settle; SAC pauses
    # its released queues for 2 ms each: the time a candidate takes decides before the pauses
    summary = summary_of(
        sac_newest=metrics(
            queues_paused=spread_around(8.2, 2.0),
            seconds_to_balance=spread_around(0.2, 0.1),
            converged=exactly(1.0),
        ),
        event_hubs_balanced=metrics(
            queues_paused=exactly(0),
            seconds_to_balance=spread_around(240.0, 60.0),
            converged=exactly(1.0),
        ),
    )
    verdict = decide(summary, SYSTEM_VERDICTS["any"], ["sac_newest", "event_hubs_balanced"])
    assert verdict.recommended == ("sac_newest",)
    plain = summary_of(sticky=metrics(), averagely=metrics(queues_paused=spread_around(80, 5)))
    verdict = decide(plain, SYSTEM_VERDICTS["any"], ["sticky", "averagely"])
    assert "seconds_to_balance" not in verdict.system.criteria  # nobody measured time
    assert verdict.recommended == ("sticky",)


def test_the_reason_says_what_the_recommendation_gives_up_to_a_candidate_better_there() -> None:
    # load decides first; the cross-zone reads it pays for that are named with who does better
    summary = summary_of(
        weighted_sticky=metrics(
            load_ratio=spread_around(1.6, 0.2), cross_zone_fraction=spread_around(0.306, 0.05)
        ),
        rack_aware_sticky=metrics(
            load_ratio=spread_around(2.2, 0.2), cross_zone_fraction=spread_around(0.076, 0.05)
        ),
    )
    verdict = decide(summary, SYSTEM_VERDICTS["kafka-eager"], list(summary_names(summary)))
    assert verdict.recommended == ("weighted_sticky",)
    assert "It gives up: cross-zone 30.6 % against 7.6 % for rack_aware_sticky." in verdict.reason
    alone = summary_of(weighted_sticky=metrics(), sticky=metrics(queues_paused=exactly(80)))
    assert "gives up" not in decide(alone, SYSTEM_VERDICTS["kafka-eager"]).reason


def summary_names(summary: dict[tuple[str, str], dict[str, Aggregate]]) -> list[str]:
    return [name for name, _ in summary]


def test_the_kafka_line_passes_the_facts_the_strategy_reads() -> None:
    rack = how_to_run("kafka-eager", "rack_aware_sticky") or ""
    assert "kafka_python_assignor('rack_aware_sticky', client_rack=RACK)" in rack
    load = how_to_run("kafka-cooperative", "weighted_sticky") or ""
    assert "cooperative=True, weights=LAG)" in load
    plain = how_to_run("kafka-eager", "sticky") or ""
    assert "kafka_python_assignor('sticky')" in plain
    assert "client_rack" not in plain


@pytest.mark.parametrize("system", ["rocketmq-client", "rocketmq-broker"])
def test_the_rocketmq_line_names_a_module_that_exists_and_rocketmq_s_own_class(
    system: str,
) -> None:
    import importlib
    import re

    for name, strategy in STRATEGIES.items():
        if system not in (strategy.systems or ()):
            continue
        line = how_to_run(system, name) or ""
        for module in re.findall(r"port (rebalancing\.[\w.]+)", line):
            importlib.import_module(module)  # ModuleNotFoundError: a module that is not there
    assert "AllocateMachineRoomNearby" in (how_to_run(system, "machine_room_nearby") or "")
    assert "AllocateMessageQueueByMachineRoom" in (how_to_run(system, "by_machine_room") or "")


def test_three_candidates_dominating_one_another_in_a_circle_still_get_a_pick_or_a_tie() -> None:
    # A over B on balance, B over C on moves, C over A on stickiness; every other pair is level
    # (within 10% of the larger mean), so dominance goes round: A > B > C > A
    circle = summary_of(
        a=metrics(balance_degree=exactly(1.00), moves=exactly(10.8), stickiness=exactly(0.50)),
        b=metrics(balance_degree=exactly(1.15), moves=exactly(10.0), stickiness=exactly(0.54)),
        c=metrics(balance_degree=exactly(1.08), moves=exactly(11.5), stickiness=exactly(0.575)),
        worse=metrics(balance_degree=exactly(2.0), moves=exactly(30.0), stickiness=exactly(0.1)),
    )
    verdict = decide(circle, SYSTEM_VERDICTS["kafka-cooperative"], ["a", "b", "c", "worse"])
    assert verdict.recommended, verdict.reason
    assert "No candidate" not in verdict.reason
    assert set(verdict.recommended) <= {"a", "b", "c"}
    # balance decides first among the three: a is the best and b is out on it; then moves keep
    # a and c level, stickiness puts c ahead of a: the reason says so from the numbers
    assert verdict.recommended == ("c",)
    assert verdict.reason.startswith("c: stickiness")
    assert set(verdict.dominated) == {"worse"}
    assert any("a, b, c dominate one another in a circle" in note for note in verdict.notes)
    assert "circle" in render_text(verdict, "a profile")


def _placed(load_ratio: float, cross_zone: float, spread: float) -> dict[str, Aggregate]:
    """A candidate's metrics with weights and zones: its load ratio 0.04 above the floor 2.53,
    its cross-zone fraction above the floor 0.05, and this mean queue-count spread."""
    return metrics(
        load_ratio=spread_around(load_ratio, 0.2),
        load_ratio_gap=spread_around(load_ratio - 2.53, 0.2),
        cross_zone_fraction=spread_around(cross_zone, 0.05),
        cross_zone_gap=spread_around(cross_zone - 0.05, 0.05),
        spread=spread_around(spread, 0.5),
        stickiness=spread_around(0.7, 0.1),
        moves_when_unchanged=exactly(0),
    )


def test_the_load_ratio_and_the_cross_zone_fraction_are_printed_beside_their_floor() -> None:
    summary = summary_of(weighted_sticky=_placed(2.57, 0.31, 1.0), sticky=_placed(3.02, 0.30, 1.0))
    verdict = decide(summary, SYSTEM_VERDICTS["kafka-eager"], ["weighted_sticky", "sticky"])
    assert verdict.floors["weighted_sticky"]["load_ratio"] == pytest.approx(2.53)
    terminal, markdown = render_text(verdict, "a group"), render_markdown(verdict, "a group")
    for text in (terminal, markdown):
        assert "load ratio (floor)" in text
        assert "cross-zone % (floor)" in text
        assert "2.57 (2.53)" in text
        assert "3.02 (2.53)" in text
        assert "31.0 (5.0)" in text
    assert "(floor): the best any plan of the same groups could do" in terminal
    assert "(floor): the mean, over the same rebalances, of the best any plan" in markdown


def test_it_gives_up_names_a_count_imbalance_when_the_pick_has_one() -> None:
    # with weights the load ratio supersedes balance: the pick may give one consumer many
    # more queues than another, and the reason says so
    uneven = summary_of(weighted=_placed(2.57, 0.31, 9.0), sticky=_placed(3.02, 0.31, 1.0))
    verdict = decide(uneven, SYSTEM_VERDICTS["kafka-eager"], ["weighted", "sticky"])
    assert verdict.recommended == ("weighted",)
    assert "It gives up: even queue counts (spread 9 queues, most minus fewest" in verdict.reason
    assert "against 1 for sticky" in verdict.reason
    even = summary_of(weighted=_placed(2.57, 0.31, 1.0), sticky=_placed(3.02, 0.31, 1.0))
    verdict = decide(even, SYSTEM_VERDICTS["kafka-eager"], ["weighted", "sticky"])
    assert verdict.recommended == ("weighted",)
    assert "even queue counts" not in verdict.reason


def test_rocketmq_how_to_run_is_told_client_or_broker_by_a_bool_only() -> None:
    # a misspelt place once silently gave the broker's text: now only True or False is taken
    from rebalancing.evaluation.decision.how_to_run import in_rocketmq

    with pytest.raises(TypeError, match="client_side must be True or False"):
        in_rocketmq("on every client")  # type: ignore[arg-type]
