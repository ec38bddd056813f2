"""Balanced quotas that favour stickiness: how many queues each consumer may hold.

With |Q| queues over |C| consumers every consumer gets |Q| div |C| queues, and the |Q| mod |C|
larger quotas go to the consumers that can keep the most of their previous queues (ties: lowest
consumer id). No balanced assignment keeps more previous pairs than these quotas allow, so both
the sticky strategy and the optimal-stickiness score use them. Runtime complexity: O(|C| log |C|).
"""

from __future__ import annotations

from collections.abc import Mapping

from rebalancing.contract import ConsumerT


def sticky_quotas(keepable: Mapping[ConsumerT, int], queue_count: int) -> dict[ConsumerT, int]:
    """Quota per consumer, given how many queues each could keep.

    `keepable` lists every consumer in ascending id order (that order breaks ties).
    """
    if not keepable:
        return {}
    base, extra = divmod(queue_count, len(keepable))
    by_most_keepable = sorted(keepable, key=lambda consumer: -keepable[consumer])
    larger = set(by_most_keepable[:extra])
    return {consumer: base + 1 if consumer in larger else base for consumer in keepable}
