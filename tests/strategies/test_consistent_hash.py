"""consistent_hash: RocketMQ AllocateMessageQueueConsistentHash's ring of virtual nodes.

The oracles here share no code with the module: hashes are computed with hashlib directly (or
written down as literals), and the reference ring is RocketMQ's TreeMap put for put, as a dict.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rebalancing.strategies import consistent_hash
from rebalancing.strategies.consistent_hash import ConsistentHash, md5_hash
from rebalancing.testing import check_strategy
from tests.groups import GroupCase, groups


def rocketmq_md5(key: str) -> int:
    """RocketMQ's MD5Hash written out: digest bytes 0..3, each & 0xFF, shifted in big-endian."""
    digest = hashlib.md5(key.encode("utf-8")).digest()
    return (digest[0] << 24) | (digest[1] << 16) | (digest[2] << 8) | digest[3]


def reference_ring(
    consumers: list[Any], virtual_nodes: int, hash_function: Callable[[str], int] = rocketmq_md5
) -> dict[int, Any]:
    """RocketMQ's TreeMap put for put: cidAll sorted, replicas ascending, a later put replacing
    an earlier one at the same hash."""
    ring: dict[int, Any] = {}
    for consumer in sorted(consumers):
        for replica in range(virtual_nodes):
            ring[hash_function(str(consumer) + "-" + str(replica))] = consumer
    return ring


def reference_plan(
    queues: list[Any],
    consumers: list[Any],
    virtual_nodes: int = 10,
    hash_function: Callable[[str], int] = rocketmq_md5,
) -> dict[Any, list[Any]]:
    """Each queue to the first point at or after its hash (tailMap), else the lowest point."""
    ring = reference_ring(consumers, virtual_nodes, hash_function)
    plan: dict[Any, list[Any]] = {consumer: [] for consumer in consumers}
    for queue in sorted(queues):
        position = hash_function(str(queue))
        at_or_after = [point for point in ring if point >= position]
        plan[ring[min(at_or_after) if at_or_after else min(ring)]].append(queue)
    return plan


def owners(plan: dict[Any, list[Any]]) -> dict[Any, Any]:
    return {queue: consumer for consumer, owned in plan.items() for queue in owned}


def test_consistent_hash_keeps_the_contract() -> None:
    check_strategy(consistent_hash.assign)


# --- RocketMQ's plan on an example worked by hand -------------------------------------------------

CLIENT_IDS = ["10.0.0.2@1002", "10.0.0.1@1001"]  # RebalanceImpl sorts cidAll before allocate
VIRTUAL_NODE_HASHES = {  # first 4 bytes of MD5(key), big-endian (hex digest prefix in comments)
    "10.0.0.1@1001-0": 1664424904,  # 63351bc8
    "10.0.0.1@1001-1": 1995473245,  # 76f0815d
    "10.0.0.1@1001-2": 1852266156,  # 6e6756ac
    "10.0.0.1@1001-3": 158038866,  # 096b7b52  the lowest point of the ring
    "10.0.0.1@1001-4": 4119415163,  # f589497b  the highest point (above 2**31: unsigned)
    "10.0.0.1@1001-5": 2219672338,  # 844d8312
    "10.0.0.1@1001-6": 2842655145,  # a96f79a9
    "10.0.0.1@1001-7": 390553594,  # 17475ffa
    "10.0.0.1@1001-8": 2741933939,  # a36e9773
    "10.0.0.1@1001-9": 3622072905,  # d7e47249
    "10.0.0.2@1002-0": 3373906669,  # c919baed
    "10.0.0.2@1002-1": 1089019578,  # 40e91eba
    "10.0.0.2@1002-2": 1375579841,  # 51fdaec1
    "10.0.0.2@1002-3": 2066753455,  # 7b3027af
    "10.0.0.2@1002-4": 2184926170,  # 823b53da
    "10.0.0.2@1002-5": 2347162731,  # 8be6dc6b
    "10.0.0.2@1002-6": 3625934661,  # d81f5f45
    "10.0.0.2@1002-7": 317182631,  # 12e7d2a7
    "10.0.0.2@1002-8": 3057240310,  # b639c8f6
    "10.0.0.2@1002-9": 2738000990,  # a332945e
}
QUEUE_KEYS = {  # MessageQueue.toString() of topic "orders" on broker-a
    queue_id: f"MessageQueue [topic=orders, brokerName=broker-a, queueId={queue_id}]"
    for queue_id in (0, 1, 2, 3, 14, 21)
}
QUEUE_HASHES = {
    0: 2527733742,  # 96aa27ee
    1: 4044674404,  # f114d564
    2: 2355654212,  # 8c686e44
    3: 1911398401,  # 71eda001
    14: 32993237,  # 01f76fd5  below the lowest point
    21: 4256982530,  # fdbc6602  above the highest point
}


