"""Leaderless ownership protocols in time: members that each run a periodic cycle over a shared
table of ownership records written conditionally (Event Hubs' ownership claims, KCL's lease
taking), simulated deterministically, with what a change cost in seconds.

The table holds one record per queue: its owner (a member, one that has gone, or none) and a
version (the ETag, or the lease counter), which every write bumps. Each member's cycle reads the
table, decides what to take (the system's rule: `CycleGroup.decide`) and writes each take on
the condition that the record's version is still the one read: of two takes of one record, the
first written wins and the other fails. Members whose cycles fall at the same instant (those that
start together) read the same table, and write concurrently: each its takes in its own order, at
one pace, the writers of each round in an order drawn from the session's seed.

Who processes a queue is what each member believes: a member believes it owns a queue from its
successful write on; a member whose queue was taken keeps processing it until it notices (the
system's rule: `notice_time`; Event Hubs' next cycle, KCL's next renewal), which is the time two
members both believe they own it. A member that leaves stops at once. From these beliefs the
run reports, from the change on: the queue-seconds with no member processing (a departed
member's queues until taken, new queues until claimed), the queue-seconds with two or more, and
the seconds until the last change of who processes what.

Everything random (cycle jitter, which record to take, the order of concurrent writes) comes
from one `random.Random(seed)` and from the sorted ids only, never from `hash()`.
Runtime complexity: per member cycle O(|C|) for the decision plus its writes, O(log |C|) per
event; a rebalance runs until every member has run a cycle that took nothing.

Kept in one module: the table (Record, Beliefs), the group's rules (`rule_violations`) and the
cycle that changes the table must be read together; each system's hooks are its own module's.
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from rebalancing.contract import ProtocolRun, empty_plan, prepare, sorted_distinct_ids

ItemT = TypeVar("ItemT")

TakeKind = Literal["claim", "steal"]

NO_OWNER: Any = object()
"""The owner of an unowned record (distinct from every id, None included)."""

_NOTICE, _CYCLE, _EXPIRY = 0, 1, 2
"""Event priorities at one instant: stale owners notice first, then the cycles, then records
expire (a record expires after its deadline, so a cycle at the deadline still sees it held)."""


class IndexedSet(Generic[ItemT]):
    """A set whose items sit in a list (order from the history of adds and removes, never from
    `hash()`), with O(1) add, remove and uniform choice."""

    __slots__ = ("items", "position")

    def __init__(self, items: Iterable[ItemT] = ()) -> None:
        self.items: list[ItemT] = []
        self.position: dict[ItemT, int] = {}
        for item in items:
            self.add(item)

    def add(self, item: ItemT) -> None:
        if item not in self.position:
            self.position[item] = len(self.items)
            self.items.append(item)

    def discard(self, item: ItemT) -> None:
        index = self.position.pop(item, None)
        if index is None:
            return
        last = self.items.pop()
        if index < len(self.items):
            self.items[index] = last
            self.position[last] = index

    def __contains__(self, item: object) -> bool:
        return item in self.position

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[ItemT]:
        return iter(self.items)


@dataclass(frozen=True, slots=True)
class Take:
    """A write a member's cycle decided: take `queue`, whose version it read as `version`."""

    queue: Any
    version: int
    kind: TakeKind


class Member:
    """A live member: when it started, its next cycle, how many cycles it ran in this
    rebalance and when it ran the last one."""

    __slots__ = ("cycles", "last_cycle_at", "name", "next_cycle", "started_at")

    def __init__(self, name: Any, started_at: float) -> None:
        self.name = name
        self.started_at = started_at
        self.next_cycle = started_at
        self.last_cycle_at = started_at
        self.cycles = 0


class _Tally:
    """What one rebalance cost, integrated over time from the change on."""

    def __init__(self, start: float) -> None:
        self.start = start
        self.last_time = start
        self.last_change = start
        self.unowned = 0  # queues of the group nobody processes now
        self.doubly = 0  # queues of the group two or more process now
        self.unowned_area = 0.0
        self.doubly_area = 0.0
        self.claims = 0
        self.steals = 0
        self.releases = 0
        self.rounds = 0
        self.paused = 0
        self.watched: set[Any] = set()  # queues a remaining member processed at the change

    def advance(self, time: float) -> None:
        elapsed = time - self.last_time
        if elapsed > 0:
            self.unowned_area += self.unowned * elapsed
            self.doubly_area += self.doubly * elapsed
            self.last_time = time


