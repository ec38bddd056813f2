"""An aiokafka partition assignor that plans with any strategy (written against aiokafka 0.14).

aiokafka's interface (aiokafka/coordinator/assignors/abstract.py) is the older kafka-python one,
with classmethods: `name`, `metadata(topics) -> ConsumerProtocolMemberMetadata`,
`assign(cluster, members) -> {member_id: ConsumerProtocolMemberAssignment}` and
`on_assignment(assignment)`. Where it differs from kafka-python 3.0 (rebalancing.adapters.
kafka_python):

- `AIOKafkaConsumer(partition_assignment_strategy=...)` takes assignor classes and calls the
  classmethods on them, so a member's state (what it owns, its generation) lives on the class:
  `assignor_class` makes a new class each time; give each consumer its own (a class shared by
  two consumers is refused when the second is given its assignment).
- `assign` gets a dict member_id -> ConsumerProtocolMemberMetadata (version, subscription,
  user_data), not a list of JoinGroupResponseMember; the structs (aiokafka.coordinator.protocol)
  have version 0 only: no owned_partitions, no generation_id.
- No generation reaches the assignor: `on_assignment` has no generation argument, and aiokafka
  never calls the `on_generation_assignment` its own StickyPartitionAssignor defines (so that
  one always sends generation -1). Here the leader numbers its plans itself: one more than the
  newest generation its members report, written into each assignment's user data (an Int32, as
  Java's CooperativeStickyAssignor encodes its generation) and echoed in the member's next
  subscription. A member that missed a rebalance reports an older number and is stale, exactly
  as with Kafka's generation ids; the numbers count our plans, they are not Kafka's ids.
- No cooperative protocol: aiokafka 0.14 rebalances eagerly only (every member revokes all its
  partitions before it rejoins), so there is no cooperative variant.
- No static membership for the assignor: AIOKafkaConsumer takes a group_instance_id, but its
  coordinator drops the members' instance ids from the JoinGroup response before it calls
  `assign` (consumer/group_coordinator.py, _perform_assignment), so every member is planned
  under its member id, which changes when its consumer restarts (kafka-python's adapter plans
  static members under their group.instance.id).

- No zones: aiokafka's subscription struct is version 0, with no rack_id (KIP-881), and its
  ClusterMetadata keeps the partitions' replicas in a private field only (`_partitions`; its
  public methods give leaders, not replicas). So a strategy that reads zones (`uses`
  consumer_zones or queue_zones: rack_aware_range, rack_aware_sticky, machine_room_nearby...)
  gets none here: every member has no zone and it plans as without zones
  (rebalancing.adapters.kafka.aiokafka_assignor warns when one is asked for). Weights come
  from a hook, as with kafka-python (`weights=`, kafka_plan.weights_from).

The subscription's user data is the same StickyAssignorUserData v1 bytes as the kafka-python
adapter's and Java's StickyAssignor's, encoded with aiokafka's own StickyAssignorUserDataV1.
Runtime complexity: that of kafka_plan.plan_group, plus O(P) to decode and encode.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, cast

from aiokafka.coordinator.assignors.abstract import (  # type: ignore[import-untyped]
    AbstractPartitionAssignor,
)
from aiokafka.coordinator.assignors.sticky.sticky_assignor import (  # type: ignore[import-untyped]
    StickyAssignorUserDataV1,
)
from aiokafka.coordinator.protocol import (  # type: ignore[import-untyped]
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)
from aiokafka.protocol.struct import Struct  # type: ignore[import-untyped]
from aiokafka.protocol.types import Int32, Schema  # type: ignore[import-untyped]

from rebalancing.adapters.kafka_plan import (
    NO_GENERATION,
    Partition,
    Subscription,
    WeightsHook,
    by_topic,
    ownership,
    plan_group,
    remembered_assignment,
    subscribed_partitions,
    weights_from,
)
from rebalancing.strategies import Strategy

METADATA_VERSION = 0
ASSIGNMENT_VERSION = 0


class PlanGeneration(Struct):  # type: ignore[misc]
    """The assignment's user data: the number of the leader's plan (see the module docstring)."""

    SCHEMA = Schema(("generation", Int32))


def encode_user_data(owned: Iterable[Partition], generation: int) -> bytes:
    """StickyAssignorUserData v1 bytes (previous_assignment, generation)."""
    encoded: bytes = StickyAssignorUserDataV1(list(by_topic(owned).items()), generation).encode()
    return encoded


def decode_user_data(data: bytes, member_id: str) -> tuple[tuple[Partition, ...], int]:
    """(owned partitions, generation); ValueError names the member when the bytes are not
    exactly one StickyAssignorUserData v1."""
    buffer = io.BytesIO(data)
    try:
        decoded = StickyAssignorUserDataV1.decode(buffer)
    except Exception as error:  # the decoder raises ValueError, struct.error, ...
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


def subscription_of(member_id: str, metadata: Any) -> Subscription:
    """One member's ConsumerProtocolMemberMetadata (or its bytes) as a Subscription;
    ValueError or TypeError names the member when it cannot be read."""
    if isinstance(metadata, bytes | bytearray | memoryview):
        try:
            metadata = ConsumerProtocolMemberMetadata.decode(bytes(metadata))
        except Exception as error:
            raise ValueError(
                f"member {member_id!r}: its metadata is not a ConsumerProtocolMemberMetadata "
                f"({type(error).__name__}: {error})"
            ) from error
    if not isinstance(metadata, ConsumerProtocolMemberMetadata):
        raise TypeError(
            f"member {member_id!r}: metadata is {type(metadata).__name__}, "
            "not a ConsumerProtocolMemberMetadata"
        )
    topics = frozenset(str(topic) for topic in metadata.subscription or ())
    user_data = metadata.user_data
    if not user_data:
        return Subscription(member_id, topics)
    if not isinstance(user_data, bytes | bytearray | memoryview):
        raise TypeError(f"member {member_id!r}: user data is {type(user_data).__name__}")
    owned, generation = decode_user_data(bytes(user_data), member_id)
    return Subscription(member_id, topics, owned, generation)


class StrategyAssignor(AbstractPartitionAssignor):  # type: ignore[misc]
    """aiokafka assignor running a strategy; use `assignor_class` to make one per consumer.

    Class state: the partitions this member owns (None before its first assignment, when the
    subscription has no user data) and the number of the plan that gave them. `weights`: the
    hook the leader calls for the partitions' weights (kafka_plan.WeightsHook), or None.
    """

    strategy: ClassVar[Strategy]
    weights: ClassVar[WeightsHook | None] = None
    owned: ClassVar[tuple[Partition, ...] | None] = None
    generation: ClassVar[int] = NO_GENERATION

    @classmethod
    def metadata(cls, topics: Iterable[str]) -> Any:
        """The subscription for JoinGroup: the topics (sorted), and the partitions this member
        owns among them with their plan number, as user data."""
        subscribed = set(topics)
        if cls.owned is None:
            return ConsumerProtocolMemberMetadata(METADATA_VERSION, sorted(subscribed), b"")
        owned = [partition for partition in cls.owned if partition[0] in subscribed]
        user_data = encode_user_data(owned, cls.generation)
        return ConsumerProtocolMemberMetadata(METADATA_VERSION, sorted(subscribed), user_data)

    @classmethod
    def assign(cls, cluster: Any, members: Mapping[str, Any]) -> dict[str, Any]:
        """The leader's assignment for every member, numbered one past the newest plan."""
        subscriptions = [
            subscription_of(member_id, metadata) for member_id, metadata in members.items()
        ]
        owners = ownership(subscriptions)
        partitions = subscribed_partitions(cluster, subscriptions)
        weights = weights_from(cls.weights, partitions, cls.name)
        plan = plan_group(cls.strategy, partitions, subscriptions, owners, weights=weights)
        user_data = PlanGeneration(max(owners.newest_generation, NO_GENERATION) + 1).encode()
        return {
            member_id: ConsumerProtocolMemberAssignment(
                ASSIGNMENT_VERSION, list(by_topic(owned).items()), user_data
            )
            for member_id, owned in plan.items()
        }

    @classmethod
    def on_assignment(cls, assignment: Any) -> None:
        """Remember what this member now owns and the plan's number, for its next subscription.

        ValueError when the assignment's user data is not a plan number (the leader was not
        running this assignor), or when this class was already given a different assignment
        under the same plan number: it is shared by two consumers
        (kafka_plan.remembered_assignment)."""
        user_data = assignment.user_data
        if not isinstance(user_data, bytes) or len(user_data) != 4:
            raise ValueError(
                f"assignor {cls.name!r}: the assignment's user data {user_data!r} is not the "
                "plan number this assignor's leader writes (does every member of the group use "
                "aiokafka_assignor with the same strategy?)"
            )
        number = int(PlanGeneration.decode(user_data).generation)
        cls.owned = remembered_assignment(
            cls.owned,
            cls.generation,
            (
                (str(partition.topic), int(partition.partition))
                for partition in assignment.partitions()
            ),
            number,
            assignor=cls.name,
            number_name="plan",
            shared="one assignor class is shared by two consumers (give each AIOKafkaConsumer "
            "its own aiokafka_assignor(...))",
        )
        cls.generation = number


def assignor_class(
    strategy: Strategy, name: str, weights: WeightsHook | None = None
) -> type[StrategyAssignor]:
    """A new StrategyAssignor class for one consumer, with its own state."""
    namespace = {
        "name": name,
        "strategy": strategy,
        "weights": None if weights is None else staticmethod(weights),
        "owned": None,
        "generation": NO_GENERATION,
        "__module__": __name__,
        "__doc__": f"aiokafka assignor {name!r}: strategy {strategy.name!r} ({strategy.origin}).",
    }
    return cast(type[StrategyAssignor], type("StrategyAssignor", (StrategyAssignor,), namespace))