def test_the_written_down_hashes_are_the_first_four_bytes_of_md5() -> None:
    keyed = {**VIRTUAL_NODE_HASHES, **{QUEUE_KEYS[n]: value for n, value in QUEUE_HASHES.items()}}
    for key, expected in keyed.items():
        assert rocketmq_md5(key) == expected, key
        assert hashlib.md5(key.encode()).hexdigest()[:8] == f"{expected:08x}", key


def test_md5_hash_is_rocketmqs_unsigned_big_endian_four_bytes() -> None:
    assert md5_hash("10.0.0.1@1001-4") == 0xF589497B == 4119415163
    assert md5_hash("10.0.0.1@1001-3") == 0x096B7B52
    assert md5_hash(QUEUE_KEYS[21]) == 0xFDBC6602


def test_rocketmq_plan_for_two_clients_and_six_queues_worked_by_hand() -> None:
    """Each queue hash, then the first point at or after it (from VIRTUAL_NODE_HASHES sorted):
    queueId=0   2527733742 -> 2738000990 10.0.0.2@1002-9
    queueId=1   4044674404 -> 4119415163 10.0.0.1@1001-4
    queueId=2   2355654212 -> 2738000990 10.0.0.2@1002-9 (2347162731, 10.0.0.2@1002-5, is below)
    queueId=3   1911398401 -> 1995473245 10.0.0.1@1001-1
    queueId=14    32993237 -> 158038866  10.0.0.1@1001-3 (below every point: the lowest one)
    queueId=21  4256982530 -> past 4119415163, the highest: wraps to 158038866 10.0.0.1@1001-3
    The same plan came out of RocketMQ's MD5Hash and TreeMap code run on JDK 17.
    """
    plan = consistent_hash.assign(QUEUE_KEYS.values(), CLIENT_IDS)
    assert plan == {
        "10.0.0.1@1001": [
            QUEUE_KEYS[14],
            QUEUE_KEYS[1],
            QUEUE_KEYS[21],
            QUEUE_KEYS[3],
        ],  # str order
        "10.0.0.2@1002": [QUEUE_KEYS[0], QUEUE_KEYS[2]],
    }


# --- ties, boundaries, parameters -----------------------------------------------------------------

TINY_POSITIONS = {"a-0": 10, "b-0": 10, "c-0": 30, "q-low": 5, "q-at": 30, "q-high": 31}


def test_virtual_nodes_with_equal_hashes_leave_the_point_to_the_greatest_consumer() -> None:
    """RocketMQ puts "a-0" then "b-0" at 10 into its TreeMap: "b" stays, whatever the input
    order."""
    tiny = ConsistentHash(virtual_nodes=1, hash_function=TINY_POSITIONS.__getitem__)
    expected = {"a": [], "b": ["q-high", "q-low"], "c": ["q-at"]}
    assert tiny.assign(["q-low", "q-at", "q-high"], ["a", "b", "c"]) == expected
    assert tiny.assign(["q-high", "q-at", "q-low"], ["c", "b", "a"]) == expected


def test_a_queue_hashed_exactly_onto_a_point_goes_to_that_point() -> None:
    tiny = ConsistentHash(virtual_nodes=1, hash_function=TINY_POSITIONS.__getitem__)
    assert tiny.assign(["q-at"], ["a", "c"]) == {"a": [], "c": ["q-at"]}


def mod_seven(key: str) -> int:
    """A hash with seven values, so that virtual nodes tie often."""
    return rocketmq_md5(key) % 7


