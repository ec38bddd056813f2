"""The entry points (rebalancing.adapters.kafka): the README's lines plug into a real
KafkaConsumer and AIOKafkaConsumer; a strategy name that does not resolve and a member whose
metadata cannot be read are errors that name the culprit; the clients are imported only when an
assignor is made; kafka-python's own ConsumerCoordinator drives the cooperative variant."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import Any

import pytest
from kafka import KafkaConsumer
from kafka.coordinator.assignors.abstract import AbstractPartitionAssignor, RebalanceProtocol
from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData
from kafka.protocol.consumer.group import JoinGroupResponse
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

from rebalancing.adapters.kafka import aiokafka_assignor, kafka_python_assignor
from rebalancing.strategies import STRATEGIES
from tests.adapters.test_kafka_python import Cluster


def kafka_consumer(assignor: Any) -> KafkaConsumer:
    """The README's line, with a broker address nobody listens on: KafkaConsumer connects
    only when polled, and api_version spares it the version probe."""
    return KafkaConsumer(
        "orders",
        group_id="workers",
        bootstrap_servers="127.0.0.1:1",
        api_version=(2, 5),
        partition_assignment_strategy=[assignor],
    )


@pytest.mark.parametrize(
    ("cooperative", "protocol"),
    [(False, RebalanceProtocol.EAGER), (True, RebalanceProtocol.COOPERATIVE)],
)
def test_the_readme_lines_plug_the_assignor_into_a_kafka_consumer(
    cooperative: bool, protocol: RebalanceProtocol
) -> None:
    assignor = kafka_python_assignor("sticky", cooperative=cooperative)
    assert isinstance(assignor, AbstractPartitionAssignor)
    consumer = kafka_consumer(assignor)
    try:
        coordinator = consumer._coordinator
        assert coordinator._assignors == {assignor.name: assignor}
        assert coordinator._rebalance_protocol == protocol
        [(name, metadata)] = coordinator.group_protocols()
        assert name == assignor.name
        assert ConsumerProtocolSubscription.decode(metadata.encode()).topics == ["orders"]
    finally:
        consumer.close()


def test_the_readme_lines_plug_the_assignor_into_an_aiokafka_consumer() -> None:
    from aiokafka import AIOKafkaConsumer

    async def made() -> tuple[Any, ...]:
        consumer = AIOKafkaConsumer(
            "orders",
            group_id="workers",
            bootstrap_servers="127.0.0.1:1",
            partition_assignment_strategy=(aiokafka_assignor("sticky"),),
        )
        try:
            return tuple(consumer._partition_assignment_strategy)
        finally:
            await consumer.stop()

    [assignor] = asyncio.run(made())
    assert assignor.name == "rebalancing-sticky"
    assert assignor.metadata({"orders"}).subscription == ["orders"]


def test_the_protocol_name_says_the_strategy_and_can_be_chosen() -> None:
    assert kafka_python_assignor("sticky").name == "rebalancing-sticky"
    assert kafka_python_assignor("sticky", cooperative=True).name == (
        "rebalancing-cooperative-sticky"
    )
    assert kafka_python_assignor("round_robin", name="ours").name == "ours"
    assert aiokafka_assignor("averagely", name="ours").name == "ours"
    assert kafka_python_assignor(STRATEGIES["averagely"]).name == "rebalancing-averagely"


def test_cooperative_sticky_by_name_is_the_cooperative_sticky_assignor() -> None:
    """The strategy named after Kafka's CooperativeStickyAssignor gives kafka-python's
    COOPERATIVE protocol, under the very protocol name of ("sticky", cooperative=True), so a
    group whose members spell it either way has one protocol in common."""
    spelled_as_kafka = kafka_python_assignor("cooperative_sticky")
    spelled_as_a_flag = kafka_python_assignor("sticky", cooperative=True)
    registered = kafka_python_assignor(STRATEGIES["cooperative_sticky"])
    for assignor in (spelled_as_kafka, spelled_as_a_flag, registered):
        assert assignor.supported_protocols() == [RebalanceProtocol.COOPERATIVE]
        assert assignor.name == "rebalancing-cooperative-sticky"
    assert kafka_python_assignor("cooperative_sticky", cooperative=True).name == (
        "rebalancing-cooperative-sticky"
    )


def test_cooperative_sticky_asked_for_eagerly_is_refused_with_the_call_to_make() -> None:
    with pytest.raises(ValueError, match=r"use kafka_python_assignor\('sticky'\)"):
        kafka_python_assignor("cooperative_sticky", cooperative=False)


def test_cooperative_sticky_for_aiokafka_which_rebalances_eagerly_only_is_refused() -> None:
    with pytest.raises(ValueError, match=r"aiokafka_assignor\('sticky'\)"):
        aiokafka_assignor("cooperative_sticky")
    with pytest.raises(ValueError, match="eagerly only"):
        aiokafka_assignor(STRATEGIES["cooperative_sticky"])


def test_a_strategy_of_your_own_is_named_module_colon_function() -> None:
    assignor = kafka_python_assignor("rebalancing.strategies.round_robin:assign")
    assert assignor.name == "rebalancing-rebalancing.strategies.round_robin:assign"
    members = [
        JoinGroupResponse.JoinGroupResponseMember(
            member_id=member_id,
            group_instance_id=None,
            metadata=ConsumerProtocolSubscription(0, ["orders"], b""),
        )
        for member_id in ("a", "b")
    ]
    answer = assignor.assign(Cluster({"orders": 3}), members)
    assert {m: [p.partition for p in a.partitions()] for m, a in answer.items()} == {
        "a": [0, 2],
        "b": [1],
    }


@pytest.mark.parametrize("factory", [kafka_python_assignor, aiokafka_assignor])
@pytest.mark.parametrize(
    ("strategy", "message"),
    [
        ("stikcy", "unknown strategy 'stikcy': not a registered name"),
        ("no_such_module:assign", "could not import module 'no_such_module'"),
        ("rebalancing.strategies.sticky:nothing", "has no function 'nothing'"),
    ],
)
def test_a_strategy_that_does_not_resolve_is_named(
    factory: Any, strategy: str, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        factory(strategy)


def test_a_strategy_must_be_a_name_or_a_strategy() -> None:
    with pytest.raises(TypeError, match="strategy must be a name or a Strategy, not int"):
        kafka_python_assignor(3)  # type: ignore[arg-type]


def join_member(member_id: str, metadata: Any) -> Any:
    return JoinGroupResponse.JoinGroupResponseMember(
        member_id=member_id, group_instance_id=None, metadata=metadata
    )


GOOD = ConsumerProtocolSubscription(0, ["orders"], b"")
USER_DATA = StickyAssignorUserData(previous_assignment=[("orders", [0])], generation=1).encode(
    version=1, header=False
)


@pytest.mark.parametrize(
    ("metadata", "error", "message"),
    [
        (
            ConsumerProtocolSubscription(0, ["orders"], b"\x00\x00\x00\x07garbage"),
            ValueError,
            "member 'b': its subscription user data is not StickyAssignorUserData v1",
        ),
        (
            ConsumerProtocolSubscription(0, ["orders"], USER_DATA + b"\x00\x00"),
            ValueError,
            "member 'b': its subscription user data has 2 bytes after",
        ),
        (
            # kafka-python 3.0's own sticky assignor puts a version header in front
            ConsumerProtocolSubscription(
                0, ["orders"], StickyAssignorUserData([("orders", [0])], 1).encode()
            ),
            ValueError,
            "member 'b'",
        ),
        (b"\x00", ValueError, "member 'b': its metadata is not a ConsumerProtocolSubscription"),
        ({"topics": ["orders"]}, TypeError, "member 'b': metadata is dict"),
    ],
)
def test_a_member_whose_metadata_cannot_be_read_is_named(
    metadata: Any, error: type[Exception], message: str
) -> None:
    members = [join_member("a", GOOD), join_member("b", metadata)]
    with pytest.raises(error, match=message):
        kafka_python_assignor("sticky").assign(Cluster({"orders": 2}), members)


def test_metadata_still_in_bytes_is_decoded() -> None:
    members = [join_member("a", GOOD.encode()), join_member("b", GOOD)]
    answer = kafka_python_assignor("sticky").assign(Cluster({"orders": 2}), members)
    assert {m: [p.partition for p in a.partitions()] for m, a in answer.items()} == {
        "a": [0],
        "b": [1],
    }


def test_the_library_and_the_adapter_entry_points_import_no_kafka_client() -> None:
    program = (
        "import json, sys; import rebalancing, rebalancing.strategies, rebalancing.adapters, "
        "rebalancing.adapters.kafka, rebalancing.adapters.kafka_plan; "
        "print(json.dumps(sorted(sys.modules)))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True
    )
    loaded = json.loads(completed.stdout)
    assert [name for name in loaded if name.split(".")[0] in ("kafka", "aiokafka")] == []


# --- through kafka-python's own ConsumerCoordinator ---------------------------------------


def coordinator_rebalance(
    consumers: dict[str, KafkaConsumer], generation: int, member_ids: list[str]
) -> dict[str, list[int]]:
    """One rebalance through the consumers' own coordinators (kafka-python 3.0's internals,
    pinned by pyproject to < 3.1): each member's `group_protocols()` as its JoinGroup, the
    first member's `_perform_assignment` as the leader, every member's
    `_on_join_complete_async` with its assignment. What each member then consumes."""
    joined = []
    for member_id in member_ids:
        [(name, metadata)] = consumers[member_id]._coordinator.group_protocols()
        joined.append(join_member(member_id, metadata.encode()))
    leader = consumers[member_ids[0]]._coordinator
    assignments = leader._perform_assignment(member_ids[0], name, joined)
    held = {}
    for member_id in member_ids:
        coordinator = consumers[member_id]._coordinator
        coordinator.rejoin_needed = False
        encoded = assignments[member_id].encode()
        asyncio.run(coordinator._on_join_complete_async(generation, member_id, name, encoded))
        held[member_id] = sorted(p.partition for p in consumers[member_id].assignment())
    return held


def consumers_on_four_partitions(assignors: dict[str, Any]) -> dict[str, KafkaConsumer]:
    """A KafkaConsumer per member, as the README makes them, its cluster's partitions set by
    hand: "orders" has four."""
    consumers = {member_id: kafka_consumer(assignor) for member_id, assignor in assignors.items()}
    for consumer in consumers.values():
        consumer._coordinator._cluster._partitions["orders"] = dict.fromkeys(range(4))
    return consumers


def test_kafka_pythons_coordinator_runs_the_cooperative_variant_in_two_rounds() -> None:
    """Two KafkaConsumers driven through their coordinators' own leader and member steps.
    "a" owns the four partitions; "b" joins: round 1 gives "b" nothing and "a" revokes two
    and asks to rejoin; round 2 gives "b" the two."""
    consumers = consumers_on_four_partitions(
        {member_id: kafka_python_assignor("sticky", cooperative=True) for member_id in "ab"}
    )
    try:
        assert coordinator_rebalance(consumers, 1, ["a"]) == {"a": [0, 1, 2, 3]}
        assert coordinator_rebalance(consumers, 2, ["a", "b"]) == {"a": [0, 1], "b": []}
        assert consumers["a"]._coordinator.rejoin_needed
        assert not consumers["b"]._coordinator.rejoin_needed
        assert coordinator_rebalance(consumers, 3, ["a", "b"]) == {"a": [0, 1], "b": [2, 3]}
        assert not consumers["a"]._coordinator.rejoin_needed
    finally:
        for consumer in consumers.values():
            consumer.close()


def test_one_assignor_shared_by_two_kafka_consumers_is_refused_when_the_second_is_assigned() -> (
    None
):
    """Shared, the one instance would remember only the last member's partitions, and both
    members would claim them at the next rebalance (so the claims cancel out). The second
    member to take its assignment fails with the reason, and the first keeps its own."""
    shared = kafka_python_assignor("sticky")
    consumers = consumers_on_four_partitions({"a": shared, "b": shared})
    try:
        with pytest.raises(ValueError, match="shared by two consumers"):
            coordinator_rebalance(consumers, 1, ["a", "b"])
        assert shared.owned == (("orders", 0), ("orders", 2))  # "a"'s, not "b"'s
    finally:
        for consumer in consumers.values():
            consumer.close()
