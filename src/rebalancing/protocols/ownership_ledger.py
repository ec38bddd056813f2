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
Runtime complexity: O(P + R log R) for P partitions recorded in R records.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
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
    every partition of the group to the members consuming it then.

    A record is one member's start or stop on a batch of partitions at one instant
    (`begin_all`, `stop_all`; `begin` and `stop` for one partition): a session records a
    hand-over of many partitions as one record, and `finish` replays each record's partitions
    together. The partitions of one record are distinct, so their order within it does not
    matter: each moves on its own, and the instant is the same for all."""

    def __init__(self, start: float, consuming: Mapping[Any, Iterable[Any]]) -> None:
        self.start = start
        self.initial = {queue: set(members) for queue, members in consuming.items()}
        # (time, the record's number, _STOP or _START, member, its partitions, revoked)
        self.records: list[tuple[float, int, int, Any, tuple[Any, ...], bool]] = []

    def stop(self, time: float, member: Any, queue: Any, *, revoked: bool) -> None:
        """`member` stops consuming `queue` at `time`; `revoked`: it stays in the group."""
        self.records.append((time, len(self.records), _STOP, member, (queue,), revoked))

    def begin(self, time: float, member: Any, queue: Any) -> None:
        """`member` starts consuming `queue` at `time`."""
        self.records.append((time, len(self.records), _START, member, (queue,), False))

    def stop_all(self, time: float, member: Any, queues: Iterable[Any], *, revoked: bool) -> None:
        """`member` stops consuming each of `queues` (distinct) at `time`, as `stop` does."""
        batch = tuple(queues)
        if batch:
            self.records.append((time, len(self.records), _STOP, member, batch, revoked))

    def begin_all(self, time: float, member: Any, queues: Iterable[Any]) -> None:
        """`member` starts consuming each of `queues` (distinct) at `time`, as `begin` does."""
        batch = tuple(queues)
        if batch:
            self.records.append((time, len(self.records), _START, member, batch, False))

    def finish(self, end: float) -> LedgerTotals:
        """Replay the records (by time, then by the order they were made) and integrate from
        `start` to `end`: the counts of partitions unowned, doubly owned and paused change
        only at a record's instant, so each span between two instants adds count x length."""
        holders = {queue: set(members) for queue, members in self.initial.items()}
        unowned = sum(1 for members in holders.values() if not members)
        doubly = sum(1 for members in holders.values() if len(members) >= 2)
        paused: set[Any] = set()
        ever_paused: set[Any] = set()
        most = max((len(members) for members in holders.values()), default=0)
        unowned_area = doubly_area = paused_area = 0.0  # partition-seconds
        last_time = last_change = self.start
        self.records.sort()  # (time, number) is unique: the rest is never compared
        for time, _, kind, member, queues, revoked in self.records:
            if time != last_time:
                if time < last_time:
                    raise ValueError(f"a record at {time} s precedes the ledger's start")
                elapsed = time - last_time
                unowned_area += unowned * elapsed
                doubly_area += doubly * elapsed
                paused_area += len(paused) * elapsed
                last_time = time
            changed = False
            if kind == _STOP:
                for queue in queues:
                    members = holders[queue]
                    if member not in members:
                        continue
                    members.remove(member)
                    changed = True
                    left = len(members)
                    if left == 0:
                        unowned += 1
                        if revoked:  # revoked from a member that stays: paused until taken
                            paused.add(queue)
                            ever_paused.add(queue)
                    elif left == 1:
                        doubly -= 1
            else:
                for queue in queues:
                    members = holders[queue]
                    paused.discard(queue)
                    if member in members:
                        continue
                    members.add(member)
                    changed = True
                    count = len(members)
                    if count == 1:
                        unowned -= 1
                    elif count == 2:
                        doubly += 1
                    most = max(most, count)
            if changed:
                last_change = time
        elapsed = max(0.0, end - last_time)
        unowned_area += unowned * elapsed
        doubly_area += doubly * elapsed
        paused_area += len(paused) * elapsed
        return LedgerTotals(
            seconds_to_balance=last_change - self.start,
            queue_seconds_unowned=unowned_area,
            queue_seconds_doubly_owned=doubly_area,
            queue_seconds_paused=paused_area,
            queues_paused=len(ever_paused),
            most_consumers=most,
        )
