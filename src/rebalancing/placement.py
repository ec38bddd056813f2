"""Zones, replica zones, weights and capacities: the extra facts a strategy may use, checked.

The three-argument call `assign(queues, consumers, previous)` stays the contract of every
strategy. A strategy that can use more facts about the group takes them as **keyword-only
arguments**, each None (not given) by default:

    assign(queues, consumers, previous=None, *,
           consumer_zones=None,   # Mapping[consumer, zone]: where each member runs (Kafka's rack)
           queue_zones=None,      # Mapping[queue, Collection[zone]]: zones holding its replicas
           weights=None,          # Mapping[queue, float]: lag, bytes/s... finite, >= 0
           capacities=None)       # Mapping[consumer, float]: finite, > 0

and declares in the registry which of them it reads (`Strategy.uses`, a subset of INPUTS) and
which promises about them it keeps (`Strategy.promises`, keys of PROMISES). Callers (the scoring
core, the adapters) pass a strategy only what it declares: `Strategy.inputs_for(available)`.

Why keyword-only arguments rather than a group description object or a fourth positional one:
the three-argument call of every strategy, a user's own included, is untouched; a strategy
names exactly the facts it reads, in its signature, where the registry can check them (a
declared input the function does not accept is refused at registration); a caller cannot pass
a fact by position by mistake; `functools.partial` fixes one as easily as any argument; and
a strategy given a fact it does not read fails loudly (TypeError: unexpected keyword), where an
object's ignored fields would be silent. Each fact is a plain mapping keyed by the same ids as
the queues and consumers, so a caller builds it from what the system reports (a member's
`client.rack`, a partition's replica brokers' racks, a group's lag per partition).

Rules, the same for every strategy (`check_placement` applies them; errors name the culprit):

- Entries for ids that are not in the group are ignored, as `previous` ignores departed
  consumers and removed queues: a map may be kept across rebalances. A map none of whose keys
  is in the group, though it has entries and the group has ids of that kind, is most likely
  keyed by ids of another form ("orders-4" for ("orders", 4)): PlacementMismatchWarning.
- `consumer_zones`: a member missing from it, or mapped to None, has **no zone**, as a Kafka
  member without `client.rack`: it is in no zone, so no queue is read in its zone. What a
  strategy does with such a member is its own rule, stated in its docstring (Kafka's assignors
  let it take any partition; RocketMQ's nearby strategy gives it only queues nobody is near).
- `queue_zones`: a queue missing from it has no known replica zone (matches no consumer's
  zone). Each value is a collection of zones (a str is refused: ["a"], not "a"); None entries in
  it are ignored, as Kafka ignores replicas on brokers without a rack.
- Zones are any hashable values that order together (str is usual), so that every member
  computes the same plan: the same TypeError as ids otherwise.
- `weights`: every queue of the group needs one (a missing queue is a ValueError naming it: a
  default of 0 or 1 would silently change the plan; the caller knows which it means); each is a
  real number (not a bool), finite and >= 0.
- `capacities`: every member needs one, finite and > 0. A consumer's load is the sum of its
  queues' weights; with capacities, strategies balance load / capacity.
- Sums stay floats: the total weight, the total capacity and the total weight over the smallest
  capacity must be finite (weights of 1e308 are each finite, their sum is not), else a
  ValueError names them (`check_load_scale`); only ratios matter, so scale them.
- Without weights every queue weighs 1; without capacities every consumer has capacity 1.

Runtime complexity: O(|Q| + |C| + size of the maps given), plus sorting the distinct zones.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from numbers import Real
from typing import Any, Generic

from rebalancing.contract import (
    ConsumerT,
    Group,
    QueueT,
    _warn_outside_package,
    shortened_repr,
    sorted_distinct_ids,
)

INPUTS: frozenset[str] = frozenset({"consumer_zones", "queue_zones", "weights", "capacities"})
"""The keyword-only arguments a strategy may declare in `Strategy.uses`."""

ZONE_INPUTS: frozenset[str] = frozenset({"consumer_zones", "queue_zones"})
LOAD_INPUTS: frozenset[str] = frozenset({"weights", "capacities"})

PROMISES: Mapping[str, str] = {
    "balanced": "queue counts differ by at most one, whatever zones and weights are given",
    "zone_matching": (
        "where every zone holds k consumers and k x m queues (each queue in one zone), every "
        "queue is read in its own zone (KIP-881's rack matching, when balance allows it all)"
    ),
    "zone_matching_per_topic": (
        "zone_matching within each topic's range: where every zone holds k consumers and, of "
        "each topic, k x m queues (m per topic; each queue in one zone; topics of as many "
        "queues laid out alike, the p-th of each in one zone), every queue is read in its own "
        "zone. A queue's topic is the first item of a tuple id of two or more items; every "
        "other id is of one topic (Kafka's range rule: each topic balanced on its own first). "
        "zone_matching implies it"
    ),
    "bounded_load": (
        "max over consumers of load / capacity <= total weight / total capacity + heaviest "
        "weight / smallest capacity (mean + heaviest without capacities)"
    ),
}
"""Promises about the extra inputs that a strategy may declare in `Strategy.promises`, which
rebalancing.testing.check_strategy then checks: name -> what it promises."""


class PlacementMismatchWarning(UserWarning):
    """A zone, weight or capacity map holds entries, yet none of its keys is an id of the group:
    most likely ids of another form (strings "orders-4" against tuples ("orders", 4)), which
    would make every queue and member zone-less, or every weight missing. Warned once per map
    and call, at the line that called the strategy; `warnings.simplefilter("error", ...)` makes
    it strict."""


@dataclass(frozen=True)
class Placement(Generic[QueueT, ConsumerT]):
    """The extra facts of one rebalance, checked and restricted to the group's ids.

    `consumer_zone`: member -> zone, for members that have one. `queue_zones`: queue -> its
    replica zones (frozenset), for queues that have any. `weights` / `capacities`: every queue /
    member -> a float, or None when not given (then `weight` is 1 and `capacity` 1). `zones`:
    every zone named by a member or a queue, sorted.
    """

    consumer_zone: dict[ConsumerT, Any] = field(default_factory=dict)
    queue_zones: dict[QueueT, frozenset[Any]] = field(default_factory=dict)
    weights: dict[QueueT, float] | None = None
    capacities: dict[ConsumerT, float] | None = None
    zones: tuple[Any, ...] = ()

    def zone_of(self, consumer: ConsumerT) -> Any:
        """The member's zone, None when it has none."""
        return self.consumer_zone.get(consumer)

    def zones_of(self, queue: QueueT) -> frozenset[Any]:
        """The zones holding a replica of the queue (empty when none is known)."""
        return self.queue_zones.get(queue, frozenset())

    def weight(self, queue: QueueT) -> float:
        return 1.0 if self.weights is None else self.weights[queue]

    def capacity(self, consumer: ConsumerT) -> float:
        return 1.0 if self.capacities is None else self.capacities[consumer]


