"""What the sessions of Kafka's two group protocols share (kafka_classic, kafka_consumer): their
options and how a change's arguments are checked, the assignor's plan checked, and
`KafkaGroupSession`, the base class that holds the group's clock, partitions and ledger, reads
a change, scores a rebalance from the ledger, and runs a rolling restart (a static member's
return with no rebalance, or a leave and a join added up). Each protocol module keeps only how
its coordinator and members move partitions."""

from __future__ import annotations

import math
import random
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar, Generic, Literal, NamedTuple, TypeVar

from rebalancing.contract import AssignFunction, ProtocolRun, sorted_distinct_ids
from rebalancing.protocols.kafka_timers import ClassicTimers, ConsumerTimers
from rebalancing.protocols.ownership_ledger import QUIET, OwnershipLedger

Departures = Literal["graceful", "crash"]
"""How the members that `rebalance` finds gone went: a graceful close (the member tells the
coordinator at once) or a crash (the coordinator learns it when the session times out)."""

HeartbeatPhases = Literal["random", "synced"]
"""Where a change falls in each member's heartbeat cycle: drawn from the seed per member and
change ("random"), or every member's heartbeats kept on the grid of its last one ("synced":
the worked timelines' choice, nothing drawn)."""


Timers = TypeVar("Timers", ClassicTimers, ConsumerTimers)


def checked_lateness(
    slow: Mapping[Any, float], members: Iterable[Any], rebalance_timeout: float, slack: float
) -> dict[Any, float]:
    """`slow` (member -> seconds its poll loop is busy from the change on) checked: members of
    `members`, finite seconds >= 0 and below the rebalance timeout less `slack` (a member later
    than that is evicted, which is not modelled)."""
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


class Change(NamedTuple):
    """A change's arguments, checked: the group's partitions and members after it (sorted),
    the members that crashed, the members there before and after it, and how late each of
    those polls (member -> seconds from the change on)."""

    queues: list[Any]
    consumers: list[Any]
    crashed: set[Any]
    staying: list[Any]
    lateness: dict[Any, float]


