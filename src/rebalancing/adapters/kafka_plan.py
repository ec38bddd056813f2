"""Plan a Kafka consumer group with any strategy: the client-independent half of the Kafka
assignors (plain values in, plain values out; no Kafka client is imported here). Kept in one
module: the ownership rules, the plan and the cooperative revocation read one another's
results, in the order a group leader applies them.

A group leader gets, from each member, the topics it subscribes to and the partitions it claims
to own with the generation of the assignment that gave them (`Subscription`). This module turns
that into the assignment of the next generation, planning each member under its consumer id:
its group.instance.id when it is a static member (Kafka's KIP-345), which it keeps when its
consumer restarts, else its member id, which the broker makes anew each time a consumer joins.
A static member that restarts is planned under the same id, so whatever the strategy plans
from ids (its order, its hash) stays with it; every plan below is keyed by consumer id.

1. Who owns what (`ownership`), by the rules of Kafka's sticky assignors: a member whose
   generation is older than the newest one reported is stale and owns nothing (it missed a
   rebalance, its partitions went to others); so of two claims on one partition, the one of the
   highest generation wins. Two claims of the same generation (only a faulty leader makes them)
   cancel: the partition counts as owned by nobody, as Java's AbstractStickyAssignor does when
   all subscriptions are equal (here, whatever the subscriptions). A stale or conflicting
   claim is never an error and never a crash (a malformed one is refused by `Subscription`).
2. The plan (`plan_group`). Queues are `(topic, partition)` pairs, consumers are consumer ids.
   When every member subscribes to the same topics, the strategy runs once on the whole group,
   so its promises (balance, stickiness) hold for the group's total counts. Otherwise it runs
   once per topic, among that topic's subscribers only, with the previous plan restricted to
   that topic: each partition goes only to a member subscribed to its topic, and the promises
   hold per topic. Across topics nothing is promised: a member's total is the sum of its shares
   of each topic, so with a strategy whose counts differ by at most one per topic the totals of
   two members can differ by up to the number of topics they share (as with Kafka's
   RangeAssignor); Kafka's StickyAssignor balances the totals instead. Any strategy can run per
   topic (the contract asks nothing of the group beyond its ids), so none is refused; a plan
   that breaks the contract (a partition missing, twice, or with a member outside the group) is
   a RuntimeError naming the strategy and the partition, never passed on to the group.
3. Zones and weights (KIP-881; rebalancing.placement): a member's rack (its `client.rack`,
   sent in its subscription) is its zone; `plan_group` passes the members' racks as
   `consumer_zones`, and the partitions' replica racks and their weights when given
   (`queue_zones`, `weights`), to a strategy that declares it reads them (`Strategy.uses`),
   and to no other. A member without a rack has no zone. Per topic, each call gets the
   entries of that topic's partitions and subscribers only. `weights_from` calls a user's
   weights hook (lag per partition, say) and checks what it returns by placement's rules.
4. Cooperative rebalancing (KIP-429, `cooperative_round`): a partition whose target owner is
   not its current owner is first revoked (its owner's new assignment leaves it out; the owner
   rejoins) and assigned in the next rebalance, when nobody owns it any more. No partition is
   ever assigned to a member while another member still owns it.

Runtime complexity: O(P log P + M log M) for P partitions and M members, plus the strategy's
own cost: one call on the whole group, or one call per topic on its partitions and subscribers.
"""

from __future__ import annotations

import logging
import operator
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, SupportsIndex

from rebalancing.contract import prepare, shortened_repr
from rebalancing.placement import check_placement
from rebalancing.strategies import Strategy, resolve

Partition = tuple[str, int]
"""A Kafka partition as the strategies see it: a `(topic, partition)` queue id."""

NO_GENERATION = -1
"""The generation of a member that has not been assigned anything yet (Kafka's default)."""

WeightsHook = Callable[[list[Partition]], Mapping[Partition, float]]
"""A user's weights: called by the group's leader at each rebalance with the partitions it is
about to assign, sorted, it returns each one's weight (lag, bytes/s: finite, >= 0)."""

log = logging.getLogger(__name__)