@given(groups(min_consumers=1, with_previous=False), st.integers(1, 4))
def test_with_many_ties_the_plan_is_still_rocketmqs(case: GroupCase, virtual_nodes: int) -> None:
    plan = ConsistentHash(virtual_nodes, mod_seven).assign(case.queues, case.consumers)
    assert plan == reference_plan(case.queues, case.consumers, virtual_nodes, mod_seven)


def test_fewer_virtual_nodes_is_a_different_ring() -> None:
    queues = [f"q{n}" for n in range(40)]
    three = ConsistentHash(virtual_nodes=3).assign(queues, CLIENT_IDS)
    assert three == reference_plan(queues, CLIENT_IDS, virtual_nodes=3)
    assert three != consistent_hash.assign(queues, CLIENT_IDS)


@pytest.mark.parametrize(
    ("arguments", "error", "named"),
    [
        ({"virtual_nodes": 0}, ValueError, "0"),
        ({"virtual_nodes": -3}, ValueError, "-3"),
        ({"virtual_nodes": 2.5}, TypeError, "2.5"),
        ({"virtual_nodes": "10"}, TypeError, "'10'"),
        ({"virtual_nodes": True}, TypeError, "True"),
        ({"hash_function": None}, TypeError, "None"),
        ({"hash_function": "md5"}, TypeError, "'md5'"),
    ],
)
def test_bad_parameters_raise_an_error_naming_the_value(
    arguments: dict[str, Any], error: type[Exception], named: str
) -> None:
    with pytest.raises(error, match=named):
        ConsistentHash(**arguments)


def test_a_hash_function_that_returns_no_int_is_a_type_error_naming_the_key() -> None:
    def halves(key: str) -> float:
        return len(key) / 2

    broken = ConsistentHash(hash_function=halves)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"hash_function\('a-0'\) returned 1.5"):
        broken.assign(["q1"], ["a"])
    huge = "head-" + "x" * 1_000_000
    with pytest.raises(TypeError) as raised:
        broken.assign(["q1"], [huge])
    assert len(str(raised.value)) < 400  # the key shortened, as every message shortens an id
    assert "'head-xxx" in str(raised.value)


# --- properties -----------------------------------------------------------------------------------


@given(groups(min_consumers=1, with_previous=False), st.integers(1, 12))
def test_every_queue_goes_where_rocketmq_routes_it(case: GroupCase, virtual_nodes: int) -> None:
    plan = ConsistentHash(virtual_nodes=virtual_nodes).assign(case.queues, case.consumers)
    assert plan == reference_plan(case.queues, case.consumers, virtual_nodes)


@given(groups())
def test_previous_does_not_change_the_result(case: GroupCase) -> None:
    assert consistent_hash.assign(
        case.queues, case.consumers, case.previous
    ) == consistent_hash.assign(case.queues, case.consumers)


@given(groups(min_consumers=1, with_previous=False), st.data())
def test_a_queues_consumer_depends_only_on_its_key_and_the_consumers(
    case: GroupCase, data: st.DataObject
) -> None:
    some = data.draw(st.lists(st.sampled_from(case.queues), unique=True)) if case.queues else []
    with_all = owners(consistent_hash.assign(case.queues, case.consumers))
    with_some = owners(consistent_hash.assign(some, case.consumers))
    assert with_some == {queue: with_all[queue] for queue in some}


@given(
    st.lists(st.integers(0, 10**6), unique=True, max_size=80),
    st.lists(
        st.text("abcdef0123456789-@.", min_size=1, max_size=8), unique=True, min_size=2, max_size=12
    ),
)
def test_a_consumer_that_joins_takes_queues_only_for_itself(
    queues: list[int], consumers: list[str]
) -> None:
    """Read backwards: a consumer that leaves hands on only its own queues."""
    *staying, newcomer = consumers
    before = owners(consistent_hash.assign(queues, staying))
    after = owners(consistent_hash.assign(queues, consumers))
    moved = [queue for queue in queues if after[queue] != before[queue]]
    assert all(after[queue] == newcomer for queue in moved)
