"""`--static-membership`: Kafka's candidates inside sessions whose consumers set
group.instance.id (KIP-345), and the scores of a static member down for a restart within the
session timeout: its partitions held for it, not orphaned (nothing moves, stickiness as if
nothing changed), the wait counted in partition-seconds unowned when it is back."""

from __future__ import annotations

import sys
import types
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rebalancing.cli import main as rebalancing_main
from rebalancing.evaluation.command.compare import compare, compare_parser, main
from rebalancing.evaluation.command.profile import (
    ParameterError,
    Profile,
    profile_from,
    run_description,
)
from rebalancing.evaluation.decision.systems import SYSTEM_VERDICTS
from rebalancing.evaluation.scenarios.changes import CHANGE_KINDS, Scenario, ScenarioSettings
from rebalancing.evaluation.scoring.replay import ScoreRow, score_scenario
from rebalancing.harness.columns import score_index_batches
from rebalancing.harness.options import HarnessOptions
from rebalancing.protocols.kafka_common import RESTART_SECONDS
from rebalancing.strategies import STRATEGIES

RESTARTS = ScenarioSettings(
    queue_range=(6, 6),
    consumer_range=(3, 3),
    change_count_range=(1, 1),
    change_weights={"rolling_restart": 1.0},
)
"""One rolling restart of 3 consumers over 6 partitions: one member at a time (a group of up
to four), each down, then back: six steps after the start."""

SMALL = ScenarioSettings(
    queue_range=(1, 12),
    consumer_range=(1, 5),
    change_count_range=(1, 3),
    change_weights={**dict.fromkeys(CHANGE_KINDS, 1.0), "rolling_restart": 4.0},
)
"""Small groups, every change kind, rolling restarts the most often."""
PAIRS = ("eager:range", "cooperative:cooperative_sticky", "consumer:uniform")


def restart_rows(static: bool, engine: str) -> list[ScoreRow]:
    """The rows of sticky under the eager protocol through RESTARTS' scenario 0."""
    protocol = SYSTEM_VERDICTS["kafka-eager"].protocols(["sticky"], static)
    rows = score_scenario(
        Scenario(7, 0, RESTARTS),
        {"sticky": STRATEGIES["sticky"]},
        engine=engine,
        stability_every=1,
        protocol=protocol,  # type: ignore[arg-type]
    )
    return list(rows)


@pytest.mark.parametrize("engine", ["reference", "kernel"])
def test_a_static_rolling_restart_moves_nothing_and_holds_every_partition(engine: str) -> None:
    rows = restart_rows(True, engine)
    assert [row.change for row in rows] == ["initial"] + ["rolling_restart"] * 6
    assert [row.consumer_count for row in rows] == [3, 2, 3, 2, 3, 2, 3]
    for row in rows[1:]:
        assert (row.moves, row.orphans, row.unknown_consumers, row.duplicates) == (0, 0, 0, 0)
        assert (row.kept, row.stickiness, row.balance_degree) == (6, 1.0, rows[0].balance_degree)
        assert (row.moves_when_unchanged, row.rebalances_to_fixed_point) == (0, 0)
        assert row.queues_paused == 0  # no rebalance: nobody gives anything up


def test_the_wait_is_the_restarted_partitions_times_the_restart() -> None:
    rows = restart_rows(True, "reference")[1:]
    down, back = rows[0::2], rows[1::2]
    assert [row.queue_seconds_unowned for row in down] == [0.0] * 3
    # each member holds 2 of the 6 partitions, unread for the restart's 30 s
    assert [row.queue_seconds_unowned for row in back] == [2 * RESTART_SECONDS] * 3
    assert sum(row.queue_seconds_unowned or 0.0 for row in rows) == 6 * RESTART_SECONDS


def test_without_static_membership_the_same_restart_moves_partitions() -> None:
    rows = restart_rows(False, "reference")[1:]
    back = rows[1::2]
    assert [row.moves for row in back] == [2] * 3  # each member's 2 partitions come back to it
    assert all(row.orphans == 0 and row.queues_paused for row in rows)
    assert all(row.queue_seconds_unowned != 2 * RESTART_SECONDS for row in back)


@given(base_seed=st.integers(0, 2**32), index=st.integers(0, 1000))
def test_every_scored_plan_under_static_membership_covers_every_partition(
    base_seed: int, index: int
) -> None:
    kafka = SYSTEM_VERDICTS["kafka"]
    strategies = {strategy.name: strategy for strategy in kafka.strategies(PAIRS)}
    rows = score_scenario(
        Scenario(base_seed, index, SMALL),
        strategies,
        engine="reference",
        protocol=kafka.protocols(PAIRS, static_membership=True),
    )
    for row in rows:
        assert not row.failed, row.error
        assert (row.orphans, row.duplicates, row.unknown_queues, row.unknown_consumers) == (
            0,
            0,
            0,
            0,
        ), row