@dataclass(frozen=True, init=False)
class Subscription:
    """What one member sent the leader: the topics it subscribes to, the partitions it claims
    to own, the generation of the assignment that gave them (NO_GENERATION if none), for
    a static member its group.instance.id (None for a dynamic one), and its rack (its
    client.rack, KIP-881; None without one, as is "", Kafka's default for no rack).

    Checked and stored in one form whatever it was given in, so that nothing downstream sees
    a surprise: `topics` any collection of topic names (a set, a list; not one name as a str,
    which would be a set of letters) kept as a frozenset; `owned` any collection of
    `(topic, partition)` pairs, tuples or 2-item lists (JSON has no tuples; a namedtuple such
    as kafka-python's TopicPartition is a tuple), kept as a tuple of tuples. TypeError or
    ValueError names the member and the item.
    """

    member_id: str
    topics: frozenset[str]
    owned: tuple[Partition, ...]
    generation: int
    group_instance_id: str | None
    rack: str | None

    def __init__(
        self,
        member_id: str,
        topics: Iterable[str],
        owned: Iterable[Partition | Sequence[str | int]] = (),
        generation: int = NO_GENERATION,
        group_instance_id: str | None = None,
        rack: str | None = None,
    ) -> None:
        if not isinstance(member_id, str):
            raise TypeError(f"member id {shortened_repr(member_id)} is not a str")
        member = f"member {shortened_repr(member_id)}"
        if group_instance_id is not None and (
            not isinstance(group_instance_id, str) or not group_instance_id
        ):
            raise TypeError(
                f"{member}: group.instance.id {shortened_repr(group_instance_id)} is not a "
                "non-empty str"
            )
        object.__setattr__(self, "member_id", member_id)
        object.__setattr__(self, "topics", _topic_names(topics, member))
        object.__setattr__(self, "owned", _owned_partitions(owned, member))
        object.__setattr__(self, "generation", _generation(generation, member))
        object.__setattr__(self, "group_instance_id", group_instance_id)
        object.__setattr__(self, "rack", rack_of(rack, member))

    @property
    def consumer_id(self) -> str:
        """The id the strategy plans this member under: its group.instance.id when static
        (the same across its consumer's restarts), else its member id."""
        return self.member_id if self.group_instance_id is None else self.group_instance_id


def rack_of(rack: object, who: str) -> str | None:
    """A member's rack as Kafka's client.rack: a str, None when it has none ("" is Kafka's
    default for none). TypeError names `who` for anything else."""
    if rack is not None and not isinstance(rack, str):
        raise TypeError(f"{who}: rack {shortened_repr(rack)} is {type(rack).__name__}, not a str")
    return rack or None


def _items(value: object, refusal: str) -> Iterable[object]:
    """The items of a collection; TypeError saying `refusal` and what `value` is otherwise. A
    str or bytes is one value here, not a collection of its characters."""
    if isinstance(value, Iterable) and not isinstance(value, str | bytes | bytearray):
        return value
    raise TypeError(f"{refusal}, not {type(value).__name__} {shortened_repr(value)}")


def _topic_names(topics: object, member: str) -> frozenset[str]:
    if isinstance(topics, bytes | bytearray):
        example = topics.decode("utf-8", "replace")
    else:
        example = topics if isinstance(topics, str) and topics else "orders"
    refusal = f"{member}: topics must be a set of topic names, e.g. {{{example!r}}}"
    return frozenset(_topic_name(topic, member) for topic in _items(topics, refusal))


def _owned_partitions(owned: object, member: str) -> tuple[Partition, ...]:
    shape = "a collection of (topic, partition) pairs, e.g. (('orders', 0),)"
    pairs: list[Partition] = []
    for item in _items(owned, f"{member}: owned must be {shape}"):
        if not isinstance(item, tuple | list) or len(item) != 2:
            raise TypeError(
                f"{member}: owned item {shortened_repr(item)} is not a (topic, partition) pair "
                f"(a tuple, or a 2-item list); owned is {shape}"
            )
        where = f"{member}: owned item {shortened_repr(item)}"
        pairs.append((_topic_name(item[0], where), _partition_number(item[1], where)))
    return tuple(pairs)


def _generation(generation: object, member: str) -> int:
    number = _integer(generation, f"{member}: generation")
    if number < NO_GENERATION:
        raise ValueError(f"{member}: generation {number} is below NO_GENERATION ({NO_GENERATION})")
    return number


def _topic_name(topic: object, where: str) -> str:
    if not isinstance(topic, str):
        raise TypeError(
            f"{where}: topic {shortened_repr(topic)} is {type(topic).__name__}, not a str"
        )
    if not topic:
        raise ValueError(f"{where}: a topic name is empty")
    return topic


def _partition_number(number: object, where: str) -> int:
    partition = _integer(number, f"{where}: partition")
    if partition < 0:
        raise ValueError(f"{where}: partition {partition} is negative")
    return partition


