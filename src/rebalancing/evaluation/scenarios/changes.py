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
- `flapping`: one consumer leaves and rejoins under its id, 2-5 times (a process that stops
  and starts again: the protocol sessions see each leave at once, as a graceful one; a
  consumer that dies unnoticed until a timeout is `crash`).

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
ChangeKind.feasible, like every other kind's):

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
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar

from rebalancing.contract import SortedIds
from rebalancing.evaluation.scenarios.placement import (
    WEIGHT_DISTRIBUTIONS,
    ZONE_NAMES,
    ScenarioPlacement,
)

IdT = TypeVar("IdT", int, str)

StepsOf = Callable[["_Generator", int, Sequence[int], Sequence[str]], Iterator["Step"]]
"""A change kind's steps: (the generator, the first step's index, the group's queues and
consumers) -> the steps, each the group after one rebalance."""


INITIAL = "initial"
"""The kind of step 0: the first assignment, from scratch."""

MAX_QUEUES, MAX_CONSUMERS, MAX_CHANGES = 100_000, 10_000, 1_000
"""The most queues, consumers and changes a scenario may have: a large Kafka cluster's partitions;
the SAC protocol subscribes every consumer to every queue; each change is a rebalance of the whole
group. Plans are held in memory, several per step: a billion queues would not fit."""


def _positive_range(name: str, bounds: tuple[int, int], maximum: int | None = None) -> None:
    low, high = bounds
    if not (isinstance(low, int) and isinstance(high, int)):
        raise TypeError(f"{name} must be a pair of ints, got {bounds!r}")
    if not 1 <= low <= high:
        raise ValueError(f"{name} must satisfy 1 <= low <= high, got {bounds!r}")
    if maximum is not None and high > maximum:
        raise ValueError(f"{name} allows at most {maximum:,}, got {bounds!r}")


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
        _positive_range("queue_range", self.queue_range, MAX_QUEUES)
        _positive_range("consumer_range", self.consumer_range, MAX_CONSUMERS)
        _positive_range("change_count_range", self.change_count_range, MAX_CHANGES)
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
            change_kind(kind)  # ValueError for an unknown one
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
        needs = change_kind(kind).needs
        if needs == "zones":
            return self.zone_range is not None
        if needs == "weights":
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
        self.placement: ScenarioPlacement | None = None
        if settings.zone_range is not None or settings.weights is not None:
            placement_seed = scenario_seed(seed or 0, -1)  # a stream of its own
            self.placement = ScenarioPlacement(
                random.Random(placement_seed), settings.zone_range, settings.weights
            )

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
            if weight > 0
            and change_kind(kind).feasible(
                GroupShape(len(queues), len(consumers), placement, consumers)
            )
        }
        if not feasible:
            return "join"
        kinds = sorted(feasible)
        return self.rng.choices(kinds, weights=[feasible[kind] for kind in kinds])[0]

    def apply(
        self, index: int, kind: str, queues: Sequence[int], consumers: Sequence[str]
    ) -> Iterator[Step]:
        """The steps of one change of `kind` (a key of KINDS), numbered from `index`."""
        return change_kind(kind).steps(self, index, queues, consumers)

    def rolling_restart(
        self, index: int, queues: Sequence[int], consumers: Sequence[str]
    ) -> Iterator[Step]:
        """Every consumer, batch by batch in a random order, leaves and rejoins under its id;
        a batch is a quarter of the group, rounded up (Kubernetes' default maxUnavailable).

        Rejoining under the same id is what Kafka's static members do (group.instance.id,
        KIP-345). How the steps are run is the protocol session's (docs/explanation/
        kafka-protocols.md, "How a rolling restart is scored"): by default each batch leaves
        gracefully and rejoins 30 s later, two rebalances, a dynamic member's timing under a
        static member's ids (a dynamic member comes back under a new id, a consumer no
        strategy has seen: `leave` then `join` score that); with static membership a restart
        within the session timeout moves nothing, its queues waiting for it, unread."""
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
        """One consumer leaves and rejoins under its id, 2-5 times (each leave graceful for the
        protocol sessions: a `crash` is the change they notice only by a timeout)."""
        consumer = self.rng.choice(consumers)
        present, same_queues = _sorted_ids(sorted(consumers)), _sorted_ids(queues)
        without = _sorted_ids([other for other in present if other != consumer])
        for cycle in range(self.rng.randint(2, 5)):
            yield Step(index + 2 * cycle, "flapping", same_queues, without, departed=1)
            yield Step(index + 2 * cycle + 1, "flapping", same_queues, present, joined=1)


