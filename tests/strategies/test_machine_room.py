"""machine_room: RocketMQ's AllocateMachineRoomNearby around an inner strategy and
AllocateMessageQueueByMachineRoom, with RocketMQ's own tests transcribed
(`AllocateMachineRoomNearByTest` test1-test3, `AllocateMessageQueueByMachineRoomTest`)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rebalancing.strategies import STRATEGIES, averagely, lag_greedy, sticky
from rebalancing.strategies.machine_room import ByMachineRoom, Nearby

nearby = Nearby(averagely.assign)


def rocketmq_group(
    queue_rooms: int, consumer_rooms: int, queue_size: int, consumer_size: int
) -> tuple[list[Any], list[str], dict[str, str], dict[Any, list[str]]]:
    """RocketMQ's prepareMQ / prepareConsumer: rooms IDC1..IDCn, queues
    (topic_test, IDCi-brokerName, k), consumers IDCi-CID-k; a room is the id's prefix."""
    queues = [
        ("topic_test", f"IDC{room}-brokerName", number)
        for room in range(1, queue_rooms + 1)
        for number in range(queue_size)
    ]
    consumers = [
        f"IDC{room}-CID-{number}"
        for room in range(1, consumer_rooms + 1)
        for number in range(consumer_size)
    ]
    consumer_zones = {consumer: consumer.split("-")[0] for consumer in consumers}
    queue_zones = {queue: [queue[1].split("-")[0]] for queue in queues}
    return queues, consumers, consumer_zones, queue_zones


@pytest.mark.parametrize(
    ("queue_rooms", "consumer_rooms", "queue_size", "consumer_size"),
    [
        *[(5, 5, 20, size) for size in (10, 20, 30, 0)],  # test1: as many rooms on each side
        *[(5, 6, 10, size) for size in (10, 5, 20, 0)],  # test2: a room with consumers only
        *[(5, 3, 10, size) for size in (10, 5, 20, 0)],  # test3: rooms without consumers
    ],
)
def test_rocketmq_nearby_reads_each_room_with_consumers_in_that_room_and_shares_the_others(
    queue_rooms: int, consumer_rooms: int, queue_size: int, consumer_size: int
) -> None:
    queues, consumers, consumer_zones, queue_zones = rocketmq_group(
        queue_rooms, consumer_rooms, queue_size, consumer_size
    )
    plan = nearby(queues, consumers, consumer_zones=consumer_zones, queue_zones=queue_zones)
    handed_out = sorted(queue for owned in plan.values() for queue in owned)
    assert handed_out == (sorted(queues) if consumers else [])
    rooms_with_consumers = set(consumer_zones.values())
    for consumer, owned in plan.items():
        for queue in owned:
            if queue_zones[queue][0] in rooms_with_consumers:
                assert queue_zones[queue][0] == consumer_zones[consumer]


def test_nearby_plans_each_room_with_the_inner_strategy_and_shares_rooms_without_consumers() -> (
    None
):
    queues = ["a1", "a2", "a3", "b1", "b2", "c1", "c2", "c3"]
    queue_zones = {queue: [queue[0]] for queue in queues}
    consumer_zones = {"x": "a", "y": "a", "z": "b"}
    plan = nearby(queues, ["x", "y", "z"], consumer_zones=consumer_zones, queue_zones=queue_zones)
    # room a: averagely over x, y; room b: z; room c has no consumer: averagely over all three
    assert plan == {"x": ["a1", "a2", "c1"], "y": ["a3", "c2"], "z": ["b1", "b2", "c3"]}


def test_a_consumer_without_a_zone_takes_only_queues_nobody_is_near() -> None:
    queue_zones = {"a1": ["a"], "a2": ["a"], "free": []}
    plan = nearby(
        ["a1", "a2", "free"], ["x", "w"], consumer_zones={"x": "a"}, queue_zones=queue_zones
    )
    assert plan == {"w": ["free"], "x": ["a1", "a2"]}


def test_nearby_passes_previous_and_weights_to_its_inner_strategy() -> None:
    sticky_nearby = Nearby(sticky.assign)
    queues = ["a1", "a2", "a3", "a4"]
    zones = {"a1": ["a"], "a2": ["a"], "a3": ["a"], "a4": ["a"]}
    previous = {"y": ["a1", "a2"], "x": ["a3", "a4"]}
    plan = sticky_nearby(
        queues, ["x", "y"], previous, consumer_zones={"x": "a", "y": "a"}, queue_zones=zones
    )
    assert plan == {"x": ["a3", "a4"], "y": ["a1", "a2"]}
    weights = {"a1": 10, "a2": 1, "a3": 1, "a4": 1}
    lag_nearby = STRATEGIES["machine_room_nearby_lag"]
    assert lag_nearby(
        queues, ["x", "y"], consumer_zones={"x": "a", "y": "a"}, queue_zones=zones, weights=weights
    ) == lag_greedy.assign(queues, ["x", "y"], weights=weights)