def _integer(value: object, what: str) -> int:
    """An int (or an integer type such as numpy's, as an int); TypeError for anything else,
    bool included (True is no partition number)."""
    if isinstance(value, SupportsIndex) and not isinstance(value, bool):
        return operator.index(value)
    raise TypeError(f"{what} {shortened_repr(value)} is {type(value).__name__}, not an int")


class Cluster(Protocol):
    """The question every assignor asks of the cluster metadata (kafka-python's and aiokafka's
    ClusterMetadata both answer it): a topic's partition numbers, None if unknown. For a
    strategy that reads zones, kafka-python's assignor also asks for the brokers and each
    partition's replicas (rebalancing.adapters.kafka_python.replica_racks)."""

    def partitions_for_topic(self, topic: str) -> Collection[int] | None: ...


def subscribed_partitions(
    cluster: Cluster, subscriptions: Iterable[Subscription]
) -> dict[str, list[int]]:
    """topic -> sorted partition numbers, for every subscribed topic the cluster knows."""
    members = _subscriptions(subscriptions)
    partitions: dict[str, list[int]] = {}
    for topic in sorted(frozenset().union(*(member.topics for member in members))):
        numbers = cluster.partitions_for_topic(topic)
        if numbers is not None:
            partitions[topic] = sorted(numbers)
    return partitions


def by_topic(partitions: Iterable[Partition]) -> dict[str, list[int]]:
    """topic -> sorted partition numbers, topics in sorted order: how Kafka's protocol structs
    list partitions (previous_assignment, assigned_partitions, owned_partitions)."""
    grouped: dict[str, list[int]] = {}
    for topic, number in sorted(partitions):
        grouped.setdefault(topic, []).append(number)
    return grouped


@dataclass(frozen=True)
class Ownership:
    """Who owns what when the group rebalances (see the module docstring, step 1).

    `previous` is the plan in force, consumer id -> partitions it owns (sorted), for the
    strategy; `claimants` maps each claimed partition to the consumer ids that claim it with the
    newest generation (more than one only on a conflict); `newest_generation` is the newest
    reported; `stale` names the consumer ids whose claims were ignored because their generation
    is older.
    """

    previous: dict[str, list[Partition]]
    claimants: dict[Partition, tuple[str, ...]]
    newest_generation: int
    stale: tuple[str, ...]


def ownership(subscriptions: Iterable[Subscription]) -> Ownership:
    """The owners of the partitions, from the members' claims (module docstring, step 1).

    Runtime complexity: O(M log M + C) for M members and C claims.
    """
    members = sorted(_subscriptions(subscriptions), key=lambda member: member.consumer_id)
    newest = max((member.generation for member in members), default=NO_GENERATION)
    claimants: dict[Partition, list[str]] = {}
    stale: list[str] = []
    for member in members:
        if member.generation < newest:
            if member.owned:
                stale.append(member.consumer_id)
            continue
        for partition in dict.fromkeys(member.owned):  # a claim listed twice counts once
            claimants.setdefault(partition, []).append(member.consumer_id)
    previous: dict[str, list[Partition]] = {member.consumer_id: [] for member in members}
    for partition, claiming in claimants.items():
        if len(claiming) == 1:
            previous[claiming[0]].append(partition)
        else:
            log.warning(
                "partition %r is claimed by %s in the same generation %d: it counts as owned "
                "by none of them",
                partition,
                ", ".join(map(repr, claiming)),
                newest,
            )
    if stale:
        log.info(
            "members %s missed a rebalance (generation older than %d): their claims are ignored",
            ", ".join(map(repr, stale)),
            newest,
        )
    for owned in previous.values():
        owned.sort()
    return Ownership(
        previous,
        {partition: tuple(claiming) for partition, claiming in claimants.items()},
        newest,
        tuple(stale),
    )