@dataclass(frozen=True)
class _Change:
    """What one rebalance's change does to the group: consumers that join and go, queues added
    and removed."""

    joined: list[str] = field(default_factory=list)
    departed: list[str] = field(default_factory=list)
    added: list[int] = field(default_factory=list)
    removed: list[int] = field(default_factory=list)


def _join(draw: _Generator, queues: Sequence[int], consumers: Sequence[str]) -> _Change:
    return _Change(joined=[draw.new_consumer()])


def _join_burst(draw: _Generator, queues: Sequence[int], consumers: Sequence[str]) -> _Change:
    return _Change(joined=[draw.new_consumer() for _ in range(draw.rng.randint(2, 8))])


def _leave(draw: _Generator, queues: Sequence[int], consumers: Sequence[str]) -> _Change:
    return _Change(departed=draw.rng.sample(consumers, 1))


def _crash(draw: _Generator, queues: Sequence[int], consumers: Sequence[str]) -> _Change:
    rng = draw.rng
    return _Change(departed=rng.sample(consumers, rng.randint(1, min(3, len(consumers) - 1))))


def _queues_added(draw: _Generator, queues: Sequence[int], consumers: Sequence[str]) -> _Change:
    return _Change(added=draw.new_queues(draw.rng.randint(1, max(1, len(queues) // 2))))


def _queues_removed(draw: _Generator, queues: Sequence[int], consumers: Sequence[str]) -> _Change:
    rng = draw.rng
    return _Change(removed=rng.sample(queues, rng.randint(1, max(1, (len(queues) - 1) // 4))))


def _mixed(draw: _Generator, queues: Sequence[int], consumers: Sequence[str]) -> _Change:
    """A join, a departure when possible, and queues added or removed."""
    rng = draw.rng
    joined = [draw.new_consumer()]
    departed = rng.sample(consumers, 1) if len(consumers) > 1 else []
    if len(queues) > 1 and rng.random() < 0.5:
        removed = rng.sample(queues, rng.randint(1, max(1, (len(queues) - 1) // 4)))
        return _Change(joined, departed, removed=removed)
    return _Change(
        joined, departed, added=draw.new_queues(rng.randint(1, max(1, len(queues) // 4)))
    )


Draw = Callable[["_Generator", Sequence[int], Sequence[str]], _Change]


def _one_rebalance(kind: str, draw: Draw) -> StepsOf:
    """The steps of a change that is one rebalance: the group after `draw`'s change."""

    def steps(
        generator: _Generator, index: int, queues: Sequence[int], consumers: Sequence[str]
    ) -> Iterator[Step]:
        change = draw(generator, queues, consumers)
        yield Step(
            index,
            kind,
            _changed(queues, change.removed, change.added),
            _changed(consumers, change.departed, change.joined, in_order=True),
            joined=len(change.joined),
            departed=len(change.departed),
            queues_added=len(change.added),
            queues_removed=len(change.removed),
        )

    return steps


def _load_shift(
    generator: _Generator, index: int, queues: Sequence[int], consumers: Sequence[str]
) -> Iterator[Step]:
    """The membership unchanged; the hot queue moves, or some lags grow."""
    assert generator.placement is not None  # only drawn with weights (feasible)
    same_queues = _sorted_ids(queues)
    generator.placement.shift_load(same_queues)
    yield Step(index, "load_shift", same_queues, _changed(consumers, [], [], in_order=True))


def _zone_outage(
    generator: _Generator, index: int, queues: Sequence[int], consumers: Sequence[str]
) -> Iterator[Step]:
    """Every consumer of one zone leaves at once."""
    assert generator.placement is not None  # only drawn with zones (feasible)
    gone = generator.placement.zone_outage(consumers, generator.rng)
    present = _changed(consumers, gone, [], in_order=True)
    yield Step(index, "zone_outage", _sorted_ids(queues), present, departed=len(gone))


def _zone_recovery(
    generator: _Generator, index: int, queues: Sequence[int], consumers: Sequence[str]
) -> Iterator[Step]:
    """The consumers of the zone that is out come back, under their ids."""
    assert generator.placement is not None  # only drawn with a zone out (feasible)
    back = generator.placement.zone_recovery()
    present = _changed(consumers, [], back, in_order=True)
    yield Step(index, "zone_recovery", _sorted_ids(queues), present, joined=len(back))


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


def _two_consumers(group: GroupShape) -> bool:
    return group.consumer_count > 1


def _two_queues(group: GroupShape) -> bool:
    return group.queue_count > 1


def _always(group: GroupShape) -> bool:
    return True


def _zone_to_lose(group: GroupShape) -> bool:
    """Zones, none out, and the consumers in two zones at least."""
    placement = group.placement
    if placement is None or not placement.zones:
        return False
    return placement.zone_out is None and placement.zones_with(group.consumers) > 1


def _zone_out(group: GroupShape) -> bool:
    placement = group.placement
    return placement is not None and bool(placement.zones) and placement.zone_out is not None


def _weights_to_shift(group: GroupShape) -> bool:
    placement = group.placement
    return placement is not None and placement.weights is not None and group.queue_count > 1


@dataclass(frozen=True)
class GroupShape:
    """What a change kind's feasibility reads of the group before it."""

    queue_count: int
    consumer_count: int
    placement: ScenarioPlacement | None = None
    consumers: Sequence[str] = ()


@dataclass(frozen=True)
class ChangeKind:
    """One kind of membership change: its steps (`steps(generator, index, queues, consumers)`,
    numbered from `index`), whether a group allows it (`feasible`: without emptying the group,
    and for the placement kinds, with the scenario's placement), and what placement it needs
    ("zones", "weights" or None)."""

    name: str
    steps: StepsOf
    feasible: Callable[[GroupShape], bool] = _always
    needs: str | None = None


def _kinds(*kinds: ChangeKind) -> Mapping[str, ChangeKind]:
    return MappingProxyType({kind.name: kind for kind in kinds})


KINDS: Mapping[str, ChangeKind] = _kinds(
    ChangeKind("join", _one_rebalance("join", _join)),
    ChangeKind("join_burst", _one_rebalance("join_burst", _join_burst)),
    ChangeKind("leave", _one_rebalance("leave", _leave), _two_consumers),
    ChangeKind("crash", _one_rebalance("crash", _crash), _two_consumers),
    ChangeKind("queues_added", _one_rebalance("queues_added", _queues_added)),
    ChangeKind("queues_removed", _one_rebalance("queues_removed", _queues_removed), _two_queues),
    ChangeKind("mixed", _one_rebalance("mixed", _mixed)),
    ChangeKind("rolling_restart", _Generator.rolling_restart, _two_consumers),
    ChangeKind("autoscaling", _Generator.autoscaling),
    ChangeKind("flapping", _Generator.flapping, _two_consumers),
    ChangeKind("zone_outage", _zone_outage, _zone_to_lose, needs="zones"),
    ChangeKind("zone_recovery", _zone_recovery, _zone_out, needs="zones"),
    ChangeKind("load_shift", _load_shift, _weights_to_shift, needs="weights"),
)
"""Every kind of membership change a scenario can contain, by name: the one table the generator,
the settings' checks and the command line's --mix read."""

CHANGE_KINDS: tuple[str, ...] = tuple(KINDS)
"""Every kind of membership change, in the table's order."""

ZONE_KINDS = frozenset(name for name, kind in KINDS.items() if kind.needs == "zones")
"""The change kinds that need zones (ScenarioSettings.zone_range)."""

WEIGHT_KINDS = frozenset(name for name, kind in KINDS.items() if kind.needs == "weights")
"""The change kinds that need weights (ScenarioSettings.weights)."""


def change_kind(name: str) -> ChangeKind:
    """The kind called `name`; ValueError names it and the known ones when there is none."""
    try:
        return KINDS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown change kind {name!r}; known: {', '.join(KINDS)}") from None
