"""The real azure-eventhub load balancer (its OwnershipManager, the `dev` extra) against our
Event Hubs session on small groups: the SDK's processors run their cycles on a clock of our own
over an in-memory checkpoint store of our own (conditional writes by ETag, as the blob store
makes them), and what they claim per cycle and hold at quiescence is compared with what the
session's balanced and greedy strategies do."""

from __future__ import annotations

import heapq
import itertools
import random
from collections.abc import Iterable
from typing import Any

import pytest
from azure.eventhub import LoadBalancingStrategy
from azure.eventhub._eventprocessor import ownership_manager
from azure.eventhub._eventprocessor.checkpoint_store import CheckpointStore
from azure.eventhub._eventprocessor.event_processor import EventProcessor

from rebalancing.strategies.event_hubs import (
    CYCLE_JITTER,
    LOAD_BALANCING_INTERVAL,
    PARTITION_OWNERSHIP_EXPIRATION_INTERVAL,
    Session,
)

NAMESPACE, HUB, GROUP = "ns.servicebus.windows.net", "hub", "$Default"


class Clock:
    """The time the SDK reads (`time.time()` in ownership_manager), moved by the driver."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def time(self) -> float:
        return self.now


class MemoryStore(CheckpointStore):  # type: ignore[misc]
    """Ownership records in a dict; a claim succeeds when the record is new or its ETag is the
    one the claimer read; every write takes a new ETag and the clock's time. Listings are
    copies, as a blob store's are."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.records: dict[str, dict[str, Any]] = {}
        self.etags = itertools.count()

    def list_ownership(self, *_: Any, **__: Any) -> list[dict[str, Any]]:
        return [dict(record) for record in self.records.values()]

    def claim_ownership(
        self, ownership_list: Iterable[dict[str, Any]], **_: Any
    ) -> list[dict[str, Any]]:
        claimed = []
        for ownership in ownership_list:
            stored = self.records.get(ownership["partition_id"])
            if stored is not None and stored["etag"] != ownership.get("etag"):
                continue  # the record changed since it was read: the write fails
            record = {
                **ownership,
                "etag": str(next(self.etags)),
                "last_modified_time": self.clock.time(),
            }
            self.records[ownership["partition_id"]] = record
            claimed.append(dict(record))
        return claimed

    def update_checkpoint(self, *_: Any, **__: Any) -> None:
        return None

    def list_checkpoints(self, *_: Any, **__: Any) -> list[dict[str, Any]]:
        return []

    def held(self) -> dict[str, list[str]]:
        owners: dict[str, list[str]] = {}
        for partition, record in sorted(self.records.items()):
            if record["owner_id"]:
                owners.setdefault(record["owner_id"], []).append(partition)
        return owners


class Hub:
    """What OwnershipManager reads of its client: the hub's address, name and partitions."""

    class _Address:
        hostname = NAMESPACE

    _address = _Address()
    eventhub_name = HUB

    def __init__(self, partitions: int) -> None:
        self.partitions = [str(index) for index in range(partitions)]

    def get_partition_ids(self) -> list[str]:
        return list(self.partitions)


