"""A kafka-python partition assignor that plans with any strategy (kafka-python 3.0.x).

kafka-python's interface (kafka/coordinator/assignors/abstract.py): an assignor is an object with
`name`, `metadata(topics) -> ConsumerProtocolSubscription` (sent in JoinGroup),
`assign(cluster, members) -> {member_id: ConsumerProtocolAssignment}` (run by the leader; each
member is a JoinGroupResponseMember whose `metadata` the coordinator has already decoded into a
ConsumerProtocolSubscription), `on_assignment(assignment, generation)` (every member, after
SyncGroup) and `supported_protocols()` (KIP-429 RebalanceProtocol modes). `KafkaConsumer`'s
`partition_assignment_strategy` takes assignor instances as well as classes; an instance keeps
its member's state (what it owns, and the generation), so give each consumer its own: an
instance shared by two consumers is refused when the second is given its assignment (kafka-python
gives an assignor no call at which a consumer takes it up, and none that says which consumer
calls; `on_assignment` is where the two would overwrite each other).

The previous plan reaches the leader the way Kafka's StickyAssignor sends it: the subscription's
user data is StickyAssignorUserData v1 (previous_assignment, generation), encoded with
kafka-python's own struct but without the two-byte version header that kafka-python 3.0's own
sticky assignor puts in front of it, so the bytes are those of Java's StickyAssignor and of
aiokafka's (rebalancing.adapters.kafka_aiokafka). The leader reads them into
rebalancing.adapters.kafka_plan, which applies Kafka's ownership rules and runs the strategy.

kafka-python 3.0.12 has the COOPERATIVE protocol (RebalanceProtocol, CooperativeStickyAssignor):
a consumer whose assignors all support it keeps its partitions across JoinGroup, revokes only
those missing from its new assignment, and rejoins when it revoked any. The cooperative variant
here supports only COOPERATIVE (as kafka-python's CooperativeStickyAssignor does: in an eager
group nobody would rejoin to pick up the partitions it holds back), sends its owned partitions
and generation also in the subscription's own fields (version 2: owned_partitions,
generation_id, KIP-429 and KIP-792), and gives out the first round of `cooperative_round`.

Static membership (KIP-345, kafka-python's `group_instance_id`): the broker lists each member's
group_instance_id beside its member id in the JoinGroup response the leader's `assign` gets, and
a static member is planned under it (kafka_plan: consumer ids), so a member whose consumer
restarts under a new member id is the same consumer to the strategy. A static consumer that
restarts within session.timeout.ms causes no rebalance: the broker gives its new process the
assignment in force, and `on_assignment` restores the claims it sends at the next rebalance.
One that restarts while a rebalance is under way (or whose return starts one) joins with no
claims (its process is new): strategies that plan from ids give it its partitions back all the
same, sticky does when nothing else changed (its partitions are the only ones free).

Zones (KIP-881) and weights, for a strategy that declares it reads them (`Strategy.uses`):
- The member's rack: kafka-python gives an assignor no access to its consumer's config, so the
  rack is given to the assignor (`client_rack`, the same value as the consumer's own
  `client_rack`). A member with a rack sends subscription version 3, whose `rack_id` carries
  it (version 3 also has owned_partitions and generation_id: the cooperative variant fills
  them, the eager one leaves them empty and claims in its user data as before). The leader
  reads every member's rack_id; a member that sends none (an older version, or "") has no zone.
- The partitions' replica racks come from the leader's ClusterMetadata: a partition's zones are
  the racks of the brokers that `cluster.is_replica_node` lists as its replicas
  (`replica_racks`); a broker without a rack adds none.
- Weights: a hook (`weights=`) the leader calls with the partitions it assigns
  (kafka_plan.weights_from), for example lag per partition from the group's committed offsets
  and the end offsets; without one every partition weighs 1.

Runtime complexity: that of kafka_plan.plan_group, plus O(P) to decode and encode, plus
O(P x B) for B brokers to read replica racks (only for a strategy that reads queue_zones).
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from typing import Any

from kafka.coordinator.assignors.abstract import (  # type: ignore[import-untyped]
    AbstractPartitionAssignor,
    RebalanceProtocol,
)
from kafka.coordinator.assignors.sticky.user_data import (  # type: ignore[import-untyped]
    StickyAssignorUserData,
)
from kafka.protocol.consumer.metadata import (  # type: ignore[import-untyped]
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)
from kafka.structs import TopicPartition  # type: ignore[import-untyped]

from rebalancing.adapters.kafka_plan import (
    NO_GENERATION,
    Partition,
    Subscription,
    WeightsHook,
    by_topic,
    cooperative_round,
    ownership,
    plan_group,
    rack_of,
    remembered_assignment,
    subscribed_partitions,
    weights_from,
)
from rebalancing.strategies import Strategy

USER_DATA_VERSION = 1
"""StickyAssignorUserData v1: previous_assignment and generation."""

SUBSCRIPTION_VERSION = 0
"""Eager members send topics and user data only, as kafka-python's StickyPartitionAssignor."""

