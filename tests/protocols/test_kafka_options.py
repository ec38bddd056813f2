"""The sessions' options: how `rebalance` reads a departure, what a restart that outlasts the
session timeout costs, and the errors that name a bad input."""

from __future__ import annotations

from typing import Any

import pytest

from rebalancing.protocols import ClassicSession, ConsumerSession
from rebalancing.strategies import sticky


def session(kind: str, **options: Any) -> ClassicSession | ConsumerSession:
    options.setdefault("heartbeat_phases", "synced")
    if kind == "consumer":
        return ConsumerSession(sticky.assign, **options)
    return ClassicSession(sticky.assign, protocol=kind, **options)  # type: ignore[arg-type]


KINDS = ["eager", "cooperative", "consumer"]


@pytest.mark.parametrize("kind", KINDS)
def test_departures_say_what_a_missing_member_did(kind: str) -> None:
    graceful, crashing, static = (
        session(kind),
        session(kind, departures="crash"),
        session(kind, static_membership=True),
    )
    seconds: list[float] = []
    for group in (graceful, crashing, static):
        group.rebalance(range(4), ["a", "b"])
        run = group.rebalance(range(4), ["a"])
        assert run.owners == {"a": [0, 1, 2, 3]}
        assert run.seconds_to_balance is not None
        seconds.append(run.seconds_to_balance)
    # a graceful leave is heard at once; a crash and a static member's leave (no LeaveGroup;
    # under the consumer protocol a temporary leave) only when the session times out
    assert seconds[0] < 10 < 45 <= seconds[1] == seconds[2]


@pytest.mark.parametrize("kind", KINDS)
def test_a_static_restart_that_outlasts_the_session_timeout_rebalances_twice(kind: str) -> None:
    group = session(kind, static_membership=True)
    group.rebalance(range(4), ["a", "b"])
    run = group.restart(["b"], 60.0)
    assert run.steps > 0
    assert run.rounds >= 2
    assert run.seconds_to_balance is not None
    assert run.seconds_to_balance >= 60.0
    assert sorted(q for queues in run.owners.values() for q in queues) == [0, 1, 2, 3]


@pytest.mark.parametrize("kind", KINDS)
def test_bad_inputs_are_named(kind: str) -> None:
    group = session(kind)
    group.rebalance(range(4), ["a", "b"])
    with pytest.raises(ValueError, match="slow member 'a'"):
        group.change(range(4), ["a", "b", "c"], slow={"a": 400.0})  # beyond the rebalance timeout
    with pytest.raises(ValueError, match="slow member 'z'"):
        group.change(range(4), ["a", "b", "c"], slow={"z": 1.0})
    with pytest.raises(ValueError, match="crashed member 'b'"):
        group.change(range(4), ["a", "b"], crashed=["b"])
    with pytest.raises(ValueError, match="restarted member 'z'"):
        group.restart(["z"], 1.0)
    with pytest.raises(ValueError, match="down_seconds"):
        group.restart(["a"], -1.0)
    with pytest.raises(ValueError, match="departures"):
        session(kind, departures="vanish")
    with pytest.raises(ValueError, match="heartbeat_phases"):
        session(kind, heartbeat_phases="sometimes")


def test_an_assignor_that_drops_a_partition_is_refused() -> None:
    def drops_one(queues: Any, consumers: Any, previous: Any = None) -> dict[Any, list[Any]]:
        plan = sticky.assign(queues, consumers, previous)
        first = sorted(plan)[0]
        plan[first] = plan[first][1:]
        return plan

    with pytest.raises(ValueError, match="every queue exactly once"):
        ConsumerSession(drops_one).rebalance(range(4), ["a", "b"])
    with pytest.raises(ValueError, match="unknown protocol"):
        ClassicSession(sticky.assign, protocol="lazy")  # type: ignore[arg-type]
