"""Scores of a plan against zones and weights, computed independently of any strategy's code.

Issue 33 §3. A plan is an exact plan (consumer -> its queues, every queue once); zones, weights
and capacities are the maps of rebalancing.placement (entries for other ids are ignored, a
consumer missing from consumer_zones or mapped to None has no zone, None zones of a queue are
ignored, a str is no collection of zones).

- cross-zone count: queues read by a consumer whose zone holds no replica of them: the
  cross-zone traffic that KIP-881 (rack-aware assignment) exists to avoid, as Kafka's tests
  count it (numPartitionsWithRackMismatch), except that a consumer with no zone counts too.
  O(|Q| + |C|).
- fewest cross-zone: its best value over every balanced plan (counts floor or ceil of |Q|/|C|),
  |Q| minus a maximum flow (see `fewest_cross_zone`). O(|Q| x zones) to sort the queues into
  kinds (their replica zones), plus Edmonds-Karp on a network of V = kinds + zones + 3 nodes
  and E = O(kinds x zones) edges, kinds <= min(|Q|, 2^zones): at most min(|Q|, V x E)
  augmenting paths (each pushes >= 1 of a flow <= |Q|), each found in O(E).
- load ratio: the heaviest consumer's load / capacity over the mean (total load / total
  capacity), 1 at best; its lower bound over every plan is max(mean, heaviest queue / largest
  capacity) / mean (issue 33: against the lower bound max(mean, heaviest)). O(|Q| + |C|).
- load kept / load moved: load-weighted stickiness and the weight that changed owner.
  O(|Q| + |C| + size of previous).
- topic spread: KAFKA-16277's uneven topics, per topic the most minus the fewest partitions one
  consumer holds, the largest over topics. O(|Q| + |C|).

Every function raises ValueError / TypeError naming the culprit on bad input.
"""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Collection, Hashable, Mapping, Sequence
from functools import lru_cache
from numbers import Real
from typing import Any

from rebalancing.contract import shortened_repr
from rebalancing.placement import check_load_scale

Plan = Mapping[Any, Sequence[Any]]

FEWEST_CACHED = 4096
"""Group shapes whose fewest cross-zone count `fewest_cross_zone_of_counts` keeps."""


def cross_zone_count(
    plan: Plan, consumer_zones: Mapping[Any, Any], queue_zones: Mapping[Any, Collection[Any]]
) -> int:
    """Queues read by a consumer whose zone holds no replica of them (a consumer with no zone,
    missing or None, reads every queue cross-zone; a queue missing from queue_zones is
    cross-zone wherever it is read)."""
    owners = _owners(plan, "plan")
    _require_mapping(consumer_zones, "consumer_zones")
    _require_mapping(queue_zones, "queue_zones")
    return sum(
        1
        for queue, consumer in owners.items()
        if _zone_of(consumer, consumer_zones) not in _zones_of(queue, queue_zones)
    )


def fewest_cross_zone(
    queues: Collection[Any],
    consumers: Collection[Any],
    consumer_zones: Mapping[Any, Any],
    queue_zones: Mapping[Any, Collection[Any]],
) -> int:
    """The fewest cross-zone queues of any balanced plan of this group (each consumer floor or
    ceil of |Q|/|C|, exactly |Q| mod |C| of them at ceil); 0 without consumers.

    |Q| minus a maximum flow: source -> queue (1) -> each replica zone with consumers -> sink,
    zone z's edge to the sink carrying n_z x floor, plus min(n_z, extra) through one shared
    node carrying extra = |Q| mod |C|. A balanced plan's in-zone queues are such a flow (zone z
    holds at most n_z x floor + its ceil consumers), and any such flow is a balanced plan's
    (make the zone's overflow ceil consumers there, the rest of the extras anywhere, fill every
    slot left with the queues left). Queues with the same replica zones are interchangeable,
    so one node per kind stands for them all, with capacity their number."""
    queue_list = _distinct(queues, "queues")
    consumer_list = _distinct(consumers, "consumers")
    _require_mapping(consumer_zones, "consumer_zones")
    _require_mapping(queue_zones, "queue_zones")
    return fewest_cross_zone_of_zones(
        zone_of_each(consumer_list, consumer_zones), zones_of_each(queue_list, queue_zones)
    )


