"""Consistent hashing on a ring of virtual nodes: Apache RocketMQ's
AllocateMessageQueueConsistentHash.

Each consumer puts `virtual_nodes` points (10 by default) on a ring of hash values, point i of
consumer c keyed f"{c}-{i}"; a queue is keyed by its string form (str(queue)) and goes to the
consumer of the first point clockwise at or after the queue's hash, wrapping round to the lowest
point. The default hash is RocketMQ's MD5Hash: the first 4 bytes of the MD5 digest of the key's
UTF-8 bytes, read big-endian as an unsigned number (0 .. 2**32 - 1). With string ids (queues as
MessageQueue.toString() gives them, consumers as client ids) the plan is exactly RocketMQ's.

It does not balance: a consumer's share is the arcs its points close, so counts vary (measured
with 10 points each, 20 consumers and 10,000 queues: the largest count is typically about 3.5
times the smallest). It ignores `previous`
(apart from checking it): a queue's consumer depends only on the queue's key and the set of
consumers, so a consumer that joins takes queues only for itself and one that leaves hands on
only its own.

Origin, read in apache/rocketmq:
- client/src/main/java/org/apache/rocketmq/client/consumer/rebalance/
  AllocateMessageQueueConsistentHash.java: 10 virtual nodes by default, an optional custom
  HashFunction, the queue key mq.toString(), one router per allocation over all of cidAll.
- common/src/main/java/org/apache/rocketmq/common/consistenthash/VirtualNode.java: getKey() is
  physicalNode.getKey() + "-" + replicaIndex, replicas numbered 0 .. n-1.
- common/src/main/java/org/apache/rocketmq/common/consistenthash/ConsistentHashRouter.java:
  MD5Hash shifts in digest[0..3], each `& 0xFF`, so the long is unsigned 32-bit big-endian
  (key.getBytes() uses the platform charset: UTF-8 on Linux, and everywhere since JDK 18);
  routeNode takes ring.tailMap(hash).firstKey(), else ring.firstKey(); the ring is a TreeMap,
  so of two virtual nodes with equal hashes the one put last stays.
- client/src/main/java/org/apache/rocketmq/client/impl/consumer/RebalanceImpl.java sorts cidAll
  before allocate, so virtual nodes are put in consumer order, replicas ascending.

Tie rule (RocketMQ's): a point hashed by virtual nodes of several consumers belongs to the
greatest consumer id, the one RocketMQ puts last. (Java orders strings by UTF-16 code units,
Python by code points; the orders differ only between characters above U+FFFF and
U+E000..U+FFFF.) RocketMQ accepts 0 virtual nodes and then assigns nothing; here the count must
be at least 1, since every queue needs a consumer.

Runtime complexity: O(|C| v log(|C| v)) to build the ring (v = virtual_nodes) and
O(|Q| log(|C| v)) to route the queues, besides |C| v + |Q| hashes (MD5Hash: each key once a
process, up to HASHES_CACHED keys) and sorting the ids.
"""

from __future__ import annotations

import hashlib
import operator
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any

from rebalancing.contract import ConsumerT, QueueT, empty_plan, prepare, shortened_repr

HashFunction = Callable[[str], int]
"""Maps a key (a virtual node's or a queue's) to its position on the ring."""

DEFAULT_VIRTUAL_NODES = 10
"""RocketMQ's default number of virtual nodes per consumer."""


HASHES_CACHED = 1 << 16
"""Keys whose MD5Hash `md5_hash` keeps (least recently used out): a consumer process rebalances
the same members and queues again and again, and hashing is most of this strategy's time."""


@lru_cache(maxsize=HASHES_CACHED)
def md5_hash(key: str) -> int:
    """RocketMQ's MD5Hash: the first 4 bytes of MD5(key as UTF-8), big-endian, unsigned.

    (A lone surrogate in `key` is encoded as it stands, so no str makes it fail.) Cached by key
    (HASHES_CACHED), an exact str: a str subclass's value is hashed as its str value.
    """
    digest = hashlib.md5(key.encode("utf-8", "surrogatepass"), usedforsecurity=False).digest()
    return int.from_bytes(digest[:4], "big")


def check_ring_parameters(virtual_nodes: object, hash_function: object) -> None:
    """Raise TypeError or ValueError, naming the value, for unusable ring parameters."""
    if isinstance(virtual_nodes, bool) or not isinstance(virtual_nodes, int):
        raise TypeError(
            f"virtual_nodes must be an int, not {type(virtual_nodes).__name__} ({virtual_nodes!r})"
        )
    if virtual_nodes < 1:
        raise ValueError(f"virtual_nodes must be at least 1, got {virtual_nodes!r}")
    if not callable(hash_function):
        raise TypeError(f"hash_function must be callable (str -> int), got {hash_function!r}")