class SdkGroup:
    """Processors of the real SDK, each calling `claim_ownership` once per cycle (the
    interval plus the SDK's jitter, from a seeded stream), in time order."""

    def __init__(
        self, partitions: int, strategy: str, seed: int, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        self.clock = Clock()
        self.store = MemoryStore(self.clock)
        self.hub = Hub(partitions)
        self.strategy = LoadBalancingStrategy(strategy)
        self.draws = random.Random(seed)
        monkeypatch.setattr(ownership_manager, "time", self.clock)
        monkeypatch.setattr(ownership_manager, "random", random.Random(seed + 1))
        self.managers: dict[str, Any] = {}
        self.cycles: list[tuple[float, int, str]] = []
        self.order = itertools.count()
        self.claims_per_cycle: dict[str, list[int]] = {}

    def start(self, name: str) -> None:
        self.managers[name] = ownership_manager.OwnershipManager(
            self.hub, GROUP, name, self.store, 6 * LOAD_BALANCING_INTERVAL, self.strategy, None
        )
        self.claims_per_cycle[name] = []
        heapq.heappush(self.cycles, (self.clock.now, next(self.order), name))

    def stop(self, name: str) -> None:
        """A clean close: the processor releases every record it holds (owner "")."""
        manager = self.managers.pop(name)
        for partition in self.store.held().get(name, []):
            manager.release_ownership(partition)

    def run_until_quiet(self) -> None:
        """Cycles in time order until every live processor ran a cycle that changed nothing."""
        quiet: set[str] = set()
        while quiet != set(self.managers):
            time, _, name = heapq.heappop(self.cycles)
            if name not in self.managers:
                continue
            self.clock.now = time
            before = self.store.held().get(name, [])
            after = self.managers[name].claim_ownership()
            gained = len(set(after) - set(before))
            self.claims_per_cycle[name].append(gained)
            if gained or set(after) != set(before):
                quiet.clear()
            else:
                quiet.add(name)
            jitter = LOAD_BALANCING_INTERVAL * self.draws.random() * CYCLE_JITTER
            heapq.heappush(
                self.cycles, (time + LOAD_BALANCING_INTERVAL + jitter, next(self.order), name)
            )

    def counts(self) -> list[int]:
        held = self.store.held()
        return sorted(len(held.get(name, [])) for name in self.managers)


def test_the_sdks_processor_defaults_are_the_sessions() -> None:
    store = MemoryStore(Clock())
    processor = EventProcessor(Hub(4), GROUP, lambda *_: None, checkpoint_store=store)
    assert processor._load_balancing_interval == LOAD_BALANCING_INTERVAL == 30.0
    assert processor._ownership_timeout == PARTITION_OWNERSHIP_EXPIRATION_INTERVAL == 180.0
    assert processor._load_balancing_strategy is LoadBalancingStrategy.GREEDY  # not balanced


@pytest.mark.parametrize("strategy", ["balanced", "greedy"])
@pytest.mark.parametrize("partitions", [1, 5, 12])
def test_a_lone_processor_claims_per_cycle_what_the_sdk_claims(
    strategy: str, partitions: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Balanced: one partition a cycle; greedy: everything in the first cycle; then a cycle
    that claims nothing."""
    sdk = SdkGroup(partitions, strategy, seed=3, monkeypatch=monkeypatch)
    sdk.start("p1")
    sdk.run_until_quiet()
    ours = Session(strategy, seed=3).rebalance(range(partitions), ["p1"])  # type: ignore[arg-type]
    per_cycle = [1] * partitions if strategy == "balanced" else [partitions]
    assert sdk.claims_per_cycle["p1"] == [*per_cycle, 0]
    assert (ours.claims, ours.rounds) == (partitions, len(per_cycle))
    assert sdk.counts() == [len(ours.owners["p1"])] == [partitions]


GROUPS = [(8, 2, 3), (10, 3, 4), (12, 4, 3), (9, 2, 4)]
"""(partitions, processors at first, processors after a join of the rest)."""


@pytest.mark.parametrize("strategy", ["balanced", "greedy"])
@pytest.mark.parametrize(("partitions", "first", "then"), GROUPS)
def test_joins_and_a_leave_end_with_the_same_counts_and_steals_as_the_sdk(
    strategy: str, partitions: int, first: int, then: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = [f"p{index}" for index in range(max(first, then))]
    sdk = SdkGroup(partitions, strategy, seed=partitions + first, monkeypatch=monkeypatch)
    session = Session(strategy, seed=partitions + first)  # type: ignore[arg-type]
    ours = session.rebalance(range(partitions), names[:first])
    for name in names[:first]:
        sdk.start(name)
    sdk.run_until_quiet()
    assert sdk.counts() == sorted(len(owned) for owned in ours.owners.values())

    records_before = sum(1 for _ in sdk.store.records)
    ours = session.rebalance(range(partitions), names[:then])
    if then > first:
        for name in names[first:then]:
            sdk.start(name)
    else:
        for name in names[then:first]:
            sdk.stop(name)
    sdk.run_until_quiet()
    assert sdk.counts() == sorted(len(owned) for owned in ours.owners.values())
    assert sorted(q for owned in sdk.store.held().values() for q in owned) == sorted(
        str(partition) for partition in range(partitions)
    )
    assert records_before == partitions  # every partition had a record before the change
    if then > first:  # nothing claimable: each newcomer steals up to its expected share
        newcomers = names[first:then]
        sdk_steals = sum(sum(sdk.claims_per_cycle[name]) for name in newcomers)
        assert sdk_steals == ours.steals == (then - first) * (partitions // then)