class Record:
    """One queue's ownership record: its owner (a member, one that has gone, or NO_OWNER) and
    its version (the ETag, the lease counter), which every write bumps."""

    __slots__ = ("owner", "version")

    def __init__(self, owner: Any = NO_OWNER) -> None:
        self.owner = owner
        self.version = 0


class Beliefs:
    """Who processes which queue, kept both ways in one place: `holders` (queue -> the members
    processing it, in the order they started) and `queues_of` (member -> the queues it
    processes). Every change goes through the methods here, so the two always say the same."""

    __slots__ = ("holders", "queues_of")

    def __init__(self) -> None:
        self.holders: dict[Any, list[Any]] = {}
        self.queues_of: dict[Any, set[Any]] = {}

    def add_queue(self, queue: Any) -> None:
        self.holders[queue] = []

    def add_member(self, member: Any) -> None:
        self.queues_of[member] = set()

    def drop_queue(self, queue: Any) -> None:
        for member in self.holders.pop(queue):
            self.queues_of[member].discard(queue)

    def drop_member(self, member: Any) -> None:
        for queue in self.queues_of.pop(member):
            self.holders[queue].remove(member)

    def believe(self, member: Any, queue: Any) -> bool:
        """`member` processes `queue` from now on; False when it already did."""
        holders = self.holders[queue]
        if member in holders:
            return False
        holders.append(member)
        self.queues_of[member].add(queue)
        return True

    def disbelieve(self, member: Any, queue: Any) -> bool:
        """`member` stops processing `queue`; False when it did not (or the queue has gone)."""
        holders = self.holders.get(queue)
        if holders is None or member not in holders:
            return False
        holders.remove(member)
        self.queues_of[member].discard(queue)
        return True


