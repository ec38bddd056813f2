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
Runtime complexity: O(|Q| + |C|) per step.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
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
)
"""Every kind of membership change a scenario can contain."""

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

    def __post_init__(self) -> None:
        _positive_range("queue_range", self.queue_range)
        _positive_range("consumer_range", self.consumer_range)
        _positive_range("change_count_range", self.change_count_range)
        for kind, weight in self.change_weights.items():
            if kind not in CHANGE_KINDS:
                raise ValueError(f"unknown change kind {kind!r}; known: {', '.join(CHANGE_KINDS)}")
            if not (isinstance(weight, int | float) and weight >= 0 and math.isfinite(weight)):
                raise ValueError(f"weight of change kind {kind!r} must be >= 0, got {weight!r}")
        if not any(self.change_weights.values()):
            raise ValueError("change_weights must give at least one change kind a positive weight")


@dataclass(frozen=True)
class Step:
    """The group after one membership change (step 0: the starting group).

    `kind` is the change kind (INITIAL for step 0); the other counts say what changed.
    """

    index: int
    kind: str
    queues: tuple[int, ...]
    consumers: tuple[str, ...]
    joined: int = 0
    departed: int = 0
    queues_added: int = 0
    queues_removed: int = 0


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
        return _Generator(random.Random(scenario_seed(self.base_seed, self.index)), self.settings)()


def generate_scenarios(
    base_seed: int, indices: range, settings: ScenarioSettings | None = None
) -> Iterator[Scenario]:
    """Scenarios `indices` of the run seeded with `base_seed`, lazily."""
    chosen = settings or ScenarioSettings()
    for index in indices:
        yield Scenario(base_seed, index, chosen)


class _Generator:
    """Draws one scenario's steps from its own seeded random generator."""

    def __init__(self, rng: random.Random, settings: ScenarioSettings) -> None:
        self.rng = rng
        self.settings = settings
        self.next_queue_id = 0
        self.consumer_ids: set[str] = set()

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
        yield first
        index = 0
        for _ in range(self.rng.randint(*self.settings.change_count_range)):
            kind = self.choose_kind(len(queues), len(consumers))
            for step in self.apply(index + 1, kind, queues, consumers):
                index = step.index
                queues, consumers = step.queues, step.consumers  # read, never changed
                yield step

    def log_uniform(self, bounds: tuple[int, int]) -> int:
        """An int in [low, high], uniform in log scale: skewed towards small groups."""
        low, high = bounds
        drawn = int(math.exp(self.rng.uniform(math.log(low), math.log(high + 1))))
        return min(max(drawn, low), high)

    def new_queues(self, count: int) -> list[int]:
        start = self.next_queue_id
        self.next_queue_id += count
        return list(range(start, start + count))

    def new_consumer(self) -> str:
        """A fresh id like RocketMQ's client ids: random, so joiners land anywhere in sort order."""
        while True:
            consumer = f"consumer-{self.rng.getrandbits(32):08x}"
            if consumer not in self.consumer_ids:
                self.consumer_ids.add(consumer)
                return consumer

    def choose_kind(self, queue_count: int, consumer_count: int) -> str:
        """A weighted draw among the kinds this group allows (a join when none is allowed)."""
        feasible = {
            kind: weight
            for kind, weight in self.settings.change_weights.items()
            if weight > 0 and _feasible(kind, queue_count, consumer_count)
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
                counts = {"departed": size}
            else:
                present = present + [self.new_consumer() for _ in range(size)]
                counts = {"joined": size}
            yield Step(
                index + offset,
                "autoscaling",
                _sorted_ids(queues),
                _sorted_ids(sorted(present)),
                **counts,
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


def _feasible(kind: str, queue_count: int, consumer_count: int) -> bool:
    """Whether `kind` can happen without emptying the group."""
    if kind in ("leave", "crash", "rolling_restart", "flapping"):
        return consumer_count > 1
    if kind == "queues_removed":
        return queue_count > 1
    return True
