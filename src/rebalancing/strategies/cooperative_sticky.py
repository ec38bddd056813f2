"""Kafka's CooperativeStickyAssignor (KIP-429, incremental cooperative rebalancing): sticky's plan
reached in two rebalances.

The eager protocol makes every member give up every partition before the group is planned, so
every partition of the group goes unread for the rebalance. The cooperative one keeps what does
not move: the first rebalance computes the sticky plan and revokes only the partitions that must
change owner (they have no consumer until the next rebalance); the members that lost some rejoin
at once, and the second rebalance assigns them. As a protocol strategy (`Session`) it reports
`rounds` (1 when no owned partition moves, else 2), `releases` and `queues_paused` (the
partitions revoked from a member still in the group) and `steps` (every partition given a new
owner, the revoked ones and those without one). The plan is sticky's: `assign` is sticky.assign.
Runtime complexity: sticky's, O(|Q| log |Q| + |C| log |C|), plus O(|Q|) to find what moves.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import repeat
from typing import Any

from rebalancing.contract import CheckedPlan, ProtocolRun, prepare
from rebalancing.strategies import sticky

assign = sticky.assign

_NO_OWNER: Any = object()
"""No owner still in the group (distinct from every consumer id, None included)."""


class Session:
    """One Kafka group under the cooperative protocol: it carries the plan in force, checked
    once (a CheckedPlan), so that the next rebalance neither checks nor inverts it again."""

    def __init__(self, seed: int = 0) -> None:
        del seed  # nothing here is random; the registry's hook passes the scenario's seed
        self.plan: CheckedPlan[Any, Any] | None = None

    def rebalance(self, queues: Iterable[Any], consumers: Iterable[Any]) -> ProtocolRun:
        """The group is now `queues` x `consumers`: revoke what moves, then assign it."""
        group = prepare(queues, consumers, self.plan)
        target = sticky.assign(group.queues, group.consumers, group.previous)
        kept_owner = group.kept_owner  # queue -> its owner, where both are still there
        revoked = given = 0
        for consumer, owned in target.items():
            owners_before = list(map(kept_owner.get, owned, repeat(_NO_OWNER)))
            without_owner = owners_before.count(_NO_OWNER)
            given += without_owner
            revoked += len(owned) - without_owner - owners_before.count(consumer)
        self.plan = CheckedPlan(target)
        return ProtocolRun(
            owners=target,
            releases=revoked,
            steps=revoked + given,
            rounds=2 if revoked else 1,
            converged=True,
            queues_paused=revoked,
        )
