"""Zones and weights through the Kafka assignors, with kafka-python's own protocol objects: a
member's client_rack travels in its ConsumerProtocolSubscription (version 3, rack_id) through
encode and decode, the partitions' replica racks come from a ClusterMetadata that kafka-python
builds from a MetadataResponse, and the leader gives a strategy that reads them exactly the
zones and weights a direct call would get. aiokafka, which carries no rack, says so."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

import pytest
from kafka.cluster import ClusterMetadata
from kafka.protocol.consumer.group import JoinGroupResponse
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)
from kafka.protocol.metadata import MetadataResponse

from rebalancing.adapters.kafka import aiokafka_assignor, kafka_python_assignor
from rebalancing.adapters.kafka_plan import Partition, Subscription, plan_group
from rebalancing.adapters.kafka_python import replica_racks, subscription_of
from rebalancing.placement import PlacementMismatchWarning
from rebalancing.strategies import STRATEGIES
from tests.adapters.test_kafka_python import Cluster

Broker = MetadataResponse.MetadataResponseBroker
Topic = MetadataResponse.MetadataResponseTopic
PartitionData = Topic.MetadataResponsePartition

BROKER_RACKS = {1: "zone-a", 2: "zone-b", 3: "zone-c", 4: None}


def cluster_metadata(replicas: Mapping[str, list[list[int]]]) -> Any:
    """kafka-python's ClusterMetadata as a consumer holds it after a Metadata request: the
    response (v9) encoded to bytes, decoded and applied, with BROKER_RACKS for brokers and
    `replicas` (topic -> each partition's replica broker ids) for topics."""
    response = MetadataResponse(
        version=9,
        throttle_time_ms=0,
        brokers=[
            Broker(node_id=node, host=f"broker-{node}", port=9092, rack=rack)
            for node, rack in BROKER_RACKS.items()
        ],
        cluster_id="test",
        controller_id=1,
        topics=[
            Topic(
                error_code=0,
                name=topic,
                is_internal=False,
                partitions=[
                    PartitionData(
                        error_code=0,
                        partition_index=number,
                        leader_id=nodes[0],
                        leader_epoch=0,
                        replica_nodes=nodes,
                        isr_nodes=nodes,
                        offline_replicas=[],
                    )
                    for number, nodes in enumerate(partitions)
                ],
            )
            for topic, partitions in replicas.items()
        ],
    )
    cluster = ClusterMetadata()
    cluster.update_metadata(MetadataResponse.decode(response.encode(version=9), version=9))
    return cluster


def joined(members: Mapping[str, Any], topics: Iterable[str]) -> list[Any]:
    """The JoinGroup response's members as the leader's assign gets them: each assignor's
    subscription encoded to bytes and decoded by kafka-python, as its coordinator does."""
    return [
        JoinGroupResponse.JoinGroupResponseMember(
            member_id=member_id,
            group_instance_id=None,
            metadata=ConsumerProtocolSubscription.decode(assignor.metadata(set(topics)).encode()),
        )
        for member_id, assignor in members.items()
    ]


def decoded_plan(assignments: Mapping[str, Any]) -> dict[str, list[Partition]]:
    plan = {}
    for member_id, assignment in assignments.items():
        decoded = ConsumerProtocolAssignment.decode(assignment.encode())
        plan[member_id] = sorted((p.topic, p.partition) for p in decoded.partitions())
    return plan


# Partitions alternate between zone-a and zone-b replicas; the members sit the other way round
# from what id order would give, so a plan that ignores zones reads every partition elsewhere.
ALTERNATING = {"orders": [[1], [2], [1], [2], [1], [2]]}
RACKS = {"m-1": "zone-b", "m-2": "zone-a"}
ALTERNATING_ZONES = {
    ("orders", number): [BROKER_RACKS[nodes[0]]]
    for number, nodes in enumerate(ALTERNATING["orders"])
}


def test_a_members_rack_travels_in_its_subscription_version_3() -> None:
    assignor = kafka_python_assignor("rack_aware_sticky", client_rack="zone-a")
    sent = ConsumerProtocolSubscription.decode(assignor.metadata({"orders"}).encode())
    assert (sent.version, sent.rack_id, sent.topics) == (3, "zone-a", ["orders"])
    member = JoinGroupResponse.JoinGroupResponseMember(
        member_id="m-1", group_instance_id=None, metadata=sent
    )
    assert subscription_of(member).rack == "zone-a"


@pytest.mark.parametrize("cooperative", [False, True])
def test_a_member_with_a_rack_still_claims_what_it_owns(cooperative: bool) -> None:
    assignor = kafka_python_assignor("sticky", client_rack="zone-a", cooperative=cooperative)
    assignor.on_assignment(ConsumerProtocolAssignment(0, [("orders", [0, 2])], b""), 4)
    sent = ConsumerProtocolSubscription.decode(assignor.metadata({"orders"}).encode())
    member = JoinGroupResponse.JoinGroupResponseMember(
        member_id="m-1", group_instance_id=None, metadata=sent
    )
    read = subscription_of(member)
    assert (read.owned, read.generation, read.rack) == ((("orders", 0), ("orders", 2)), 4, "zone-a")
    owned_fields = [(entry.topic, list(entry.partitions)) for entry in sent.owned_partitions]
    assert owned_fields == ([("orders", [0, 2])] if cooperative else [])


@pytest.mark.parametrize("client_rack", [None, ""])
def test_a_member_without_a_rack_sends_the_subscription_it_sent_before(
    client_rack: str | None,
) -> None:
    with_rack = kafka_python_assignor("sticky", client_rack=client_rack)
    without = kafka_python_assignor("sticky")
    assert with_rack.metadata({"orders"}).encode() == without.metadata({"orders"}).encode()
    assert ConsumerProtocolSubscription.decode(with_rack.metadata({"orders"}).encode()).version == 0


def test_a_rack_that_is_not_a_str_is_refused_naming_the_assignor() -> None:
    with pytest.raises(TypeError, match=r"assignor 'rebalancing-sticky': rack 7 is int"):
        kafka_python_assignor("sticky", client_rack=7)  # type: ignore[arg-type]


def test_replica_racks_are_read_from_cluster_metadata_brokers_without_a_rack_add_none() -> None:
    cluster = cluster_metadata({"orders": [[1, 2], [3], [4], [4, 1]]})
    partitions = [("orders", number) for number in range(4)]
    assert replica_racks(cluster, partitions) == {
        ("orders", 0): frozenset({"zone-a", "zone-b"}),
        ("orders", 1): frozenset({"zone-c"}),
        ("orders", 3): frozenset({"zone-a"}),
    }


@pytest.mark.parametrize("strategy", ["rack_aware_sticky", "rack_aware_range"])
def test_the_leader_gives_a_rack_aware_strategy_the_members_and_replicas_racks(
    strategy: str,
) -> None:
    cluster = cluster_metadata(ALTERNATING)
    members = {m: kafka_python_assignor(strategy, client_rack=RACKS[m]) for m in RACKS}
    plan = decoded_plan(members["m-1"].assign(cluster, joined(members, {"orders"})))
    partitions, zones = sorted(ALTERNATING_ZONES), ALTERNATING_ZONES
    assert plan == STRATEGIES[strategy](
        partitions, sorted(RACKS), None, consumer_zones=RACKS, queue_zones=zones
    )
    for member_id, owned in plan.items():  # every partition is read in its own zone
        assert all(RACKS[member_id] in zones[partition] for partition in owned), plan
    assert plan != STRATEGIES[strategy](partitions, sorted(RACKS))  # the zones decided it


def test_a_member_without_a_rack_has_no_zone() -> None:
    cluster = cluster_metadata(ALTERNATING)
    members = {
        "m-1": kafka_python_assignor("rack_aware_sticky", client_rack="zone-b"),
        "m-2": kafka_python_assignor("rack_aware_sticky", client_rack=""),
    }
    plan = decoded_plan(members["m-1"].assign(cluster, joined(members, {"orders"})))
    partitions, zones = sorted(ALTERNATING_ZONES), ALTERNATING_ZONES
    assert plan == STRATEGIES["rack_aware_sticky"](
        partitions, ["m-1", "m-2"], None, consumer_zones={"m-1": "zone-b"}, queue_zones=zones
    )
    assert plan["m-1"] == [("orders", 1), ("orders", 3), ("orders", 5)]


def test_racks_are_cut_to_each_topic_when_subscriptions_differ() -> None:
    """Per-topic calls get the racks of that topic's partitions and subscribers only, so a topic
    whose replicas have no rack is planned without zones and warns of nothing."""
    members = [
        Subscription("m-1", {"orders", "audit"}, rack="zone-a"),
        Subscription("m-2", {"orders"}, rack="zone-b"),
        Subscription("m-3", {"audit"}, rack="zone-a"),
    ]
    zones = {("orders", 0): ["zone-b"], ("orders", 1): ["zone-a"]}
    with warnings.catch_warnings():
        warnings.simplefilter("error", PlacementMismatchWarning)
        plan = plan_group(
            "rack_aware_sticky", {"orders": range(2), "audit": range(2)}, members, queue_zones=zones
        )
    assert plan == {
        "m-1": [("audit", 0), ("orders", 1)],
        "m-2": [("orders", 0)],
        "m-3": [("audit", 1)],
    }


LAGS = {("orders", 0): 900, ("orders", 1): 10, ("orders", 2): 500, ("orders", 3): 450}


def test_weights_are_cut_to_each_topic_when_subscriptions_differ() -> None:
    members = [
        Subscription("m-1", {"orders", "audit"}),
        Subscription("m-2", {"orders"}),
        Subscription("m-3", {"audit"}),
    ]
    weights = {**LAGS, ("audit", 0): 5, ("audit", 1): 50, ("audit", 2): 6}
    with warnings.catch_warnings():
        warnings.simplefilter("error", PlacementMismatchWarning)
        plan = plan_group(
            "lag_greedy", {"orders": range(4), "audit": range(3)}, members, weights=weights
        )
    audit = [("audit", number) for number in range(3)]
    by_topic = [
        STRATEGIES["lag_greedy"](sorted(LAGS), ["m-1", "m-2"], weights=weights),
        STRATEGIES["lag_greedy"](audit, ["m-1", "m-3"], weights=weights),
    ]
    assert plan == {
        member: sorted(p for part in by_topic for p in part.get(member, []))
        for member in ("m-1", "m-2", "m-3")
    }


def test_the_leader_calls_the_weights_hook_with_the_partitions_it_assigns() -> None:
    calls: list[list[Partition]] = []

    def lag(partitions: list[Partition]) -> dict[Partition, float]:
        calls.append(partitions)
        return {partition: LAGS[partition] for partition in partitions}

    members = {m: kafka_python_assignor("lag_greedy", weights=lag) for m in ("m-1", "m-2")}
    plan = decoded_plan(members["m-1"].assign(Cluster({"orders": 4}), joined(members, {"orders"})))
    assert calls == [sorted(LAGS)]
    assert plan == {"m-1": [("orders", 0), ("orders", 1)], "m-2": [("orders", 2), ("orders", 3)]}
    assert plan == STRATEGIES["lag_greedy"](sorted(LAGS), ["m-1", "m-2"], weights=LAGS)


@pytest.mark.parametrize(
    ("weights", "error", "message"),
    [
        (
            {("orders", 0): 1, ("orders", 1): 1, ("orders", 2): 1},
            ValueError,
            r"no weight for queue \('orders', 3\)",
        ),
        ({**LAGS, ("orders", 2): -5}, ValueError, r"weights\[\('orders', 2\)\] is -5"),
        ({**LAGS, ("orders", 1): math.nan}, ValueError, r"weights\[\('orders', 1\)\] is nan"),
        ({**LAGS, ("orders", 3): "450"}, TypeError, r"weights\[\('orders', 3\)\] is '450'"),
        (None, TypeError, "returned None"),
    ],
)
def test_weights_the_hook_gets_wrong_are_refused_naming_the_assignor_and_the_partition(
    weights: Any, error: type[Exception], message: str
) -> None:
    members = {"m-1": kafka_python_assignor("weighted_sticky", weights=lambda _: weights)}
    with pytest.raises(error, match=r"assignor 'rebalancing-weighted_sticky': the weights hook"):
        members["m-1"].assign(Cluster({"orders": 4}), joined(members, {"orders"}))
    with pytest.raises(error, match=message):
        members["m-1"].assign(Cluster({"orders": 4}), joined(members, {"orders"}))


@pytest.mark.parametrize("make", [kafka_python_assignor, aiokafka_assignor])
def test_a_weights_hook_for_a_strategy_that_reads_no_weights_is_refused(make: Any) -> None:
    with pytest.raises(ValueError, match=r"strategy 'sticky' reads no weights.*lag_greedy"):
        make("sticky", weights=lambda partitions: {})
    with pytest.raises(TypeError, match=r"weights must be a callable"):
        make("lag_greedy", weights={("orders", 0): 1})


def test_aiokafka_warns_that_a_zone_strategy_plans_without_zones_and_takes_weights() -> None:
    from aiokafka.coordinator.protocol import ConsumerProtocol  # type: ignore[import-untyped]

    with pytest.warns(UserWarning, match=r"'rack_aware_sticky' reads zones, which aiokafka"):
        aiokafka_assignor("rack_aware_sticky")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assignor = aiokafka_assignor(
            "lag_greedy", weights=lambda partitions: {p: LAGS[p] for p in partitions}
        )
    members = {
        member_id: ConsumerProtocol.METADATA.decode(assignor.metadata({"orders"}).encode())
        for member_id in ("m-1", "m-2")
    }
    answer = assignor.assign(Cluster({"orders": 4}), members)
    plan = {m: sorted((p.topic, p.partition) for p in a.partitions()) for m, a in answer.items()}
    assert plan == STRATEGIES["lag_greedy"](sorted(LAGS), ["m-1", "m-2"], weights=LAGS)


def test_an_assignor_made_without_the_facts_its_strategy_reads_warns_naming_them() -> None:
    with pytest.warns(UserWarning, match="reads zones, but this assignor was given no client_rack"):
        kafka_python_assignor("rack_aware_sticky")
    with pytest.warns(UserWarning, match="reads weights, but this assignor was given no weights"):
        kafka_python_assignor("weighted_sticky")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kafka_python_assignor("rack_aware_sticky", client_rack="")  # a member with no rack
        kafka_python_assignor("sticky")


def test_an_aiokafka_assignor_made_without_the_weights_its_strategy_reads_warns() -> None:
    with pytest.warns(UserWarning, match="reads weights, but this assignor was given no weights"):
        aiokafka_assignor("weighted_sticky")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        aiokafka_assignor("sticky")
