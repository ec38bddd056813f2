"""One step's group as every strategy of the step reads it: its queues and consumers checked once
(SortedIds) and as frozen sets, what did not change taken from the step before, and for the
compiled scores the same group as integers; and under client views, the group before the change
with each consumer's lag. Runtime complexity: O(|Q| log |Q| + |C| log |C|) for what changed,
O(1) for what did not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rebalancing.contract import SortedIds
from rebalancing.evaluation.scenarios.changes import Step

if TYPE_CHECKING:
    from rebalancing.evaluation.scoring.compiled_scores import ConsumerNumbers, IntegerGroup


@dataclass(frozen=True)
class ClientViews:
    """One step's client views: the group before the change, and each consumer's lags."""

    queues_before: tuple[Any, ...]
    consumers_before: tuple[Any, ...]
    lags: dict[Any, tuple[int, int]]


@dataclass(frozen=True)
class Group:
    """One step's group, checked once for every strategy: its queues and consumers as
    SortedIds (as the step gives them when they fail the check: each strategy refuses them
    then) and as frozen sets. What did not change since the step before is taken from it."""

    step: Step
    queues: tuple[Any, ...]
    consumers: tuple[Any, ...]
    queue_set: frozenset[Any]
    consumer_set: frozenset[Any]
    integers: IntegerGroup | None = None  # the group as the compiled scores take it

    @staticmethod
    def of(step: Step, before: Group | None, numbers: ConsumerNumbers | None = None) -> Group:
        """The step's group; with `numbers` (the scenario's consumer numbers), also as the
        compiled scores take it, when they can."""
        if before is not None and (
            step.queues is before.step.queues or step.queues == before.step.queues
        ):
            # the very same frozen set tells the scores that no queue of a previous plan is gone
            queues, queue_set = before.queues, before.queue_set
        else:
            queues = _checked_ids(step.queues, "queue")
            queue_set = _id_set(queues)
        if before is not None and (
            step.consumers is before.step.consumers or step.consumers == before.step.consumers
        ):
            consumers, consumer_set = before.consumers, before.consumer_set
        else:
            consumers = _checked_ids(step.consumers, "consumer")
            consumer_set = _id_set(consumers)
        integers = None
        if numbers is not None and type(queues) is SortedIds and type(consumers) is SortedIds:
            from rebalancing.evaluation.scoring.compiled_scores import IntegerGroup

            earlier = before.integers if before is not None else None
            if earlier is not None and earlier.queue_set is queue_set:
                integers = earlier.with_consumers(consumers, consumer_set, numbers)
            else:
                integers = IntegerGroup.of(queues, queue_set, consumers, consumer_set, numbers)
        return Group(step, queues, consumers, queue_set, consumer_set, integers)


def _id_set(ids: tuple[Any, ...]) -> frozenset[Any]:
    """The set of `ids` (from `_checked_ids`): their SortedIds' own, which every strategy of the
    step shares, or made here when they failed the check."""
    return ids.as_set if type(ids) is SortedIds else frozenset(ids)


def _checked_ids(ids: tuple[Any, ...], kind: str) -> tuple[Any, ...]:
    """`ids` as SortedIds (themselves when they are already), or as they are when they fail
    the check."""
    if type(ids) is SortedIds:
        return ids
    try:
        return SortedIds(ids, kind)
    except (TypeError, ValueError):
        return ids
