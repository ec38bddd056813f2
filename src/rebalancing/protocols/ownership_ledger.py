"""Who consumes each partition, in time, during one rebalance of a Kafka group; what it cost.

A session records, from the change on, when a member starts consuming a partition (it got it
in an assignment) and when it stops (a revocation, a leave, a crash); `finish` replays the
records in time order, those of one instant in the order they were recorded (the sessions
record causes first: an owner's stop before the start it frees the partition for, so a
hand-over at an instant is not two owners), and integrates over the partitions: the
partition-seconds with no consumer (unowned), with two or more (doubly owned), and the part of
the unowned time that followed a revocation from a member still in the group (paused), with
the time of the last change of who consumes what. It also keeps the most consumers any
partition had at once (`most_consumers`), which the tests read to show that a partition never
has two.
Runtime complexity: O(Q + R log R) for Q partitions and R records, plus their partitions'
set operations (at C speed).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from itertools import chain
from typing import Any

from rebalancing.contract import ProtocolRun

_STOP, _START = 0, 1


@dataclass(frozen=True, slots=True)
class LedgerTotals:
    """One rebalance's time scores (ProtocolRun's names): seconds from the change to the last
    change of who consumes what, and the partition-seconds unowned, doubly owned and paused."""

    seconds_to_balance: float
    queue_seconds_unowned: float
    queue_seconds_doubly_owned: float
    queue_seconds_paused: float
    queues_paused: int
    most_consumers: int

    def run(
        self,
        owners: dict[Any, list[Any]],
        *,
        releases: int,
        steps: int,
        rounds: int,
        converged: bool,
        heartbeats: int | None = None,
    ) -> ProtocolRun:
        """The ProtocolRun of a rebalance that ended with `owners` and these counts."""
        return ProtocolRun(
            owners=owners,
            releases=releases,
            steps=steps,
            rounds=rounds,
            converged=converged,
            queues_paused=self.queues_paused,
            seconds_to_balance=self.seconds_to_balance,
            queue_seconds_unowned=self.queue_seconds_unowned,
            queue_seconds_doubly_owned=self.queue_seconds_doubly_owned,
            queue_seconds_paused=self.queue_seconds_paused,
            heartbeats=heartbeats,
        )


QUIET = LedgerTotals(0.0, 0.0, 0.0, 0.0, 0, 0)
"""The totals of a rebalance with nothing to do: `QUIET.run(owners, ...)` costs nothing."""


class OwnershipLedger:
    """The consumption records of one rebalance that starts at `start`, when `consuming` maps
    every partition of the group to the members consuming it then (`of_holdings`: the same
    given member -> the partitions it consumes).

    A record is one member's start or stop on a batch of partitions at one instant
    (`begin_all`, `stop_all`; `begin` and `stop` for one partition): a session records a
    hand-over of many partitions as one record. The partitions of one record are distinct, so
    their order within it does not matter: each moves on its own, at the same instant.

    The replay keeps who consumes what member by member (member -> its partitions) and the
    partitions by how many consume them: the set of those with none and, for those with two
    or more (rare: the consumer protocol never has them), their count. A record then moves
    its whole batch by set operations, and a partition with one consumer needs no count."""

    def __init__(self, start: float, consuming: Mapping[Any, Iterable[Any]]) -> None:
        holdings: dict[Any, set[Any]] = {}
        for queue, members in consuming.items():
            for member in members:
                holdings.setdefault(member, set()).add(queue)
        self._begin_with(start, consuming.keys(), holdings)

    @classmethod
    def of_holdings(
        cls, start: float, queues: Iterable[Any], holdings: Mapping[Any, Iterable[Any]]
    ) -> OwnershipLedger:
        """The ledger of a rebalance from `start` of the partitions `queues`, when `holdings`
        maps each member to the partitions (of `queues`) it consumes then."""
        ledger = cls.__new__(cls)
        ledger._begin_with(
            start, queues, {member: set(owned) for member, owned in holdings.items()}
        )
        return ledger

    def _begin_with(
        self, start: float, queues: Iterable[Any], holdings: dict[Any, set[Any]]
    ) -> None:
        """The state at `start`: `holdings` (member -> its partitions, our own sets) over the
        group's partitions `queues`."""
        self.start = start
        self.queues = frozenset(queues)
        self.holdings = holdings
        self.unowned = self.queues.difference(*holdings.values())
        held = sum(map(len, holdings.values()))  # a partition once per member consuming it
        self.shared: dict[Any, int] = {}  # partition -> its consumers, where two or more
        if held != len(self.queues) - len(self.unowned):
            counts = Counter(chain.from_iterable(holdings.values()))
            self.shared = {queue: count for queue, count in counts.items() if count >= 2}
        self.most = max(self.shared.values(), default=1 if held else 0)
        # (time, the record's number, _STOP or _START, member, its partitions, revoked)
        self.records: list[tuple[float, int, int, Any, frozenset[Any], bool]] = []

    def stop(self, time: float, member: Any, queue: Any, *, revoked: bool) -> None:
        """`member` stops consuming `queue` at `time`; `revoked`: it stays in the group."""
        self.records.append((time, len(self.records), _STOP, member, frozenset((queue,)), revoked))

    def begin(self, time: float, member: Any, queue: Any) -> None:
        """`member` starts consuming `queue` at `time`."""
        self.records.append((time, len(self.records), _START, member, frozenset((queue,)), False))

    def stop_all(self, time: float, member: Any, queues: Iterable[Any], *, revoked: bool) -> None:
        """`member` stops consuming each of `queues` (distinct) at `time`, as `stop` does."""
        batch = frozenset(queues)
        if batch:
            self.records.append((time, len(self.records), _STOP, member, batch, revoked))

    def begin_all(self, time: float, member: Any, queues: Iterable[Any]) -> None:
        """`member` starts consuming each of `queues` (distinct) at `time`, as `begin` does."""
        batch = frozenset(queues)
        if batch:
            self.records.append((time, len(self.records), _START, member, batch, False))

    def finish(self, end: float) -> LedgerTotals:
        """Replay the records (by time, then by the order they were made) and integrate from
        `start` to `end`: the counts of partitions unowned, doubly owned and paused change
        only at a record's instant, so each span between two instants adds count x length."""
        holdings = {member: set(owned) for member, owned in self.holdings.items()}
        unowned = set(self.unowned)
        shared = dict(self.shared)
        paused: set[Any] = set()  # unowned since a revocation from a member that stays
        ever_paused: set[Any] = set()
        most = self.most
        unowned_area = doubly_area = paused_area = 0.0  # partition-seconds
        last_time = last_change = self.start
        group = self.queues
        self.records.sort()  # (time, number) is unique: the rest is never compared
        for time, _, kind, member, queues, revoked in self.records:
            if time != last_time:
                if time < last_time:
                    raise ValueError(f"a record at {time} s precedes the ledger's start")
                elapsed = time - last_time
                unowned_area += len(unowned) * elapsed
                doubly_area += len(shared) * elapsed
                paused_area += len(paused) * elapsed
                last_time = time
            owned = holdings.setdefault(member, set())
            if kind == _STOP:
                if queues <= owned:  # the usual stop: of partitions it consumes
                    left: AbstractSet[Any] = queues
                else:  # a stop of what it does not consume changes nothing
                    left = owned & queues
                    if not left:
                        continue
                owned -= left
                last_change = time
                if shared and not left.isdisjoint(shared):  # it was one of their consumers
                    left = set(left)
                    for queue in left.intersection(shared):
                        left.discard(queue)
                        count = shared.pop(queue) - 1
                        if count >= 2:
                            shared[queue] = count
                unowned |= left  # it was their one consumer
                if revoked:
                    paused |= left
                    ever_paused |= left
            else:
                if paused:
                    paused -= queues
                taken = queues - owned  # a start of what it consumes already: none
                if not taken:
                    continue
                owned |= taken
                last_change = time
                if taken <= unowned:  # the usual start: it is their one consumer
                    unowned -= taken
                    most = max(most, 1)
                    continue
                if not taken <= group:
                    raise ValueError(f"{sorted(taken - group)!r} are not of the group")
                first = taken & unowned
                if first:
                    unowned -= first
                    most = max(most, 1)
                    taken -= first
                for queue in taken:  # it joins one or more other consumers
                    count = shared.get(queue, 1) + 1
                    shared[queue] = count
                    most = max(most, count)
        elapsed = max(0.0, end - last_time)
        unowned_area += len(unowned) * elapsed
        doubly_area += len(shared) * elapsed
        paused_area += len(paused) * elapsed
        return LedgerTotals(
            seconds_to_balance=last_change - self.start,
            queue_seconds_unowned=unowned_area,
            queue_seconds_doubly_owned=doubly_area,
            queue_seconds_paused=paused_area,
            queues_paused=len(ever_paused),
            most_consumers=most,
        )