def plan_group(
    strategy: str | Strategy,
    partitions: Mapping[str, Iterable[int]],
    subscriptions: Iterable[Subscription],
    owners: Ownership | None = None,
    *,
    queue_zones: Mapping[Partition, Collection[Any]] | None = None,
    weights: Mapping[Partition, float] | None = None,
) -> dict[str, list[Partition]]:
    """The strategy's plan for the group: consumer id -> sorted partitions, every member a key.

    `strategy` is a Strategy, a registered name or `package.module:function` (`as_strategy`).
    `partitions` maps each topic the cluster knows to its partition numbers; a subscribed topic
    it does not know has no partitions to assign (logged). `owners` defaults to
    `ownership(subscriptions)`. See the module docstring, steps 2 and 3: the members' racks
    (`Subscription.rack`) are the strategy's `consumer_zones`; `queue_zones` (partition -> the
    racks of its replicas) and `weights` (partition -> weight) are passed on as they are, each
    only to a strategy that declares it in `uses`, and checked by it (rebalancing.placement).
    ValueError names two members that would be planned under one consumer id; ValueError or
    TypeError names any argument that is not of these forms, before anything is logged.
    """
    strategy = as_strategy(strategy)
    subscriptions = _subscriptions(subscriptions)
    partitions = _partition_metadata(partitions)
    if owners is not None and not isinstance(owners, Ownership):
        raise TypeError(
            f"owners must be an Ownership (from ownership(subscriptions)) or None, not "
            f"{type(owners).__name__}"
        )
    members = _consumer_ids(subscriptions)
    owners = ownership(subscriptions) if owners is None else owners
    topics_of = {member.consumer_id: member.topics for member in subscriptions}
    racks = {member.consumer_id: member.rack for member in subscriptions if member.rack}
    facts = _Facts(racks or None, queue_zones, weights)
    subscribed = sorted(frozenset().union(*topics_of.values()))
    for topic in subscribed:
        if topic not in partitions:
            log.warning("topic %r has no partition metadata: nothing of it is assigned", topic)
    plan: dict[str, list[Partition]] = {member: [] for member in members}
    if len(set(topics_of.values())) <= 1:
        queues = [(topic, number) for topic in subscribed for number in partitions.get(topic, ())]
        _merge(plan, _run(strategy, queues, members, owners.previous, facts, "the group"))
    else:
        subscribers: dict[str, list[str]] = {topic: [] for topic in subscribed}
        for member in members:  # in id order, so each list is sorted
            for topic in topics_of[member]:
                subscribers[topic].append(member)
        previous: dict[str, dict[str, list[Partition]]] = {}
        for member, owned in owners.previous.items():
            for partition in owned:
                previous.setdefault(partition[0], {}).setdefault(member, []).append(partition)
        for topic in subscribed:
            queues = [(topic, number) for number in partitions.get(topic, ())]
            in_topic = _run(
                strategy,
                queues,
                subscribers[topic],
                previous.get(topic, {}),
                facts,
                f"topic {topic!r}",
            )
            _merge(plan, in_topic)
    for owned in plan.values():
        owned.sort()
    return plan


def as_strategy(strategy: str | Strategy) -> Strategy:
    """The strategy to run: a Strategy as it is, or the one a name stands for, a registered
    name or `package.module:function` (rebalancing.strategies.resolve, whose ValueError says
    what was tried). TypeError for anything else."""
    if isinstance(strategy, Strategy):
        return strategy
    if not isinstance(strategy, str):
        raise TypeError(
            f"strategy must be a name or a Strategy, not {type(strategy).__name__}: "
            f"{shortened_repr(strategy)}"
        )
    return resolve(strategy)


def _subscriptions(subscriptions: object) -> tuple[Subscription, ...]:
    """The members' subscriptions, read once (an iterator may be given); TypeError names what
    is not a Subscription."""
    if isinstance(subscriptions, Subscription):
        raise TypeError(
            "subscriptions must be a collection of Subscription, not one: pass "
            f"[{shortened_repr(subscriptions)}]"
        )
    members: list[Subscription] = []
    refusal = "subscriptions must be a collection of Subscription"
    for index, member in enumerate(_items(subscriptions, refusal)):
        if not isinstance(member, Subscription):
            raise TypeError(
                f"subscription {index} is {type(member).__name__}, not a Subscription: "
                f"{shortened_repr(member)}"
            )
        members.append(member)
    return tuple(members)


def _partition_metadata(partitions: object) -> dict[str, list[int]]:
    """topic -> its partition numbers, checked: names, non-negative ints, each once."""
    if not isinstance(partitions, Mapping):
        raise TypeError(
            "partition metadata must be a mapping topic -> partition numbers, e.g. "
            f"{{'orders': range(6)}}, not {type(partitions).__name__} {shortened_repr(partitions)}"
        )
    checked: dict[str, list[int]] = {}
    for topic, numbers in partitions.items():
        name = _topic_name(topic, "partition metadata")
        where = f"partition metadata of topic {shortened_repr(name)}"
        refusal = f"{where}: partition numbers must be a collection of ints, e.g. range(6)"
        listed = [_partition_number(number, where) for number in _items(numbers, refusal)]
        twice = [number for number, count in Counter(listed).items() if count > 1]
        if twice:
            raise ValueError(f"{where}: partition {twice[0]} is listed twice")
        checked[name] = listed
    return checked