def test_the_option_is_refused_for_a_system_that_is_not_kafkas(
    capsys: pytest.CaptureFixture[str],
) -> None:
    parser = compare_parser("rebalancing compare")
    with pytest.raises(ParameterError) as raised:
        profile_from(parser.parse_args(["--system", "rocketmq-client", "--static-membership"]))
    message = str(raised.value)
    assert message.startswith("--static-membership: ")
    assert "not --system rocketmq-client" in message
    assert "kafka-eager" in message
    assert main(["--system", "any", "--static-membership", "--scenarios", "2"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert "--static-membership" in error
    with pytest.raises(ValueError, match="static membership: Kafka's group"):
        SYSTEM_VERDICTS["rabbitmq-sac"].protocols([], static_membership=True)


def test_a_compare_run_with_static_members_gives_a_verdict_and_says_so(tmp_path: Path) -> None:
    settings = ScenarioSettings(
        queue_range=(4, 12),
        consumer_range=(2, 5),
        change_count_range=(1, 2),
        change_weights={"rolling_restart": 1.0},
    )
    profile = Profile(
        system="kafka",
        scenarios=3,
        seed=5,
        strategies=PAIRS,
        settings=settings,
        static_membership=True,
    )
    comparison = compare(profile, workers=1)
    assert comparison.verdict.recommended
    assert "static members (group.instance.id)" in profile.describe()
    assert "static members" not in Profile(system="kafka").describe()
    assert run_description(profile)["static_membership"] is True  # run.json's profile part
    assert run_description(Profile(system="kafka"))["static_membership"] is False
    for pair in PAIRS:
        overall = comparison.summary[(pair, "all")]
        assert overall["orphans"].mean == 0
        assert overall["moves"].mean == 0  # a static restart moves nothing, whatever the pair
    # the Spark harness runs it too (tests/harness/test_static_membership.py: the same rows)
    on_spark = HarnessOptions.from_profile(replace(profile, out=tmp_path))
    assert on_spark.static_membership
    assert on_spark.profile == replace(profile, out=tmp_path)


class HandedToSparkError(Exception):
    """Raised by the stand-in for the harness's job: the command got as far as running it."""


def test_compare_hands_static_membership_to_spark_and_refuses_it_off_kafka_on_both_engines(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    handed: list[HarnessOptions] = []

    def run(options: HarnessOptions) -> None:
        handed.append(options)
        raise HandedToSparkError

    monkeypatch.setitem(sys.modules, "rebalancing.harness.job", types.SimpleNamespace(run=run))
    out = ["--out", str(tmp_path / "out"), "--replace"]
    kafka = ["--system", "kafka-eager", "--static-membership"]
    with pytest.raises(HandedToSparkError):
        rebalancing_main(["compare", "--engine", "spark", *kafka, "--scenarios", "30", *out])
    with pytest.raises(HandedToSparkError):  # auto: above 20,000 to Spark, as without it
        rebalancing_main(["compare", *kafka, "--scenarios", "20001", *out])
    assert [options.static_membership for options in handed] == [True, True]
    assert [options.system for options in handed] == ["kafka-eager"] * 2
    capsys.readouterr()
    # another system: one line naming the option, before anything runs, on either engine
    other = ["--system", "rocketmq-client", "--static-membership", "--scenarios", "30"]
    for command in (
        ["compare", "--engine", "spark", *other, *out],
        ["compare", "--engine", "local", *other, *out],
        ["harness", *other, *out],
    ):
        assert rebalancing_main(command) == 2, command
        error = capsys.readouterr().err
        assert error.count("\n") == 1, error
        assert error.startswith("error: --static-membership: Kafka's group.instance.id"), error
        assert "not --system rocketmq-client" in error
    assert len(handed) == 2
    with pytest.raises(ParameterError, match=r"--static-membership: Kafka's group\.instance\.id"):
        HarnessOptions(system="any", static_membership=True)  # checked on the driver
    with pytest.raises(TypeError, match="static_membership must be a bool"):
        HarnessOptions(system="kafka", static_membership="yes")  # type: ignore[arg-type]
    # and on an executor, were a caller to hand it the options unchecked
    with pytest.raises(ValueError, match="static_membership needs a Kafka system"):
        next(score_index_batches([[0]], 1, ("sticky",), SMALL, 1, static_membership=True))
    with pytest.raises(ValueError, match="static membership: Kafka's group"):
        next(
            score_index_batches(
                [[0]], 1, ("sticky",), SMALL, 1, system="any", static_membership=True
            )
        )


ZONED = ScenarioSettings(
    queue_range=(2, 16),
    consumer_range=(2, 6),
    change_count_range=(1, 3),
    zone_range=(2, 3),
    change_weights={"rolling_restart": 3.0, "crash": 1.0, "zone_outage": 1.0},
)


@given(base_seed=st.integers(0, 2**32), index=st.integers(0, 1000))
def test_members_held_for_are_placed_with_their_partitions(base_seed: int, index: int) -> None:
    # the cross-zone gap is to the fewest cross-zone reads of the group with its members held
    # for: never below 0 (counting it on the step's group alone leaves their partitions out)
    names = ["round_robin", "rack_aware_sticky"]
    eager = SYSTEM_VERDICTS["kafka-eager"]
    rows = score_scenario(
        Scenario(base_seed, index, ZONED),
        {name: STRATEGIES[name] for name in names},
        engine="reference",
        protocol=eager.protocols(names, static_membership=True),
    )
    for row in rows:
        assert row.orphans == 0
        assert row.cross_zone_gap is None or row.cross_zone_gap >= -1e-12, row