def fewest_cross_zone_of_zones(
    zone_of: Mapping[Any, Any], zones_of: Mapping[Any, frozenset[Any]]
) -> int:
    """`fewest_cross_zone` of the group whose consumers are `zone_of`'s keys, each mapped to
    its zone or None, and whose queues are `zones_of`'s keys, each mapped to its replica zones
    (as `zone_of_each` and `zones_of_each` give them)."""
    if not zone_of:
        return 0
    members = Counter(zone for zone in zone_of.values() if zone is not None)
    kinds = Counter(frozenset(zones & members.keys()) for zones in zones_of.values())
    return fewest_cross_zone_of_counts(
        len(zones_of), len(zone_of), frozenset(members.items()), frozenset(kinds.items())
    )


def zone_of_each(consumers: Collection[Any], consumer_zones: Mapping[Any, Any]) -> dict[Any, Any]:
    """consumer -> its zone (None: none) for each of `consumers`, checked as cross_zone_count
    checks them."""
    _require_mapping(consumer_zones, "consumer_zones")
    return {consumer: _zone_of(consumer, consumer_zones) for consumer in consumers}


def zones_of_each(
    queues: Collection[Any], queue_zones: Mapping[Any, Collection[Any]]
) -> dict[Any, frozenset[Any]]:
    """queue -> its replica zones for each of `queues`, checked as cross_zone_count checks
    them."""
    _require_mapping(queue_zones, "queue_zones")
    return {queue: _zones_of(queue, queue_zones) for queue in queues}


def weight_of_each(queues: Collection[Any], weights: Mapping[Any, float]) -> dict[Any, float]:
    """queue -> its weight as a float for each of `queues`, checked as load_ratio checks them."""
    weight = _numbers(weights, queues, "weights", "queue", "weight")
    check_load_scale(weight, None)
    return weight


def previous_owners(previous: Mapping[Any, Sequence[Any]]) -> dict[Any, Any]:
    """queue -> its consumer in a previous plan, as load_kept and load_moved read it (a queue
    held twice is a ValueError naming it)."""
    return _owners(previous, "previous")


@lru_cache(maxsize=FEWEST_CACHED)
def fewest_cross_zone_of_counts(
    queue_count: int,
    consumer_count: int,
    members: frozenset[tuple[Any, int]],
    kinds: frozenset[tuple[frozenset[Any], int]],
) -> int:
    """`fewest_cross_zone` from what it depends on: the counts of queues and consumers, the
    consumers per zone (zone, count) and the queues per kind (their replica zones that have
    consumers, count). A group's answer changes only when these do, and most changes of a
    scenario (a restart, a crash and its return, a load shift) give back a shape seen before,
    so the maximum flow is cached by them (FEWEST_CACHED shapes, least recently used out)."""
    floor, extra = divmod(queue_count, consumer_count)
    source, sink, shared = object(), object(), object()
    capacity: dict[Any, dict[Any, int]] = {source: {}, sink: {}, shared: {sink: extra}}
    # the sets' order (their hashes') only decides which augmenting paths are found first,
    # never the maximum flow's value
    for zone, count in members:
        capacity[("zone", zone)] = {sink: count * floor, shared: min(count, extra)}
    for kind, count in kinds:
        if kind:
            capacity[source][kind] = count
            capacity[kind] = {("zone", zone): count for zone in kind}
    return queue_count - _maximum_flow(capacity, source, sink)


def _maximum_flow(capacity: dict[Any, dict[Any, int]], source: Any, sink: Any) -> int:
    """Edmonds-Karp: augment along shortest paths of the residual network until none is left.
    `capacity` is node -> {node: capacity}, changed in place into the residual network."""
    for node, edges in list(capacity.items()):
        for target in edges:
            capacity.setdefault(target, {}).setdefault(node, 0)
    total = 0
    while True:
        parent: dict[Any, Any] = {source: None}
        frontier = deque([source])
        while frontier and sink not in parent:
            node = frontier.popleft()
            for target, left in capacity[node].items():
                if left > 0 and target not in parent:
                    parent[target] = node
                    frontier.append(target)
        if sink not in parent:
            return total
        path = []
        node = sink
        while parent[node] is not None:
            path.append((parent[node], node))
            node = parent[node]
        pushed = min(capacity[start][end] for start, end in path)
        for start, end in path:
            capacity[start][end] -= pushed
            capacity[end][start] += pushed
        total += pushed


