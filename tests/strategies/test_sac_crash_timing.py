"""RabbitMQ single active consumer in seconds when an app crashes (sac.Session.apply_change): the
broker hands a queue on at once on a cancel or a close, and only after declaring the
connection dead, by the heartbeat, on a crash; the leaderless releases stay at 2 ms each."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rebalancing.contract import ChangeAwareSession
from rebalancing.strategies import sac


def test_the_heartbeat_defaults_are_rabbitmqs() -> None:
    assert sac.HEARTBEAT_SECONDS == 60.0
    assert sac.CHECKS_BEFORE_DEAD == 2
    assert isinstance(sac.Session(), ChangeAwareSession)


@pytest.mark.parametrize("engine", sac.ENGINES)
def test_a_crash_leaves_the_apps_queues_unread_until_the_broker_notices(
    engine: sac.Engine,
) -> None:
    session = sac.Session(engine=engine, crash_detection_seconds=150)
    session.rebalance(range(6), ["a", "b"])  # a: 0-2, b: 3-5
    run = session.apply_change(range(6), ["a"], "crash")
    # b's three queues wait 150 s for the broker to close b's connection, then go to a, the
    # head of their lines, at once: nothing is released
    assert run.owners == {"a": [0, 1, 2, 3, 4, 5]}
    assert (run.rounds, run.releases) == (0, 0)
    assert (run.seconds_to_balance, run.queue_seconds_unowned) == (150.0, 450.0)


@pytest.mark.parametrize("engine", sac.ENGINES)
def test_the_releases_after_a_crash_follow_its_detection_at_2_ms_each(
    engine: sac.Engine,
) -> None:
    session = sac.Session(engine=engine, crash_detection_seconds=150)
    session.rebalance(range(6), ["a", "b", "c"])  # a: 0, 1; b: 2, 3; c: 4, 5
    run = session.apply_change(range(6), ["a", "b"], "crash")
    # c's two queues unread 150 s; both go to a, first in their lines, which releases one
    # to b in one round: 2 ms more, one queue 2 ms unread
    assert run.owners == {"a": [0, 1, 4], "b": [2, 3, 5]}
    assert (run.rounds, run.releases) == (1, 1)
    assert run.seconds_to_balance == pytest.approx(150.002, abs=1e-12)
    assert run.queue_seconds_unowned == pytest.approx(300.002, abs=1e-12)


@pytest.mark.parametrize("kind", ["consumer_leave", "rolling_restart"])
def test_a_cancel_or_a_close_is_handed_on_at_once(kind: str) -> None:
    session = sac.Session(crash_detection_seconds=150)
    session.rebalance(range(6), ["a", "b"])
    run = session.apply_change(range(6), ["a"], kind)
    assert (run.seconds_to_balance, run.queue_seconds_unowned) == (0.0, 0.0)
    crashing = sac.Session(crash_detection_seconds=150)
    crashing.rebalance(range(6), ["a", "b"])
    assert crashing.apply_change(range(6), ["a"], "crash").owners == run.owners


def test_an_app_that_crashes_holding_nothing_costs_no_time() -> None:
    session = sac.Session(crash_detection_seconds=150)
    session.rebalance(["q"], ["a", "b"])  # a is active on q, b waits
    run = session.apply_change(["q"], ["a"], "crash")
    assert (run.seconds_to_balance, run.queue_seconds_unowned) == (0.0, 0.0)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 4))
def test_drawn_detections_fall_two_to_three_heartbeats_after_the_crash(
    seed: int, crashed: int
) -> None:
    apps = [f"app{index}" for index in range(crashed + 1)]
    runs = []
    for _ in range(2):
        session = sac.Session(seed=seed, engine="reference")
        session.rebalance(range(3 * len(apps)), apps)
        runs.append(session.apply_change(range(3 * len(apps)), apps[:1], "crash"))
    assert runs[0] == runs[1]  # the seed decides
    run = runs[0]
    # each crashed app held three queues and is noticed within [120, 180) s of the crash;
    # the survivor takes everything from the lines' heads: no release
    assert run.rounds == 0
    assert 120.0 <= (run.seconds_to_balance or 0.0) < 180.0
    assert 3 * crashed * 120.0 <= (run.queue_seconds_unowned or 0.0) < 3 * crashed * 180.0


def test_bad_timings_name_the_culprit() -> None:
    with pytest.raises(ValueError, match="heartbeat_seconds"):
        sac.Session(heartbeat_seconds=0)
    with pytest.raises(TypeError, match="crash_detection_seconds"):
        sac.Session(crash_detection_seconds="60")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="kind"):
        sac.Session().apply_change(["q"], ["a"], None)  # type: ignore[arg-type]