def _consumer_ids(subscriptions: Sequence[Subscription]) -> list[str]:
    """The consumer ids, sorted; ValueError names a member that appears twice, or the members
    that one consumer id would stand for (a group.instance.id sent twice, or equal to a
    dynamic member's id)."""
    counts = Counter(member.member_id for member in subscriptions)
    twice = sorted(member for member, count in counts.items() if count > 1)
    if twice:
        raise ValueError(f"member {twice[0]!r} appears {counts[twice[0]]} times in the group")
    members_of: dict[str, list[str]] = {}
    for member in subscriptions:
        members_of.setdefault(member.consumer_id, []).append(member.member_id)
    for consumer, members in sorted(members_of.items()):
        if len(members) > 1:
            raise ValueError(
                f"members {', '.join(map(repr, sorted(members)))} would both be planned as "
                f"{consumer!r}: a group.instance.id names one static member, and no other "
                "member's id"
            )
    return sorted(members_of)


@dataclass(frozen=True)
class _Facts:
    """The zones and weights of one rebalance, for the whole group (plan_group, step 3)."""

    consumer_zones: Mapping[str, Any] | None
    queue_zones: Mapping[Partition, Collection[Any]] | None
    weights: Mapping[Partition, float] | None

    def inputs_for(
        self, strategy: Strategy, queues: Collection[Partition], members: Collection[str]
    ) -> dict[str, Any]:
        """What `strategy` reads of these facts, cut to the queues and members of one call:
        a map of the whole group would make a call on one topic warn of ids of another form.
        A weights map is cut but never emptied to None, so a missing weight stays an error."""
        available: dict[str, Any] = {}
        if self.consumer_zones is not None:
            zones = {m: self.consumer_zones[m] for m in members if m in self.consumer_zones}
            available["consumer_zones"] = zones or None
        if self.queue_zones is not None:
            held = {q: self.queue_zones[q] for q in queues if q in self.queue_zones}
            available["queue_zones"] = held or None
        if self.weights is not None:
            available["weights"] = {q: self.weights[q] for q in queues if q in self.weights}
        return strategy.inputs_for(available)


def _run(
    strategy: Strategy,
    queues: list[Partition],
    members: list[str],
    previous: dict[str, list[Partition]],
    facts: _Facts,
    scope: str,
) -> dict[str, list[Partition]]:
    """One call of the strategy, its plan checked against the contract. The previous plan is
    cut to the partitions given: claims on partitions that no longer exist (a deleted topic)
    are normal in Kafka, and would make the strategy warn of ids of another form."""
    given = set(queues)
    current = {
        member: [partition for partition in owned if partition in given]
        for member, owned in previous.items()
    }
    plan = strategy(queues, members, current, **facts.inputs_for(strategy, queues, members))
    _check_plan(plan, queues, members, f"strategy {strategy.name!r} for {scope}")
    return plan


def _check_plan(
    plan: Mapping[str, Iterable[Partition]], queues: list[Partition], members: list[str], who: str
) -> None:
    """RuntimeError naming the first broken promise: a member missing or unknown, a partition
    missing, unknown or held twice."""
    if not isinstance(plan, Mapping):
        raise RuntimeError(f"{who} returned {type(plan).__name__}, not a mapping")
    missing = sorted(set(members) - set(plan))
    if missing:
        raise RuntimeError(f"{who} leaves member {missing[0]!r} out of its plan")
    unknown = sorted(set(plan) - set(members), key=repr)
    if unknown:
        raise RuntimeError(f"{who} names {unknown[0]!r}, which is not in the group")
    holder: dict[Partition, str] = {}
    expected = set(queues)
    for member in members:
        for partition in plan[member]:
            if partition not in expected:
                raise RuntimeError(f"{who} assigns {partition!r}, which it was not given")
            if partition in holder:
                raise RuntimeError(
                    f"{who} assigns {partition!r} to both {holder[partition]!r} and {member!r}"
                )
            holder[partition] = member
    if len(holder) != len(expected):
        orphan = min(expected - holder.keys())
        raise RuntimeError(f"{who} leaves {orphan!r} unassigned")


