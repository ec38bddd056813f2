"""Deal sorted queues to sorted consumers in turn: RocketMQ AllocateMessageQueueAveragelyByCircle,
Kafka RoundRobinAssignor (one topic).

Sorted queue k goes to sorted consumer k mod n. Ignores `previous` (apart from checking it).
Runtime complexity: O(|Q| log |Q| + |C| log |C|).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rebalancing.contract import ConsumerT, QueueT, empty_plan, prepare


def assign(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
) -> dict[ConsumerT, list[QueueT]]:
    """Give sorted queue k to sorted consumer k mod n."""
    group = prepare(queues, consumers, previous)
    plan: dict[ConsumerT, list[QueueT]] = empty_plan(group.consumers)
    for index, owned in enumerate(plan.values()):
        owned.extend(group.queues[index :: len(plan)])
    return plan
