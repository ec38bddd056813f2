"""machine_room: RocketMQ's AllocateMachineRoomNearby around an inner strategy and
AllocateMessageQueueByMachineRoom, with RocketMQ's own tests transcribed: apache/rocketmq
`client/src/test/java/org/apache/rocketmq/client/consumer/rebalance/AllocateMachineRoomNearByTest.java`
(test1-test3 exactly, testRun10RandomCase as a property) and
`AllocateMessageQueueByMachineRoomTest.java`, read at commit
8fc57f1468d182eea11c01e089c0250d647dc5f3 (September 2025). RocketMQ's tests check where the
queues go (in their room when it has consumers) and that each is given once; here each plan is
also held to RocketMQ's own, each consumer's share computed as `AllocateMachineRoomNearby.
allocate` computes it (`rocketmq_nearby_plan`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rebalancing.strategies import STRATEGIES, averagely, lag_greedy, sticky
from rebalancing.strategies.machine_room import ByMachineRoom, Nearby

nearby = Nearby(averagely.assign)


def rocketmq_averagely_share(current: Any, queues: list[Any], consumers: list[Any]) -> list[Any]:
    """AllocateMessageQueueAveragely's share of `current`: index i of n takes a block of
    |Q| div n, the first |Q| mod n one more, at least one while queues last."""
    index, count = consumers.index(current), len(consumers)
    remainder = len(queues) % count
    first_ones = remainder > 0 and index < remainder
    size = 1 if len(queues) <= count else len(queues) // count + (1 if first_ones else 0)
    start = index * size if first_ones else index * size + remainder
    return queues[start : start + max(0, min(size, len(queues) - start))]


def rocketmq_nearby_plan(
    queues: list[Any], consumers: list[str], room_of: Callable[[Any], str]
) -> dict[str, list[Any]]:
    """The union of the shares AllocateMachineRoomNearby around averagely gives each consumer:
    mqAll and cidAll sorted (RebalanceImpl sorts both); each consumer takes its share of its
    room's queues among its room's consumers, then, room by room in room order (a TreeMap), its
    share of each consumer-less room's queues among every consumer."""
    queues, consumers = sorted(queues), sorted(consumers)
    queues_in: dict[str, list[Any]] = {}
    for queue in queues:
        queues_in.setdefault(room_of(queue), []).append(queue)
    consumers_in: dict[str, list[str]] = {}
    for consumer in consumers:
        consumers_in.setdefault(room_of(consumer), []).append(consumer)
    plan: dict[str, list[Any]] = {}
    for consumer in consumers:
        room = room_of(consumer)
        share = rocketmq_averagely_share(consumer, queues_in.get(room, []), consumers_in[room])
        for other in sorted(queues_in):
            if other not in consumers_in:
                share += rocketmq_averagely_share(consumer, queues_in[other], consumers)
        plan[consumer] = sorted(share)
    return plan


def rocketmq_room(identifier: Any) -> str:
    """The test's MachineRoomResolver: the room is the prefix of the broker name or client id."""
    name = identifier[1] if isinstance(identifier, tuple) else identifier
    return str(name).split("-")[0]


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
    consumer_zones = {consumer: rocketmq_room(consumer) for consumer in consumers}
    queue_zones = {queue: [rocketmq_room(queue)] for queue in queues}
    return queues, consumers, consumer_zones, queue_zones


def check_against_rocketmq(
    queue_rooms: int, consumer_rooms: int, queue_size: int, consumer_size: int
) -> None:
    """RocketMQ's assertions (every queue given once; a queue of a room with consumers read in
    that room), and the plan RocketMQ's clients compute between them."""
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
    assert plan == rocketmq_nearby_plan(queues, consumers, rocketmq_room)


@pytest.mark.parametrize(
    ("queue_rooms", "consumer_rooms", "queue_size", "consumer_size"),
    [
        # test1, testWhenIDCSizeEquals(5, 20, n): as many rooms on each side
        *[(5, 5, 20, size) for size in (10, 20, 30, 0)],
        # test2, testWhenConsumerIDCIsMore(5, 1, 10, n): a room with consumers only
        *[(5, 6, 10, size) for size in (10, 5, 20, 0)],
        # test3, testWhenConsumerIDCIsLess(5, 2, 10, n): two rooms without consumers
        *[(5, 3, 10, size) for size in (10, 5, 20, 0)],
    ],
)
def test_rocketmq_nearby_test_cases_give_rocketmq_s_plan(
    queue_rooms: int, consumer_rooms: int, queue_size: int, consumer_size: int
) -> None:
    check_against_rocketmq(queue_rooms, consumer_rooms, queue_size, consumer_size)