def test_rocketmq_by_machine_room_deals_the_configured_room_s_queues_over_all_consumers() -> None:
    """AllocateMessageQueueByMachineRoomTest: 10 queues, 0-4 on room1@broker-a, 5-9 on
    room2@broker-b, consumers CID_PREFIX0 and 1 configured for room1: 0, 1, 4 and 2, 3. Here
    room2's queues, which RocketMQ leaves to other groups, are dealt after."""
    queues = [("topic", "room1@broker-a" if n < 5 else "room2@broker-b", n) for n in range(10)]
    queue_zones = {queue: [queue[1].split("@")[0]] for queue in queues}
    consumers = ["CID_PREFIX0", "CID_PREFIX1"]
    plan = ByMachineRoom(rooms={"room1"})(queues, consumers, queue_zones=queue_zones)
    room1 = {consumer: [q[2] for q in owned if q[2] < 5] for consumer, owned in plan.items()}
    assert room1 == {"CID_PREFIX0": [0, 1, 4], "CID_PREFIX1": [2, 3]}
    assert plan["CID_PREFIX0"] == [queues[n] for n in (0, 1, 4, 5, 6, 9)]
    assert plan["CID_PREFIX1"] == [queues[n] for n in (2, 3, 7, 8)]


def test_by_machine_room_reads_by_default_the_rooms_where_the_group_has_consumers() -> None:
    queues = ["a1", "b1", "a2", "b2", "a3"]
    queue_zones = {queue: [queue[0]] for queue in queues}
    plan = STRATEGIES["by_machine_room"](
        queues, ["x", "y"], consumer_zones={"x": "b", "y": "b"}, queue_zones=queue_zones
    )
    # b1, b2 one each; then a1, a2, a3: blocks of one, and the remainder a3 to the first
    assert plan == {"x": ["a1", "a3", "b1"], "y": ["a2", "b2"]}


def test_by_machine_room_refuses_a_single_room_given_as_a_string() -> None:
    with pytest.raises(TypeError, match="rooms must be a collection"):
        ByMachineRoom(rooms="room1")  # type: ignore[arg-type]


def test_a_queue_near_several_rooms_goes_to_the_least_loaded_so_rooms_do_not_stack() -> None:
    # planned per set of rooms, a1 got all three (each set's plan gave its first consumer one)
    zones = {"a1": "a", "a2": "a", "b1": "b", "c1": "c"}
    replicas = {"q0": ["a"], "q1": ["a", "b"], "q2": ["a", "c"]}
    facts = {"consumer_zones": zones, "queue_zones": replicas}
    expected = {"a1": ["q0"], "a2": [], "b1": ["q1"], "c1": ["q2"]}
    assert nearby(list(replicas), list(zones), **facts) == expected
    weights = dict.fromkeys(replicas, 1.0)
    nearby_lag = STRATEGIES["machine_room_nearby_lag"]
    assert nearby_lag(list(replicas), list(zones), None, **facts, weights=weights) == expected


@settings(max_examples=200, deadline=None)
@given(
    consumers_per_room=st.lists(st.integers(1, 4), min_size=3, max_size=3),
    replica_rooms=st.lists(
        st.lists(st.sampled_from("abc"), min_size=1, max_size=2, unique=True), max_size=40
    ),
)
def test_every_room_is_balanced_when_no_queue_is_near_every_room(
    consumers_per_room: list[int], replica_rooms: list[list[str]]
) -> None:
    zones = {
        f"{room}{number}": room
        for room, count in zip("abc", consumers_per_room, strict=True)
        for number in range(count)
    }
    replicas = dict(enumerate(replica_rooms))
    plan = nearby(list(replicas), list(zones), consumer_zones=zones, queue_zones=replicas)
    for room in "abc":
        counts = [len(owned) for consumer, owned in plan.items() if zones[consumer] == room]
        assert max(counts) - min(counts) <= 1, (room, plan)
    assert all(zones[consumer] in replicas[queue] for consumer in plan for queue in plan[consumer])
