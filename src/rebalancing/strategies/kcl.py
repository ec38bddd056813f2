"""AWS Kinesis Client Library 2.x lease taking: a protocol, simulated in time
(rebalancing.strategies.ownership_cycles).

Read from awslabs/amazon-kinesis-client at tag v2.7.2: class software.amazon.kinesis.leases.
dynamodb.DynamoDBLeaseTaker (`takeLeases`, `computeLeasesToTake`, `chooseLeasesToSteal`,
`computeLeaseCounts`), DynamoDBLeaseCoordinator (the taker and renewer schedules, `stop`) and
LeaseManagementConfig (the defaults). Each worker's lease taker, every run:

- scans the lease table; a lease's counter, bumped by every renewal and take, is taken as
  renewed at the first scan that saw it change; a lease is expired when that was more than
  `failoverTimeMillis` ago, and available when expired or unowned (a new shard's lease);
- counts the leases per worker over the leases not expired, itself included (a worker with no
  lease is invisible to the others): target = ceil(leases / workers) (1 with as many workers as
  leases); leases not renewed for 3 x failoverTimeMillis ("very old", which includes a new
  unowned lease) are taken first, all of them, whatever the target (priority lease assignment,
  on by default);
- otherwise takes available leases, at random, up to its target; with none available and some
  needed, steals from the most-loaded worker: min(needed, its leases over target), 1 when it is
  at target and more than 1 is needed, at most maxLeasesToStealAtOneTime (1);
- writes each take conditionally on the counter it read: of two takes of one lease, one wins.

Schedules: the taker runs at the worker's start, then every 2 x (failoverTimeMillis +
epsilonMillis) = 20.05 s (fixed delay); the renewer every failoverTimeMillis / 3 - epsilonMillis
= 3.31 s. A worker whose lease was stolen keeps processing it until its next renewal fails. A
worker that stops (`LeaseCoordinator.stop` drops its leases without releasing them) and one that
crashes are the same: its leases expire, so a departure's shards wait for the other takers to
see them expired (20 to 40 s), and very old (over 30 s) the first taker to run takes all of
them. A worker that comes back under its old id (after the group emptied, say) renews at its
start every lease that still names it, expired or not (`DynamoDBLeaseCoordinator.start` runs
`DynamoDBLeaseRenewer.initialize` first), and holds them again at once. Simplified: reads and
writes take no time, a steal never races the victim's renewal, and a tie for the most-loaded
worker is drawn from the seed (the Java HashMap's order, elsewhere).

- `Session(seed=...)`: the registry's protocol hook; `rebalance(queues, consumers)` returns the
  plan once the group is quiet, with takes, steals, taker runs and the time scores.
- `assign`: the stateless reconstruction (the owners of `previous` still present hold their
  leases with taker runs staggered over one interval; the others have left).
Runtime complexity: per taker run O(|C| + available leases) plus its takes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from rebalancing.contract import ConsumerT, ProtocolRun, QueueT
from rebalancing.strategies.ownership_cycles import (
    CycleGroup,
    Member,
    Take,
    ceiling_division,
    first_at_or_after,
    settle_from_previous,
)

FAILOVER_TIME_MILLIS = 10_000
"""A lease not renewed for this long is expired (LeaseManagementConfig.failoverTimeMillis)."""

EPSILON_MILLIS = 25
"""LeaseManagementConfig.epsilonMillis: slack in the taker's and the renewer's intervals."""

MAX_LEASES_TO_STEAL_AT_ONE_TIME = 1
"""LeaseManagementConfig.maxLeasesToStealAtOneTime's default."""

VERY_OLD_LEASE_DURATION_MULTIPLIER = 3
"""Leases not renewed for this many failover times are taken first (DynamoDBLeaseTaker)."""


def taker_interval(failover_time_millis: int, epsilon_millis: int = EPSILON_MILLIS) -> float:
    """Seconds between a worker's taker runs: (failover + epsilon) x 2."""
    return (failover_time_millis + epsilon_millis) * 2 / 1000


def renewer_interval(failover_time_millis: int, epsilon_millis: int = EPSILON_MILLIS) -> float:
    """Seconds between a worker's renewals: failover / 3 - epsilon."""
    return (failover_time_millis / 3 - epsilon_millis) / 1000


