"""sticky for a caller that keeps its group between rebalances, as Kafka's group coordinator
does (KIP-848): the queues' sorted order and ranks, and the last plan as ranks, are kept, so
that a rebalance over the same queues (a member joins or leaves) pays neither the sort nor the
look-ups of `previous` again.

`StickyGroup(previous).assign(queues, consumers)` returns a plan equal to the one
`sticky.assign(queues, consumers, previous)` returns, `previous` being the plan of the group's
last `assign` (the one it was made with, before the first): tests/strategies/
test_sticky_refinement.py holds it to that. Equal, not made of the same objects: its ids are
always the caller's, those of this call's `queues` and `consumers`, where `sticky.assign` may
hand back `previous`'s own ids for queues a consumer keeps (its definition does). They differ
only where ids are equal without being the same objects (1 and 1.0, 0 and False, a numpy
integer and an int).
Queues count as the same when they are a list or tuple of the very objects given last time, in
the same order (one identity test per queue, at C speed); other queues are checked, sorted and
ranked again, the last plan taken as checked. The consumers are checked and sorted on every
call, as the contract says.
Runtime complexity with the same queues: O(|Q| + |C| log |C|), at C speed but for loops
over the consumers; otherwise sticky's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import chain, repeat
from typing import Generic

from rebalancing.contract import CheckedPlan, ConsumerT, QueueT, sorted_distinct_ids
from rebalancing.ranking import RankedQueues, prepare_ranked
from rebalancing.strategies.sticky import assign_ranks, plan_of_ranks


class StickyGroup(Generic[QueueT, ConsumerT]):
    """A group's sticky rebalances, one `assign` per membership change (see the module)."""

    def __init__(self, previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None) -> None:
        self._previous = previous  # checked by the first assign, as sticky.assign checks it
        self._queues: RankedQueues[QueueT] | None = None
        self._owned: dict[ConsumerT, Sequence[int]] = {}  # the last plan, as ranks in _queues

    def assign(
        self, queues: Iterable[QueueT], consumers: Iterable[ConsumerT]
    ) -> dict[ConsumerT, list[QueueT]]:
        """The sticky plan of `queues` over `consumers` after the group's last plan; the plan
        is the caller's (changing it changes nothing here)."""
        known = self._queues
        if known is not None and known.were_given_as(queues):
            ranked = known
            sorted_consumers: list[ConsumerT] = sorted_distinct_ids(consumers, "consumer")
            last = self._owned
            kept: list[Sequence[int]] = list(map(last.get, sorted_consumers, repeat(())))
            left = last.keys() - set(sorted_consumers)
            unheld = sorted(chain.from_iterable(map(last.__getitem__, left)))
            if not last:  # no consumers last time: no queue was held
                unheld = list(range(len(ranked.ids)))
        else:
            previous = self._previous if known is None else self._last_plan(known)
            group = prepare_ranked(queues, consumers, previous, keep_given=True)
            ranked = RankedQueues(group.queues.ids, group.queues.given)  # without the rank dict:
            sorted_consumers = group.consumers  # the group needs none over the same queues
            kept, unheld = group.kept, group.unheld
            self._previous = None
        owned = assign_ranks(len(ranked.ids), kept, unheld) if sorted_consumers else []
        self._queues = ranked
        self._owned = dict(zip(sorted_consumers, owned, strict=True))
        return plan_of_ranks(sorted_consumers, owned, ranked.ids)

    def _last_plan(self, ranked: RankedQueues[QueueT]) -> CheckedPlan[QueueT, ConsumerT]:
        """The last plan with its queue ids, for queues that changed since: made here from
        distinct ranks, so it holds no queue twice."""
        ids = ranked.ids
        plan = {consumer: [ids[rank] for rank in owned] for consumer, owned in self._owned.items()}
        return CheckedPlan.of_checked_lists(plan)
