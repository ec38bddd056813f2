"""Contiguous blocks of sorted queues: Apache RocketMQ's AllocateMessageQueueAveragely.

Consumer index i of n gets a block of the sorted queues; the first |Q| mod n consumers get one
queue more; with more consumers than queues the last consumers get none. Ignores `previous`
(apart from checking it). Runtime complexity: O(|Q| log |Q| + |C| log |C|).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rebalancing.contract import ConsumerT, QueueT, empty_plan, prepare


def assign(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
) -> dict[ConsumerT, list[QueueT]]:
    """Give consumer i of n the i-th contiguous block of the sorted queues."""
    group = prepare(queues, consumers, previous)
    queue_count, consumer_count = len(group.queues), len(group.consumers)
    plan: dict[ConsumerT, list[QueueT]] = empty_plan(group.consumers)
    if consumer_count == 0:
        return plan
    remainder = queue_count % consumer_count
    for index, owned in enumerate(plan.values()):
        # The formula of RocketMQ's AllocateMessageQueueAveragely, term for term.
        if queue_count <= consumer_count:
            block_size = 1
        elif index < remainder:
            block_size = queue_count // consumer_count + 1
        else:
            block_size = queue_count // consumer_count
        start = index * block_size if index < remainder else index * block_size + remainder
        owned.extend(group.queues[start : start + block_size])
    return plan