class CycleGroup(ABC):
    """One group's ownership table, members and clock across rebalances; a system subclasses it
    with its rule (`decide`), its cycle schedule (`next_cycle_after`), when a member whose queue
    was taken notices (`notice_time`) and what a departure leaves (`depart`).

    `change(queues, consumers)` applies a membership change at the current time (the end of the
    previous rebalance): removed queues go with their records, departed members stop processing
    (`depart` says what happens to their records), new queues get an unowned record, new
    members start now with a cycle at once (one that comes back under the id its records still
    carry holds them again: see `_come_back`); `settle()` then runs the cycles until the group
    is quiet: no record held by a departed member, no stale owner yet to notice, and every
    member has run a cycle that decided nothing since the last successful write.

    The table is `records` (queue -> Record), and, derived from it and kept with it by the
    methods here alone, `held` (owner -> its records not claimable, never empty), `claimable`
    (unowned or expired records) and `departed` (gone owners still holding records -> their
    last renewal); `beliefs` says who processes what. `rule_violations` states their rules.
    """

    cycle_seconds: float = 1.0  # the system's nominal cycle, for the default bound

    def __init__(self, seed: int = 0, max_member_cycles: int | None = None) -> None:
        self.rng = random.Random(seed)
        self.max_member_cycles = max_member_cycles
        self.now = 0.0
        self.queues: list[Any] = []
        self.records: dict[Any, Record] = {}
        self.held: dict[Any, IndexedSet[Any]] = {}
        self.claimable: IndexedSet[Any] = IndexedSet()
        self.departed: dict[Any, float] = {}
        self.members: dict[Any, Member] = {}
        self.beliefs = Beliefs()
        self._events: list[tuple[float, int, int, Any]] = []
        self._sequence = itertools.count()
        self._pending_notices = 0
        self._tally = _Tally(0.0)
        self._quiet = False  # the last rebalance ended quiet

    # --- what a system says (every system says each) ------------------------------------------

    @abstractmethod
    def decide(self, member: Member, now: float) -> list[Take]:
        """The takes `member`'s cycle at `now` decides from the table as it reads it."""

    @abstractmethod
    def next_cycle_after(self, member: Member, now: float) -> float:
        """When `member`, which ran a cycle at `now`, runs the next one."""

    @abstractmethod
    def notice_time(self, victim: Member, now: float) -> float:
        """When `victim`, whose queue was taken at `now`, notices and stops processing it."""

    @abstractmethod
    def depart(self, member: Member, now: float) -> None:
        """What `member`'s leaving at `now` does to its records: `release_records` (a graceful
        close) or `hold_until_expired` (they stay its own until they expire)."""

    # --- what a system's rule reads and does -------------------------------------------------

    def held_count(self, owner: Any) -> int:
        records = self.held.get(owner)
        return len(records) if records is not None else 0

    def release_records(self, member: Any) -> None:
        """`member`'s records become unowned at once (a graceful close)."""
        for queue in list(self.held.get(member, ())):
            record = self.records[queue]
            self._let_go(queue, record)
            record.owner = NO_OWNER
            record.version += 1
            self.claimable.add(queue)
            self._tally.releases += 1

    def hold_until_expired(
        self, member: Any, last_renewal: float, expires_at: float | None
    ) -> None:
        """`member`'s records stay its own, last renewed at `last_renewal`; with `expires_at`,
        they become claimable for every reader then."""
        if self.held_count(member):
            self.departed[member] = last_renewal
            if expires_at is not None:
                self._push(expires_at, _EXPIRY, (member, last_renewal))

    def most_loaded(self, counts: dict[Any, int]) -> tuple[Any, int]:
        """The owner holding the most of `counts` (ties drawn from the seed)."""
        most = max(counts.values())
        tied = [owner for owner, count in counts.items() if count == most]
        return (tied[0] if len(tied) == 1 else tied[self.rng.randrange(len(tied))]), most

    def takes(self, queues: Sequence[Any], kind: TakeKind) -> list[Take]:
        return [Take(queue, self.records[queue].version, kind) for queue in queues]

    # --- the rules of the table ----------------------------------------------------------------

    def rule_violations(self) -> list[str]:
        """The rules the table, the members and the beliefs keep between two events, each one
        broken named (empty: all hold). The stateful tests check them after every step."""
        broken: list[str] = []
        if self.queues != sorted(self.records) or len(self.queues) != len(self.records):
            broken.append("one record per queue of the group")
        holding = {queue: owner for owner, held in self.held.items() for queue in held}
        for queue, record in self.records.items():
            if (queue in self.claimable) == (queue in holding):
                broken.append(f"record {queue!r} is either claimable or held, not both")
            elif queue in holding and holding[queue] != record.owner:
                broken.append(f"record {queue!r} is held by its owner")
        if set(self.claimable) - self.records.keys():
            broken.append("claimable records exist")
        if any(owner is NO_OWNER for owner in self.held):
            broken.append("an unowned record is not held")
        if [owner for owner, held in self.held.items() if not held]:
            broken.append("no owner holds an empty set")
        if not self.departed.keys() <= self.held.keys() or self.departed.keys() & self.members:
            broken.append("departed owners hold records and are not members")
        if not self.held.keys() <= self.members.keys() | self.departed.keys():
            broken.append("every owner holding records is a member or departed")
        beliefs = self.beliefs
        if beliefs.holders.keys() != self.records.keys():
            broken.append("beliefs know every queue")
        if beliefs.queues_of.keys() != self.members.keys():
            broken.append("beliefs know every member")
        both_ways = {(m, q) for q, holders in beliefs.holders.items() for m in holders}
        if both_ways != {(m, q) for m, queues in beliefs.queues_of.items() for q in queues}:
            broken.append("beliefs say the same both ways")
        if sum(map(len, beliefs.holders.values())) != len(both_ways):
            broken.append("a member processes a queue once")
        for member in self.members:
            if not set(self.held.get(member, ())) <= beliefs.queues_of[member]:
                broken.append(f"member {member!r} processes every record it holds")
        stale = sum(1 for m, q in both_ways if self.records[q].owner != m)
        if stale > self._pending_notices:
            broken.append("every stale owner has a notice coming")
        return broken

    # --- the simulation ------------------------------------------------------------------------

    def _push(self, time: float, priority: int, subject: Any) -> None:
        heapq.heappush(self._events, (time, priority, next(self._sequence), subject))

    def _believe(self, member: Any, queue: Any) -> None:
        if self.beliefs.believe(member, queue):
            after = len(self.beliefs.holders[queue])
            self._counted(queue, after - 1, after)

    def _disbelieve(self, member: Any, queue: Any) -> None:
        if self.beliefs.disbelieve(member, queue):
            after = len(self.beliefs.holders[queue])
            self._counted(queue, after + 1, after)

    def _counted(self, queue: Any, before: int, after: int) -> None:
        tally = self._tally
        tally.unowned += (after == 0) - (before == 0)
        tally.doubly += (after >= 2) - (before >= 2)
        tally.last_change = self.now
        if after == 0 and queue in tally.watched:
            tally.paused += 1
            tally.watched.discard(queue)

    def _let_go(self, queue: Any, record: Record) -> None:
        """`queue` leaves its owner's held records (if held): the one clean-up of `held` and
        `departed`, so that no owner holds an empty set and a departed owner whose last record
        went is gone from the table."""
        records = self.held.get(record.owner)
        if records is None or queue not in records:
            return
        records.discard(queue)
        if not records:
            del self.held[record.owner]
            self.departed.pop(record.owner, None)

    def _drop_record(self, queue: Any) -> None:
        record = self.records.pop(queue)
        self._let_go(queue, record)
        self.claimable.discard(queue)
        self.beliefs.drop_queue(queue)

    def _come_back(self, name: Any) -> None:
        """A member that joins under the id its records still carry (a departed owner) holds
        them again at once, each renewed (a new version) and processed. KCL: the lease
        coordinator's `start` first runs the renewer's `initialize`, which renews every lease
        whose owner is the worker's id, even an expired one, and keeps renewing it
        (DynamoDBLeaseCoordinator.start, DynamoDBLeaseRenewer.initialize, amazon-kinesis-client
        v2.7.2). Event Hubs: a processor's cycle, the first at its start, writes again every
        record it still owns (`to_claim` starts from the owner's own active records:
        OwnershipManager._balance_ownership, azure-eventhub 5.x). Records that expired are
        claimable already and stay so. Without this, the member would take its own records
        one cycle after another and the departed owner would never leave the table."""
        self.departed.pop(name, None)
        for queue in self.held.get(name, ()):
            self.records[queue].version += 1
            self._believe(name, queue)

    def change(self, queues: Iterable[Any], consumers: Iterable[Any]) -> None:
        """The group is now `queues` x `consumers`, as of now (see the class docstring)."""
        sorted_queues = sorted_distinct_ids(queues, "queue")
        sorted_consumers = sorted_distinct_ids(consumers, "consumer")
        queue_set, consumer_set = set(sorted_queues), set(sorted_consumers)
        self._quiet = False  # a change not settled yet: the next rebalance must settle it
        self._tally = tally = _Tally(self.now)
        for queue in [queue for queue in self.queues if queue not in queue_set]:
            self._drop_record(queue)
        for name in [name for name in self.members if name not in consumer_set]:
            member = self.members.pop(name)
            self.beliefs.drop_member(name)  # counted below, from the beliefs that remain
            self.depart(member, self.now)
        for queue in sorted_queues:
            if queue not in self.records:
                self.records[queue] = Record()
                self.claimable.add(queue)
                self.beliefs.add_queue(queue)
        for name in sorted_consumers:
            if name not in self.members:
                self.members[name] = member = Member(name, self.now)
                self.beliefs.add_member(name)
                self._come_back(name)
                self._push(self.now, _CYCLE, member)
        self.members = {name: self.members[name] for name in sorted_consumers}  # sorted
        self.queues = sorted_queues
        holders = self.beliefs.holders
        tally.unowned = sum(1 for queue in sorted_queues if not holders[queue])
        tally.doubly = sum(1 for queue in sorted_queues if len(holders[queue]) >= 2)
        tally.watched = {queue for queue in sorted_queues if holders[queue]}
        for member in self.members.values():
            member.cycles = 0

    def rebalance(self, queues: Iterable[Any], consumers: Iterable[Any]) -> ProtocolRun:
        """The session hook: the group is now `queues` x `consumers`; change, then settle.

        The same group again after a rebalance that ended quiet is quiet at once: every member
        ran a cycle that decided nothing on the very table it would read again, so its next
        cycles decide nothing either; the session is left as it was (its clock and its random
        stream too), so that asking again, as the stability check does, changes no later run."""
        sorted_queues = sorted_distinct_ids(queues, "queue")
        sorted_consumers = sorted_distinct_ids(consumers, "consumer")
        if self._quiet and sorted_queues == self.queues and sorted_consumers == list(self.members):
            return ProtocolRun(
                owners=self._owners(),
                releases=0,
                steps=0,
                rounds=0,
                converged=True,
                queues_paused=0,
                claims=0,
                steals=0,
                seconds_to_balance=0.0,
                queue_seconds_unowned=0.0,
                queue_seconds_doubly_owned=0.0,
            )
        self.change(sorted_queues, sorted_consumers)
        return self.settle()

    def settle(self) -> ProtocolRun:
        """Run the cycles until the group is quiet (or the bound: `converged` False)."""
        tally = self._tally
        bound = self.max_member_cycles
        if bound is None:
            bound = 64 + 8 * (len(self.queues) + 1) * (len(self.members) + 1)
        quiet: set[Any] = set()
        member_cycles = 0
        converged = True
        while self.members and not (
            len(quiet) == len(self.members) and not self.departed and not self._pending_notices
        ):
            if member_cycles >= bound or not self._events:
                converged = False
                break
            time, priority, _, subject = heapq.heappop(self._events)
            self.now = time
            tally.advance(time)
            if priority == _NOTICE:
                self._pending_notices -= 1
                victim, queue = subject
                if queue in self.records and self.records[queue].owner != victim:
                    self._disbelieve(victim, queue)
            elif priority == _EXPIRY:
                if self._expire(*subject):
                    quiet.clear()  # the table changed: every member must read it again
            else:
                batch = [subject, *self._same_instant(time)]
                batch = [member for member in batch if self.members.get(member.name) is member]
                member_cycles += len(batch)
                wrote, decided_nothing = self._run_cycles(batch, time)
                if wrote:
                    quiet.clear()
                else:
                    quiet.update(decided_nothing)
        tally.advance(self.now)
        self._quiet = converged
        return self._run(converged)

    def _same_instant(self, time: float) -> list[Member]:
        """The other cycles due at `time`: they read the same table."""
        batch = []
        while self._events and self._events[0][0] == time and self._events[0][1] == _CYCLE:
            batch.append(heapq.heappop(self._events)[3])
        return batch

    def _expire(self, owner: Any, last_renewal: float) -> bool:
        """The records `owner` left behind when it departed, last renewed at `last_renewal`,
        become claimable; nothing when they went before (taken, or their owner came back:
        the departure this expiry was set for is over). Whether the table changed."""
        if self.departed.get(owner, math.nan) != last_renewal:
            return False
        del self.departed[owner]
        for queue in self.held.pop(owner).items:
            self.claimable.add(queue)
        return True

    def _run_cycles(self, batch: list[Member], now: float) -> tuple[bool, list[Any]]:
        """The cycles of `batch` at `now`: (whether any write succeeded, the members that
        decided nothing)."""
        decisions = [(member, self.decide(member, now)) for member in batch]
        deciding = {member.name for member, takes in decisions if takes}
        if len(batch) > 1:  # concurrent writers, each writing its takes in order at one pace
            self.rng.shuffle(decisions)
        wrote: set[Any] = set()
        longest = max((len(takes) for _, takes in decisions), default=0)
        for index in range(longest):
            for member, takes in decisions:
                if index >= len(takes):
                    continue
                take = takes[index]
                record = self.records.get(take.queue)
                if record is None or record.version != take.version:
                    continue  # the conditional write fails: another took it first
                self._write(member, take, record, now)
                wrote.add(member.name)
        for member in batch:
            member.cycles += 1
            member.last_cycle_at = now
            if member.name in wrote:
                self._tally.rounds = max(self._tally.rounds, member.cycles)
        for member in batch:  # scheduled after the writes: a victim in the batch notices now
            member.next_cycle = self.next_cycle_after(member, now)
            self._push(member.next_cycle, _CYCLE, member)
        return bool(wrote), [member.name for member in batch if member.name not in deciding]

    def _write(self, member: Member, take: Take, record: Record, now: float) -> None:
        queue = take.queue
        previous = record.owner
        self._let_go(queue, record)
        record.version += 1
        record.owner = member.name
        self.claimable.discard(queue)
        self.held.setdefault(member.name, IndexedSet()).add(queue)
        if take.kind == "claim":
            self._tally.claims += 1
        else:
            self._tally.steals += 1
        self._believe(member.name, queue)
        victim = self.members.get(previous)
        if (
            victim is not None
            and victim is not member
            and queue in self.beliefs.queues_of[victim.name]
        ):
            self._pending_notices += 1
            self._push(max(now, self.notice_time(victim, now)), _NOTICE, (victim.name, queue))

    def _owners(self) -> dict[Any, list[Any]]:
        """The plan: each live member's records, sorted (members in sorted order)."""
        owners: dict[Any, list[Any]] = empty_plan(list(self.members))
        for queue in self.queues:
            owned = owners.get(self.records[queue].owner)
            if owned is not None:
                owned.append(queue)
        return owners

    def _run(self, converged: bool) -> ProtocolRun:
        tally = self._tally
        return ProtocolRun(
            owners=self._owners(),
            releases=tally.releases,
            steps=tally.claims + tally.steals,
            rounds=tally.rounds,
            converged=converged,
            queues_paused=tally.paused,
            claims=tally.claims,
            steals=tally.steals,
            seconds_to_balance=tally.last_change - tally.start,
            queue_seconds_unowned=tally.unowned_area,
            queue_seconds_doubly_owned=tally.doubly_area,
        )

    def load(self, owner_of: Any, present: Sequence[Any], queues: Sequence[Any]) -> None:
        """A group already running before its change, for a stateless `assign`: `owner_of`
        (queue -> member) for the sorted `queues`; the members of `present` (sorted) and every
        other owner (in the order of its first queue) are live, their cycles staggered over one
        nominal cycle from the seed. `change` then applies the group as it is now."""
        names = list(present)
        named = set(names)
        for queue in queues:
            name = owner_of.get(queue, NO_OWNER)
            if name is not NO_OWNER and name not in named:
                named.add(name)
                names.append(name)
        for name in names:
            member = Member(name, -self.cycle_seconds * self.rng.random())
            member.next_cycle = member.started_at + self.cycle_seconds
            self.members[name] = member
            self.beliefs.add_member(name)
            self._push(member.next_cycle, _CYCLE, member)
        for queue in queues:
            name = owner_of.get(queue, NO_OWNER)
            self.records[queue] = Record(name)
            self.beliefs.add_queue(queue)
            if name is NO_OWNER:
                self.claimable.add(queue)
            else:
                self.held.setdefault(name, IndexedSet()).add(queue)
                self._believe(name, queue)
        self.queues = list(queues)


def settle_from_previous(
    simulated: CycleGroup,
    queues: Iterable[Any],
    consumers: Iterable[Any],
    previous: Mapping[Any, Iterable[Any]] | None,
) -> ProtocolRun:
    """`simulated` (a new group) loaded with the group `previous` describes (`CycleGroup.load`),
    changed to `queues` x `consumers` and run until quiet: a stateless `assign`'s run."""
    group = prepare(queues, consumers, previous)
    present = [name for name in group.consumers if name in group.previous]
    simulated.load(group.previous_owner, present, group.queues)
    simulated.change(group.queues, group.consumers)
    return simulated.settle()


def ceiling_division(numerator: int, denominator: int) -> int:
    return -(-numerator // denominator)


def first_at_or_after(start: float, period: float, time: float) -> float:
    """The first of `start + k * period` (k >= 0) at or after `time`."""
    if time <= start:
        return start
    steps = math.ceil((time - start) / period - 1e-9)
    return start + steps * period
