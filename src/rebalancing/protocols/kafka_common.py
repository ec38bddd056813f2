"""What the sessions of Kafka's two group protocols share (kafka_classic, kafka_consumer): their
options and how a change's arguments are checked, the assignor's plan checked, and
`KafkaGroupSession`, the base class that holds the group's clock, partitions and ledger, reads
a change, scores a rebalance from the ledger, runs a rolling restart (a static member's
return with no rebalance, or a leave and a join added up), and applies a scenario's change by
its kind (`apply_change`: a crash, a rolling restart's leave and rejoin, a graceful change).
Each protocol module keeps only how its coordinator and members move partitions."""

from __future__ import annotations

import math
import random
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar, Generic, Literal, NamedTuple, TypeVar

from rebalancing.contract import AssignFunction, ProtocolRun, SortedIds, sorted_distinct_ids
from rebalancing.protocols.kafka_timers import ClassicTimers, ConsumerTimers
from rebalancing.protocols.ownership_ledger import QUIET, OwnershipLedger

Departures = Literal["graceful", "crash"]
"""How the members that `rebalance` finds gone went: a graceful close (the member tells the
coordinator at once) or a crash (the coordinator learns it when the session times out)."""

HeartbeatPhases = Literal["random", "synced"]
"""Where a change falls in each member's heartbeat cycle: drawn from the seed per member and
change ("random"), or every member's heartbeats kept on the grid of its last one ("synced":
the worked timelines' choice, nothing drawn)."""


RESTART_SECONDS = 30.0
"""How long a restarted consumer is down by default (`restart_seconds`): from its close to its
first heartbeat under the same id. Argued, not measured: the stop of a Kubernetes pod is bounded
by its default terminationGracePeriodSeconds of 30 s and a consumer that closes on SIGTERM
takes much less; the start is the process's and the client's (a JVM's start and the first
connection to the coordinator), seconds to tens of seconds. 30 s keeps a restart within Kafka
4's default session timeouts (45 s, session.timeout.ms and group.consumer.session.timeout.ms;
KIP-735 raised the classic one from 10 s), the case static membership is configured for."""

Timers = TypeVar("Timers", ClassicTimers, ConsumerTimers)


def checked_seconds(name: str, seconds: Any) -> float:
    """`seconds` as a float, checked: finite and >= 0 (TypeError or ValueError naming `name`)."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise TypeError(f"{name} must be seconds, not {seconds!r}")
    if not (math.isfinite(seconds) and seconds >= 0):
        raise ValueError(f"{name} must be finite and >= 0, not {seconds!r}")
    return float(seconds)


def checked_lateness(
    slow: Mapping[Any, float], members: Iterable[Any], rebalance_timeout: float, slack: float
) -> dict[Any, float]:
    """`slow` (member -> seconds its poll loop is busy from the change on) checked: members of
    `members`, finite seconds >= 0 and below the rebalance timeout less `slack` (a member later
    than that is evicted, which is not modelled)."""
    checked: dict[Any, float] = {}
    if not slow:
        return checked
    known = set(members)
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


def checked_ids(ids: Iterable[Any], kind: str) -> SortedIds:
    """`ids` (of `kind`, "queue" or "consumer") sorted and checked once (ValueError on a
    duplicate, TypeError on an unusable id): a SortedIds is taken as it is, and the session
    hands its own on to `change` so that they are not checked again."""
    return ids if type(ids) is SortedIds else SortedIds(ids, kind)


def planned(
    assignor: AssignFunction,
    queues: Sequence[Any],
    consumers: Sequence[Any],
    previous: Mapping[Any, Iterable[Any]],
) -> dict[Any, set[Any]]:
    """The assignor's plan as sets, checked: every consumer a key, every queue once."""
    plan = assignor(queues, consumers, previous)
    if plan.keys() != set(consumers):
        raise ValueError(f"the assignor's plan has consumers {sorted(plan)!r}, not {consumers!r}")
    given = {consumer: set(plan[consumer]) for consumer in consumers}
    # as many as the queues, and all of them: each once
    if sum(map(len, plan.values())) != len(queues) or set().union(*given.values()) != set(queues):
        raise ValueError("the assignor's plan does not give every queue exactly once")
    return given


