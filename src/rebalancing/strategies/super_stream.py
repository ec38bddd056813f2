"""RabbitMQ streams: single active consumer on a super stream (RabbitMQ 3.11+).

A super stream is a set of partition streams; consumers of one group name subscribe to every
partition, and the broker makes consumer (i mod n) of the group active on sorted partition i,
where the group's consumers are counted in the order they joined. A departure shifts everyone
after it: RabbitMQ's own answer for groups, balanced (counts differ by at most one) but not
sticky, and the reference to beat for anyone considering SAC with leaderless release.

- `Session` remembers the join order (the registry's protocol hook): members present at the
  first rebalance join in sorted id order, later newcomers join at the end in sorted id order
  among themselves, and a member that leaves and comes back joins at the end again.
- `assign(queues, consumers, previous)` has no join order, only the owners, so it uses the
  sorted consumer order: that is exactly round_robin, as the module round_robin says.

A session's ProtocolRun counts, per rebalance: `releases`, the partitions whose active consumer
is still in the group but must step down (the broker sends it a consumer update and waits for its
answer before activating the next one); `steps`, every partition whose active consumer changes;
`rounds`, 1 when anything changes, else 0 (the broker does the handovers in one pass);
`queues_paused`, the partitions that stepped down (unread until the next consumer takes over).
Runtime complexity: O(|Q| log |Q| + |C| log |C|) per rebalance.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import Any

from rebalancing.contract import ConsumerT, ProtocolRun, QueueT, empty_plan, prepare
from rebalancing.strategies import round_robin


def deal(queues: list[Any], consumers_in_join_order: list[Any]) -> dict[Any, list[Any]]:
    """Sorted partition i -> the consumer at position i mod n of the join order; the plan's keys
    in sorted id order, each consumer's partitions ascending."""
    plan: dict[Any, list[Any]] = empty_plan(sorted(consumers_in_join_order))
    count = len(consumers_in_join_order)
    if count:
        for position, consumer in enumerate(consumers_in_join_order):
            plan[consumer].extend(queues[position::count])
    return plan


class Session:
    """One super stream group across rebalances: it remembers the order consumers joined in."""

    def __init__(self, seed: int = 0) -> None:
        del seed  # nothing here is random; the registry's hook passes the scenario's seed
        self.join_order: list[Any] = []
        self.owner: dict[Any, Any] = {}

    def rebalance(self, queues: Iterable[Any], consumers: Iterable[Any]) -> ProtocolRun:
        """The group is now `queues` x `consumers`: newcomers join at the end, in sorted order."""
        group = prepare(queues, consumers, None)
        present = set(group.consumers)
        kept = [consumer for consumer in self.join_order if consumer in present]
        known = set(kept)
        self.join_order = kept + [consumer for consumer in group.consumers if consumer not in known]
        plan = deal(group.queues, self.join_order)
        run, self.owner = activate(plan, self.owner, present)
        return run


def activate(
    plan: dict[Any, list[Any]], owner_before: Mapping[Any, Any], present: AbstractSet[Any]
) -> tuple[ProtocolRun, dict[Any, Any]]:
    """The broker makes each partition's consumer in `plan` its active one, where the active
    consumers were `owner_before` (partition -> consumer) and `present` is the group: the
    ProtocolRun of that (see the module docstring) and the new partition -> active consumer.
    Every broker that picks each partition's active consumer by a rule of its own pays the same
    way (rebalancing.strategies.pulsar_failover)."""
    changed = stepped_down = 0
    owner = {queue: consumer for consumer, owned in plan.items() for queue in owned}
    for queue, consumer in owner.items():
        if queue not in owner_before:  # a new partition gets its first active consumer
            changed += 1
        elif owner_before[queue] != consumer:
            changed += 1
            stepped_down += owner_before[queue] in present
    run = ProtocolRun(
        owners=plan,
        releases=stepped_down,
        steps=changed,
        rounds=1 if changed else 0,
        converged=True,
        queues_paused=stepped_down,
    )
    return run, owner


def assign(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
) -> dict[ConsumerT, list[QueueT]]:
    """Without a join order: the sorted consumer order, which makes it round_robin."""
    return round_robin.assign(queues, consumers, previous)
