"""The rack fixtures of Kafka's assignor tests, as the inputs of our strategies.

Transcribed from apache/kafka `AbstractPartitionAssignorTest` (commit 1eb7644349cb, trunk,
October 2024): `racks(n)`, `nullRacks(n)`, and `verifyRackAssignment`'s cluster: broker i sits
on rack brokerRacks[i]; topics are laid out in the order given, the k-th topic's partitions
starting at node index `next` = the partitions of the topics before it; replica j of partition
i is on broker (i + j + next) mod |brokers|. Consumers are "consumer0", "consumer1", ... with
the racks given (None: no rack). Expected assignments are Kafka's "t1-0, t1-3" strings.
"""

from __future__ import annotations

from typing import Any

ALL_RACKS = ["a", "b", "c", "d", "e", "f"]


def racks(count: int) -> list[str | None]:
    return [ALL_RACKS[index % len(ALL_RACKS)] for index in range(count)]


def null_racks(count: int) -> list[str | None]:
    return [None] * count


def cluster(
    partitions_per_topic: dict[str, int], replication: int, broker_racks: list[str | None]
) -> tuple[list[tuple[str, int]], dict[tuple[str, int], list[str | None]]]:
    """The queues `(topic, partition)` and each one's replica zones."""
    queues: list[tuple[str, int]] = []
    zones: dict[tuple[str, int], list[str | None]] = {}
    next_node = 0
    for topic, count in partitions_per_topic.items():
        for partition in range(count):
            brokers = [(partition + j + next_node) % len(broker_racks) for j in range(replication)]
            queues.append((topic, partition))
            zones[(topic, partition)] = [broker_racks[broker] for broker in brokers]
        next_node += count
    return queues, zones


def consumers_with(consumer_racks: list[str | None]) -> dict[str, str | None]:
    return {f"consumer{index}": rack for index, rack in enumerate(consumer_racks)}


def parsed(assignments: list[str]) -> dict[str, list[tuple[str, int]]]:
    """Kafka's expected strings ("t1-0, t1-3") as a plan of consumer0, consumer1, ..."""
    plan: dict[str, list[tuple[str, int]]] = {}
    for index, text in enumerate(assignments):
        owned = []
        for item in filter(None, text.split(", ")):
            topic, _, partition = item.rpartition("-")
            owned.append((topic, int(partition)))
        plan[f"consumer{index}"] = sorted(owned)
    return plan


def mismatches(
    plan: dict[str, list[tuple[str, int]]],
    consumer_zones: dict[str, str | None],
    queue_zones: dict[tuple[str, int], list[str | None]],
) -> int:
    """Kafka's numPartitionsWithRackMismatch: queues of a consumer with a rack that has no
    replica on it."""
    return sum(
        1
        for consumer, owned in plan.items()
        if consumer_zones[consumer] is not None
        for queue in owned
        if consumer_zones[consumer] not in queue_zones[queue]
    )


def kafka_case(
    assign: Any,
    topics: dict[str, int],
    replication: int,
    broker_racks: list[str | None],
    consumer_racks: list[str | None],
    owned: list[str] | None = None,
) -> tuple[dict[str, list[tuple[str, int]]], int]:
    """Our plan for Kafka's verifyRackAssignment inputs, and its rack mismatches."""
    queues, queue_zones = cluster(topics, replication, broker_racks)
    consumer_zones = consumers_with(consumer_racks)
    previous = parsed(owned) if owned is not None else None
    plan = assign(
        queues,
        list(consumer_zones),
        previous,
        consumer_zones=consumer_zones,
        queue_zones=queue_zones,
    )
    return plan, mismatches(plan, consumer_zones, queue_zones)
