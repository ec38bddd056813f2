"""Topics and per-member topic subscriptions, read from queue ids the way the Kafka strategies
read them, for Kafka's server-side assignors (uniform, server_range).

A queue id that is a tuple of two or more items is `(topic, ...)`, as Kafka's
`(topic, partition)`; every other id is in one topic (rack_aware_range.topic_of). A
subscription maps each member to the topics it subscribes to: the input of Kafka's
heterogeneous path, which the three-argument contract does not carry (there every member
subscribes to every topic).
Runtime complexity: O(|Q|) to group sorted queues, O(|C| + subscriptions) to check them.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence

from rebalancing.contract import ConsumerT, QueueT, shortened_repr
from rebalancing.strategies.rack_aware_range import topic_of


def topic_partitions(sorted_queues: Sequence[QueueT]) -> dict[Hashable, list[QueueT]]:
    """topic -> its queues, topics in order of first appearance, each topic's queues in the
    order given (for sorted queues: topics sorted, partitions ascending)."""
    by_topic: dict[Hashable, list[QueueT]] = {}
    for queue in sorted_queues:
        by_topic.setdefault(topic_of(queue), []).append(queue)
    return by_topic


def checked_subscriptions(
    consumers: Sequence[ConsumerT],
    subscriptions: Mapping[ConsumerT, Iterable[Hashable]],
    topics: Mapping[Hashable, object],
) -> dict[ConsumerT, tuple[Hashable, ...]]:
    """Each consumer's topics, repeats dropped, in the order given. A value that is a string or
    not iterable is a TypeError naming the consumer; a topic that has no queue is a ValueError
    naming it (Kafka: a PartitionAssignorException for a subscription to a missing topic)."""
    checked: dict[ConsumerT, tuple[Hashable, ...]] = {}
    for consumer in consumers:
        given = subscriptions[consumer]
        if isinstance(given, str | bytes) or not isinstance(given, Iterable):
            raise TypeError(
                f"subscriptions[{shortened_repr(consumer)}] must be an iterable of topics, "
                f"got {shortened_repr(given)}"
            )
        chosen = tuple(dict.fromkeys(given))
        for topic in chosen:
            if topic not in topics:
                raise ValueError(
                    f"consumer {shortened_repr(consumer)} subscribes to topic "
                    f"{shortened_repr(topic)}, which has no queue"
                )
        checked[consumer] = chosen
    return checked
