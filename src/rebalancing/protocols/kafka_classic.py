"""Kafka's classic group protocol, eager and cooperative (KIP-429), as a session in seconds,
over any assignor function of the contract (range, round_robin, sticky, ...).

Read from apache/kafka at commit 1eb7644349cb07139d6a3c1ad1986979647cac99 (4.0.0-SNAPSHOT):
the group coordinator's GroupMetadataManager (`prepareRebalance`,
`maybeCompleteJoinElseSchedule`, `tryCompleteInitialRebalanceElseSchedule`,
`addMemberThenRebalanceOrCompleteJoin`) and classic/ClassicGroup (`hasAllMembersJoined`,
`rebalanceTimeoutMs`); the client's AbstractCoordinator and ConsumerCoordinator
(`onJoinPrepare`, `onJoinComplete`, `validateCooperativeAssignment`); timers: kafka_timers.

The model, per change at the session's clock t0 (the end of the previous rebalance):

- What starts a rebalance: a join (JoinGroup at t0), a graceful leave of a dynamic member
  (LeaveGroup at t0), a crash, or a static member's leave (a static member sends no
  LeaveGroup: KIP-345), which the coordinator learns when the member's session times out,
  `session.timeout.ms` after its last heartbeat before t0; partitions added or removed, which
  the group leader sees at its next metadata refresh (`metadata.max.age.ms`: at a time drawn
  within it, or a whole period after t0 with synced phases) and then rejoins at once.
- The join barrier: the other members learn of the rebalance from their next heartbeat
  (REBALANCE_IN_PROGRESS) and rejoin from their next poll: at once, or, for a slow member
  (`slow_members`: seconds its poll loop stays busy from the change on), when that ends. The
  join phase ends when every member has joined (hasAllMembersJoined) and every crashed member
  has been timed out; it never reaches the rebalance timeout here (a lateness that would is
  refused). An empty group's first join waits `group.initial.rebalance.delay.ms`, and again
  as long as members kept joining, within the rebalance timeout: 3 s for one member, 6 s for
  several that start together.
- Sync: the leader runs the assignor on what each member owns and every member gets its
  assignment when the join ends (network and assignor time are zero); every member's heartbeat
  timer restarts there.
- Eager: every member revokes everything it owns when it rejoins (onJoinPrepare), so every
  partition is paused from its owner's rejoin to the sync. Cooperative: members keep what they
  own through the join; a partition the plan moves is withheld from its new owner in this
  round (what CooperativeStickyAssignor does, and what ConsumerCoordinator's validation asks of
  any cooperative assignor: it is done here for every assignor) and revoked by its owner at the
  sync, which rejoins at once (requestRejoin); the others learn of that second rebalance from a
  heartbeat, one interval after the sync, and the second sync hands the withheld partitions
  over. Further rounds follow while a sync still revokes (up to `max_rounds`).
- A static member that restarts within the session timeout (`restart`) comes back under its
  group.instance.id to its cached assignment with no rebalance: its partitions wait unread for
  it and nothing moves. A dynamic member's restart, or a static one's that outlasts the
  session timeout, is a leave and a join (two rebalances; the join waits for the first to end).

Scores per rebalance (ProtocolRun, ownership_ledger): seconds to balance, partition-seconds
unowned, paused (revoked from a member that stays) and doubly owned (never, here: an evicted
member, the one way the classic protocol has two owners, is not modelled), `rounds` the
join/sync rounds, `releases` the revocations from members that stay, `steps` the partitions
handed to a member at a sync. `heartbeats` is None (the classic protocol counts in rounds).
Nothing is random but the heartbeat and metadata phases, drawn from `random.Random(seed)` in
sorted member order.
Runtime complexity: per round, the assignor's cost plus O(|Q| + |C|).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from rebalancing.contract import AssignFunction, ProtocolRun
from rebalancing.protocols.kafka_common import (
    RESTART_SECONDS,
    Change,
    Departures,
    HeartbeatPhases,
    KafkaGroupSession,
    planned,
)
from rebalancing.protocols.kafka_timers import ClassicTimers
from rebalancing.protocols.ownership_ledger import OwnershipLedger

ClassicProtocol = Literal["eager", "cooperative"]


class ClassicSession(KafkaGroupSession[ClassicTimers]):
    """One classic Kafka consumer group across rebalances (the module docstring says how).

    `rebalance(queues, consumers)`: the StrategySession hook; a member missing from
    `consumers` left as `departures` says (a static member's leave is always learnt at its
    session timeout). `change(queues, consumers, crashed=..., slow=...)`: the same with the
    crashed members and the slow ones of this change named. `restart(members, down_seconds)`:
    a rolling-restart batch: `members` stop now and start again `down_seconds` later.
    `apply_change(queues, consumers, kind)`: a scenario's change by its kind (a crash, a
    rolling restart's leave or rejoin step, each down `restart_seconds`; KafkaGroupSession).
    """

    counts_heartbeats = False  # the classic protocol counts in join/sync rounds

    def __init__(
        self,
        assignor: AssignFunction,
        *,
        protocol: ClassicProtocol = "eager",
        timers: ClassicTimers | None = None,
        seed: int = 0,
        static_membership: bool = False,
        departures: Departures = "graceful",
        slow_members: Mapping[Any, float] | None = None,
        heartbeat_phases: HeartbeatPhases = "random",
        restart_seconds: float = RESTART_SECONDS,
        max_rounds: int = 8,
    ) -> None:
        super().__init__(
            assignor,
            timers,
            ClassicTimers,
            seed=seed,
            static_membership=static_membership,
            departures=departures,
            slow_members=slow_members,
            heartbeat_phases=heartbeat_phases,
            restart_seconds=restart_seconds,
        )
        if protocol not in ("eager", "cooperative"):
            raise ValueError(f"unknown protocol {protocol!r}; known: eager, cooperative")
        if isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or max_rounds < 1:
            raise ValueError(f"max_rounds must be an int >= 1, not {max_rounds!r}")
        self.protocol = protocol
        self.max_rounds = max_rounds
        self.owned: dict[Any, set[Any]] = {}  # member -> the partitions it consumes
        self.phase: dict[Any, float] = {}  # member -> a time it heartbeats at
        self.join_order: dict[Any, int] = {}  # member -> when it joined (the leader: first)
        self._joins = 0

    def _consumed(self) -> dict[Any, set[Any]]:
        return self.owned

    def _restart_heartbeat_timer(self, member: Any, at: float) -> None:
        self.phase[member] = at

    # --- clocks ----------------------------------------------------------------------------

    def next_heartbeat(self, member: Any, after: float) -> float:
        """`member`'s first heartbeat strictly after `after`."""
        return self.next_heartbeats([member], after)[member]

    def next_heartbeats(self, members: Iterable[Any], after: float) -> dict[Any, float]:
        """Each of `members` -> its first heartbeat strictly after `after`."""
        interval = self.timers.heartbeat_interval
        beats: dict[Any, float] = {}
        for member in members:
            phase = self.phase[member]
            time = phase + (math.floor((after - phase) / interval) + 1) * interval
            beats[member] = time if time > after else time + interval
        return beats

    def last_heartbeat(self, member: Any, at: float) -> float:
        """`member`'s last heartbeat at or before `at`."""
        interval = self.timers.heartbeat_interval
        phase = self.phase[member]
        return phase + math.floor((at - phase) / interval) * interval

    def _draw_phases(self, now: float) -> None:
        """With "random" phases, each member's heartbeat falls anywhere in its interval
        after the change at `now` (drawn in sorted member order); "synced" keeps the grid."""
        if self.heartbeat_phases == "random":
            interval = self.timers.heartbeat_interval
            for member in sorted(self.phase):
                self.phase[member] = now + self.rng.random() * interval

    def _initial_join_end(self, first: float, later: list[float]) -> float:
        """When an empty group's first join phase ends (tryCompleteInitialRebalanceElseSchedule):
        a delay after the first join, extended while members kept joining, within the rebalance
        timeout."""
        delay_step = self.timers.initial_rebalance_delay
        delay = delay_step
        remaining = max(self.timers.rebalance_timeout - delay_step, 0.0)
        check = first + delay
        pending = sorted(later)
        index = 0
        while True:
            added = False
            while index < len(pending) and pending[index] <= check:
                added, index = True, index + 1
            if not (added and remaining != 0):
                return check
            new_delay = min(delay_step, remaining)
            remaining = max(remaining - delay, 0.0)
            delay = new_delay
            check += new_delay

    # --- the session -----------------------------------------------------------------------

    def change(
        self,
        queues: Iterable[Any],
        consumers: Iterable[Any],
        *,
        crashed: Iterable[Any] = (),
        slow: Mapping[Any, float] | None = None,
        departures: Departures | None = None,
    ) -> ProtocolRun:
        """KafkaGroupSession.change, under the classic protocol: join/sync rounds until a
        sync revokes nothing (or `max_rounds`)."""
        read = self._read_change(
            queues,
            consumers,
            crashed,
            slow,
            slack=self.timers.heartbeat_interval,
            departures=departures,
        )
        if read.unchanged:
            return self._quiet_run()
        start = self.now
        self._draw_phases(start)
        metadata_changed = read.queues != self.queues  # both sorted and distinct
        self.queues = read.queues
        if metadata_changed:
            queue_set = set(read.queues)
            for member in self.owned:
                self.owned[member] &= queue_set
        ledger = self._new_ledger(start)
        joined, timed_out, told_at_once = self._apply_membership(read, start, ledger)
        if not read.consumers:
            self._quiet = True
            return self._scored(
                start, releases=0, steps=0, rounds=0, converged=True, heartbeats=None
            )
        own_join, trigger = self._first_joins(
            read, start, joined, timed_out, told_at_once, metadata_changed
        )
        return self._join_sync_rounds(read, start, ledger, own_join, trigger, timed_out)

    def _apply_membership(
        self, read: Change, start: float, ledger: OwnershipLedger
    ) -> tuple[list[Any], list[float], bool]:
        """Drop the members gone from `read` (their partitions stop at `start`) and add the
        new ones. Returns (the members that joined, when the coordinator times out each
        departure it learns of that way, whether a departure sent a LeaveGroup)."""
        timed_out: list[float] = []
        told_at_once = False
        wanted = set(read.consumers)
        for member in [member for member in self.owned if member not in wanted]:
            ledger.stop_all(start, member, self.owned.pop(member), revoked=False)
            crash = member in read.crashed or read.departures == "crash"
            if crash or self.static_membership:
                timed_out.append(self.last_heartbeat(member, start) + self.timers.session_timeout)
            else:
                told_at_once = True
            del self.phase[member]
            del self.join_order[member]
        joined = [member for member in read.consumers if member not in self.owned]
        for member in joined:
            self.owned[member] = set()
            self.phase[member] = start
            self.join_order[member] = self._joins
            self._joins += 1
        return joined, timed_out, told_at_once

    def _first_joins(
        self,
        read: Change,
        start: float,
        joined: list[Any],
        timed_out: list[float],
        told_at_once: bool,
        metadata_changed: bool,
    ) -> tuple[dict[Any, float], float]:
        """Who joins of its own accord, and when (new members at `start`, the leader at its
        metadata refresh when partitions changed), and when the coordinator first prepares
        the rebalance."""
        own_join = {member: start for member in joined}
        triggers = [*timed_out]
        if joined or told_at_once:
            triggers.append(start)
        if metadata_changed and read.staying:
            leader = min(read.staying, key=self.join_order.__getitem__)
            if self.heartbeat_phases == "random":
                refresh = start + self.rng.random() * self.timers.metadata_max_age
            else:
                refresh = start + self.timers.metadata_max_age
            own_join[leader] = min(own_join.get(leader, math.inf), refresh)
            triggers.append(refresh)
        if not triggers:  # nothing new, but the last rebalance did not settle: all rejoin
            triggers.append(start)
            own_join.update({member: start for member in read.consumers})
        return own_join, min(triggers)

    def _join_sync_rounds(
        self,
        read: Change,
        start: float,
        ledger: OwnershipLedger,
        own_join: dict[Any, float],
        trigger: float,
        timed_out: list[float],
    ) -> ProtocolRun:
        """The join/sync rounds from the rebalance prepared at `trigger` until a sync revokes
        nothing (or `max_rounds`), and their run."""
        members = read.consumers
        initial = not read.staying and not timed_out  # an empty group's first join
        busy = {member: start + read.lateness.get(member, 0.0) for member in members}
        rounds = releases = steps = 0
        end = start
        converged = False
        while rounds < self.max_rounds:
            rounds += 1
            # a member rejoins when it learns of the rebalance (at its own join, or from its
            # next heartbeat) and its poll loop is free
            learnt = self.next_heartbeats(members, trigger)
            for member, time in own_join.items():
                learnt[member] = min(time, learnt[member])
            joins = {member: max(learnt[member], busy[member]) for member in members}
            if initial:
                first, *later = sorted(joins.values())
                end = max(self._initial_join_end(first, later), max(joins.values()))
            else:
                end = max([*joins.values(), *timed_out])
            initial, timed_out = False, []
            previous = {member: sorted(self.owned[member]) for member in members}
            if self.protocol == "eager":
                for member in members:  # each revokes everything at its rejoin
                    ledger.stop_all(joins[member], member, self.owned[member], revoked=True)
                    releases += len(self.owned[member])
            target = planned(self.assignor, read.queues, members, previous)
            revokers, handed = self._sync(ledger, end, target, previous)
            steps += handed
            self.phase.update(dict.fromkeys(members, end))  # heartbeat timers restart at the sync
            if not revokers:
                converged = True
                break
            releases += sum(revokers.values())
            trigger = end
            own_join = dict.fromkeys(revokers, end)
        self.now = end
        self._quiet = converged
        return self._scored(
            end, releases=releases, steps=steps, rounds=rounds, converged=converged, heartbeats=None
        )

    def _sync(
        self,
        ledger: OwnershipLedger,
        now: float,
        target: dict[Any, set[Any]],
        previous: dict[Any, list[Any]],
    ) -> tuple[dict[Any, int], int]:
        """Hand out `target` at `now`; under the cooperative protocol, withhold what another
        member still owns and have the owners revoke it. Returns (member -> partitions it
        revoked, partitions handed to a member that did not consume them)."""
        revokers: dict[Any, int] = {}
        handed = 0
        if self.protocol == "eager":
            for member in sorted(target):
                ledger.begin_all(now, member, target[member])
                self.owned[member] = target[member]  # `planned` made the sets for us
                handed += len(target[member])
            return revokers, handed
        owned_before = set().union(*previous.values())
        for member in sorted(target):
            owned = self.owned[member]  # previous[member], as a set
            if owned == target[member]:
                continue  # it keeps what it has: nothing to revoke, nothing to hand it
            revoked = owned - target[member]
            gained = target[member] - owned_before
            ledger.stop_all(now, member, revoked, revoked=True)
            ledger.begin_all(now, member, gained)
            self.owned[member] = (owned - revoked) | gained
            handed += len(gained)
            if revoked:
                revokers[member] = len(revoked)
        return revokers, handed


def eager_session(assignor: AssignFunction, **options: Any) -> ClassicSession:
    """A classic group under the eager protocol (every member revokes all at every rebalance)."""
    return ClassicSession(assignor, protocol="eager", **options)


def cooperative_session(assignor: AssignFunction, **options: Any) -> ClassicSession:
    """A classic group under the cooperative protocol (KIP-429)."""
    return ClassicSession(assignor, protocol="cooperative", **options)
