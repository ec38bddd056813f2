"""Kafka's consumer group protocol (KIP-848) as a session in seconds, over a server-side
assignor function of the contract (the broker's `uniform` or `range`; any sticky function).

Read from apache/kafka at commit 1eb7644349cb07139d6a3c1ad1986979647cac99 (4.0.0-SNAPSHOT):
group-coordinator's modern/consumer/CurrentAssignmentBuilder (the reconciliation: `build`,
`computeNextAssignment`, `ownsRevokedPartitions`) and modern/MemberState (STABLE,
UNREVOKED_PARTITIONS, UNRELEASED_PARTITIONS), GroupMetadataManager (`consumerGroupHeartbeat`:
the group epoch bumped by a membership or metadata change, the target assignment recomputed on
the next heartbeat when the group epoch is ahead of it; a leave with epoch -1, a static
member's temporary leave with epoch -2 that keeps its assignment until its session times out),
and the client's consumer/internals/MemberState (ACKNOWLEDGING: once a member has reconciled, its
next heartbeat goes at once, not at the interval); timers: kafka_timers.

The model, per change at the session's clock t0:

- A member heartbeats every `group.consumer.heartbeat.interval.ms`, and at once when it joins,
  leaves, or has just reconciled (the acknowledgement). Each heartbeat reports the partitions
  the member consumes; the coordinator bumps the group epoch on a join, a leave, a member timed
  out, or (at the next heartbeat of any member) partitions added or removed, computes the
  target assignment with the assignor (sticky to the current target) on the first heartbeat of
  a newer epoch, and runs the member's state through CurrentAssignmentBuilder (ported as
  `next_member_state`): a partition it must give up puts it in UNREVOKED_PARTITIONS until a
  heartbeat no longer reports it; a partition still held by another member (its epoch not -1)
  is withheld (UNRELEASED_PARTITIONS) until a later heartbeat of this member finds it free.
- The member reconciles to the assignment in the response at its next poll (at once, or when a
  slow member's poll loop is done: `slow_members`, seconds from the change on): it stops
  consuming what it gave up, starts consuming what it got, and acknowledges at once.
- So there is no barrier: a slow member delays only the partitions it must release, and only
  the members that wait for those; and a partition is never consumed by two members at once,
  because the coordinator hands it out only once its owner's heartbeat no longer reports it (or
  the owner was removed). The session raises AssertionError if the coordinator's records ever
  held one partition for two members, and `most_consumers()` tells the most members that
  consumed one partition at once in the last rebalance (the tests check it is 1).
- A graceful leave frees the member's partitions at once; a crash frees them when the session
  times out (`group.consumer.session.timeout.ms` after the member's last heartbeat). A static
  member (KIP-345) leaves with epoch -2 (`consumerGroupStaticMemberGroupLeave`): the
  coordinator keeps its assignment, drops its pending revocations, and times it out as a
  crash, the leave not restarting its session timer. A static member restarting within the
  session timeout (`restart`) takes back its assignment: nothing moves.
- The members' heartbeat phases at a change are drawn from `random.Random(seed)` (sorted member
  order), or kept on each member's grid ("synced"). Network and assignor time are zero.
- Not modelled: a member that misses the rebalance timeout (refused), assignment batching of
  later versions, and a member fenced for a stale epoch.

Scores per rebalance (ProtocolRun, ownership_ledger): seconds to balance, partition-seconds
unowned, paused (revoked from a member that stays) and doubly owned (zero by the property
above), `heartbeats` sent from the change until quiet, `rounds` the target assignments computed,
`releases` the revocations, `steps` the partitions a member started consuming.
Runtime complexity: per heartbeat O(|Q| / |C|) for the member's state plus the assignor's cost
on a new epoch; a change settles within a few heartbeat intervals.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from rebalancing.contract import AssignFunction, ProtocolRun
from rebalancing.protocols.kafka_common import (
    RESTART_SECONDS,
    Departures,
    HeartbeatPhases,
    KafkaGroupSession,
    planned,
)
from rebalancing.protocols.kafka_timers import ConsumerTimers
from rebalancing.protocols.ownership_ledger import OwnershipLedger

MemberStateName = Literal["STABLE", "UNREVOKED_PARTITIONS", "UNRELEASED_PARTITIONS"]

_RECONCILE, _HEARTBEAT, _EXPIRE = 0, 1, 2
"""Event priorities at one instant: a reconciliation before the acknowledgement it sends."""


class MemberRecord(NamedTuple):
    """The coordinator's record of a member (ConsumerGroupMember's assignment part): a
    NamedTuple, immutable and cheap to make at every heartbeat that moves it."""

    state: MemberStateName = "STABLE"
    epoch: int = 0
    assigned: frozenset[Any] = frozenset()
    pending_revocation: frozenset[Any] = frozenset()

    @property
    def held(self) -> frozenset[Any]:
        """The partitions the record holds: assigned, or still to be revoked."""
        return self.assigned | self.pending_revocation if self.pending_revocation else self.assigned


def next_member_state(
    record: MemberRecord,
    target_epoch: int,
    target: frozenset[Any],
    owner_of: Mapping[Any, Any],
    reported: AbstractSet[Any],
) -> MemberRecord:
    """CurrentAssignmentBuilder.build: `record` moved towards `target` (of `target_epoch`),
    given who holds each partition (`owner_of`: the coordinator's records, the member's own
    included, as Kafka's partition epochs are: a partition the member itself still has to
    revoke is not given back to it until it is revoked) and the partitions the member's
    heartbeat reports."""
    if record.state == "STABLE":
        if record.epoch == target_epoch:
            return record
        return _next_assignment(record, record.epoch, target_epoch, target, owner_of, reported)
    if record.state == "UNREVOKED_PARTITIONS":
        if not reported.isdisjoint(record.pending_revocation):
            return record
        return _next_assignment(record, record.epoch + 1, target_epoch, target, owner_of, reported)
    return _next_assignment(record, record.epoch, target_epoch, target, owner_of, reported)


def _next_assignment(
    record: MemberRecord,
    epoch: int,
    target_epoch: int,
    target: frozenset[Any],
    owner_of: Mapping[Any, Any],
    reported: AbstractSet[Any],
) -> MemberRecord:
    """CurrentAssignmentBuilder.computeNextAssignment: keep what the target keeps; revoke
    first (UNREVOKED_PARTITIONS at `epoch`) while the member still reports a partition to
    give up; else move to `target_epoch`, taking what no record holds and waiting
    (UNRELEASED_PARTITIONS) for the rest."""
    kept = record.assigned & target
    to_revoke = record.assigned - kept
    to_assign = target - kept
    unreleased = frozenset(filter(owner_of.__contains__, to_assign))
    to_assign -= unreleased
    if to_revoke and not reported.isdisjoint(to_revoke):
        return MemberRecord("UNREVOKED_PARTITIONS", epoch, kept, to_revoke)
    if to_assign:
        state: MemberStateName = "UNRELEASED_PARTITIONS" if unreleased else "STABLE"
        return MemberRecord(state, target_epoch, kept | to_assign)
    if unreleased:
        return MemberRecord("UNRELEASED_PARTITIONS", target_epoch, kept)
    return MemberRecord("STABLE", target_epoch, kept)


@dataclass
class _Tally:
    """What one change cost, counted as it runs (ProtocolRun's heartbeats, rounds, releases
    and steps)."""

    heartbeats: int = 0
    targets_computed: int = 0
    releases: int = 0
    steps: int = 0


@dataclass
class _Client:
    """A live consumer: what it consumes, what its last response assigned it, its heartbeat
    timer (a token that makes older scheduled heartbeats void) and its poll loop."""

    owned: set[Any] = field(default_factory=set)
    desired: frozenset[Any] = frozenset()  # the record's own set
    last_sent: float = 0.0
    token: int = 0
    reconciling: bool = False
    busy_until: float = 0.0


class ConsumerSession(KafkaGroupSession[ConsumerTimers]):
    """One consumer group under the consumer protocol across rebalances (the module docstring
    says how). `rebalance`, `change` and `restart` as ClassicSession's; `max_events` bounds
    the events one change may run (None: a bound that grows with the group)."""

    counts_heartbeats = True

    def __init__(
        self,
        assignor: AssignFunction,
        *,
        timers: ConsumerTimers | None = None,
        seed: int = 0,
        static_membership: bool = False,
        departures: Departures = "graceful",
        slow_members: Mapping[Any, float] | None = None,
        heartbeat_phases: HeartbeatPhases = "random",
        restart_seconds: float = RESTART_SECONDS,
        max_events: int | None = None,
    ) -> None:
        super().__init__(
            assignor,
            timers,
            ConsumerTimers,
            seed=seed,
            static_membership=static_membership,
            departures=departures,
            slow_members=slow_members,
            heartbeat_phases=heartbeat_phases,
            restart_seconds=restart_seconds,
        )
        self.max_events = max_events
        self.clients: dict[Any, _Client] = {}
        self.records: dict[Any, MemberRecord] = {}  # the coordinator's members
        self.owner_of: dict[Any, Any] = {}  # partition -> member whose record holds it
        self.group_epoch = 0
        self.target_epoch = 0
        self.target: dict[Any, frozenset[Any]] = {}
        self.metadata_stale = False
        self._events: list[tuple[float, int, int, Any, int]] = []
        self._sequence = itertools.count()
        self._expiring: dict[Any, float] = {}  # gone members the coordinator still holds
        self._tally = _Tally()

    def _consumed(self) -> dict[Any, set[Any]]:
        return {member: client.owned for member, client in self.clients.items()}

    def _restart_heartbeat_timer(self, member: Any, at: float) -> None:
        self.clients[member].last_sent = at

    # --- the coordinator -------------------------------------------------------------------

    def _set_record(self, member: Any, record: MemberRecord | None) -> None:
        """Replace `member`'s record (None: remove it) and who holds each partition, raising
        AssertionError if a partition would be held by two members' records. Only the
        partitions that the record gives up or takes change hands in `owner_of`."""
        old = self.records.get(member)
        if record is old:
            return
        held_before = old.held if old is not None else frozenset()
        held = record.held if record is not None else frozenset()
        for queue in held_before - held:
            del self.owner_of[queue]
        for queue in held - held_before:
            holder = self.owner_of.setdefault(queue, member)
            if holder != member:
                raise AssertionError(
                    f"partition {queue!r} given to {member!r} while {holder!r} holds it"
                )
        if record is None:
            del self.records[member]
        else:
            self.records[member] = record

    def _remove_member(self, member: Any) -> None:
        """A leave or a session timeout: the member's partitions are free, the epoch bumps."""
        self._set_record(member, None)
        self.target.pop(member, None)
        self.group_epoch += 1

    def _heartbeat(self, member: Any, now: float) -> None:
        """`member` heartbeats at `now` (consumerGroupHeartbeat): a join or a metadata change
        bumps the group epoch, a newer epoch gets a new target, the member's record moves
        towards it, and the member reconciles at its next poll if its assignment changed."""
        client = self.clients[member]
        self._tally.heartbeats += 1
        client.last_sent = now
        client.token += 1
        self._push(now + self.timers.heartbeat_interval, _HEARTBEAT, member, client.token)
        if member not in self.records:  # a join
            self._set_record(member, MemberRecord())
            self.group_epoch += 1
        if self.metadata_stale:
            self.metadata_stale = False
            self.group_epoch += 1
        if self.group_epoch > self.target_epoch:
            members = sorted(self.records)
            queues = set(self.queues)
            previous = {
                other: sorted(self.target.get(other, frozenset()) & queues) for other in members
            }
            plan = planned(self.assignor, self.queues, members, previous)
            self.target = {other: frozenset(plan[other]) for other in members}
            self.target_epoch = self.group_epoch
            self._tally.targets_computed += 1
        record = next_member_state(
            self.records[member],
            self.target_epoch,
            self.target[member],
            self.owner_of,
            client.owned,
        )
        self._set_record(member, record)
        client.desired = record.assigned
        if client.desired != client.owned and not client.reconciling:
            client.reconciling = True
            self._push(max(now, client.busy_until), _RECONCILE, member, 0)

    def _reconcile(self, member: Any, now: float) -> None:
        """`member`'s poll at `now`: it consumes what its last response assigned it."""
        client = self.clients[member]
        client.reconciling = False
        released = client.owned - client.desired
        taken = client.desired - client.owned
        self._ledger.stop_all(now, member, released, revoked=True)
        self._ledger.begin_all(now, member, taken)
        self._tally.releases += len(released)
        self._tally.steps += len(taken)
        client.owned = set(client.desired)
        self._heartbeat(member, now)  # the acknowledgement goes at once

    # --- the simulation --------------------------------------------------------------------

    def _push(self, time: float, priority: int, member: Any, token: int) -> None:
        """Schedule an event; a heartbeat whose `token` is no longer its client's is void
        (the timer restarted since), and token 0 (a join's first heartbeat) never is."""
        heapq.heappush(self._events, (time, priority, next(self._sequence), member, token))

    def _member_settled(self, member: Any) -> bool:
        """Whether `member` is settled: a live member whose join the coordinator has seen, not
        reconciling, its record STABLE on the newest target and its client consuming exactly
        what the record assigns; or a member gone from the group and from the records."""
        client = self.clients.get(member)
        record = self.records.get(member)
        if client is None or record is None:
            return client is None and record is None
        return (
            not client.reconciling
            and record.state == "STABLE"
            and record.epoch == self.target_epoch
            and client.owned == record.assigned
        )

    def _group_settled(self) -> bool:
        """No member being timed out, and a group with members has no change of epoch or of
        partitions waiting for a new target (the members' part is `_member_settled`)."""
        if self._expiring:
            return False
        return not self.records or (
            not self.metadata_stale and self.group_epoch == self.target_epoch
        )

    def _next_regular(self, client: _Client, after: float) -> float:
        """The client's next heartbeat on the interval after `after`: drawn in the interval
        ("random" phases) or on the grid of its last one ("synced")."""
        interval = self.timers.heartbeat_interval
        if self.heartbeat_phases == "random":
            return after + (1.0 - self.rng.random()) * interval
        beats = math.floor((after - client.last_sent) / interval) + 1
        return client.last_sent + beats * interval

    def change(
        self,
        queues: Iterable[Any],
        consumers: Iterable[Any],
        *,
        crashed: Iterable[Any] = (),
        slow: Mapping[Any, float] | None = None,
        departures: Departures | None = None,
    ) -> ProtocolRun:
        """KafkaGroupSession.change, under the consumer protocol: heartbeats until every
        member is STABLE on the newest target and consumes what it is assigned."""
        read = self._read_change(queues, consumers, crashed, slow, slack=0.0, departures=departures)
        if read.unchanged:
            return self._quiet_run()
        sorted_queues, sorted_consumers = read.queues, read.consumers
        start = self.now
        self._events = []
        for member, time in self._expiring.items():  # left by a run cut short
            self._push(time, _EXPIRE, member, 0)
        self._tally = _Tally()
        if sorted_queues != self.queues:  # both sorted and distinct
            self.metadata_stale = True
            self._keep_only(set(sorted_queues))
        self.queues = sorted_queues
        ledger = self._new_ledger(start)
        for member in sorted(self.clients):
            if member not in sorted_consumers:
                crash = member in read.crashed or read.departures == "crash"
                self._depart(member, crash, start, ledger)
        for member in sorted_consumers:
            present = self.clients.get(member)
            if present is None:
                self.clients[member] = _Client(last_sent=start)
                self._push(start, _HEARTBEAT, member, 0)
            else:
                client = present
                client.busy_until = start + read.lateness.get(member, 0.0)
                client.token += 1
                self._push(self._next_regular(client, start), _HEARTBEAT, member, client.token)
        return self._run_until_settled()

    def _keep_only(self, queues: set[Any]) -> None:
        """Partitions removed from the group leave every record and every client (which hold
        only the group's partitions otherwise)."""
        for member in list(self.records):
            record = self.records[member]
            self._set_record(
                member,
                record._replace(
                    assigned=record.assigned & queues,
                    pending_revocation=record.pending_revocation & queues,
                ),
            )
        for client in self.clients.values():
            client.owned &= queues
            client.desired &= queues

    def _depart(self, member: Any, crashed: bool, start: float, ledger: OwnershipLedger) -> None:
        """`member` stops consuming at `start`; the coordinator hears of it as its departure
        says: a leave at once, a crash or a static member's leave when its session times
        out."""
        client = self.clients.pop(member)
        ledger.stop_all(start, member, client.owned, revoked=False)
        if not crashed and not self.static_membership:  # a leave (epoch -1)
            self._tally.heartbeats += 1
            self._remove_member(member)
            return
        if not crashed:  # a static member's temporary leave (epoch -2): the coordinator keeps
            # its assignment, drops what it still had to revoke, and lets the session timer
            # of its last heartbeat run out (the leave does not restart it)
            self._tally.heartbeats += 1
            kept = self.records.get(member)  # None: its join was never heard
            if kept is not None:
                self._set_record(member, kept._replace(pending_revocation=frozenset()))
        # its last heartbeat: one interval before the next it would have sent
        last = self._next_regular(client, start) - self.timers.heartbeat_interval
        self._expire_at(member, last + self.timers.session_timeout)

    def _expire_at(self, member: Any, time: float) -> None:
        if member in self.records:
            self._expiring[member] = time
            self._push(time, _EXPIRE, member, 0)

    def _run_until_settled(self) -> ProtocolRun:
        """Run the events in time order until the group is settled, or until `max_events`
        (then the run has not converged), and score the rebalance."""
        bound = self.max_events
        if bound is None:
            bound = 10_000 + 200 * (len(self.queues) + len(self.clients))
        events = 0
        converged = True
        # the members not settled; an event changes its own member's state only, except a
        # new target, which every member's record is measured against
        unsettled = {m for m in self.clients.keys() | self.records if not self._member_settled(m)}
        while unsettled or not self._group_settled():
            if events >= bound or not self._events:
                converged = False
                break
            time, priority, _, member, token = heapq.heappop(self._events)
            events += 1
            self.now = time
            target_epoch = self.target_epoch
            if priority == _EXPIRE:
                if self._expiring.get(member) == time:
                    del self._expiring[member]
                    self._remove_member(member)
            elif member not in self.clients:
                continue
            elif priority == _RECONCILE:
                self._reconcile(member, time)
            elif token == self.clients[member].token or token == 0:
                self._heartbeat(member, time)
            touched = [member] if self.target_epoch == target_epoch else self.records.keys()
            for other in touched:
                if self._member_settled(other):
                    unsettled.discard(other)
                else:
                    unsettled.add(other)
        self._quiet = converged
        return self._scored(
            self.now,
            releases=self._tally.releases,
            steps=self._tally.steps,
            rounds=self._tally.targets_computed,
            converged=converged,
            heartbeats=self._tally.heartbeats,
        )