class Change(NamedTuple):
    """A change's arguments, checked: the group's partitions and members after it (sorted),
    the members that crashed (the others gone left as `departures` says), the members there
    before and after it, how late each of those polls (member -> seconds from the change on),
    and whether it changes nothing (the last rebalance converged and the group is the same:
    no rebalance to run)."""

    queues: list[Any]
    consumers: list[Any]
    crashed: set[Any]
    staying: list[Any]
    lateness: dict[Any, float]
    departures: Departures
    unchanged: bool


class KafkaGroupSession(ABC, Generic[Timers]):
    """What a classic and a consumer-protocol session share: the options, the clock `now` (the
    end of the last rebalance), the group's partitions, the ledger of the last rebalance, and
    `rebalance` and `restart` over the subclass's `change`.

    `apply_change(queues, consumers, kind)` (rebalancing.contract.ChangeAwareSession) runs a
    scenario's change by its kind: "crash", the members gone crashed (noticed at their session
    timeout); "rolling_restart", the members gone are restarting and come back `restart_seconds`
    after they left, at a later change that brings them back: static members back within the
    session timeout are down with no rebalance (their partitions wait, unread, and come back to
    them: the leave's run shows them unowned, the return's run costs the wait), others leave
    and join again, the join no sooner than `restart_seconds` after the leave; any other kind, a
    graceful leave. While a static batch is down, a call that changes nothing else keeps it
    down; one that changes anything else ends its restart (the coordinator then times it out).
    `rebalance` reads a departure as `departures` says (a caller that cannot tell).

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
        restart_seconds: float = RESTART_SECONDS,
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
        self.restart_seconds = checked_seconds("restart_seconds", restart_seconds)
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
        self._down: set[Any] = set()  # static members restarting with no rebalance
        self._left_at: dict[Any, float] = {}  # other restarting members -> when they left

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
        departures: Departures | None = None,
    ) -> ProtocolRun:
        """The group is now `queues` x `consumers` as of the session's clock; the members of
        `crashed` (gone from `consumers`) crashed, the others that went left as `departures`
        says (None: the session's option); `slow` adds to `slow_members` for this change. Runs
        until the group is quiet."""

    def rebalance(self, queues: Iterable[Any], consumers: Iterable[Any]) -> ProtocolRun:
        """The group is now `queues` x `consumers` (StrategySession): a static member that is
        down and is back in `consumers` returns; the rest is `change`."""
        return self._applied(queues, consumers, "", self.departures)

    def apply_change(
        self, queues: Iterable[Any], consumers: Iterable[Any], kind: str
    ) -> ProtocolRun:
        """The group is now `queues` x `consumers` after a change of `kind` (the class
        docstring says what each kind does; rebalancing.contract.ChangeAwareSession)."""
        if not isinstance(kind, str):
            raise TypeError(f"kind must be a change kind's name, not {kind!r}")
        return self._applied(queues, consumers, kind, "graceful")

    def _applied(
        self, queues: Iterable[Any], consumers: Iterable[Any], kind: str, departures: Departures
    ) -> ProtocolRun:
        """`apply_change` and `rebalance`: the members down that `consumers` brings back
        return first (no rebalance), then the rest of the change runs."""
        queue_ids, consumer_ids = checked_ids(queues, "queue"), checked_ids(consumers, "consumer")
        sorted_queues, sorted_consumers = list(queue_ids), list(consumer_ids)
        wanted = consumer_ids.as_set
        returning = sorted(member for member in self._down if member in wanted)
        back: ProtocolRun | None = None
        started = self.now
        if returning:
            back = self._return(returning)
        consumed = self._consumed()
        gone = sorted(m for m in consumed if m not in self._down and m not in wanted)
        joining = [member for member in sorted_consumers if member not in consumed]
        restarting = kind == "rolling_restart" and bool(gone)
        static_restart = restarting and self._restart_is_static() and not joining
        if static_restart and back is None and sorted_queues == self.queues:
            return self._go_down(gone)
        rejoining = [member for member in joining if member in self._left_at]
        if rejoining:  # a restarted member is back no sooner than restart_seconds after it left
            due = max(self._left_at.pop(member) for member in rejoining) + self.restart_seconds
            self.now = max(self.now, due)
        if restarting:
            self._left_at.update(dict.fromkeys(gone, self.now))
        crashed = gone if kind == "crash" else []
        if back is not None and self._nothing_else(sorted_queues, sorted_consumers):
            return back
        resumed = self.now
        run = self.change(queue_ids, consumer_ids, crashed=crashed, departures=departures)
        return run if back is None else _added_up(back, run, resumed - started)

    def _restart_is_static(self) -> bool:
        """Whether a restart of `restart_seconds` moves nothing: static members back within
        the session timeout (counted from the close, as `restart` says)."""
        return self.static_membership and self.restart_seconds < self.timers.session_timeout

    def _nothing_else(self, queues: list[Any], consumers: list[Any]) -> bool:
        """Whether the group is already `queues` x `consumers`, settled."""
        return self._quiet and queues == self.queues and consumers == sorted(self._consumed())

    def _go_down(self, batch: list[Any]) -> ProtocolRun:
        """A static batch closes for a restart: no rebalance; its partitions stop being read
        (the run's owners leave them out) until it is back. Under the consumer protocol each
        member sends its leave (epoch -2)."""
        self._down.update(batch)
        return ProtocolRun(
            owners=self._owners(),
            releases=0,
            steps=0,
            rounds=0,
            converged=self._quiet,
            queues_paused=0,
            seconds_to_balance=0.0,
            queue_seconds_unowned=0.0,
            queue_seconds_doubly_owned=0.0,
            queue_seconds_paused=0.0,
            heartbeats=len(batch) if self.counts_heartbeats else None,
        )

    def _return(self, batch: list[Any]) -> ProtocolRun:
        """A static batch that went down (`_go_down`) is back: `restart`'s run, its wait
        counted from the close (the clock has not moved since), less the leaves `_go_down`
        counted."""
        self._down.difference_update(batch)
        run = self.restart(batch, self.restart_seconds)
        if run.heartbeats is None:
            return run
        return replace(run, heartbeats=run.heartbeats - len(batch))

    def held_owners(self) -> dict[Any, list[Any]]:
        """Each static member down for a restart (`_go_down`) -> the partitions the
        coordinator holds for it, sorted; empty when none is down. The run's owners leave
        them out, as nobody reads them (rebalancing.evaluation.scoring.runner.HoldingSession:
        the scores count them as held, not orphaned)."""
        consumed = self._consumed()
        return {member: sorted(consumed[member]) for member in sorted(self._down)}

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
        departures: Departures | None,
    ) -> Change:
        """`change`'s arguments checked (a slow member must poll `slack` seconds before its
        rebalance timeout), with the errors naming the culprit. A change that changes
        anything while static members are down ends their restart (they are departures)."""
        sorted_queues = sorted_distinct_ids(queues, "queue")
        sorted_consumers = sorted_distinct_ids(consumers, "consumer")
        if departures is None:
            departures = self.departures
        if departures not in ("graceful", "crash"):
            raise ValueError(f"unknown departures {departures!r}; known: graceful, crash")
        members = self._consumed()
        crashed_members = set(crashed)
        for member in crashed_members:
            if member not in members or member in sorted_consumers:
                raise ValueError(f"crashed member {member!r} is not a member that left")
        staying = [member for member in sorted_consumers if member in members]
        lateness = checked_lateness(
            {**self.slow_members, **(slow or {})}, staying, self.timers.rebalance_timeout, slack
        )
        up = sorted(member for member in members if member not in self._down)
        unchanged = self._quiet and sorted_queues == self.queues and sorted_consumers == up
        if not unchanged:
            self._down.clear()
        return Change(
            sorted_queues,
            sorted_consumers,
            crashed_members,
            staying,
            lateness,
            departures,
            unchanged,
        )

    def _owners(self) -> dict[Any, list[Any]]:
        """Each live member that is not down -> the partitions it consumes, sorted
        (ProtocolRun.owners)."""
        consumed = self._consumed()
        return {
            member: sorted(consumed[member])
            for member in sorted(consumed)
            if member not in self._down
        }

    def _new_ledger(self, start: float) -> OwnershipLedger:
        """The ledger of a rebalance from `start`, of the group's partitions as consumed now."""
        self._ledger = OwnershipLedger.of_holdings(start, self.queues, self._consumed())
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
        down_seconds = checked_seconds("down_seconds", down_seconds)
        start = self.now
        self._down.difference_update(batch)
        if self.static_membership and down_seconds < self.timers.session_timeout:
            ledger = self._new_ledger(start)
            back = start + down_seconds
            consumed = self._consumed()
            for member in batch:
                ledger.stop_all(start, member, consumed[member], revoked=False)
                ledger.begin_all(back, member, consumed[member])
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
