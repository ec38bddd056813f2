"""Kafka's group-protocol sessions told each change's kind (`apply_change`,
rebalancing.contract.ChangeAwareSession): a crash waits for the session timeout, any other
departure is a graceful leave, and a rolling restart's leave and rejoin steps are, with static
members back within the session timeout, a batch down with no rebalance and back to its own
partitions, and otherwise a leave and a join no sooner than `restart_seconds` after it. Worked
timelines on small groups (synced heartbeats, Kafka 4's timers), and properties over the
scenarios' own steps."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rebalancing.contract import ChangeAwareSession, ProtocolRun
from rebalancing.evaluation.scenarios.changes import CHANGE_KINDS, Scenario, ScenarioSettings
from rebalancing.protocols import ClassicSession, ConsumerSession
from rebalancing.protocols.kafka_common import RESTART_SECONDS
from rebalancing.strategies import sticky

KINDS = ("eager", "cooperative", "consumer")


def session_of(kind: str, **options: Any) -> ClassicSession | ConsumerSession:
    options.setdefault("heartbeat_phases", "synced")
    if kind == "consumer":
        return ConsumerSession(sticky.assign, **options)
    return ClassicSession(sticky.assign, protocol=kind, **options)  # type: ignore[arg-type]


def cost(run: ProtocolRun) -> tuple[Any, ...]:
    return (run.seconds_to_balance, run.queue_seconds_unowned)


@pytest.mark.parametrize("kind", KINDS)
def test_the_kafka_sessions_are_change_aware(kind: str) -> None:
    assert isinstance(session_of(kind), ChangeAwareSession)


@pytest.mark.parametrize(
    ("kind", "crash", "leave"),
    [
        # b's session expires at 6 + 45 = 51, a hears at 54; a LeaveGroup at 6, a hears at 9
        ("eager", (48.0, 96.0), (3.0, 6.0)),
        ("cooperative", (48.0, 96.0), (3.0, 6.0)),
        # b timed out at 5 + 45 = 50, a's heartbeat at 55; a leave at 5, a's heartbeat at 10
        ("consumer", (50.0, 100.0), (5.0, 10.0)),
    ],
)
def test_a_crash_waits_for_the_timeout_and_any_other_departure_is_graceful(
    kind: str, crash: tuple[float, float], leave: tuple[float, float]
) -> None:
    for departures in ("graceful", "crash"):  # the kind decides, not the session's option
        crashed = session_of(kind, departures=departures)
        crashed.rebalance(range(4), ["a", "b"])
        assert cost(crashed.apply_change(range(4), ["a"], "crash")) == crash
        left = session_of(kind, departures=departures)
        left.rebalance(range(4), ["a", "b"])
        assert cost(left.apply_change(range(4), ["a"], "leave")) == leave


@pytest.mark.parametrize("kind", KINDS)
def test_a_static_restart_step_goes_down_with_no_rebalance_and_comes_back(kind: str) -> None:
    session = session_of(kind, static_membership=True)
    before = session.rebalance(range(4), ["a", "b"]).owners
    clock = session.now
    down = session.apply_change(range(4), ["a"], "rolling_restart")
    # nothing moves: a keeps its two, b's two wait for b, read by nobody
    assert down.owners == {"a": before["a"]}
    assert (down.steps, down.releases, down.rounds, down.seconds_to_balance) == (0, 0, 0, 0.0)
    assert down.heartbeats == (1 if kind == "consumer" else None)  # the leave, epoch -2
    again = session.rebalance(range(4), ["a"])  # the same group again: still nothing to do
    assert again.owners == down.owners
    assert again.steps == 0
    back = session.apply_change(range(4), ["a", "b"], "rolling_restart")
    assert back.owners == before
    assert (back.steps, back.releases, back.rounds) == (0, 0, 0)
    # b's two partitions unread from its close until it is back, RESTART_SECONDS (30 s) later
    assert cost(back) == (RESTART_SECONDS, 2 * RESTART_SECONDS)
    assert back.heartbeats == (2 if kind == "consumer" else None)  # the rejoin and its ack
    assert session.now == clock + RESTART_SECONDS


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("static", [False, True])
def test_a_restart_in_two_steps_costs_what_one_restart_costs(kind: str, static: bool) -> None:
    # static: down and back within the timeout; dynamic (and static members down longer
    # than the session timeout, below): a leave, and a join once the member is back
    for restart_seconds in (RESTART_SECONDS, 50.0):
        stepped = session_of(kind, static_membership=static, restart_seconds=restart_seconds)
        whole = session_of(kind, static_membership=static, restart_seconds=restart_seconds)
        for session in (stepped, whole):
            session.rebalance(range(6), ["a", "b", "c"])
        leave = stepped.apply_change(range(6), ["a", "c"], "rolling_restart")
        rejoin = stepped.apply_change(range(6), ["a", "b", "c"], "rolling_restart")
        one = whole.restart(["b"], restart_seconds)
        assert rejoin.owners == one.owners
        assert stepped.now == whole.now
        for score in ("releases", "steps", "rounds", "heartbeats"):
            first, second = getattr(leave, score), getattr(rejoin, score)
            assert (None if first is None else first + second) == getattr(one, score)
        for score in ("queue_seconds_unowned", "queue_seconds_paused"):
            total = getattr(leave, score) + getattr(rejoin, score)
            assert total == pytest.approx(getattr(one, score))


def test_a_dynamic_member_rejoins_no_sooner_than_its_restart_takes() -> None:
    session = session_of("eager", restart_seconds=20.0)
    session.rebalance(range(4), ["a", "b"])  # settles at 6
    leave = session.apply_change(range(4), ["a"], "rolling_restart")
    assert cost(leave) == (3.0, 6.0)  # b's LeaveGroup at 6, a hears at 9
    session.apply_change(range(4), ["a", "b"], "rolling_restart")
    # b is back at 6 + 20 = 26 and joins; a hears at its heartbeat of 27 (its grid: 9 + 3k)
    assert session.now == 27.0


def test_a_change_while_a_static_batch_is_down_ends_its_restart() -> None:
    session = session_of("eager", static_membership=True)
    session.rebalance(range(4), ["a", "b"])  # settles at 6; b last heartbeats at 6
    session.apply_change(range(4), ["a"], "rolling_restart")
    run = session.apply_change(range(6), ["a"], "queues_added")
    # b is a departure now, as a static member's is: timed out at 6 + 45 = 51, a hears at 54
    assert run.owners == {"a": list(range(6))}
    assert run.seconds_to_balance == 48.0


def test_apply_change_refuses_what_it_cannot_read() -> None:
    with pytest.raises(ValueError, match="restart_seconds"):
        session_of("eager", restart_seconds=-1.0)
    with pytest.raises(TypeError, match="restart_seconds"):
        session_of("consumer", restart_seconds="30")
    with pytest.raises(TypeError, match="kind"):
        session_of("eager").apply_change(range(2), ["a"], None)  # type: ignore[arg-type]


SETTINGS = ScenarioSettings(
    queue_range=(1, 12),
    consumer_range=(1, 6),
    change_count_range=(1, 4),
    change_weights={**dict.fromkeys(CHANGE_KINDS, 1.0), "rolling_restart": 4.0},
)


@given(st.sampled_from(KINDS), st.booleans(), st.integers(0, 2**16), st.integers(0, 2**32))
def test_scenario_steps_settle_and_static_restarts_move_nothing(
    kind: str, static: bool, index: int, seed: int
) -> None:
    session = session_of(kind, static_membership=static, seed=seed, heartbeat_phases="random")
    steps = list(Scenario(5, index, SETTINGS).steps())
    before_restart: dict[Any, list[Any]] | None = None
    previous: dict[Any, list[Any]] = {}
    for step in steps:
        run = session.apply_change(step.queues, step.consumers, step.kind)
        assert run.converged
        assert set(run.owners) == set(step.consumers)
        assert run.queue_seconds_doubly_owned == 0.0
        held = sorted(queue for queues in run.owners.values() for queue in queues)
        gone = set(previous) - set(step.consumers)
        if static and step.kind == "rolling_restart" and gone:  # a batch down: its wait
            before_restart = previous
            waiting = sorted(queue for member in gone for queue in previous[member])
            assert sorted(held + waiting) == list(step.queues)
            assert run.owners == {member: previous[member] for member in step.consumers}
        else:
            assert held == list(step.queues)
        if static and step.kind == "rolling_restart" and not gone:  # the batch is back
            assert before_restart is not None
            assert run.owners == before_restart
            assert run.steps == run.releases == 0
        previous = run.owners


@given(st.sampled_from(KINDS), st.booleans(), st.integers(0, 2**16))
def test_the_same_seed_gives_the_same_runs_over_scenario_steps(
    kind: str, static: bool, index: int
) -> None:
    def runs() -> list[ProtocolRun]:
        session = session_of(kind, static_membership=static, seed=index, heartbeat_phases="random")
        steps = Scenario(9, index, SETTINGS).steps()
        return [session.apply_change(s.queues, s.consumers, s.kind) for s in steps]

    assert runs() == runs()
