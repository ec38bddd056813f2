"""Azure Event Hubs' event processor load balancing (ownership claims), balanced and greedy: a
protocol, simulated in time (rebalancing.strategies.ownership_cycles).

Read from azure-sdk-for-python, package azure-eventhub, `azure/eventhub/_eventprocessor/
ownership_manager.py` (class OwnershipManager, `_balance_ownership` and `release_ownership`)
and `event_processor.py` (class EventProcessor, `_load_balancing` and `_close_consumer`), at
commit 7d4119afe16e83393963164a1c3537c16de639e2 (azure-eventhub 5.x); the .NET documentation of
LoadBalancingStrategy says the same of Balanced ("claiming 1 partition per cycle until a
stabilized distribution is achieved") and Greedy. Every processor, every load-balancing cycle:

- lists the ownership records; a record is claimable when unowned, released (owner "") or
  expired (not written for `partition_ownership_expiration_interval`); the active owners are
  the owners of the other records, plus itself if it holds none (a processor that holds
  nothing is invisible to the others);
- computes expected = P // owners and max = ceil(P / owners) for P partitions; below max, the
  balanced strategy claims one random claimable partition, the greedy one a random sample of
  claimable partitions up to max; if it claimed none and holds fewer than expected, it steals one
  random partition of the owner holding the most;
- so a processor at its expected share never steals, and the group can stay uneven: every
  processor holds at least P // n, one may hold up to P // n + P mod n (4-2-2-2 for 10
  partitions and 4 processors is quiet): the Python SDK's rule, the one read here (the .NET and
  Java balancers were not);
- writes its claims and its own records again (the renewal) with the ETags it read: a write on
  a record that changed since fails, so of two claims on one partition one wins;
- processes what it now owns and stops processing what it no longer owns: a processor whose
  partition was stolen keeps processing it until its next cycle (both believe they own it;
  receivers opened with an owner level make the service close the older one sooner, which is
  not modelled, so the doubly-owned time is the most the protocol allows).

Cycles: every `load_balancing_interval` plus a jitter of up to 20% of it (the Python SDK draws
`interval * random() * 0.2` per cycle), the first at the processor's start. A processor that
stops cleanly releases its records (owner ""), claimable by the next cycle of any other; one
that crashes leaves them to expire `partition_ownership_expiration_interval` after its last
cycle: `departures` says which the session assumes for every departure ("graceful", the
default: rolling restarts and scale-ins stop cleanly; "crash").

The two intervals are the Python SDK's by default, 30 s and 180 s (six intervals):
azure-eventhub 5.15.1 from PyPI, `EventHubConsumerClient.__init__` and
`EventProcessor.__init__` (also so in azure-sdk-for-python at commit
0794b0621b5edc4776349ef869a68f242558b621; the docstring of its `from_connection_string` still
says 10 s and 60 s, the values of older releases). The other SDKs' are named presets
(`SDK_TIMERS`, the `sdk` argument): .NET 30 s and 120 s (Azure.Messaging.EventHubs,
`EventProcessorOptions`, azure-sdk-for-net at commit 0f8b83d6bf129c0dfa765f5d49d4156959c57932),
Java 30 s and 120 s (`EventProcessorClientBuilder.DEFAULT_LOAD_BALANCING_UPDATE_INTERVAL` and
`DEFAULT_OWNERSHIP_EXPIRATION_INTERVAL`, azure-sdk-for-java at commit
02e5720c718b920e85fb0bfbeca6b6576474be59), JavaScript 10 s and 60 s (`EventHubConsumerClient`'s
`loadBalancingOptions`, azure-sdk-for-js at commit dc03b06bfe479526b3c207ea94eaa39fa452a0d7).
A preset changes the intervals only: the balancing rule and the jitter stay the Python SDK's.
Which strategy an SDK runs when not told differs too: greedy in Python, .NET and Java, balanced
in JavaScript (the files above). A crashed processor that comes back under
its owner id before its records expired writes them again in its first cycle (the balancer
starts from the owner's own active records) and keeps them. Simplified: a renewal never conflicts
with a claim at the same instant (the claim wins); a tie for the most loaded owner is drawn from
the seed (the SDK takes the first in the listing); reads and writes take no time.

- `Session(strategy=..., seed=..., sdk=...)`: the registry's protocol hook; `rebalance(queues,
  consumers)` returns the plan after the group is quiet, with claims, steals, cycles and the
  time scores (ProtocolRun).
- `assign_balanced`, `assign_greedy`: the stateless reconstruction: the owners of `previous`
  still present hold their queues with cycles staggered over one interval, the others have left.
Runtime complexity: per processor cycle O(|C|) (owners counted) plus its claims; a cold start
under balanced takes about |Q| / |C| cycles of each processor.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from rebalancing.contract import ConsumerT, ProtocolRun, QueueT
from rebalancing.strategies.ownership_cycles import (
    CycleGroup,
    Member,
    Take,
    settle_from_previous,
)

LoadBalancingStrategy = Literal["balanced", "greedy"]
Departures = Literal["graceful", "crash"]
Sdk = Literal["python", "dotnet", "java", "javascript"]


@dataclass(frozen=True)
class SdkTimers:
    """One SDK's default load-balancing interval and ownership expiry, in seconds; `expiry_per_
    interval`, when set, makes the expiry follow an interval given (the Python SDK's six)."""

    load_balancing_interval: float
    partition_ownership_expiration_interval: float
    expiry_per_interval: float | None = None

    def expiry_for(self, interval: float) -> float:
        """The expiry this SDK uses when only the interval is given."""
        if self.expiry_per_interval is None:
            return self.partition_ownership_expiration_interval
        return self.expiry_per_interval * interval


SDK_TIMERS: Mapping[str, SdkTimers] = MappingProxyType(
    {
        "python": SdkTimers(30.0, 180.0, expiry_per_interval=6.0),
        "dotnet": SdkTimers(30.0, 120.0),
        "java": SdkTimers(30.0, 120.0),
        "javascript": SdkTimers(10.0, 60.0),
    }
)
"""Each SDK's defaults (the module docstring cites where each was read)."""

DEFAULT_SDK: Sdk = "python"

LOAD_BALANCING_INTERVAL = SDK_TIMERS[DEFAULT_SDK].load_balancing_interval
"""Seconds between a processor's load-balancing cycles: the Python SDK's default, 30 s."""

PARTITION_OWNERSHIP_EXPIRATION_INTERVAL = SDK_TIMERS[
    DEFAULT_SDK
].partition_ownership_expiration_interval
"""Seconds after its last write that a record expires: the Python SDK's default, 180 s (six
intervals)."""

CYCLE_JITTER = 0.2
"""Each cycle waits the interval plus up to this fraction of it, drawn per cycle."""


class EventHubsGroup(CycleGroup):
    """The event processors of one consumer group and their ownership records."""

    def __init__(
        self,
        strategy: LoadBalancingStrategy = "balanced",
        seed: int = 0,
        departures: Departures = "graceful",
        load_balancing_interval: float | None = None,
        partition_ownership_expiration_interval: float | None = None,
        max_member_cycles: int | None = None,
        *,
        sdk: Sdk = DEFAULT_SDK,
    ) -> None:
        if sdk not in SDK_TIMERS:
            raise ValueError(f"unknown sdk {sdk!r}; known: {', '.join(SDK_TIMERS)}")
        preset = SDK_TIMERS[sdk]
        if load_balancing_interval is None:
            load_balancing_interval = preset.load_balancing_interval
        if partition_ownership_expiration_interval is None:
            partition_ownership_expiration_interval = preset.expiry_for(load_balancing_interval)
        if strategy not in ("balanced", "greedy"):
            raise ValueError(
                f"unknown load-balancing strategy {strategy!r}; known: balanced, greedy"
            )
        if departures not in ("graceful", "crash"):
            raise ValueError(f"unknown departures {departures!r}; known: graceful, crash")
        if not load_balancing_interval > 0:
            raise ValueError(
                f"load_balancing_interval must be positive, not {load_balancing_interval!r}"
            )
        longest_cycle = load_balancing_interval * (1 + CYCLE_JITTER)
        if not partition_ownership_expiration_interval > longest_cycle:
            raise ValueError(
                "partition_ownership_expiration_interval must exceed the longest cycle "
                f"({longest_cycle} s), or a live processor's records would expire; got "
                f"{partition_ownership_expiration_interval!r}"
            )
        super().__init__(seed, max_member_cycles)
        self.sdk = sdk
        self.strategy = strategy
        self.interval = load_balancing_interval
        self.cycle_seconds = load_balancing_interval
        self.expiration = partition_ownership_expiration_interval
        self.departures = departures

    def decide(self, member: Member, now: float) -> list[Take]:
        mine = self.held_count(member.name)
        partitions = len(self.queues)
        owners = len(self.held) + (0 if mine else 1)
        expected, most_allowed = partitions // owners, math.ceil(partitions / owners)
        if mine >= most_allowed:
            return []
        claimable = self.claimable.items
        if claimable:
            if self.strategy == "greedy":
                count = min(most_allowed - mine, len(claimable))
                return self.takes(self.rng.sample(claimable, count), "claim")
            return self.takes([claimable[self.rng.randrange(len(claimable))]], "claim")
        if mine < expected:
            counts = {owner: len(records) for owner, records in self.held.items()}
            victim, _ = self.most_loaded(counts)
            records = self.held[victim].items
            return self.takes([records[self.rng.randrange(len(records))]], "steal")
        return []

    def next_cycle_after(self, member: Member, now: float) -> float:
        return now + self.interval * (1 + CYCLE_JITTER * self.rng.random())

    def notice_time(self, victim: Member, now: float) -> float:
        return victim.next_cycle  # its next cycle lists the records and lets the partition go

    def depart(self, member: Member, now: float) -> None:
        if self.departures == "graceful":
            self.release_records(member.name)
        else:
            expires_at = member.last_cycle_at + self.expiration
            self.hold_until_expired(member.name, member.last_cycle_at, expires_at)


Session = EventHubsGroup
"""One consumer group's event processors across rebalances (the registry's session hook):
`Session(strategy, seed=..., departures=...).rebalance(queues, consumers)` applies the change
now and runs the cycles until quiet."""


def run(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
    strategy: LoadBalancingStrategy = "balanced",
    departures: Departures = "graceful",
    seed: int = 0,
) -> ProtocolRun:
    """The group of `previous` (its owners live, cycles staggered) changed to `queues` x
    `consumers`, run until quiet."""
    return settle_from_previous(
        EventHubsGroup(strategy, seed, departures), queues, consumers, previous
    )


def assign_balanced(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
) -> dict[ConsumerT, list[QueueT]]:
    """The owners once quiet, every processor claiming at most one partition per cycle."""
    return run(queues, consumers, previous, "balanced").owners


def assign_greedy(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
) -> dict[ConsumerT, list[QueueT]]:
    """The owners once quiet, every processor claiming its whole share at once."""
    return run(queues, consumers, previous, "greedy").owners
