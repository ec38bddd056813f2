"""What Kafka's group-protocol sessions share: their options, checking an assignor's plan, and
the runs of a rebalance with no change and of a restart (two rebalances added up)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from rebalancing.contract import AssignFunction, ProtocolRun

Departures = Literal["graceful", "crash"]
"""How the members that `rebalance` finds gone went: a graceful close (the member tells the
coordinator at once) or a crash (the coordinator learns it when the session times out)."""

HeartbeatPhases = Literal["random", "synced"]
"""Where a change falls in each member's heartbeat cycle: drawn from the seed per member and
change ("random"), or every member's heartbeats kept on the grid of its last one ("synced":
the worked timelines' choice, nothing drawn)."""


def check_options(departures: str, heartbeat_phases: str, max_rounds: int) -> None:
    """ValueError naming the option that is not one the sessions know."""
    if departures not in ("graceful", "crash"):
        raise ValueError(f"unknown departures {departures!r}; known: graceful, crash")
    if heartbeat_phases not in ("random", "synced"):
        raise ValueError(f"unknown heartbeat_phases {heartbeat_phases!r}; known: random, synced")
    if isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or max_rounds < 1:
        raise ValueError(f"max_rounds must be an int >= 1, not {max_rounds!r}")


def checked_lateness(
    slow: Mapping[Any, float] | None, members: Iterable[Any], rebalance_timeout: float, slack: float
) -> dict[Any, float]:
    """`slow` (member -> seconds its poll loop is busy from the change on) checked: members of
    `members`, finite seconds >= 0 and below the rebalance timeout less `slack` (a member later
    than that is evicted, which is not modelled)."""
    if slow is None:
        return {}
    known = set(members)
    checked: dict[Any, float] = {}
    for member, seconds in slow.items():
        if member not in known:
            raise ValueError(
                f"slow member {member!r} is not a member of the group before and after the change"
            )
        if isinstance(seconds, bool) or not isinstance(seconds, int | float):
            raise TypeError(
                f"the lateness of slow member {member!r} must be seconds, not {seconds!r}"
            )
        if not (math.isfinite(seconds) and 0 <= seconds < rebalance_timeout - slack):
            raise ValueError(
                f"the lateness of slow member {member!r} must be >= 0 and below "
                f"{rebalance_timeout - slack} s (the rebalance timeout, less {slack} s), "
                f"not {seconds!r}"
            )
        checked[member] = float(seconds)
    return checked


def planned(
    assignor: AssignFunction,
    queues: Sequence[Any],
    consumers: Sequence[Any],
    previous: Mapping[Any, Iterable[Any]],
) -> dict[Any, set[Any]]:
    """The assignor's plan as sets, checked: every consumer a key, every queue once."""
    plan = assignor(queues, consumers, previous)
    if set(plan) != set(consumers):
        raise ValueError(f"the assignor's plan has consumers {sorted(plan)!r}, not {consumers!r}")
    given = [queue for owned in plan.values() for queue in owned]
    if len(given) != len(queues) or set(given) != set(queues):
        raise ValueError("the assignor's plan does not give every queue exactly once")
    return {consumer: set(plan[consumer]) for consumer in consumers}


def quiet_run(owners: dict[Any, list[Any]], heartbeats: int | None) -> ProtocolRun:
    """The run of a rebalance with nothing to do: the group as it was, costing nothing."""
    return ProtocolRun(
        owners=owners,
        releases=0,
        steps=0,
        rounds=0,
        converged=True,
        queues_paused=0,
        seconds_to_balance=0.0,
        queue_seconds_unowned=0.0,
        queue_seconds_doubly_owned=0.0,
        queue_seconds_paused=0.0,
        heartbeats=heartbeats,
    )


def added_up(first: ProtocolRun, second: ProtocolRun, second_starts_after: float) -> ProtocolRun:
    """A restart's two rebalances as one run: counts and partition-seconds added, the seconds
    to balance running to the second's last change (`second_starts_after` the first's start)."""

    def total(a: float | int | None, b: float | int | None) -> Any:
        return None if a is None or b is None else a + b

    changed_again = bool(second.steps or second.releases or second.queue_seconds_unowned)
    seconds = first.seconds_to_balance
    if changed_again and second.seconds_to_balance is not None:
        seconds = second_starts_after + second.seconds_to_balance
    return ProtocolRun(
        owners=second.owners,
        releases=first.releases + second.releases,
        steps=first.steps + second.steps,
        rounds=first.rounds + second.rounds,
        converged=first.converged and second.converged,
        queues_paused=total(first.queues_paused, second.queues_paused),
        seconds_to_balance=seconds,
        queue_seconds_unowned=total(first.queue_seconds_unowned, second.queue_seconds_unowned),
        queue_seconds_doubly_owned=total(
            first.queue_seconds_doubly_owned, second.queue_seconds_doubly_owned
        ),
        queue_seconds_paused=total(first.queue_seconds_paused, second.queue_seconds_paused),
        heartbeats=total(first.heartbeats, second.heartbeats),
    )
