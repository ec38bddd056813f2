"""`--system kafka`: protocol and assignor chosen together (PROTOCOL:ASSIGNOR candidates, each
inside its own protocol), decided on seconds and partition-seconds first, and `--from` naming
what the group runs today, whose move to the pick the verdict's last lines cost as Kafka
documents it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rebalancing.evaluation.command.compare import closing_lines, compare, compare_parser, main
from rebalancing.evaluation.command.profile import (
    ParameterError,
    Profile,
    _current_pair,
    profile_from,
)
from rebalancing.evaluation.decision.migration import (
    SPELLINGS,
    accepted_spellings,
    kafka_pair,
    migration_lines,
)
from rebalancing.evaluation.decision.systems import SYSTEM_VERDICTS, how_to_run
from rebalancing.evaluation.scenarios.changes import ScenarioSettings
from rebalancing.harness.columns import score_index_batches
from rebalancing.harness.shipping import user_module_names
from rebalancing.protocols import ConsumerSession, cooperative_session, eager_session
from rebalancing.strategies import STRATEGIES

KAFKA = SYSTEM_VERDICTS["kafka"]
PAIRS = tuple(KAFKA.pairs)
SMALL = ScenarioSettings(queue_range=(4, 24), consumer_range=(2, 6), change_count_range=(1, 3))


def test_the_candidates_are_protocol_and_assignor_pairs() -> None:
    assert KAFKA.candidates() == (
        "eager:range",
        "eager:round_robin",
        "eager:sticky",
        "cooperative:cooperative_sticky",
        "consumer:uniform",
        "consumer:server_range",
    )
    chosen = KAFKA.strategies(["eager:range", "consumer:uniform"])
    assert [strategy.name for strategy in chosen] == ["eager:range", "consumer:uniform"]
    assert chosen[0].assign is STRATEGIES["averagely"].assign  # RangeAssignor, one topic
    assert chosen[1].assign is STRATEGIES["uniform"].assign
    assert all(KAFKA.accepts(strategy) for strategy in chosen)
    assert not KAFKA.accepts(STRATEGIES["sticky"])
    assert KAFKA.protocols(PAIRS) == {
        "eager:range": eager_session,
        "eager:round_robin": eager_session,
        "eager:sticky": eager_session,
        "cooperative:cooperative_sticky": cooperative_session,
        "consumer:uniform": ConsumerSession,
        "consumer:server_range": ConsumerSession,
    }
    with pytest.raises(ValueError, match=r"'eager:ranger'.*eager:range, eager:round_robin"):
        KAFKA.strategies(["eager:ranger"])


def test_kafka_decides_on_partition_seconds_and_seconds_first() -> None:
    assert KAFKA.criteria[:3] == (
        "queue_seconds_unowned",
        "seconds_to_balance",
        "queue_seconds_paused",
    )
    for fixed in ("kafka-eager", "kafka-cooperative", "kafka-consumer"):
        assert SYSTEM_VERDICTS[fixed].candidates()  # kept for a group whose protocol is fixed


def test_how_to_run_a_pair_is_how_its_protocols_system_runs_its_assignor() -> None:
    assert how_to_run("kafka", "consumer:uniform") == how_to_run("kafka-consumer", "uniform")
    assert how_to_run("kafka", "eager:sticky") == how_to_run("kafka-eager", "sticky")
    cooperative = how_to_run("kafka", "cooperative:cooperative_sticky")
    assert cooperative == how_to_run("kafka-cooperative", "cooperative_sticky")


@pytest.mark.parametrize(
    ("given_text", "message"),
    [
        (
            "eager",
            "--from: expected PROTOCOL:ASSIGNOR, or a name Kafka gives an assignor, got 'eager' "
            "(a protocol alone names no assignor: eager:range, eager:round_robin, eager:sticky)",
        ),
        ("eagre:range", "--from: unknown protocol 'eagre' in 'eagre:range' (known: eager, "),
        (
            "cooperative:range",
            "--from: unknown assignor 'range' under the cooperative protocol (known there: "
            "cooperative:cooperative_sticky); accepted: ",
        ),
        ("classic:uniform", "--from: unknown assignor 'uniform' under the classic protocol"),
        ("RangeAssigner", "--from: expected PROTOCOL:ASSIGNOR, or a name Kafka gives an"),
    ],
)
def test_a_bad_from_is_one_line_naming_the_culprit_and_the_accepted_spellings(
    given_text: str, message: str
) -> None:
    with pytest.raises(ParameterError) as raised:
        _current_pair(given_text, "kafka")
    assert str(raised.value).startswith(message)
    assert "\n" not in str(raised.value)
    assert f"accepted: {accepted_spellings()}" in str(raised.value)
    with pytest.raises(ParameterError, match="only with --system kafka"):
        _current_pair("eager:range", "kafka-eager")
    assert _current_pair(" consumer:uniform ", "kafka") == "consumer:uniform"


KAFKA_SPELLINGS = {
    # Kafka's own names: name() of its assignors, the Java classes, group.protocol's values
    "range": "eager:range",
    "RangeAssignor": "eager:range",
    "org.apache.kafka.clients.consumer.RangeAssignor": "eager:range",
    "classic:range": "eager:range",
    "classic": "eager:range",
    "roundrobin": "eager:round_robin",
    "RoundRobinAssignor": "eager:round_robin",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "eager:round_robin",
    "sticky": "eager:sticky",
    "StickyAssignor": "eager:sticky",
    "eager:StickyAssignor": "eager:sticky",
    "cooperative-sticky": "cooperative:cooperative_sticky",
    "CooperativeStickyAssignor": "cooperative:cooperative_sticky",
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": (
        "cooperative:cooperative_sticky"
    ),
    "classic:cooperative-sticky": "cooperative:cooperative_sticky",
    "cooperative:cooperative-sticky": "cooperative:cooperative_sticky",
    "uniform": "consumer:uniform",
    "consumer": "consumer:uniform",
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "consumer:uniform",
    "consumer:range": "consumer:server_range",
    "consumer:RangeAssignor": "consumer:server_range",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "consumer:server_range",
    # kafka-python's
    "RangePartitionAssignor": "eager:range",
    "kafka.coordinator.assignors.range.RangePartitionAssignor": "eager:range",
    "RoundRobinPartitionAssignor": "eager:round_robin",
    "kafka.coordinator.assignors.roundrobin.RoundRobinPartitionAssignor": "eager:round_robin",
    "StickyPartitionAssignor": "eager:sticky",
    "kafka.coordinator.assignors.sticky.sticky_assignor.StickyPartitionAssignor": "eager:sticky",
    "kafka.coordinator.assignors.cooperative_sticky.CooperativeStickyAssignor": (
        "cooperative:cooperative_sticky"
    ),
}


@pytest.mark.parametrize(("spelling", "pair"), sorted(KAFKA_SPELLINGS.items()))
def test_from_takes_the_names_kafka_users_type(spelling: str, pair: str) -> None:
    assert _current_pair(spelling, "kafka") == pair
    assert _current_pair(f" {spelling.upper()} ", "kafka") == pair


def test_every_pair_is_its_own_spelling_and_every_spelling_names_a_pair() -> None:
    assert set(SPELLINGS.values()) == set(PAIRS)
    for pair in PAIRS:
        assert kafka_pair(pair) == pair


CASED_SPELLINGS = st.sampled_from(sorted(SPELLINGS)).flatmap(
    lambda spelling: st.tuples(
        st.just(spelling), st.lists(st.booleans(), min_size=len(spelling), max_size=len(spelling))
    )
)


@given(CASED_SPELLINGS)
def test_any_case_of_an_accepted_spelling_names_the_same_pair(
    spelling_and_case: tuple[str, list[bool]],
) -> None:
    spelling, upper = spelling_and_case
    cased = "".join(c.upper() if up else c for c, up in zip(spelling, upper, strict=True))
    assert kafka_pair(cased) == SPELLINGS[spelling]


def test_strategies_under_kafka_take_the_same_spellings(tmp_path: Path) -> None:
    parser = compare_parser("rebalancing compare")
    arguments = ["--system", "kafka", "--out", str(tmp_path / "out")]
    profile = profile_from(
        parser.parse_args(
            [*arguments, "--strategies", "RangeAssignor,range,consumer:range,cooperative-sticky"]
        )
    )
    assert profile.strategies == (
        "eager:range",
        "consumer:server_range",
        "cooperative:cooperative_sticky",
    )
    with pytest.raises(ParameterError) as raised:
        profile_from(parser.parse_args([*arguments, "--strategies", "range,cooperative:range"]))
    assert str(raised.value).startswith(
        "--strategies: unknown assignor 'range' under the cooperative protocol"
    )
    assert "\n" not in str(raised.value)


def test_the_command_refuses_a_bad_from_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--system", "kafka", "--from", "eager:rnage", "--scenarios", "2"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert "unknown assignor 'rnage' under the eager protocol" in error
    assert "eager:range" in error


def test_moves_cost_what_kafka_documents() -> None:
    upgrade = " ".join(
        migration_lines("eager:range", "cooperative:cooperative_sticky", KAFKA.pairs)
    )
    assert "partition.assignment.strategy=[CooperativeStickyAssignor, RangeAssignor]" in upgrade
    assert "then a second with CooperativeStickyAssignor alone" in upgrade
    assert "kafka-python refuses" in upgrade
    assert "the group stops once" in upgrade
    same = " ".join(migration_lines("eager:range", "eager:sticky", KAFKA.pairs))
    assert "[StickyAssignor, RangeAssignor]" in same
    assert "kafka-python" not in same  # one protocol: the two rolling restarts work there too
    online = " ".join(
        migration_lines("cooperative:cooperative_sticky", "consumer:uniform", PAIRS_OF)
    )
    assert "group.protocol=consumer and group.remote.assignor=uniform" in online
    assert "group.consumer.migration.policy" in online
    assert "bidirectional, its default" in online
    server = " ".join(migration_lines("consumer:uniform", "consumer:server_range", KAFKA.pairs))
    assert "group.remote.assignor=range" in server
    down = " ".join(migration_lines("consumer:uniform", "eager:range", KAFKA.pairs))
    assert "group.protocol=classic" in down
    assert migration_lines("eager:range", "eager:range", KAFKA.pairs) == [
        "The group runs eager:range already: nothing to change."
    ]


PAIRS_OF = KAFKA.pairs


@given(st.sampled_from(PAIRS), st.sampled_from(PAIRS))
def test_every_move_names_both_ends_and_kafka_python_only_across_classic_protocols(
    current: str, pick: str
) -> None:
    text = " ".join(migration_lines(current, pick, PAIRS_OF))
    before, after = current.partition(":")[0], pick.partition(":")[0]
    if current == pick:
        assert "already" in text
        return
    assert text.startswith(f"From {current} to {pick}:")
    classic = {"eager", "cooperative"}
    assert ("kafka-python refuses" in text) == (
        before in classic and after in classic and before != after
    )
    assert ("online upgrade" in text) == (before in classic and after == "consumer")


def test_the_verdict_ends_with_the_moves_cost() -> None:
    profile = Profile(
        system="kafka", scenarios=3, seed=3, strategies=PAIRS, settings=SMALL, current="eager:range"
    )
    comparison = compare(profile)
    verdict = comparison.verdict
    assert verdict.recommended
    text = closing_lines(verdict, profile).replace("\n", " ")
    if "eager:range" in verdict.recommended:
        assert text.endswith("The group runs eager:range already: nothing to change.")
    else:  # the move to each pick (one, or those of a tie), the last pick's last
        moves = [migration_lines("eager:range", pick, PAIRS_OF) for pick in verdict.recommended]
        assert all(move[0] in text for move in moves)
        assert text.endswith(moves[-1][-1])
    overall = comparison.summary
    for pair in PAIRS:
        heartbeats = overall[(pair, "all")]["heartbeats"].count
        assert (heartbeats > 0) == pair.startswith("consumer:")
        assert overall[(pair, "all")]["seconds_to_balance"].count > 0


def test_the_harness_scores_the_pairs_inside_their_protocols() -> None:
    assert user_module_names([*PAIRS, "mine.module:assign"]) == ["mine"]
    (batch,) = score_index_batches([[0, 1]], 4, PAIRS, SMALL, 2, system="kafka")
    rows = batch.to_pylist()
    assert {row["strategy"] for row in rows} == set(PAIRS)
    for row in rows:
        cold_start = row["step"] == 0  # not a rebalance: no seconds counted
        assert (row["seconds_to_balance"] is None) == cold_start
        consumer = row["strategy"].startswith("consumer:")
        assert (row["heartbeats"] is not None) == (consumer and not cold_start)
