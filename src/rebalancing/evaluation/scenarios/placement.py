"""One scenario's zones and weights, drawn from a random generator of their own (the scenarios
module's docstring says how), and handed to each step as read-only maps, the same objects while
they do not change. Runtime complexity: O(zones) per consumer or queue added, O(|Q|) per load
shift, O(changed maps) per step.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rebalancing.evaluation.scenarios.changes import Step

WEIGHT_DISTRIBUTIONS = ("uniform", "zipf", "hot")
"""The distributions queue weights are drawn from (the module docstring says how)."""

ZONE_NAMES = tuple(f"zone-{letter}" for letter in "abcdefghijklmnopqrstuvwxyz")
"""The zones of a scenario with zones, in order: it has the first k of them."""

REPLICATION_FACTOR = 3
"""The most zones a queue's replicas are in (Kafka's usual replication factor)."""

ZIPF_EXPONENT = 1.0
"""The exponent s of the "zipf" weights: the queue of rank r weighs 1 / r ** s."""

HOT_WEIGHT = 10.0
"""The weight of the hot queue of the "hot" weights, every other queue weighing 1."""

_MAPS = ("consumer_zones", "queue_zones", "weights")


class ScenarioPlacement:
    """One scenario's zones and weights (the module docstring), drawn from a generator of their
    own; `attach` gives a step the maps as they now are, the same objects while unchanged."""

    def __init__(
        self, rng: random.Random, zone_range: tuple[int, int] | None, weights: str | None
    ) -> None:
        self.rng = rng
        self.distribution = weights
        self.zones: tuple[str, ...] = ()
        self.shares: list[float] = []
        if zone_range is not None:
            self.zones = ZONE_NAMES[: rng.randint(*zone_range)]
            self.shares = [rng.uniform(1.0, 4.0) for _ in self.zones]
        self.consumer_zones: dict[str, str] = {}
        self.queue_zones: dict[int, frozenset[str]] = {}
        self.weights: dict[int, float] | None = {} if weights is not None else None
        self.hot: int | None = None
        self.zone_out: str | None = None
        self.out: list[str] = []  # the consumers of the zone that is out
        # the maps as steps got them, and which of them changed since (by name)
        self.shown: dict[str, Mapping[Any, Any] | None] = dict.fromkeys(_MAPS)
        self.changed = set(_MAPS)

    def attach(self, step: Step) -> Step:
        """`step` with the current maps: a new read-only copy of a map only when it changed."""
        if self.changed:
            current: dict[str, Mapping[Any, Any] | None] = {
                "consumer_zones": self.consumer_zones if self.zones else None,
                "queue_zones": self.queue_zones if self.zones else None,
                "weights": self.weights,
            }
            for name in self.changed:
                held = current[name]
                self.shown[name] = None if held is None else MappingProxyType(dict(held))
            self.changed = set()
        shown = self.shown
        return replace(
            step,
            consumer_zones=shown["consumer_zones"],
            queue_zones=shown["queue_zones"],
            weights=shown["weights"],
        )

    def zone_drawn(self, among: Sequence[str]) -> str:
        shares = [self.shares[self.zones.index(zone)] for zone in among]
        return self.rng.choices(among, weights=shares)[0]

    def add_consumer(self, consumer: str) -> None:
        if self.zones:
            open_zones = [zone for zone in self.zones if zone != self.zone_out]
            self.consumer_zones[consumer] = self.zone_drawn(open_zones)
            self.changed.add("consumer_zones")

    def add_queues(self, queues: Sequence[int]) -> None:
        rng = self.rng
        if self.zones:
            most = min(REPLICATION_FACTOR, len(self.zones))
            for queue in queues:
                left = list(self.zones)
                held = []
                for _ in range(rng.randint(1, most)):
                    zone = self.zone_drawn(left)
                    left.remove(zone)
                    held.append(zone)
                self.queue_zones[queue] = frozenset(held)
            self.changed.add("queue_zones")
        if self.weights is not None and queues:
            if self.distribution == "uniform":
                self.weights.update((queue, rng.random()) for queue in queues)
            elif self.distribution == "zipf":
                if not self.weights:  # the starting queues: a permutation of the ranks
                    ranks = list(range(1, len(queues) + 1))
                    rng.shuffle(ranks)
                else:
                    had = len(self.weights)
                    ranks = [rng.randint(1, had + number + 1) for number in range(len(queues))]
                self.weights.update(
                    (queue, 1.0 / rank**ZIPF_EXPONENT)
                    for queue, rank in zip(queues, ranks, strict=True)
                )
            else:  # hot
                starting = not self.weights
                self.weights.update((queue, 1.0) for queue in queues)
                if starting:
                    self.hot = rng.choice(queues)
                    self.weights[self.hot] = HOT_WEIGHT
            self.changed.add("weights")

    def zones_with(self, consumers: Sequence[str]) -> int:
        """How many zones the `consumers` are in."""
        return len({self.consumer_zones[consumer] for consumer in consumers})

    def zone_outage(self, consumers: Sequence[str], rng: random.Random) -> list[str]:
        """Every consumer of one zone (among those holding some but not all of `consumers`)."""
        held = sorted({self.consumer_zones[consumer] for consumer in consumers})
        self.zone_out = rng.choice(held)
        self.out = [c for c in consumers if self.consumer_zones[c] == self.zone_out]
        return self.out

    def zone_recovery(self) -> list[str]:
        back, self.out, self.zone_out = self.out, [], None
        return back

    def shift_load(self, queues: Sequence[int]) -> None:
        """The hot queue moves ("hot"), or the lags of some queues grow."""
        assert self.weights is not None
        rng = self.rng
        if self.distribution == "hot":
            others = [queue for queue in queues if queue != self.hot]
            if self.hot is not None:
                self.weights[self.hot] = 1.0
            self.hot = rng.choice(others)
            self.weights[self.hot] = HOT_WEIGHT
        else:
            for queue in rng.sample(queues, rng.randint(1, max(1, len(queues) // 4))):
                self.weights[queue] *= rng.uniform(2.0, 4.0)
        self.changed.add("weights")