def ring_positions(hash_function: HashFunction, keys: Iterable[str]) -> list[int]:
    """`hash_function` of each key, each an int; TypeError naming the key and the value when
    one is not an int (numpy integers and other `__index__` types are converted)."""
    keys = list(keys)
    positions = list(map(hash_function, keys))
    if all(type(position) is int for position in positions):  # the common case, fast
        return positions
    checked = []
    for key, position in zip(keys, positions, strict=True):
        try:
            checked.append(operator.index(position))
        except TypeError:
            raise TypeError(
                f"hash_function({shortened_repr(key)}) returned {shortened_repr(position)} "
                f"({type(position).__name__}), "
                "not an int"
            ) from None
    return checked


@dataclass(frozen=True)
class Ring:
    """The ring's points in clockwise order (ascending hash) and, for each, the index (in the
    sorted consumers) of the consumer it belongs to. Points are distinct (see the tie rule)."""

    points: list[int]
    owners: list[int]

    def first_points_at_or_after(self, positions: Iterable[int]) -> list[int]:
        """For each position, the index of the first point at or after it; len(points) when it
        is past the highest point."""
        return list(map(partial(bisect_left, self.points), positions))

    def owner_indices(self, positions: Iterable[int]) -> list[int]:
        """For each position, the index of the consumer owning it: that of the first point at or
        after it, else of the lowest point (RocketMQ's tailMap(hash).firstKey(), else
        firstKey())."""
        wrapped = [*self.owners, self.owners[0]]  # past the highest point: the lowest one's
        return [wrapped[point] for point in self.first_points_at_or_after(positions)]


def build_ring(
    consumers: list[Any], virtual_nodes: int, hash_function: HashFunction = md5_hash
) -> Ring:
    """The ring of `consumers` (sorted, distinct), `virtual_nodes` points each, keyed
    f"{consumer}-{replica}"; of virtual nodes with equal hashes the greatest consumer's stays."""
    keys = [f"{consumer!s}-{replica}" for consumer in consumers for replica in range(virtual_nodes)]
    indices = [index for index in range(len(consumers)) for _ in range(virtual_nodes)]
    placed = sorted(zip(ring_positions(hash_function, keys), indices, strict=True))
    points: list[int] = []
    owners: list[int] = []
    for position, index in placed:  # equal positions come in ascending consumer index
        if points and points[-1] == position:
            owners[-1] = index  # the later put wins, as in RocketMQ's TreeMap
        else:
            points.append(position)
            owners.append(index)
    return Ring(points, owners)


@dataclass(frozen=True)
class ConsistentHash:
    """Consistent hashing with chosen parameters; `ConsistentHash(...).assign` is a strategy.

    `virtual_nodes`: points per consumer (an int >= 1); `hash_function`: str -> int, the
    position of a key on the ring (RocketMQ's MD5Hash by default). A hash function given here
    must be deterministic across processes (not Python's hash() of a str).
    """

    virtual_nodes: int = DEFAULT_VIRTUAL_NODES
    hash_function: HashFunction = md5_hash

    def __post_init__(self) -> None:
        check_ring_parameters(self.virtual_nodes, self.hash_function)

    def assign(
        self,
        queues: Iterable[QueueT],
        consumers: Iterable[ConsumerT],
        previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
    ) -> dict[ConsumerT, list[QueueT]]:
        """Give each queue to the consumer of the first ring point at or after its hash."""
        group = prepare(queues, consumers, previous)
        plan: dict[ConsumerT, list[QueueT]] = empty_plan(group.consumers)
        if not plan:
            return plan
        ring = build_ring(group.consumers, self.virtual_nodes, self.hash_function)
        positions = ring_positions(self.hash_function, map(str, group.queues))
        owned_by_index = list(plan.values())
        for queue, owner_index in zip(group.queues, ring.owner_indices(positions), strict=True):
            owned_by_index[owner_index].append(queue)  # queues in sorted order: lists sorted
        return plan


_DEFAULT = ConsistentHash()


def assign(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
) -> dict[ConsumerT, list[QueueT]]:
    """RocketMQ's consistent hashing with its defaults: 10 virtual nodes, MD5Hash."""
    return _DEFAULT.assign(queues, consumers, previous)
