"""Apache Pulsar's Failover subscription on a partitioned topic: partition i goes to consumer
i mod n, the consumers sorted by (priority level, name), n those at the highest priority level.

Read from Pulsar's broker, class org.apache.pulsar.broker.service.
AbstractDispatcherSingleActiveConsumer, method `pickAndScheduleActiveConsumer` (apache/pulsar
at commit 00921e0768fe19a7ff89c2692b4da9ff156ee487), and its test class
PersistentDispatcherFailoverConsumerTest (testAddRemoveConsumer). Each partition of a
partitioned topic has its own dispatcher, which knows its `partitionIndex`; whenever a consumer
of the subscription joins or leaves, it sorts the consumers by priority level (a lower number
first: 0, the default, is the highest priority; the client refuses a negative one), then by
consumer name, keeps the first k, those at the highest level present, and makes consumer
`partitionIndex mod k` the partition's active one; the others wait, and take over only when
every consumer above them has gone (broker setting activeConsumerFailoverConsistentHashing off,
its default; on, a hash ring picks, which is not modelled here). Pulsar's documentation
(Messaging concepts, "Failover | Partitioned topic") says the same: the broker "sorts consumers
by priority level and lexicographical order of consumer name", then "tries to evenly assign
partitions to consumers with the highest priority level"; its examples are figures.

Here a partition's index is its position among the sorted queue ids (a topic's partitions are
numbered 0..P-1, and Pulsar only ever adds partitions, at the end), and a consumer's name is its
id, ordered as ids sort. RabbitMQ's super stream (rebalancing.strategies.super_stream) deals the
partitions the same way over the consumers in the order they joined; Pulsar's order needs no
memory, so the plan is a function of the group alone and ignores `previous`, and with every
level equal it is round_robin's plan. What the two orders cost differs: a newcomer goes to the
end of the join order, the cheapest place for it, but to its name's place in name order, which
moves every partition of the consumers after it; a consumer that leaves and comes back under its
name gets its partitions back in name order, and none of them in join order.

- `assign(queues, consumers, previous)`: every consumer at the default level 0 (name order).
- `with_priorities(levels)`: an `assign` for consumers with priority levels (consumer -> level;
  a consumer not named is at 0), so that the three-argument contract holds.
- `Session(levels=...)`: the registry's protocol hook; it remembers the active consumers only to
  count, per rebalance, the hand-overs the broker makes (rebalancing.strategies.super_stream's
  `activate`: a partition whose active consumer, still present, steps down is paused).
Runtime complexity: O(|Q| log |Q| + |C| log |C|) per rebalance.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

from rebalancing.contract import (
    AssignFunction,
    ConsumerT,
    ProtocolRun,
    QueueT,
    empty_plan,
    prepare,
    shortened_repr,
)
from rebalancing.strategies.super_stream import activate

DEFAULT_PRIORITY_LEVEL = 0
"""Pulsar's default priority level, and its highest: every consumer's unless told otherwise."""


def active_order(sorted_consumers: list[Any], levels: Mapping[Any, int]) -> list[Any]:
    """The consumers that get partitions, in the order partitions are dealt to them: those at
    the highest priority level present (the lowest number), by name. (Pulsar sorts everyone by
    level, then name, and keeps the first k at the highest level: the same list.)"""
    if not levels:
        return sorted_consumers
    level_of = [levels.get(consumer, DEFAULT_PRIORITY_LEVEL) for consumer in sorted_consumers]
    highest = min(level_of, default=DEFAULT_PRIORITY_LEVEL)
    return [
        consumer
        for consumer, level in zip(sorted_consumers, level_of, strict=True)
        if level == highest
    ]


def assign_with_priorities(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
    *,
    levels: Mapping[Any, int],
) -> dict[ConsumerT, list[QueueT]]:
    """Sorted partition i to consumer i mod k of `active_order`; the consumers below the highest
    level present wait with no partition. `levels` as `checked_levels` returns them."""
    group = prepare(queues, consumers, previous)
    plan: dict[ConsumerT, list[QueueT]] = empty_plan(group.consumers)
    active = active_order(group.consumers, levels)
    for position, consumer in enumerate(active):
        plan[consumer].extend(group.queues[position :: len(active)])
    return plan


def assign(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
) -> dict[ConsumerT, list[QueueT]]:
    """Every consumer at the default level: sorted partition i to sorted consumer i mod n."""
    return assign_with_priorities(queues, consumers, previous, levels={})


def checked_levels(levels: Mapping[Any, int]) -> dict[Any, int]:
    """`levels` as a dict of its own, each level an integer of 0 or more (TypeError or ValueError
    naming the consumer otherwise, and TypeError for anything but a mapping)."""
    if not isinstance(levels, Mapping):
        raise TypeError(
            f"priority levels must be a mapping of consumer -> level, not {type(levels).__name__}"
        )
    checked: dict[Any, int] = {}
    for consumer, level in levels.items():
        if isinstance(level, bool) or not isinstance(level, int):
            raise TypeError(
                f"the priority level of consumer {shortened_repr(consumer)} must be an integer, "
                f"not {shortened_repr(level)}"
            )
        if level < 0:
            raise ValueError(
                f"the priority level of consumer {shortened_repr(consumer)} must be 0 or more "
                f"(0 is the highest), not {level}"
            )
        checked[consumer] = int(level)
    return checked


def with_priorities(levels: Mapping[Any, int]) -> AssignFunction:
    """An `assign(queues, consumers, previous)` for a group whose consumers have these Pulsar
    priority levels (consumer -> level, 0 the highest; a consumer not named is at 0): only the
    consumers at the highest level present get partitions. The levels are checked and copied
    now; the function pickles (a partial of a module function), as a strategy shipped to
    another process must."""
    return functools.partial(assign_with_priorities, levels=checked_levels(levels))


class Session:
    """One Failover subscription across rebalances: the active consumer of each partition, to
    count the hand-overs (the plan itself depends on the group alone)."""

    def __init__(self, seed: int = 0, levels: Mapping[Any, int] | None = None) -> None:
        del seed  # nothing here is random; the registry's hook passes the scenario's seed
        self.levels = checked_levels(levels or {})
        self.owner: dict[Any, Any] = {}

    def rebalance(self, queues: Iterable[Any], consumers: Iterable[Any]) -> ProtocolRun:
        """The group is now `queues` x `consumers`: every partition's dispatcher picks again."""
        plan = assign_with_priorities(queues, consumers, levels=self.levels)
        run, self.owner = activate(plan, self.owner, plan.keys())  # every consumer is a key
        return run
