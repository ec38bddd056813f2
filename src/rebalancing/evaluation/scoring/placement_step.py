"""One step's zones and weights and the placement scores of a plan on it (cross-zone fraction and
its gap to the fewest, load ratio and its gap to the bound, load kept and moved): what a step
needs once for every strategy (the fewest cross-zone queues' maximum flow, the load bound, the
total load) is computed when first asked. The scores themselves are
rebalancing.evaluation.scoring.placement_scores, which shares no code with any strategy.
Runtime complexity: once per step, the maximum flow of `fewest_cross_zone`; per plan, O(|Q|).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rebalancing.evaluation.scenarios.changes import Step
from rebalancing.evaluation.scoring.groups import Group
from rebalancing.evaluation.scoring.scores import Scores


def exact(scores: Scores) -> bool:
    """Whether the scored plan gives every queue of the group to one consumer of it."""
    return not (
        scores.orphans or scores.duplicates or scores.unknown_queues or scores.unknown_consumers
    )


@dataclass(frozen=True)
class PlacementScores:
    """The placement scores of one plan (ScoreRow's fields of the same names; the glossary
    defines them); None where the step lacks the facts or the plan is not exact."""

    cross_zone_fraction: float | None = None
    cross_zone_gap: float | None = None
    load_ratio: float | None = None
    load_ratio_gap: float | None = None
    load_kept: float | None = None
    load_moved: float | None = None


NOT_PLACED = PlacementScores()


class StepPlacement:
    """One step's zones and weights, and what their scores need once per step (the fewest
    cross-zone queues, the load ratio's bound, the total load), computed when first asked."""

    def __init__(self, step: Step, group: Group) -> None:
        self.step = step
        self.group = group
        self.available: dict[str, Any] = {
            "consumer_zones": step.consumer_zones,
            "queue_zones": step.queue_zones,
            "weights": step.weights,
        }
        self._per_step: tuple[int | None, float | None, float] | None = None

    @staticmethod
    def of(step: Step, group: Group) -> StepPlacement | None:
        """The step's placement, None when it has neither zones nor weights."""
        if step.consumer_zones is None and step.weights is None:
            return None
        return StepPlacement(step, group)

    def per_step(self) -> tuple[int | None, float | None, float]:
        """(the fewest cross-zone queues of a balanced plan, the load ratio's bound, the total
        load of the group's queues); None where the step lacks the facts."""
        if self._per_step is None:
            from rebalancing.evaluation.scoring import placement_scores

            step, queues, consumers = self.step, self.step.queues, self.step.consumers
            fewest = bound = None
            total = 0.0
            if step.consumer_zones is not None and step.queue_zones is not None:
                fewest = placement_scores.fewest_cross_zone(
                    queues, consumers, step.consumer_zones, step.queue_zones
                )
            if step.weights is not None:
                bound = placement_scores.load_ratio_bound(queues, consumers, step.weights)
                weights = step.weights
                total = math.fsum(weights[queue] for queue in queues)
            self._per_step = (fewest, bound, total)
        return self._per_step

    def scores(
        self, previous: Mapping[Any, list[Any]] | None, plan: dict[Any, list[Any]]
    ) -> PlacementScores:
        """The placement scores of an exact `plan`, from `previous` (the plan in force before,
        None on the first assignment; a previous plan the scores refuse, one holding a queue
        twice, leaves the scores that read it None)."""
        from rebalancing.evaluation.scoring import placement_scores

        step = self.step
        fewest, bound, total = self.per_step()
        # every consumer of the group, those the plan leaves out holding nothing: the load
        # ratio's mean and the load kept count them (an exact plan names no other consumer)
        plan = {consumer: plan.get(consumer, []) for consumer in step.consumers}
        found: dict[str, float | None] = {}
        queue_count = len(step.queues)
        if fewest is not None and queue_count:
            crossing = placement_scores.cross_zone_count(
                plan, step.consumer_zones or {}, step.queue_zones or {}
            )
            found["cross_zone_fraction"] = crossing / queue_count
            found["cross_zone_gap"] = (crossing - fewest) / queue_count
        if step.weights is not None:
            ratio = placement_scores.load_ratio(plan, step.weights)
            found["load_ratio"] = ratio
            found["load_ratio_gap"] = None if ratio is None or bound is None else ratio - bound
            if previous is not None:
                try:
                    found["load_kept"] = placement_scores.load_kept(previous, plan, step.weights)
                    moved = placement_scores.load_moved(previous, plan, step.weights)
                    found["load_moved"] = moved / total if total else None
                except (TypeError, ValueError):  # a corrupt previous plan: nothing to say
                    pass
        return PlacementScores(**found)
