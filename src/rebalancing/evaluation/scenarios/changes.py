"""Randomised membership-change scenarios, each generated from (base_seed, index) alone.

A scenario is a starting group (queue and consumer counts drawn log-uniformly from wide ranges,
so small groups are common and large ones occur) followed by a sequence of membership changes.
Most changes are one rebalance: one consumer joins, a burst joins, one leaves gracefully, one or
more crash, queues are added (scale out) or removed, or a mix of these at once. Three are the
churn operators meet most, and take several rebalances, each a step of that kind:

- `rolling_restart`: a deploy; every consumer leaves and rejoins under the same id, a quarter
  of the group at a time (Kubernetes' default maxUnavailable of 25%; one at a time in groups of
  up to four): two rebalances per batch, what Kafka users add static membership to survive;
- `autoscaling`: 2-4 steps in one direction, each adding (or each removing) the same number of
  consumers, 2 or up to a quarter of the group; removing only where two steps of that size
  leave a consumer (a group of more than twice the size: a group of 3 or 4 scales out), and
  then fewer steps than drawn (never fewer than 2) where the next would empty the group;
- `flapping`: one consumer crashes and rejoins under its id, 2-5 times.

Placement (off by default; ScenarioSettings.zone_range and .weights turn it on; with it off the
scenarios are exactly what they were, and with it on but no placement change kind in the mix
the membership draws are the same too: placement is drawn from a random generator of its own,
seeded from the scenario's seed. A placement kind in the mix, as in the default one, changes
which kind each draw picks from the first change on, whichever kind it picks):

- zones: each scenario has ZONE_NAMES[:k] zones, k drawn uniformly from `zone_range`, of uneven
  sizes: zone i has a share proportional to a draw uniform in [1, 4), and every consumer (at the
  start and whenever one joins) is put in a zone drawn by those shares. Each queue's replicas
  are in 1 to min(REPLICATION_FACTOR, k) zones (the count uniform), drawn by the same shares
  without replacement. Steps carry `consumer_zones` (every consumer the scenario has had ->
  its zone) and `queue_zones` (every queue it has had -> frozenset of zones).
- weights (each queue's load: lag, bytes/s), one of WEIGHT_DISTRIBUTIONS: "uniform", each
  uniform in [0, 1); "zipf", each queue a rank r uniform among the queues there are (the
  starting queues a random permutation of 1..|Q|) and the weight 1 / r ** ZIPF_EXPONENT (1.0);
  "hot", every queue 1 but one, uniformly chosen, HOT_WEIGHT (10) times as heavy (a removed hot
  queue takes its heat along: the group then has none until a load_shift). Steps carry
  `weights` (every queue the scenario has had -> its weight).
- The maps are read-only (MappingProxyType) and hold ids the group no longer has (which the
  placement rules ignore), so that a step whose placement did not change holds the very same
  map objects as the step before, as it holds the same queues.

Three change kinds need placement, and are drawn only in scenarios that have it (feasibility,
`_feasible`, like every other kind's):

- `zone_outage` (zones): every consumer of one zone leaves at once, a zone holding at least one
  consumer but not all of them; one zone is out at a time, and no one joins it while it is out;
- `zone_recovery` (zones, while a zone is out): the zone's consumers come back, under their ids;
- `load_shift` (weights, at least two queues): the membership is unchanged; under "hot" the
  hot queue moves to another queue, otherwise the lags of a random quarter of the queues (at
  least one) grow by a factor uniform in [2, 4).

A graceful leave and a crash are the same input to every strategy here: the consumer is gone
from the next rebalance's group, so a function of (queues, consumers, previous) cannot tell them
apart, and neither can the SAC session (RabbitMQ removes a cancelled consumer and a dead
connection's consumer alike). Where they differ is outside a rebalance: when it starts (a crash
waits for the session or heartbeat timeout, its queues unread meanwhile), the crashed consumer's
unacknowledged messages being delivered again, and under Kafka's cooperative protocol a leaving
member revoking its own partitions first. The `leave` and `crash` kinds differ only in how many
consumers go at once.

The same (base_seed, index) gives the same scenario on any machine, in any process and in any
Spark partition: the random generator is seeded from a blake2b digest, never from `hash()`.
Steps are generated lazily, one at a time. Their queues and consumers are SortedIds, sorted and
distinct by construction (queue ids from a counter, consumer ids drawn until new), so the
scoring core takes them without checking them again; a step whose queues did not change holds
the very same object as the step before.
Runtime complexity: O(|Q| + |C|) per step (with zones: O((|Q| + |C|) x zones)).
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar

from rebalancing.contract import SortedIds

IdT = TypeVar("IdT", int, str)

CHANGE_KINDS = (
    "join",
    "join_burst",
    "leave",
    "crash",
    "queues_added",
    "queues_removed",
    "mixed",
    "rolling_restart",
    "autoscaling",
    "flapping",
    "zone_outage",
    "zone_recovery",
    "load_shift",
)
"""Every kind of membership change a scenario can contain."""

ZONE_KINDS = frozenset({"zone_outage", "zone_recovery"})
"""The change kinds that need zones (ScenarioSettings.zone_range)."""

WEIGHT_KINDS = frozenset({"load_shift"})
"""The change kinds that need weights (ScenarioSettings.weights)."""

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

INITIAL = "initial"
"""The kind of step 0: the first assignment, from scratch."""


def _positive_range(name: str, bounds: tuple[int, int]) -> None:
    low, high = bounds
    if not (isinstance(low, int) and isinstance(high, int)):
        raise TypeError(f"{name} must be a pair of ints, got {bounds!r}")
    if not 1 <= low <= high:
        raise ValueError(f"{name} must satisfy 1 <= low <= high, got {bounds!r}")


@dataclass(frozen=True)
class ScenarioSettings:
    """The ranges scenarios are drawn from, and the mix of change kinds (relative weights)."""

    queue_range: tuple[int, int] = (1, 4096)
    consumer_range: tuple[int, int] = (1, 256)
    change_count_range: tuple[int, int] = (1, 6)
    change_weights: Mapping[str, float] = field(
        default_factory=lambda: dict.fromkeys(CHANGE_KINDS, 1.0)
    )
    zone_range: tuple[int, int] | None = None
    weights: str | None = None

    def __post_init__(self) -> None:
        _positive_range("queue_range", self.queue_range)
        _positive_range("consumer_range", self.consumer_range)
        _positive_range("change_count_range", self.change_count_range)
        if self.zone_range is not None:
            _positive_range("zone_range", self.zone_range)
            if self.zone_range[1] > len(ZONE_NAMES):
                raise ValueError(
                    f"zone_range allows at most {len(ZONE_NAMES)} zones, got {self.zone_range!r}"
                )
        if self.weights is not None and self.weights not in WEIGHT_DISTRIBUTIONS:
            raise ValueError(
                f"unknown weights {self.weights!r}; known: {', '.join(WEIGHT_DISTRIBUTIONS)}"
            )
        for kind, weight in self.change_weights.items():
            if kind not in CHANGE_KINDS:
                raise ValueError(f"unknown change kind {kind!r}; known: {', '.join(CHANGE_KINDS)}")
            if not (isinstance(weight, int | float) and weight >= 0 and math.isfinite(weight)):
                raise ValueError(f"weight of change kind {kind!r} must be >= 0, got {weight!r}")
        if not any(self.change_weights.values()):
            raise ValueError("change_weights must give at least one change kind a positive weight")
        possible = [
            kind for kind, weight in self.change_weights.items() if weight and self.allows(kind)
        ]
        if not possible:
            needed = sorted(kind for kind, weight in self.change_weights.items() if weight)
            raise ValueError(
                f"change_weights gives weight only to {', '.join(needed)}, which need "
                "zones (zone_range) or weights that these settings do not have"
            )

    def allows(self, kind: str) -> bool:
        """Whether scenarios of these settings can hold `kind` at all: the zone kinds need
        zones, load_shift needs weights."""
        if kind in ZONE_KINDS:
            return self.zone_range is not None
        if kind in WEIGHT_KINDS:
            return self.weights is not None
        return True

    def carried_inputs(self) -> frozenset[str]:
        """The strategy inputs (rebalancing.placement.INPUTS) the steps carry."""
        zones = {"consumer_zones", "queue_zones"} if self.zone_range is not None else set()
        return frozenset(zones | ({"weights"} if self.weights is not None else set()))


@dataclass(frozen=True)
class Step:
    """The group after one membership change (step 0: the starting group).

    `kind` is the change kind (INITIAL for step 0); the other counts say what changed. With
    placement on (the module docstring), `consumer_zones`, `queue_zones` and `weights` are
    read-only maps the next step shares when they did not change; None when off.
    """

    index: int
    kind: str
    queues: tuple[int, ...]
    consumers: tuple[str, ...]
    joined: int = 0
    departed: int = 0
    queues_added: int = 0
    queues_removed: int = 0
    consumer_zones: Mapping[str, str] | None = None
    queue_zones: Mapping[int, frozenset[str]] | None = None
    weights: Mapping[int, float] | None = None


def scenario_seed(base_seed: int, index: int) -> int:
    """A 64-bit seed for scenario `index` of a run, stable across machines and processes."""
    digest = hashlib.blake2b(f"{base_seed}:{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


@dataclass(frozen=True)
class Scenario:
    """Scenario `index` of the run seeded with `base_seed`; `steps()` generates it lazily."""

    base_seed: int
    index: int
    settings: ScenarioSettings = field(default_factory=ScenarioSettings)

    def steps(self) -> Iterator[Step]:
        """The starting group, then the group after each change, one step at a time."""
        seed = scenario_seed(self.base_seed, self.index)
        return _Generator(random.Random(seed), self.settings, seed)()


def generate_scenarios(
    base_seed: int, indices: range, settings: ScenarioSettings | None = None
) -> Iterator[Scenario]:
    """Scenarios `indices` of the run seeded with `base_seed`, lazily."""
    chosen = settings or ScenarioSettings()
    for index in indices:
        yield Scenario(base_seed, index, chosen)


class _Generator:
    """Draws one scenario's steps from its own seeded random generator."""

    def __init__(
        self, rng: random.Random, settings: ScenarioSettings, seed: int | None = None
    ) -> None:
        self.rng = rng
        self.settings = settings
        self.next_queue_id = 0
        self.consumer_ids: set[str] = set()
        self.placement: _Placement | None = None
        if settings.zone_range is not None or settings.weights is not None:
            placement_seed = scenario_seed(seed or 0, -1)  # a stream of its own
            self.placement = _Placement(random.Random(placement_seed), settings)

    def __call__(self) -> Iterator[Step]:
        queues: tuple[int, ...] = tuple(
            self.new_queues(self.log_uniform(self.settings.queue_range))
        )
        # the first change draws from the consumers in the order they were made (as it always
        # has: the draws, and so every scenario, stay what they were); later ones, in id order
        consumers: tuple[str, ...] = tuple(
            self.new_consumer() for _ in range(self.log_uniform(self.settings.consumer_range))
        )
        first = Step(0, INITIAL, _sorted_ids(queues), _sorted_ids(sorted(consumers)))
        queues = first.queues  # the same ids in the same (ascending) order: the same draws
        yield self.placed(first)
        index = 0
        for _ in range(self.rng.randint(*self.settings.change_count_range)):
            kind = self.choose_kind(queues, consumers)
            for step in self.apply(index + 1, kind, queues, consumers):
                index = step.index
                queues, consumers = step.queues, step.consumers  # read, never changed
                yield self.placed(step)

    def placed(self, step: Step) -> Step:
        """`step` with the placement as it now is (itself when placement is off)."""
        if self.placement is None:
            return step
        return self.placement.attach(step)

    def log_uniform(self, bounds: tuple[int, int]) -> int:
        """An int in [low, high], uniform in log scale: skewed towards small groups."""
        low, high = bounds
        drawn = int(math.exp(self.rng.uniform(math.log(low), math.log(high + 1))))
        return min(max(drawn, low), high)

    def new_queues(self, count: int) -> list[int]:
        start = self.next_queue_id
        self.next_queue_id += count
        new = list(range(start, start + count))
        if self.placement is not None:
            self.placement.add_queues(new)
        return new

    def new_consumer(self) -> str:
        """A fresh id like RocketMQ's client ids: random, so joiners land anywhere in sort order."""
        while True:
            consumer = f"consumer-{self.rng.getrandbits(32):08x}"
            if consumer not in self.consumer_ids:
                self.consumer_ids.add(consumer)
                if self.placement is not None:
                    self.placement.add_consumer(consumer)
                return consumer

    def choose_kind(self, queues: Sequence[int], consumers: Sequence[str]) -> str:
        """A weighted draw among the kinds this group allows (a join when none is allowed)."""
        placement = self.placement
        feasible = {
            kind: weight
            for kind, weight in self.settings.change_weights.items()
            if weight > 0 and _feasible(kind, len(queues), len(consumers), placement, consumers)
        }
        if not feasible:
            return "join"
        kinds = sorted(feasible)
        return self.rng.choices(kinds, weights=[feasible[kind] for kind in kinds])[0]

    def apply(
        self, index: int, kind: str, queues: Sequence[int], consumers: Sequence[str]
    ) -> Iterator[Step]:
        """The steps of one change, numbered from `index`."""
        if kind == "rolling_restart":
            yield from self.rolling_restart(index, queues, consumers)
        elif kind == "autoscaling":
            yield from self.autoscaling(index, queues, consumers)
        elif kind == "flapping":
            yield from self.flapping(index, queues, consumers)
        elif kind in ZONE_KINDS or kind in WEIGHT_KINDS:
            yield self.placement_change(index, kind, queues, consumers)
        else:
            yield self.one_rebalance(index, kind, queues, consumers)

    def rolling_restart(
        self, index: int, queues: Sequence[int], consumers: Sequence[str]
    ) -> Iterator[Step]:
        """Every consumer, batch by batch in a random order, leaves and rejoins under its id;
        a batch is a quarter of the group, rounded up (Kubernetes' default maxUnavailable).

        Rejoining under the same id is what Kafka's static members do (group.instance.id,
        KIP-345), and these steps are theirs when a restart outlasts session.timeout.ms: one
        rebalance when the broker drops the member, one when it takes it back under its id.
        The rolling_restart figures assume such members. A static member back within the
        session timeout causes no rebalance at all (its queues wait for it, unread); a
        dynamic member comes back under a new member id, a consumer no strategy has seen, so
        a strategy that plans from ids (consistent hashing; the order averagely and
        round_robin follow) does not give it back what it had, as it does here."""
        order = self.rng.sample(consumers, len(consumers))
        batch = -(-len(order) // 4)
        present, same_queues = _sorted_ids(sorted(consumers)), _sorted_ids(queues)
        for number, start in enumerate(range(0, len(order), batch)):
            restarting = set(order[start : start + batch])
            without = _sorted_ids([other for other in present if other not in restarting])
            count = len(restarting)
            leaving, rejoining = index + 2 * number, index + 2 * number + 1
            yield Step(leaving, "rolling_restart", same_queues, without, departed=count)
            yield Step(rejoining, "rolling_restart", same_queues, present, joined=count)

    def autoscaling(
        self, index: int, queues: Sequence[int], consumers: Sequence[str]
    ) -> Iterator[Step]:
        """2-4 steps of the same size, all adding or all removing consumers (never the last:
        a group that two steps in would empty scales out)."""
        rng = self.rng
        size = rng.randint(2, max(2, len(consumers) // 4))
        # the draws as they always were, so that the scenarios that scaled in or out rightly
        # stay as they were; only a group too small for two steps in now scales out
        scale_in = len(consumers) > size and rng.random() < 0.5
        scale_in = scale_in and len(consumers) > 2 * size
        present = list(consumers)
        for offset in range(rng.randint(2, 4)):
            if scale_in:
                if len(present) <= size:
                    return
                gone = set(rng.sample(present, size))
                present = [consumer for consumer in present if consumer not in gone]
            else:
                present = present + [self.new_consumer() for _ in range(size)]
            yield Step(
                index + offset,
                "autoscaling",
                _sorted_ids(queues),
                _sorted_ids(sorted(present)),
                joined=0 if scale_in else size,
                departed=size if scale_in else 0,
            )

    def flapping(
        self, index: int, queues: Sequence[int], consumers: Sequence[str]
    ) -> Iterator[Step]:
        """One consumer crashes and rejoins under its id, 2-5 times."""
        consumer = self.rng.choice(consumers)
        present, same_queues = _sorted_ids(sorted(consumers)), _sorted_ids(queues)
        without = _sorted_ids([other for other in present if other != consumer])
        for cycle in range(self.rng.randint(2, 5)):
            yield Step(index + 2 * cycle, "flapping", same_queues, without, departed=1)
            yield Step(index + 2 * cycle + 1, "flapping", same_queues, present, joined=1)

    def placement_change(
        self, index: int, kind: str, queues: Sequence[int], consumers: Sequence[str]
    ) -> Step:
        """A zone_outage, zone_recovery or load_shift (feasible: `_feasible`)."""
        assert self.placement is not None  # only drawn with placement on (_feasible)
        same_queues = _sorted_ids(queues)
        if kind == "load_shift":
            self.placement.shift_load(same_queues)
            return Step(index, kind, same_queues, _changed(consumers, [], [], in_order=True))
        if kind == "zone_outage":
            gone = self.placement.zone_outage(consumers, self.rng)
            present = _changed(consumers, gone, [], in_order=True)
            return Step(index, kind, same_queues, present, departed=len(gone))
        back = self.placement.zone_recovery()
        present = _changed(consumers, [], back, in_order=True)
        return Step(index, kind, same_queues, present, joined=len(back))

    def one_rebalance(
        self, index: int, kind: str, queues: Sequence[int], consumers: Sequence[str]
    ) -> Step:
        rng = self.rng
        joined: list[str] = []
        departed: list[str] = []
        added: list[int] = []
        removed: list[int] = []
        if kind == "join":
            joined = [self.new_consumer()]
        elif kind == "join_burst":
            joined = [self.new_consumer() for _ in range(rng.randint(2, 8))]
        elif kind == "leave":
            departed = rng.sample(consumers, 1)
        elif kind == "crash":
            departed = rng.sample(consumers, rng.randint(1, min(3, len(consumers) - 1)))
        elif kind == "queues_added":
            added = self.new_queues(rng.randint(1, max(1, len(queues) // 2)))
        elif kind == "queues_removed":
            removed = rng.sample(queues, rng.randint(1, max(1, (len(queues) - 1) // 4)))
        else:  # mixed: a join, a departure when possible, and queues added or removed
            joined = [self.new_consumer()]
            if len(consumers) > 1:
                departed = rng.sample(consumers, 1)
            if len(queues) > 1 and rng.random() < 0.5:
                removed = rng.sample(queues, rng.randint(1, max(1, (len(queues) - 1) // 4)))
            else:
                added = self.new_queues(rng.randint(1, max(1, len(queues) // 4)))
        return Step(
            index,
            kind,
            _changed(queues, removed, added),
            _changed(consumers, departed, joined, in_order=True),
            joined=len(joined),
            departed=len(departed),
            queues_added=len(added),
            queues_removed=len(removed),
        )


def _changed(
    present: Sequence[IdT], gone: list[IdT], new: list[IdT], in_order: bool = False
) -> SortedIds:
    """`present` without `gone`, then `new`, sorted when `in_order` (queues need no sort: they
    are ascending, and new ids come from the counter, above every id there is); `present`
    itself when nothing changed and it is sorted already."""
    if gone:
        gone_set = set(gone)
        kept: list[IdT] = [identifier for identifier in present if identifier not in gone_set]
    elif new or (in_order and type(present) is not SortedIds):
        kept = list(present)
    else:
        return _sorted_ids(present)
    kept += new
    if in_order:
        kept.sort()
    return _sorted_ids(kept)


def _sorted_ids(ids: Sequence[Any]) -> SortedIds:
    """`ids`, sorted and distinct by construction (see the module docstring), as SortedIds."""
    return ids if type(ids) is SortedIds else SortedIds.of_sorted(tuple(ids))


def _feasible(
    kind: str,
    queue_count: int,
    consumer_count: int,
    placement: _Placement | None = None,
    consumers: Sequence[str] = (),
) -> bool:
    """Whether `kind` can happen without emptying the group (and, for the placement kinds, with
    the scenario's placement: a zone_outage needs the `consumers` in two zones at least and no
    zone out, a zone_recovery a zone out, a load_shift weights and two queues)."""
    if kind in ("leave", "crash", "rolling_restart", "flapping"):
        return consumer_count > 1
    if kind == "queues_removed":
        return queue_count > 1
    if kind in ZONE_KINDS:
        if placement is None or not placement.zones:
            return False
        if kind == "zone_recovery":
            return placement.zone_out is not None
        return placement.zone_out is None and placement.zones_with(consumers) > 1
    if kind in WEIGHT_KINDS:
        return placement is not None and placement.weights is not None and queue_count > 1
    return True


class _Placement:
    """One scenario's zones and weights (the module docstring), drawn from a generator of their
    own; `attach` gives a step the maps as they now are, the same objects while unchanged."""

    def __init__(self, rng: random.Random, settings: ScenarioSettings) -> None:
        self.rng = rng
        self.distribution = settings.weights
        self.zones: tuple[str, ...] = ()
        self.shares: list[float] = []
        if settings.zone_range is not None:
            self.zones = ZONE_NAMES[: rng.randint(*settings.zone_range)]
            self.shares = [rng.uniform(1.0, 4.0) for _ in self.zones]
        self.consumer_zones: dict[str, str] = {}
        self.queue_zones: dict[int, frozenset[str]] = {}
        self.weights: dict[int, float] | None = {} if settings.weights is not None else None
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
        return _with_placement(step, **self.shown)

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


_MAPS = ("consumer_zones", "queue_zones", "weights")


def _with_placement(step: Step, consumer_zones: Any, queue_zones: Any, weights: Any) -> Step:
    return Step(
        step.index,
        step.kind,
        step.queues,
        step.consumers,
        step.joined,
        step.departed,
        step.queues_added,
        step.queues_removed,
        consumer_zones,
        queue_zones,
        weights,
    )
