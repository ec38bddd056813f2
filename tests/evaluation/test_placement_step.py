"""The scoring core's placement scores of a step (StepPlacement) against the reference functions
of placement_scores, on seeded groups: the step reads its zones and weights once and each plan
in one pass, and the fewest cross-zone count is cached by the group's shape; neither may change
a score by a single bit."""

from __future__ import annotations

import math
import random
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from rebalancing.evaluation.scenarios.changes import Step
from rebalancing.evaluation.scoring import placement_scores
from rebalancing.evaluation.scoring.groups import Group
from rebalancing.evaluation.scoring.placement_step import StepPlacement

ZONES = ("a", "b", "c")


def _step(rng: random.Random) -> Step:
    """A step with 1-40 queues, 1-8 consumers (some without a zone) and Zipf-like weights."""
    queues = tuple(range(rng.randint(1, 40)))
    consumers = tuple(f"c{index}" for index in range(rng.randint(1, 8)))
    zones = ZONES[: rng.randint(1, 3)]
    consumer_zones = {
        consumer: rng.choice([*zones, None]) for consumer in consumers if rng.random() < 0.9
    }
    queue_zones = {
        queue: frozenset(rng.sample(zones, rng.randint(0, len(zones)))) for queue in queues
    }
    weights = {queue: 1.0 / rng.randint(1, 50) for queue in queues}
    return Step(0, "initial", queues, consumers, 0, 0, 0, 0, consumer_zones, queue_zones, weights)


def _plan(rng: random.Random, queues: tuple[int, ...], consumers: tuple[str, ...]) -> Any:
    plan: dict[str, list[int]] = {consumer: [] for consumer in consumers if rng.random() < 0.9}
    holders = list(plan) or [consumers[0]]
    for queue in queues:
        plan.setdefault(rng.choice(holders), []).append(queue)
    return plan


@given(st.integers(0, 2**32 - 1))
def test_the_fewest_cross_zone_count_cached_by_shape_is_the_one_computed_anew(seed: int) -> None:
    rng = random.Random(seed)
    step = _step(rng)
    zone_of = placement_scores.zone_of_each(step.consumers, step.consumer_zones or {})
    zones_of = placement_scores.zones_of_each(step.queues, step.queue_zones or {})
    members = {zone for zone in zone_of.values() if zone is not None}
    counts = (
        len(step.queues),
        len(step.consumers),
        frozenset({zone: list(zone_of.values()).count(zone) for zone in members}.items()),
        frozenset(
            {
                kind: [zones & members for zones in zones_of.values()].count(kind)
                for kind in {frozenset(zones & members) for zones in zones_of.values()}
            }.items()
        ),
    )
    uncached = placement_scores.fewest_cross_zone_of_counts.__wrapped__(*counts)
    assert placement_scores.fewest_cross_zone_of_counts(*counts) == uncached
    assert (
        placement_scores.fewest_cross_zone(
            step.queues, step.consumers, step.consumer_zones or {}, step.queue_zones or {}
        )
        == uncached
    )


@given(st.integers(0, 2**32 - 1))
def test_a_steps_placement_scores_are_the_reference_functions_bit_for_bit(seed: int) -> None:
    rng = random.Random(seed)
    step = _step(rng)
    placement = StepPlacement(step, Group.of(step, None, None))
    plan = _plan(rng, step.queues, step.consumers)
    departed = ("c-gone",)  # a consumer of the previous plan that left
    previous: Any = _plan(
        rng, step.queues[: rng.randint(0, len(step.queues))], step.consumers + departed
    )
    if previous and rng.random() < 0.2:  # a previous plan holding a queue twice: refused
        previous[next(iter(previous))].append(step.queues[0])
        previous.setdefault("c-gone", []).append(step.queues[0])
    found = placement.scores(previous, plan)
    zones, replicas, weights = step.consumer_zones or {}, step.queue_zones or {}, step.weights
    assert weights is not None
    whole = {consumer: plan.get(consumer, []) for consumer in step.consumers}
    crossing = placement_scores.cross_zone_count(whole, zones, replicas)
    fewest = placement_scores.fewest_cross_zone(step.queues, step.consumers, zones, replicas)
    assert found.cross_zone_fraction == crossing / len(step.queues)
    assert found.cross_zone_gap == (crossing - fewest) / len(step.queues)
    ratio = placement_scores.load_ratio(whole, weights)
    bound = placement_scores.load_ratio_bound(step.queues, step.consumers, weights)
    assert found.load_ratio == ratio
    assert found.load_ratio_gap == (None if ratio is None or bound is None else ratio - bound)
    try:
        kept = placement_scores.load_kept(previous, whole, weights)
        moved = placement_scores.load_moved(previous, whole, weights)
    except ValueError:
        assert (found.load_kept, found.load_moved) == (None, None)
    else:
        total = math.fsum(weights[queue] for queue in step.queues)
        assert found.load_kept == kept
        assert found.load_moved == moved / total
