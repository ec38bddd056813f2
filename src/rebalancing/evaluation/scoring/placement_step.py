"""One step's zones and weights and the placement scores of a plan on it (cross-zone fraction and
its gap to the fewest, load ratio and its gap to the bound, load kept and moved): what a step
needs once for every strategy (the fewest cross-zone queues' maximum flow, the load bound, the
total load) is computed when first asked. The scores themselves are
rebalancing.evaluation.scoring.placement_scores, which shares no code with any strategy.
Runtime complexity: once per step, O(|Q| + |C|) to read the step's facts and the maximum flow of
`fewest_cross_zone` (cached by the group's shape); per plan, O(|Q| + |C| + size of previous).
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


@dataclass(frozen=True)
class StepFacts:
    """One step's zones and weights read once for every plan scored on it: each consumer's
    zone (None: none), each queue's replica zones, each queue's weight (None without zones,
    weights), checked by the rules placement_scores applies; the fewest cross-zone queues of a
    balanced plan, the load ratio's bound and the total load (None, None, 0.0 without)."""

    zone_of: dict[Any, Any] | None
    zones_of: dict[Any, frozenset[Any]] | None
    weight: dict[Any, float] | None
    fewest: int | None
    bound: float | None
    total: float


class StepPlacement:
    """One step's zones and weights, and what their scores need once per step (StepFacts),
    computed when first asked. A plan's scores are those of placement_scores' functions, read
    from the step's facts rather than checked again for every plan: each plan scored is exact
    (every queue of the group once, to a consumer of it), so what is left per plan is one pass
    over its queues (tests/evaluation/test_replay_placement.py holds the two to each other)."""

    def __init__(self, step: Step, group: Group) -> None:
        self.step = step
        self.group = group
        self.available: dict[str, Any] = {
            "consumer_zones": step.consumer_zones,
            "queue_zones": step.queue_zones,
            "weights": step.weights,
        }
        self._facts: StepFacts | None = None

    @staticmethod
    def of(step: Step, group: Group) -> StepPlacement | None:
        """The step's placement, None when it has neither zones nor weights."""
        if step.consumer_zones is None and step.weights is None:
            return None
        return StepPlacement(step, group)

    def facts(self) -> StepFacts:
        """The step's facts (StepFacts), computed on the first call."""
        if self._facts is None:
            from rebalancing.evaluation.scoring import placement_scores

            step, queues, consumers = self.step, self.step.queues, self.step.consumers
            zone_of = zones_of = weight = fewest = bound = None
            total = 0.0
            if step.consumer_zones is not None and step.queue_zones is not None:
                zone_of = placement_scores.zone_of_each(consumers, step.consumer_zones)
                zones_of = placement_scores.zones_of_each(queues, step.queue_zones)
                fewest = placement_scores.fewest_cross_zone_of_zones(zone_of, zones_of)
            if step.weights is not None:
                weight = placement_scores.weight_of_each(queues, step.weights)
                bound = placement_scores.load_ratio_bound(queues, consumers, step.weights)
                total = math.fsum(weight[queue] for queue in queues)
            self._facts = StepFacts(zone_of, zones_of, weight, fewest, bound, total)
        return self._facts

    def scores(
        self, previous: Mapping[Any, list[Any]] | None, plan: dict[Any, list[Any]]
    ) -> PlacementScores:
        """The placement scores of an exact `plan`, from `previous` (the plan in force before,
        None on the first assignment; a previous plan the scores refuse, one holding a queue
        twice, leaves the scores that read it None)."""
        facts = self.facts()
        # every consumer of the group, those the plan leaves out holding nothing: the load
        # ratio's mean and the load kept count them (an exact plan names no other consumer)
        plan = {consumer: plan.get(consumer, []) for consumer in self.step.consumers}
        found: dict[str, float | None] = {}
        queue_count = len(self.step.queues)
        if facts.fewest is not None and queue_count:
            crossing = _cross_zone_count(plan, facts)
            found["cross_zone_fraction"] = crossing / queue_count
            found["cross_zone_gap"] = (crossing - facts.fewest) / queue_count
        if facts.weight is not None:
            ratio = _load_ratio(plan, facts.weight)
            found["load_ratio"] = ratio
            bound = facts.bound
            found["load_ratio_gap"] = None if ratio is None or bound is None else ratio - bound
            if previous is not None:
                try:
                    kept, moved = _load_kept_and_moved(previous, plan, facts.weight)
                except (TypeError, ValueError):  # a corrupt previous plan: nothing to say
                    pass
                else:
                    found["load_kept"] = kept
                    found["load_moved"] = moved / facts.total if facts.total else None
        return PlacementScores(**found)


def _cross_zone_count(plan: dict[Any, list[Any]], facts: StepFacts) -> int:
    """placement_scores.cross_zone_count of an exact plan, from the step's zones."""
    assert facts.zone_of is not None
    assert facts.zones_of is not None
    zones_of = facts.zones_of
    crossing = 0
    for consumer, held in plan.items():
        zone = facts.zone_of[consumer]
        crossing += sum(zone not in zones_of[queue] for queue in held)
    return crossing


def _load_ratio(plan: dict[Any, list[Any]], weight: dict[Any, float]) -> float | None:
    """placement_scores.load_ratio of an exact plan without capacities: each consumer's load
    summed in the plan's order and the total over the loads in consumer order, as it sums them
    (so the same float)."""
    loads = []
    for held in plan.values():
        load = 0.0
        for queue in held:
            load += weight[queue]
        loads.append(load)
    total = sum(loads)
    if not loads or total == 0:
        return None
    mean = total / float(len(loads))
    return max(loads) / mean


def _load_kept_and_moved(
    previous: Mapping[Any, list[Any]], plan: dict[Any, list[Any]], weight: dict[Any, float]
) -> tuple[float | None, float]:
    """(placement_scores.load_kept, placement_scores.load_moved) of an exact plan, summed in
    the same order; a previous plan that holds a queue twice or is no plan raises as they do."""
    from rebalancing.evaluation.scoring.placement_scores import previous_owners

    owners = {queue: consumer for consumer, held in plan.items() for queue in held}
    could, kept = 0.0, 0.0
    moved = []
    for queue, owner in previous_owners(previous).items():
        now = owners.get(queue, _NOT_IN_PLAN)
        if now is _NOT_IN_PLAN:
            continue
        if owner in plan:
            could += weight[queue]
            kept += weight[queue] if now == owner else 0.0
        if now != owner:
            moved.append(weight[queue])
    return (kept / could if could > 0 else None), math.fsum(moved)


_NOT_IN_PLAN: Any = object()