COOPERATIVE_SUBSCRIPTION_VERSION = 2
"""Cooperative members also fill owned_partitions (v1+) and generation_id (v2+)."""

RACK_SUBSCRIPTION_VERSION = 3
"""Members with a rack send it in rack_id (v3+, KIP-881)."""

ASSIGNMENT_VERSION = 0


def encode_user_data(owned: Iterable[Partition], generation: int) -> bytes:
    """StickyAssignorUserData v1 bytes, without kafka-python's version header (Java's layout)."""
    data = StickyAssignorUserData(
        previous_assignment=list(by_topic(owned).items()), generation=generation
    )
    encoded: bytes = data.encode(version=USER_DATA_VERSION, header=False)
    return encoded


def decode_user_data(data: bytes, member_id: str) -> tuple[tuple[Partition, ...], int]:
    """(owned partitions, generation) from user data; ValueError names the member when the bytes
    are not exactly one StickyAssignorUserData v1."""
    buffer = io.BytesIO(data)
    try:
        decoded = StickyAssignorUserData.decode(buffer, version=USER_DATA_VERSION, header=False)
    except Exception as error:  # the decoder raises struct.error, ValueError, ...
        raise ValueError(
            f"member {member_id!r}: its subscription user data is not StickyAssignorUserData "
            f"v1 ({type(error).__name__}: {error}; {len(data)} bytes: {data[:32]!r})"
        ) from error
    if buffer.tell() != len(data):
        raise ValueError(
            f"member {member_id!r}: its subscription user data has {len(data) - buffer.tell()} "
            f"bytes after a StickyAssignorUserData v1"
        )
    owned = tuple(
        (str(topic), int(number))
        for topic, numbers in decoded.previous_assignment
        for number in numbers
    )
    return owned, int(decoded.generation)


def subscription_of(member: Any) -> Subscription:
    """A JoinGroupResponseMember (metadata decoded, or still bytes) as a Subscription, with
    its group_instance_id when it is a static member and its rack_id (version 3+) when it
    sent one.

    The claims come from the user data; a member that sent none but filled the subscription's
    own owned_partitions / generation_id (version 1+, as Java's cooperative consumers do) is
    read from those. ValueError or TypeError names the member when nothing can be read.
    """
    member_id = member.member_id
    group_instance_id = getattr(member, "group_instance_id", None)  # JoinGroup v5+, static only
    metadata = member.metadata
    if isinstance(metadata, bytes | bytearray | memoryview):
        try:
            metadata = ConsumerProtocolSubscription.decode(bytes(metadata))
        except Exception as error:
            raise ValueError(
                f"member {member_id!r}: its metadata is not a ConsumerProtocolSubscription "
                f"({type(error).__name__}: {error})"
            ) from error
    if not isinstance(metadata, ConsumerProtocolSubscription):
        raise TypeError(
            f"member {member_id!r}: metadata is {type(metadata).__name__}, "
            "not a ConsumerProtocolSubscription"
        )
    topics = frozenset(str(topic) for topic in metadata.topics or ())
    rack = getattr(metadata, "rack_id", None)  # None below version 3
    user_data = metadata.user_data
    if isinstance(user_data, bytearray | memoryview):
        user_data = bytes(user_data)
    if user_data:
        if not isinstance(user_data, bytes):
            raise TypeError(
                f"member {member_id!r}: user data is {type(user_data).__name__}, not bytes"
            )
        owned, generation = decode_user_data(user_data, member_id)
        return Subscription(member_id, topics, owned, generation, group_instance_id, rack)
    owned = tuple(
        (str(entry.topic), int(number))
        for entry in getattr(metadata, "owned_partitions", None) or ()
        for number in entry.partitions
    )
    generation = getattr(metadata, "generation_id", NO_GENERATION)
    return Subscription(
        member_id,
        topics,
        owned,
        NO_GENERATION if generation is None else generation,
        group_instance_id,
        rack,
    )


