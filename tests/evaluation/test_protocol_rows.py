"""A system that declares the protocol its candidates run inside (System.protocol): Kafka's three
group protocols, RocketMQ's client-side and broker-side sessions. Each candidate's rows are then
the protocol's session around its `assign`, told each step's change kind, with the protocol's
seconds, paused partition-seconds and heartbeats, and the assign calls' own time as the compute
cost; the command and the Spark harness's columns score the same rows."""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rebalancing.evaluation.command.compare import score_profile
from rebalancing.evaluation.command.profile import Profile
from rebalancing.evaluation.decision.systems import SYSTEM_VERDICTS
from rebalancing.evaluation.scenarios.changes import Scenario, ScenarioSettings, scenario_seed
from rebalancing.evaluation.scoring import runner as runner_module
from rebalancing.evaluation.scoring.replay import score_scenario, score_scenarios
from rebalancing.harness.columns import ROW_SCHEMA, score_index_batches
from rebalancing.protocols import ConsumerSession, cooperative_session, eager_session
from rebalancing.protocols.rocketmq import broker_session, client_session
from rebalancing.strategies import STRATEGIES, Strategy

SMALL = ScenarioSettings(queue_range=(2, 24), consumer_range=(1, 6), change_count_range=(1, 4))
NO_STABILITY = 10**9  # the stability check rebalances again; these tests follow one session


def test_the_kafka_and_rocketmq_systems_declare_their_protocols_and_the_others_none() -> None:
    declared = {name: system.protocol for name, system in SYSTEM_VERDICTS.items()}
    assert declared.pop("kafka-eager") is eager_session
    assert declared.pop("kafka-cooperative") is cooperative_session
    assert declared.pop("kafka-consumer") is ConsumerSession
    assert declared.pop("rocketmq-broker") is broker_session
    assert declared.pop("rocketmq-client") is client_session
    assert set(declared.values()) == {None}


@pytest.mark.parametrize(
    "system", ["kafka-eager", "kafka-cooperative", "kafka-consumer", "rocketmq-client"]
)
@given(index=st.integers(0, 10_000))
def test_rows_are_the_protocols_session_told_each_change_kind(system: str, index: int) -> None:
    protocol = SYSTEM_VERDICTS[system].protocol
    assert protocol is not None
    scenario = Scenario(3, index, SMALL)
    name = {"kafka-consumer": "uniform", "rocketmq-client": "averagely"}.get(system, "sticky")
    rows = score_scenario(
        scenario, {name: STRATEGIES[name]}, stability_every=NO_STABILITY, protocol=protocol
    )
    session: Any = protocol(STRATEGIES[name].assign, seed=scenario_seed(3, index))
    for step, row in zip(scenario.steps(), rows, strict=True):
        run = session.apply_change(step.queues, step.consumers, step.kind)
        assert (row.releases, row.rounds) == (run.releases, run.rounds)
        if step.kind == "initial":  # the cold start is no rebalance: its cost is not counted
            cold = (row.seconds_to_balance, row.queue_seconds_unowned, row.queue_seconds_paused)
            assert cold == (None, None, None)
            assert row.heartbeats is row.queues_paused is None
            continue
        assert (
            row.seconds_to_balance,
            row.queue_seconds_unowned,
            row.queue_seconds_doubly_owned,
        ) == (run.seconds_to_balance, run.queue_seconds_unowned, run.queue_seconds_doubly_owned)
        assert (row.queue_seconds_paused, row.heartbeats, row.queues_paused) == (
            run.queue_seconds_paused,
            run.heartbeats,
            run.queues_paused,
        )
        assert (row.releases, row.rounds, row.converged) == (run.releases, run.rounds, True)
        assert row.orphans == row.duplicates == row.unknown_consumers == 0
        assert (row.heartbeats is not None) == (system == "kafka-consumer")


def test_the_compute_time_is_the_assign_calls_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    class Clock:  # every reading 1000 ns after the one before
        ticks = itertools.count(0, 1000)

        @staticmethod
        def perf_counter_ns() -> int:
            return next(Clock.ticks)

    calls: list[int] = []

    def counted(queues: Any, consumers: Any, previous: Any = None) -> Any:
        calls.append(1)
        return STRATEGIES["sticky"].assign(queues, consumers, previous)

    monkeypatch.setattr(runner_module, "time", Clock)
    scenario = Scenario(8, 1, SMALL)
    strategies = {"counted": Strategy("counted", counted, "a test")}
    warming_up = True  # the function's first call in this process is not timed
    for protocol in (eager_session, cooperative_session, ConsumerSession):
        for row in score_scenario(
            scenario, strategies, stability_every=NO_STABILITY, protocol=protocol
        ):
            # 1 µs per call, the session's own none
            assert row.assign_micros == (None if warming_up else len(calls))
            warming_up = False
            calls.clear()


def test_the_assignor_gets_the_steps_placement_inside_the_protocol() -> None:
    seen: list[Any] = []

    def zoned(queues: Any, consumers: Any, previous: Any = None, *, consumer_zones: Any) -> Any:
        seen.append(consumer_zones)
        return STRATEGIES["sticky"].assign(queues, consumers, previous)

    strategy = Strategy("zoned", zoned, "a test", uses=frozenset({"consumer_zones"}))
    scenario = Scenario(2, 5, replace(SMALL, zone_range=(2, 3)))
    rows = list(score_scenario(scenario, {"zoned": strategy}, protocol=eager_session))
    assert not any(row.failed for row in rows)
    assert seen
    assert all(zones is not None for zones in seen)


def test_the_command_scores_the_candidates_inside_the_systems_protocol() -> None:
    profile = Profile(
        system="kafka-consumer", scenarios=4, seed=2, strategies=("uniform",), settings=SMALL
    )
    overall = score_profile(profile)[("uniform", "all")]
    assert overall["heartbeats"].count > 0
    # every rebalance but each scenario's cold start (step 0) has its seconds
    assert overall["seconds_to_balance"].count == overall["balance_degree"].count - 4
    plain = replace(profile, system="any")  # no protocol: a plain function has no seconds
    assert score_profile(plain)[("uniform", "all")]["seconds_to_balance"].count == 0


def test_the_harness_columns_score_the_same_rows_inside_the_protocol() -> None:
    scenarios = [Scenario(5, index, SMALL) for index in range(3)]
    chosen = {"sticky": STRATEGIES["sticky"]}
    expected = list(score_scenarios(scenarios, chosen, protocol=cooperative_session))
    (batch,) = score_index_batches(
        [[0, 1, 2]], 5, ("sticky",), SMALL, 3, protocol=cooperative_session
    )
    assert batch.schema == ROW_SCHEMA
    assert {"queue_seconds_paused", "heartbeats"} <= set(ROW_SCHEMA.names)
    got = batch.to_pylist()
    assert len(got) == len(expected)
    for row, wanted in zip(got, expected, strict=True):
        wanted_row = wanted.as_dict()
        del row["assign_micros"], wanted_row["assign_micros"]
        assert row == wanted_row
    assert any(row["queue_seconds_paused"] for row in got)