def check_placement(
    group: Group[QueueT, ConsumerT],
    *,
    consumer_zones: Mapping[ConsumerT, Any] | None = None,
    queue_zones: Mapping[QueueT, Collection[Any]] | None = None,
    weights: Mapping[QueueT, float] | None = None,
    capacities: Mapping[ConsumerT, float] | None = None,
) -> Placement[QueueT, ConsumerT]:
    """Check the extra facts against `group` (from rebalancing.contract.prepare) by the rules of
    the module docstring, and return them restricted to the group's ids."""
    members = set(group.consumers)
    queue_set = group.queue_set
    zones: set[Any] = set()
    consumer_zone: dict[Any, Any] = {}
    if consumer_zones is not None:
        _require_mapping(consumer_zones, "consumer_zones", "consumer -> zone")
        _warn_if_keyed_by_strangers(consumer_zones, members, "consumer_zones", "consumer")
        for consumer, zone in consumer_zones.items():
            if consumer in members and zone is not None:
                if type(zone) is not str:  # a str is hashable: the common case, no check
                    _require_hashable_zone(zone, "consumer_zones", consumer)
                consumer_zone[consumer] = zone
        zones.update(consumer_zone.values())
    replica_zones: dict[Any, frozenset[Any]] = {}
    if queue_zones is not None:
        _require_mapping(queue_zones, "queue_zones", "queue -> collection of zones")
        _warn_if_keyed_by_strangers(queue_zones, queue_set, "queue_zones", "queue")
        for queue, held in queue_zones.items():
            if queue in queue_set:
                found = _zone_set(held, queue)
                if found:
                    replica_zones[queue] = found
                    zones.update(found)
    checked_weights = None
    if weights is not None:
        checked_weights = _numbers_for_every(
            weights, group.queues, "weights", "queue", "weight", positive=False
        )
    checked_capacities = None
    if capacities is not None:
        checked_capacities = _numbers_for_every(
            capacities, group.consumers, "capacities", "consumer", "capacity", positive=True
        )
    check_load_scale(checked_weights, checked_capacities, len(group.queues))
    return Placement(
        consumer_zone,
        replica_zones,
        checked_weights,
        checked_capacities,
        tuple(sorted_distinct_ids(zones, "zone")) if zones else (),
    )