def load_ratio(
    plan: Plan, weights: Mapping[Any, float], capacities: Mapping[Any, float] | None = None
) -> float | None:
    """max over consumers of load / capacity, over the mean (total load / total capacity);
    None when total load is 0 or there are no consumers. 1.0 is perfect."""
    owners = _owners(plan, "plan")
    weight = _numbers(weights, owners, "weights", "queue", "weight")
    capacity = _capacities(capacities, plan)
    check_load_scale(weight, capacity)
    loads = dict.fromkeys(plan, 0.0)
    for queue, consumer in owners.items():
        loads[consumer] += weight[queue]
    total = sum(loads.values())
    if not loads or total == 0:
        return None
    mean = total / sum(capacity.values())
    return max(loads[consumer] / capacity[consumer] for consumer in loads) / mean


def load_ratio_bound(
    queues: Collection[Any],
    consumers: Collection[Any],
    weights: Mapping[Any, float],
    capacities: Mapping[Any, float] | None = None,
) -> float | None:
    """A lower bound on load_ratio of any plan: max(1, heaviest queue / largest capacity / mean),
    mean = total load / total capacity (without capacities: max(mean, heaviest) / mean), since
    the heaviest queue's consumer carries at least that and some consumer at least the mean.
    None where load_ratio is None."""
    queue_list = _distinct(queues, "queues")
    consumer_list = _distinct(consumers, "consumers")
    weight = _numbers(weights, queue_list, "weights", "queue", "weight")
    capacity = _capacities(capacities, consumer_list)
    check_load_scale(weight, capacity)
    total = sum(weight.values())
    if not consumer_list or total == 0:
        return None
    mean = total / sum(capacity.values())
    return max(1.0, max(weight.values()) / max(capacity.values()) / mean)


def load_kept(
    previous: Mapping[Any, Sequence[Any]] | None, plan: Plan, weights: Mapping[Any, float]
) -> float | None:
    """Load-weighted stickiness: of the weight of the plan's queues that previous gave to a
    consumer still in the plan, the share that consumer still reads. None when that weight is 0
    (nothing could be kept)."""
    owners = _owners(plan, "plan")
    weight = _numbers(weights, owners, "weights", "queue", "weight")
    check_load_scale(weight, None)
    before = {} if previous is None else _owners(previous, "previous")
    could, kept = 0.0, 0.0
    for queue, owner in before.items():
        if queue in owners and owner in plan:
            could += weight[queue]
            kept += weight[queue] if owners[queue] == owner else 0.0
    return kept / could if could > 0 else None


def load_moved(
    previous: Mapping[Any, Sequence[Any]] | None, plan: Plan, weights: Mapping[Any, float]
) -> float:
    """Weight of the plan's queues that previous gave to someone else (a departed owner's
    queues count: they moved). 0.0 without previous."""
    owners = _owners(plan, "plan")
    weight = _numbers(weights, owners, "weights", "queue", "weight")
    check_load_scale(weight, None)
    before = {} if previous is None else _owners(previous, "previous")
    return math.fsum(
        weight[queue]
        for queue, owner in before.items()
        if queue in owners and owners[queue] != owner
    )


def topic_spread(plan: Plan) -> int | None:
    """For (topic, partition) queue ids: the largest, over topics, of the most minus the fewest
    partitions of that topic one consumer of the plan holds (a consumer holding none counts 0);
    0 without queues, None when the queues are not all 2-tuples. KAFKA-16277's uneven topics."""
    owners = _owners(plan, "plan")
    if not all(isinstance(queue, tuple) and len(queue) == 2 for queue in owners):
        return None
    held: dict[Any, Counter[Any]] = {}
    for (topic, _), consumer in owners.items():
        held.setdefault(topic, Counter())[consumer] += 1
    return max(
        (
            max(counts.values()) - (min(counts.values()) if len(counts) == len(plan) else 0)
            for counts in held.values()
        ),
        default=0,
    )