class StrategyAssignor(AbstractPartitionAssignor):  # type: ignore[misc]
    """kafka-python assignor running a strategy of rebalancing.strategies (module docstring).

    State: the partitions this member owns and the generation that gave them, from
    `on_assignment`; None before the first assignment (the subscription then has no user data).
    `client_rack`: this member's rack, sent in its subscription (None or "": no rack).
    `weights`: the hook the leader calls for the partitions' weights (kafka_plan.WeightsHook).
    """

    def __init__(
        self,
        strategy: Strategy,
        *,
        name: str,
        cooperative: bool = False,
        client_rack: str | None = None,
        weights: WeightsHook | None = None,
    ) -> None:
        self._strategy = strategy
        self._name = name
        self.cooperative = cooperative
        self.client_rack = rack_of(client_rack, f"assignor {name!r}")
        self.weights = weights
        self.owned: tuple[Partition, ...] | None = None
        self.generation = NO_GENERATION

    @property
    def name(self) -> str:
        """The group protocol name, the same for every member of the group."""
        return self._name

    def supported_protocols(self) -> list[Any]:
        """[COOPERATIVE] for the cooperative variant, [EAGER] otherwise."""
        if self.cooperative:
            return [RebalanceProtocol.COOPERATIVE]
        return [RebalanceProtocol.EAGER]

    def metadata(self, topics: Iterable[str]) -> Any:
        """The subscription for JoinGroup: the topics (sorted), and the partitions this member
        owns among them with their generation (user data; for the cooperative variant also
        owned_partitions and generation_id). Partitions of topics it no longer subscribes to
        are not claimed: a consumer revokes them before it rejoins."""
        subscribed = set(topics)
        owned = [partition for partition in self.owned or () if partition[0] in subscribed]
        user_data = b"" if self.owned is None else encode_user_data(owned, self.generation)
        if self.client_rack is None and (self.owned is None or not self.cooperative):
            return ConsumerProtocolSubscription(SUBSCRIPTION_VERSION, sorted(subscribed), user_data)
        claims_in_fields = self.cooperative and self.owned is not None
        fields: dict[str, Any] = {
            "topics": sorted(subscribed),
            "user_data": user_data,
            "owned_partitions": [
                ConsumerProtocolSubscription.TopicPartition(topic=topic, partitions=numbers)
                for topic, numbers in by_topic(owned if claims_in_fields else ()).items()
            ],
            "generation_id": self.generation if claims_in_fields else NO_GENERATION,
        }
        if self.client_rack is None:
            return ConsumerProtocolSubscription(version=COOPERATIVE_SUBSCRIPTION_VERSION, **fields)
        return ConsumerProtocolSubscription(
            version=RACK_SUBSCRIPTION_VERSION, rack_id=self.client_rack, **fields
        )

    def assign(self, cluster: Any, members: Iterable[Any]) -> dict[str, Any]:
        """The leader's assignment for every member, by member id; static members are planned
        under their group.instance.id (module docstring)."""
        subscriptions = [subscription_of(member) for member in members]
        owners = ownership(subscriptions)
        partitions = subscribed_partitions(cluster, subscriptions)
        queue_zones = None
        if "queue_zones" in self._strategy.uses:
            queue_zones = replica_racks(
                cluster, ((topic, n) for topic, numbers in partitions.items() for n in numbers)
            )
        plan = plan_group(
            self._strategy,
            partitions,
            subscriptions,
            owners,
            queue_zones=queue_zones,
            weights=weights_from(self.weights, partitions, self.name),
        )
        if self.cooperative:
            plan = cooperative_round(plan, owners.claimants).assignment
        return {
            member.member_id: assignment_of(plan[member.consumer_id]) for member in subscriptions
        }

    def on_assignment(self, assignment: Any, generation: int) -> None:
        """Remember what this member now owns, and the generation, for its next subscription.

        ValueError when this instance was already given a different assignment for the same
        generation: it is shared by two consumers (kafka_plan.remembered_assignment).
        """
        self.owned = remembered_assignment(
            self.owned,
            self.generation,
            (
                (str(partition.topic), int(partition.partition))
                for partition in assignment.partitions()
            ),
            int(generation),
            assignor=self.name,
            number_name="generation",
            shared="one assignor instance is shared by two consumers (give each KafkaConsumer "
            "its own kafka_python_assignor(...))",
        )
        self.generation = int(generation)


def replica_racks(cluster: Any, partitions: Iterable[Partition]) -> dict[Partition, frozenset[str]]:
    """partition -> the racks of the brokers holding its replicas, from kafka-python's
    ClusterMetadata (`brokers()`, each with its `rack`, and `is_replica_node(partition,
    node_id)`), for the partitions that have any: a broker without a rack adds none, as in
    Kafka's RackInfo. Runtime complexity: O(P x B) for P partitions and B brokers with a rack.
    """
    racks = {broker.node_id: broker.rack for broker in cluster.brokers() if broker.rack}
    zones: dict[Partition, frozenset[str]] = {}
    for topic, number in partitions:
        partition = TopicPartition(topic, number)
        found = frozenset(
            rack for node, rack in racks.items() if cluster.is_replica_node(partition, node)
        )
        if found:
            zones[(topic, number)] = found
    return zones


def assignment_of(owned: Iterable[Partition]) -> Any:
    """A ConsumerProtocolAssignment of these partitions, by topic, sorted."""
    return ConsumerProtocolAssignment(ASSIGNMENT_VERSION, list(by_topic(owned).items()), b"")