def check_load_scale(
    weights: Mapping[Any, float] | None,
    capacities: Mapping[Any, float] | None,
    queue_count: int | None = None,
) -> None:
    """ValueError unless the total weight, the total capacity and the total weight over the
    smallest capacity are finite floats: every load, load / capacity, fair share and bound that
    a strategy or a score computes from checked weights (each finite) and capacities is at most
    one of those, and past the largest float a sum becomes inf and a ratio NaN (weights of 1e308
    each pass alone). Without weights each of `queue_count` queues weighs 1. Only the numbers'
    ratios matter, so the remedy is to scale them."""
    if weights is not None:
        total = sum(weights.values())
        if math.isinf(total):
            heaviest = max(weights, key=weights.__getitem__)
            raise ValueError(
                f"weights sum past the largest float ({sys.float_info.max:.4g}; the heaviest is "
                f"weights[{shortened_repr(heaviest)}] = {shortened_repr(weights[heaviest])}): "
                "only their ratios matter, scale them down"
            )
    else:
        total = float(queue_count or 0)
    if not capacities:
        return
    if math.isinf(sum(capacities.values())):
        largest = max(capacities, key=capacities.__getitem__)
        raise ValueError(
            f"capacities sum past the largest float ({sys.float_info.max:.4g}; the largest is "
            f"capacities[{shortened_repr(largest)}] = {shortened_repr(capacities[largest])}): "
            "only their ratios matter, scale them down"
        )
    smallest = min(capacities, key=capacities.__getitem__)
    if math.isinf(total / capacities[smallest]):
        raise ValueError(
            f"capacities[{shortened_repr(smallest)}] is {shortened_repr(capacities[smallest])}: "
            f"the total weight ({total:.4g}) over it is past the largest float; scale the "
            "capacities up or the weights down"
        )


def _require_mapping(value: object, name: str, shape: str) -> None:
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a mapping of {shape} or None, not {type(value).__name__}")


def _require_hashable_zone(zone: Any, name: str, key: Any, within: str = "") -> None:
    """TypeError unless `zone` is hashable, naming where it is: `within` name[key] (the
    place's name is made only for the error: the check runs once per id and rebalance)."""
    try:
        hash(zone)
    except TypeError:
        raise TypeError(
            f"{within}{name}[{shortened_repr(key)}] is {shortened_repr(zone)} "
            f"({type(zone).__name__}), which is not hashable: "
            "a zone is a hashable value such as a str"
        ) from None


_PLAIN_COLLECTIONS = (list, tuple, set, frozenset)
"""Collections whose type is enough to know that they are one and no str (the common case)."""


def _zone_set(held: Any, queue: Any) -> frozenset[Any]:
    """The zones of queue_zones[queue], None entries left out."""
    if type(held) not in _PLAIN_COLLECTIONS and (
        isinstance(held, str | bytes) or not isinstance(held, Collection)
    ):
        where = f"queue_zones[{shortened_repr(queue)}]"
        raise TypeError(
            f"{where} must be a collection of zones, not {type(held).__name__} "
            f"{shortened_repr(held)}: wrap a single zone in a list, [{shortened_repr(held)}]"
        )
    for zone in held:
        if type(zone) is not str:
            _require_hashable_zone(zone, "queue_zones", queue, "a zone in ")
    return frozenset(zone for zone in held if zone is not None)


def _warn_if_keyed_by_strangers(
    given: Mapping[Any, Any], ids: Collection[Any], name: str, kind: str
) -> None:
    """PlacementMismatchWarning when `given` has entries and the group has ids, none shared."""
    if not given or not ids:
        return
    for key in given:
        try:
            if key in ids:
                return
        except TypeError:  # an unhashable key cannot be an id of the group
            continue
    key = next(iter(given))
    _warn_outside_package(
        f"{name} holds {len(given)} entries, none of them for a {kind} of the group ({name} "
        f"starts with {shortened_repr(key)} ({type(key).__name__})): ids of another form?",
        PlacementMismatchWarning,
    )


def _numbers_for_every(
    given: Mapping[Any, Any],
    ids: list[Any],
    name: str,
    kind: str,
    noun: str,
    *,
    positive: bool,
) -> dict[Any, float]:
    """id -> float for every id of `ids`, each a finite real >= 0 (> 0 when `positive`)."""
    _require_mapping(given, name, f"{kind} -> {noun}")
    missing = [identifier for identifier in ids if identifier not in given]
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise ValueError(
            f"{name} has no {noun} for {kind} {shortened_repr(missing[0])}{more}: give one for "
            f"every {kind} of the group"
        )
    checked: dict[Any, float] = {}
    for identifier in ids:
        value = given[identifier]
        if (  # the common case
            type(value) is float
            and math.isfinite(value)
            and (value > 0 or (value == 0 and not positive))
        ):
            checked[identifier] = value
            continue
        where = f"{name}[{shortened_repr(identifier)}]"  # made here, past the common case
        if isinstance(value, bool) or not isinstance(value, Real):
            raise TypeError(
                f"{where} is {shortened_repr(value)} ({type(value).__name__}): a {noun} is a "
                "real number"
            )
        bound = "> 0" if positive else ">= 0"
        try:
            number = float(value)
        except OverflowError:  # an int past the largest float, 10**400
            raise ValueError(
                f"{where} is {shortened_repr(value)}: a {noun} is finite and {bound}, and that "
                f"is past the largest float ({sys.float_info.max:.4g}); only ratios of {name} "
                "matter, scale them down"
            ) from None
        if not math.isfinite(number) or number < 0 or (positive and number == 0):
            raise ValueError(f"{where} is {shortened_repr(value)}: a {noun} is finite and {bound}")
        checked[identifier] = number
    return checked