def _require_mapping(value: object, name: str) -> Mapping[Any, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a mapping, not {type(value).__name__}")
    return value


def _collection(held: object, where: str, noun: str) -> Collection[Any]:
    if isinstance(held, str | bytes) or not isinstance(held, Collection):
        raise TypeError(
            f"{where} must be a collection of {noun}, not {type(held).__name__} "
            f"{shortened_repr(held)}"
        )
    return held


def _owners(plan: object, name: str) -> dict[Any, Any]:
    """queue -> its consumer in `plan`; a queue held twice is a ValueError naming it."""
    owners: dict[Any, Any] = {}
    for consumer, held in _require_mapping(plan, name).items():
        for queue in _collection(held, f"{name}[{shortened_repr(consumer)}]", "queues"):
            if queue in owners:
                raise ValueError(
                    f"queue {shortened_repr(queue)} is held by both "
                    f"{shortened_repr(owners[queue])} and {shortened_repr(consumer)} in {name}"
                )
            owners[queue] = consumer
    return owners


def _distinct(ids: Collection[Any], name: str) -> list[Any]:
    """The ids as a list; a str or non-collection, an unhashable or a repeated id is an error."""
    listed = list(_collection(ids, name, "ids"))
    seen: set[Any] = set()
    for identifier in listed:
        if not isinstance(identifier, Hashable):
            raise TypeError(f"{name} holds {shortened_repr(identifier)}, which is not hashable")
        if identifier in seen:
            raise ValueError(f"duplicate id {shortened_repr(identifier)} in {name}")
        seen.add(identifier)
    return listed


_PLAIN_COLLECTIONS = (list, tuple, set, frozenset)
"""Collections whose type is enough to know that they are one and no str (the common case)."""


def _zone_of(consumer: Any, consumer_zones: Mapping[Any, Any]) -> Any:
    """The consumer's zone, None when it has none; an unhashable zone is a TypeError."""
    zone = consumer_zones.get(consumer)
    if type(zone) is not str and zone is not None and not isinstance(zone, Hashable):
        raise TypeError(
            f"consumer_zones[{shortened_repr(consumer)}] is {shortened_repr(zone)}, which is not "
            "hashable: a zone is a hashable value such as a str"
        )
    return zone


def _zones_of(queue: Any, queue_zones: Mapping[Any, Collection[Any]]) -> frozenset[Any]:
    """The queue's replica zones, None entries left out; a str is refused (["a"], not "a")."""
    held = queue_zones.get(queue, ())
    if type(held) not in _PLAIN_COLLECTIONS and (
        isinstance(held, str | bytes) or not isinstance(held, Collection)
    ):
        raise TypeError(
            f"queue_zones[{shortened_repr(queue)}] must be a collection of zones, not "
            f"{type(held).__name__} {shortened_repr(held)}: wrap a single zone in a list"
        )
    for zone in held:
        if type(zone) is not str and not isinstance(zone, Hashable):
            raise TypeError(
                f"queue_zones[{shortened_repr(queue)}] holds {shortened_repr(zone)}, "
                "which is not hashable"
            )
    return frozenset(zone for zone in held if zone is not None)


def _numbers(
    given: Mapping[Any, Any], ids: Collection[Any], name: str, kind: str, noun: str
) -> dict[Any, float]:
    """id -> float for every id, each a real number (not a bool), finite and >= 0."""
    _require_mapping(given, name)
    checked: dict[Any, float] = {}
    for identifier in ids:
        if identifier not in given:
            raise ValueError(f"{name} has no {noun} for {kind} {shortened_repr(identifier)}")
        value = given[identifier]
        if type(value) is float and value >= 0 and value != math.inf:  # the common case
            checked[identifier] = value
            continue
        where = f"{name}[{shortened_repr(identifier)}]"  # made here, past the common case
        if isinstance(value, bool) or not isinstance(value, Real):
            raise TypeError(f"{where} is {shortened_repr(value)}: a {noun} is a real number")
        try:
            number = float(value)
        except OverflowError:  # an int past the largest float, 10**400
            number = math.inf
        if not math.isfinite(number) or number < 0:
            raise ValueError(f"{where} is {shortened_repr(value)}: a {noun} is finite and >= 0")
        checked[identifier] = number
    return checked


def _capacities(
    capacities: Mapping[Any, float] | None, consumers: Collection[Any]
) -> dict[Any, float]:
    """consumer -> capacity, 1 each without capacities; each finite and > 0."""
    if capacities is None:
        return dict.fromkeys(consumers, 1.0)
    checked = _numbers(capacities, consumers, "capacities", "consumer", "capacity")
    for consumer, value in checked.items():
        if value == 0:
            raise ValueError(f"capacities[{shortened_repr(consumer)}] is 0: a capacity is > 0")
    return checked