class KafkaGroupSession(ABC, Generic[Timers]):
    """What a classic and a consumer-protocol session share: the options, the clock `now` (the
    end of the last rebalance), the group's partitions, the ledger of the last rebalance, and
    `rebalance` and `restart` over the subclass's `change`.

    A subclass says what each live member consumes (`_consumed`), restarts a member's heartbeat
    timer (`_restart_heartbeat_timer`) and runs a change (`change`)."""

    counts_heartbeats: ClassVar[bool]
    """Whether the protocol's runs count heartbeat requests (ProtocolRun.heartbeats)."""

    def __init__(
        self,
        assignor: AssignFunction,
        timers: Timers | None,
        timers_type: type[Timers],
        *,
        seed: int,
        static_membership: bool,
        departures: Departures,
        slow_members: Mapping[Any, float] | None,
        heartbeat_phases: HeartbeatPhases,
    ) -> None:
        if not callable(assignor):
            raise TypeError(f"assignor must be an assign function, not {assignor!r}")
        if departures not in ("graceful", "crash"):
            raise ValueError(f"unknown departures {departures!r}; known: graceful, crash")
        if heartbeat_phases not in ("random", "synced"):
            raise ValueError(
                f"unknown heartbeat_phases {heartbeat_phases!r}; known: random, synced"
            )
        self.timers: Timers = timers if timers is not None else timers_type()
        if not isinstance(self.timers, timers_type):
            raise TypeError(f"timers must be {timers_type.__name__}, not {timers!r}")
        self.assignor = assignor
        self.rng = random.Random(seed)
        self.static_membership = static_membership
        self.departures = departures
        self.slow_members = dict(slow_members or {})
        self.heartbeat_phases = heartbeat_phases
        self.now = 0.0
        self.queues: list[Any] = []
        self._quiet = False  # the last rebalance converged: an unchanged group has nothing to do
        self._ledger = OwnershipLedger(0.0, {})

    @abstractmethod
    def _consumed(self) -> Mapping[Any, set[Any]]:
        """Each live member -> the partitions it consumes now."""

    @abstractmethod
    def _restart_heartbeat_timer(self, member: Any, at: float) -> None:
        """`member` heartbeats again from `at` on (it came back from a static restart)."""

    @abstractmethod
    def change(
        self,
        queues: Iterable[Any],
        consumers: Iterable[Any],
        *,
        crashed: Iterable[Any] = (),
        slow: Mapping[Any, float] | None = None,
    ) -> ProtocolRun:
        """The group is now `queues` x `consumers` as of the session's clock; the members of
        `crashed` (gone from `consumers`) crashed, the others that went left as `departures`
        says; `slow` adds to `slow_members` for this change. Runs until the group is quiet."""

    def rebalance(self, queues: Iterable[Any], consumers: Iterable[Any]) -> ProtocolRun:
        """The group is now `queues` x `consumers` (StrategySession)."""
        return self.change(queues, consumers)

    def most_consumers(self) -> int:
        """The most members that consumed one partition at once in the last rebalance."""
        return self._ledger.finish(self.now).most_consumers

    def _read_change(
        self,
        queues: Iterable[Any],
        consumers: Iterable[Any],
        crashed: Iterable[Any],
        slow: Mapping[Any, float] | None,
        *,
        slack: float,
    ) -> Change:
        """`change`'s arguments checked (a slow member must poll `slack` seconds before its
        rebalance timeout), with the errors naming the culprit."""
        sorted_queues = sorted_distinct_ids(queues, "queue")
        sorted_consumers = sorted_distinct_ids(consumers, "consumer")
        members = self._consumed()
        crashed_members = set(crashed)
        for member in crashed_members:
            if member not in members or member in sorted_consumers:
                raise ValueError(f"crashed member {member!r} is not a member that left")
        staying = [member for member in sorted_consumers if member in members]
        lateness = checked_lateness(
            {**self.slow_members, **(slow or {})}, staying, self.timers.rebalance_timeout, slack
        )
        return Change(sorted_queues, sorted_consumers, crashed_members, staying, lateness)

    def _unchanged(self, change: Change) -> bool:
        """The last rebalance converged and `change` changes nothing: no rebalance to run."""
        return (
            self._quiet
            and change.queues == self.queues
            and change.consumers == sorted(self._consumed())
        )

    def _owners(self) -> dict[Any, list[Any]]:
        """Each live member -> the partitions it consumes, sorted (ProtocolRun.owners)."""
        consumed = self._consumed()
        return {member: sorted(consumed[member]) for member in sorted(consumed)}

    def _new_ledger(self, start: float) -> OwnershipLedger:
        """The ledger of a rebalance from `start`, of the group's partitions as consumed now."""
        consuming: dict[Any, set[Any]] = {queue: set() for queue in self.queues}
        for member, owned in self._consumed().items():
            for queue in owned:
                consuming[queue].add(member)
        self._ledger = OwnershipLedger(start, consuming)
        return self._ledger

    def _scored(
        self,
        end: float,
        *,
        releases: int,
        steps: int,
        rounds: int,
        converged: bool,
        heartbeats: int | None,
    ) -> ProtocolRun:
        """The run of the rebalance the ledger recorded, integrated up to `end`."""
        return self._ledger.finish(end).run(
            self._owners(),
            releases=releases,
            steps=steps,
            rounds=rounds,
            converged=converged,
            heartbeats=heartbeats,
        )

    def _quiet_run(self) -> ProtocolRun:
        """The run of a rebalance with nothing to do: the group as it was, costing nothing."""
        return QUIET.run(
            self._owners(),
            releases=0,
            steps=0,
            rounds=0,
            converged=True,
            heartbeats=0 if self.counts_heartbeats else None,
        )

    def restart(
        self,
        members: Iterable[Any],
        down_seconds: float,
        *,
        slow: Mapping[Any, float] | None = None,
    ) -> ProtocolRun:
        """`members` (a batch of a rolling restart) close now and start again `down_seconds`
        later under their ids. Static members back within the session timeout take their
        assignment back with no rebalance: their partitions wait unread for them and nothing
        moves. The timeout is counted here from the close; Kafka counts it from the last
        heartbeat before it, up to one interval earlier, so a restart that close to the
        timeout may rebalance in Kafka and not here. Otherwise a leave (with `slow` members)
        then a join, two rebalances added up, the join waiting for the leave's to end."""
        batch = sorted_distinct_ids(members, "member")
        everyone = sorted(self._consumed())
        for member in batch:
            if member not in everyone:
                raise ValueError(f"restarted member {member!r} is not a member of the group")
        if isinstance(down_seconds, bool) or not isinstance(down_seconds, int | float):
            raise TypeError(f"down_seconds must be seconds, not {down_seconds!r}")
        if not (math.isfinite(down_seconds) and down_seconds >= 0):
            raise ValueError(f"down_seconds must be finite and >= 0, not {down_seconds!r}")
        start = self.now
        if self.static_membership and down_seconds < self.timers.session_timeout:
            ledger = self._new_ledger(start)
            back = start + down_seconds
            consumed = self._consumed()
            for member in batch:
                for queue in sorted(consumed[member]):
                    ledger.stop(start, member, queue, revoked=False)
                    ledger.begin(back, member, queue)
                self._restart_heartbeat_timer(member, back)
            self.now = back
            # under the consumer protocol each sends three: the leave (epoch -2), the rejoin
            # and the acknowledgement of the assignment it gets back
            sent = 3 * len(batch) if self.counts_heartbeats else None
            return self._scored(
                back, releases=0, steps=0, rounds=0, converged=self._quiet, heartbeats=sent
            )
        leaving = self.change(self.queues, [m for m in everyone if m not in batch], slow=slow)
        rejoin_at = max(self.now, start + down_seconds)
        self.now = rejoin_at
        back_run = self.change(self.queues, everyone)
        return _added_up(leaving, back_run, rejoin_at - start)


def _added_up(first: ProtocolRun, second: ProtocolRun, second_starts_after: float) -> ProtocolRun:
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