def _merge(plan: dict[str, list[Partition]], part: Mapping[str, list[Partition]]) -> None:
    for member, owned in part.items():
        plan[member].extend(owned)


def weights_from(
    hook: WeightsHook | None, partitions: Mapping[str, Iterable[int]], assignor: str
) -> dict[Partition, float] | None:
    """The weights a user's hook gives the partitions to assign (topic -> numbers, as from
    `subscribed_partitions`), checked by rebalancing.placement's rules: a mapping with a
    finite weight >= 0 for every partition (entries for other partitions are ignored). None
    without a hook. ValueError or TypeError names the assignor, the hook and the partition.
    Runtime complexity: the hook's own, plus O(P log P)."""
    if hook is None:
        return None
    queues = sorted((topic, number) for topic, numbers in partitions.items() for number in numbers)
    given = hook(list(queues))
    who = f"assignor {assignor!r}: the weights hook {shortened_repr(hook)}"
    if given is None:
        raise TypeError(f"{who} returned None, not a mapping (topic, partition) -> weight")
    try:
        checked = check_placement(prepare(queues, (), None), weights=given).weights
    except (TypeError, ValueError) as error:
        raise type(error)(f"{who} returned weights that cannot be used: {error}") from error
    return {} if checked is None else checked


def remembered_assignment(
    held: tuple[Partition, ...] | None,
    held_number: int,
    assigned: Iterable[Partition],
    assigned_number: int,
    *,
    assignor: str,
    number_name: str,
    shared: str,
) -> tuple[Partition, ...]:
    """What a member's assignor remembers of its new assignment (sorted), to claim it in its
    next subscription. `held` and `held_number` are what it remembers now (None before its
    first assignment), `assigned_number` numbers the new assignment (the generation, or the
    leader's plan number: `number_name`).

    A member is given one assignment per number, and its numbers only grow; an assignor given
    two different assignments under one number is shared by two members (`shared` says by
    what and how not to), which would both claim the last one and cancel each other's claims:
    ValueError, before anything is overwritten. The same assignment again is accepted: a
    static member's consumer restarting with the same assignor is given it again (KIP-345).
    """
    given = tuple(sorted(assigned))
    if held is not None and assigned_number == held_number and given != held:
        raise ValueError(
            f"assignor {assignor!r} was given two different assignments for {number_name} "
            f"{assigned_number} ({list(held)} then {list(given)}): {shared}, and both would "
            "claim the last one at the next rebalance, cancelling each other's claims"
        )
    return given


@dataclass(frozen=True)
class CooperativeRound:
    """One cooperative rebalance (KIP-429): what each member gets now, what it gives up now,
    and what it will get in the next rebalance, once the current owner has let it go.

    `assignment` leaves out every partition still owned by a member other than its target;
    `revoked` is, per member, what it owns and is not given (it rejoins when not empty);
    `deferred` is, per member, what its target holds back for the next round. All lists sorted.
    """

    assignment: dict[str, list[Partition]]
    revoked: dict[str, list[Partition]]
    deferred: dict[str, list[Partition]]

    @property
    def settled(self) -> bool:
        """True when nothing is revoked, so no member rejoins and the target is reached."""
        return not any(self.revoked.values())


def cooperative_round(
    target: Mapping[str, Iterable[Partition]], claimants: Mapping[Partition, Iterable[str]]
) -> CooperativeRound:
    """First phase of moving the group to `target` (member -> partitions) from the current
    owners (`claimants`: partition -> members claiming it with the newest generation, as
    `Ownership.claimants`): a partition goes to its target now only if no other member claims
    it; otherwise it is held back, its owners revoke it and the next rebalance assigns it.

    Runtime complexity: O(P log P) for P partitions.
    """
    assignment: dict[str, list[Partition]] = {member: [] for member in target}
    deferred: dict[str, list[Partition]] = {member: [] for member in target}
    for member, partitions in target.items():
        for partition in partitions:
            owned_by_another = any(
                owner != member and owner in target for owner in claimants.get(partition, ())
            )
            (deferred if owned_by_another else assignment)[member].append(partition)
    given = {member: set(owned) for member, owned in assignment.items()}
    revoked: dict[str, list[Partition]] = {member: [] for member in target}
    for partition, claiming in claimants.items():
        for member in claiming:
            if member in given and partition not in given[member]:
                revoked[member].append(partition)
    for plan in (assignment, revoked, deferred):
        for owned in plan.values():
            owned.sort()
    return CooperativeRound(assignment, revoked, deferred)