class KclGroup(CycleGroup):
    """The workers of one KCL application and their lease table."""

    def __init__(
        self,
        seed: int = 0,
        failover_time_millis: int = FAILOVER_TIME_MILLIS,
        max_leases_to_steal_at_one_time: int = MAX_LEASES_TO_STEAL_AT_ONE_TIME,
        max_member_cycles: int | None = None,
    ) -> None:
        if isinstance(failover_time_millis, bool) or not isinstance(failover_time_millis, int):
            raise TypeError(f"failover_time_millis must be an int, not {failover_time_millis!r}")
        if failover_time_millis <= 3 * EPSILON_MILLIS:
            raise ValueError(f"failover_time_millis must exceed 75 ms, not {failover_time_millis}")
        if max_leases_to_steal_at_one_time < 1:
            raise ValueError(
                "max_leases_to_steal_at_one_time should be >= 1, not "
                f"{max_leases_to_steal_at_one_time!r}"
            )
        super().__init__(seed, max_member_cycles)
        self.failover = failover_time_millis / 1000
        self.taker_interval = taker_interval(failover_time_millis)
        self.renewer_interval = renewer_interval(failover_time_millis)
        self.cycle_seconds = self.taker_interval
        self.most_stolen = max_leases_to_steal_at_one_time

    def decide(self, member: Member, now: float) -> list[Take]:
        leases = len(self.queues)
        if not leases:
            return []
        expired, very_old = [], []
        for owner, last_renewal in self.departed.items():
            seen_renewed = first_at_or_after(member.started_at, self.taker_interval, last_renewal)
            if now - seen_renewed > VERY_OLD_LEASE_DURATION_MULTIPLIER * self.failover:
                very_old.append(owner)
            elif now - seen_renewed > self.failover:
                expired.append(owner)
        taking_first = list(self.claimable.items)  # new, unowned leases: never renewed
        for owner in very_old:
            taking_first.extend(self.held[owner].items)
        if taking_first:  # all of them: maxLeasesForWorker is unbounded by default
            self.rng.shuffle(taking_first)
            return self.takes(taking_first, "claim")
        counts = {
            owner: len(records) for owner, records in self.held.items() if owner not in expired
        }
        counts.setdefault(member.name, 0)
        workers = len(counts)
        target = 1 if workers >= leases else ceiling_division(leases, workers)
        needed = target - counts[member.name]
        if needed <= 0:
            return []
        available = [queue for owner in expired for queue in self.held[owner].items]
        if available:
            return self.takes(self.rng.sample(available, min(needed, len(available))), "claim")
        most_loaded, most = self.most_loaded(counts)
        if most < target:
            return []
        stolen = min(needed, most - target)
        if needed > 1 and stolen == 0:
            stolen = 1
        stolen = min(stolen, self.most_stolen)
        if stolen <= 0:
            return []
        return self.takes(self.rng.sample(self.held[most_loaded].items, stolen), "steal")

    def next_cycle_after(self, member: Member, now: float) -> float:
        return now + self.taker_interval

    def notice_time(self, victim: Member, now: float) -> float:
        """The victim's first renewal after `now` (its renewer runs at a fixed rate from its
        start), which fails on the changed counter."""
        next_renewal = first_at_or_after(victim.started_at, self.renewer_interval, now)
        return next_renewal if next_renewal > now else next_renewal + self.renewer_interval

    def depart(self, member: Member, now: float) -> None:
        last_renewal = member.started_at + self.renewer_interval * math.floor(
            max(0.0, now - member.started_at) / self.renewer_interval
        )
        self.hold_until_expired(member.name, last_renewal, None)


Session = KclGroup
"""One KCL application's workers across rebalances (the registry's session hook):
`Session(seed=...).rebalance(queues, consumers)`."""


def run(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
    seed: int = 0,
) -> ProtocolRun:
    """The group of `previous` (its owners live, taker runs staggered) changed to `queues` x
    `consumers`, run until quiet."""
    return settle_from_previous(KclGroup(seed), queues, consumers, previous)


def assign(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
) -> dict[ConsumerT, list[QueueT]]:
    """The owners once the workers' lease takers are quiet."""
    return run(queues, consumers, previous).owners