@settings(max_examples=25, deadline=None)
@given(
    consumer_size=st.integers(1, 200),
    queue_size=st.integers(1, 100),
    broker_rooms=st.integers(1, 10),
    consumer_rooms=st.integers(1, 10),
)
def test_rocketmq_nearby_random_cases_give_rocketmq_s_plan(
    consumer_size: int, queue_size: int, broker_rooms: int, consumer_rooms: int
) -> None:
    """testRun10RandomCase: its ranges; each of its three branches makes the rooms
    IDC1..IDC<broker_rooms> for queues and IDC1..IDC<consumer_rooms> for consumers."""
    check_against_rocketmq(broker_rooms, consumer_rooms, queue_size, consumer_size)


def test_each_room_without_consumers_is_dealt_among_everyone_on_its_own_as_rocketmq_does() -> None:
    # issue 43: rooms A and B of one queue each, no consumer in them; RocketMQ's loop over the
    # consumer-less rooms calls averagely once per room, and each call gives C-x the queue
    zones = {"C-x": "C", "C-y": "C"}
    rooms = {"qa": ["A"], "qb": ["B"]}
    plan = nearby(["qa", "qb"], list(zones), consumer_zones=zones, queue_zones=rooms)
    assert plan == {"C-x": ["qa", "qb"], "C-y": []}
    room_of = {**zones, "qa": "A", "qb": "B"}
    assert plan == rocketmq_nearby_plan(["qa", "qb"], list(zones), room_of.__getitem__)
    # four broker rooms of 7 queues, three consumers in one of them: 3/2/2 of each room
    queues = [(room, number) for room in "ABCD" for number in range(7)]
    three = dict.fromkeys(["c1", "c2", "c3"], "A")
    rooms_of = {queue: [queue[0]] for queue in queues}
    placed = nearby(queues, list(three), consumer_zones=three, queue_zones=rooms_of)
    counts = {consumer: len(owned) for consumer, owned in placed.items()}
    assert counts == {"c1": 12, "c2": 8, "c3": 8}  # pooled, the rooms' 21 queues gave 10/9/9


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


def test_a_room_is_not_balanced_when_its_consumers_also_share_other_rooms_queues() -> None:
    # issue 43: each plan gives its extra queue to the room's first consumer, as RocketMQ's
    # does (a queue of a consumer-less room b stands for the queue near no room)
    zones = {"a1": "a", "a2": "a"}
    for rooms in ({"q1": ["a"]}, {"q1": ["a"], "q2": ["b"]}):
        plan = nearby(["q1", "q2"], list(zones), consumer_zones=zones, queue_zones=rooms)
        assert plan == {"a1": ["q1", "q2"], "a2": []}
    room_of = {**zones, "q1": "a", "q2": "b"}
    assert plan == rocketmq_nearby_plan(["q1", "q2"], list(zones), room_of.__getitem__)


@settings(max_examples=200, deadline=None)
@given(
    consumers_per_room=st.lists(st.integers(0, 3), min_size=3, max_size=3).filter(any),
    replica_rooms=st.lists(
        st.lists(st.sampled_from("abc"), min_size=0, max_size=2, unique=True), max_size=40
    ),
)
def test_two_consumers_of_a_room_differ_by_at_most_one_queue_per_plan_they_take_part_in(
    consumers_per_room: list[int], replica_rooms: list[list[str]]
) -> None:
    """The promise of the page: each plan is balanced (averagely), their sum is not; with every
    queue near a room with consumers and none near all of them, each room is balanced."""
    zones = {
        f"{room}{number}": room
        for room, count in zip("abc", consumers_per_room, strict=True)
        for number in range(count)
    }
    replicas = dict(enumerate(replica_rooms))
    plan = nearby(list(replicas), list(zones), consumer_zones=zones, queue_zones=replicas)
    staffed = set(zones.values())
    near = [set(rooms) & staffed for rooms in replica_rooms]
    shared_plans = len(  # the plans among everyone: each consumer-less room, the zone-less queues
        {
            min(rooms) if rooms else None
            for rooms, of in zip(replica_rooms, near, strict=True)
            if not of
        }
    ) + any(of == staffed and len(of) > 1 for of in near)
    for room in staffed:
        counts = [len(owned) for consumer, owned in plan.items() if zones[consumer] == room]
        assert max(counts) - min(counts) <= 1 + shared_plans, (room, plan)
    for consumer, owned in plan.items():  # a queue near a room with consumers is read in one
        assert all(zones[consumer] in replicas[queue] for queue in owned if near[queue])
