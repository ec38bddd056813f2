"""Scenarios with zones and weights (issue 33 §4): off by default and then the scenarios and their
aggregates are what they were; on, the placement change kinds keep their promises."""

from __future__ import annotations

import hashlib
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rebalancing.evaluation.scenarios.changes import (
    CHANGE_KINDS,
    Scenario,
    ScenarioSettings,
    Step,
    generate_scenarios,
)
from rebalancing.evaluation.scenarios.placement import (
    HOT_WEIGHT,
    REPLICATION_FACTOR,
    WEIGHT_DISTRIBUTIONS,
)
from rebalancing.evaluation.scoring.aggregates import METRICS, summarise
from rebalancing.evaluation.scoring.replay import score_scenarios
from rebalancing.strategies import STRATEGIES

SMALL = ScenarioSettings(queue_range=(1, 60), consumer_range=(1, 12), change_count_range=(1, 5))

# Computed on main before placement existed (commit 142dc01): the default scenario streams and
# the aggregates of a small run, every metric of then but the timings.
SCENARIOS_SEED_1 = "a74b0e278facd6c7dca9510af4c19945"
SMALL_SCENARIOS_SEED_7 = "9f9e41529cba0df3ecdbf4f6af427a24"
# The same digest without SAC's time on crashes (and so on `all`), which 0.2.0 changed on
# purpose: a crashed consumer's queues now wait for the broker's heartbeat detection (recomputed
# the same at 79a7992, before that change, and after it).
SMALL_SUMMARY_SEED_5 = "6d930861af2e0eeb6040979490d61141"
METRICS_BEFORE = METRICS[: METRICS.index("queue_seconds_doubly_owned") + 1]
CRASH_TIMED = {"seconds_to_balance", "queue_seconds_unowned", "queue_seconds_doubly_owned"}


def _scenario_digest(seed: int, count: int, chosen: ScenarioSettings | None = None) -> str:
    digest = hashlib.blake2b(digest_size=16)
    for scenario in generate_scenarios(seed, range(count), chosen):
        for step in scenario.steps():
            membership = (step.index, step.kind, tuple(step.queues), tuple(step.consumers))
            counts = (step.joined, step.departed, step.queues_added, step.queues_removed)
            digest.update(repr(membership + counts).encode())
    return digest.hexdigest()


def test_the_default_scenarios_are_those_of_before_placement() -> None:
    assert _scenario_digest(1, 300) == SCENARIOS_SEED_1
    assert _scenario_digest(7, 300, SMALL) == SMALL_SCENARIOS_SEED_7


def test_the_default_aggregates_are_those_of_before_placement() -> None:
    names = ("averagely", "sticky", "round_robin", "sac")
    rows = score_scenarios(
        generate_scenarios(5, range(40), SMALL),
        {name: STRATEGIES[name] for name in names},
        engine="reference",
    )
    digest = hashlib.blake2b(digest_size=16)
    for key, metrics in summarise(rows).items():
        for metric in METRICS_BEFORE:
            sac_crash_time = key[0] == "sac" and key[1] in ("crash", "all")
            if metric != "assign_micros" and not (sac_crash_time and metric in CRASH_TIMED):
                digest.update(repr((key, metric, metrics[metric])).encode())
    assert digest.hexdigest() == SMALL_SUMMARY_SEED_5


def test_without_placement_steps_carry_no_maps() -> None:
    for step in Scenario(3, 4, SMALL).steps():
        assert (step.consumer_zones, step.queue_zones, step.weights) == (None, None, None)


def test_zones_alone_leave_the_membership_draws_as_they_were() -> None:
    """Placement draws from a stream of its own: without its change kinds in the mix, a
    scenario with zones and weights has the same groups as without."""
    plain = {kind: 1.0 for kind in CHANGE_KINDS[:10]}
    without = ScenarioSettings(queue_range=(1, 60), consumer_range=(1, 12), change_weights=plain)
    with_placement = ScenarioSettings(
        queue_range=(1, 60),
        consumer_range=(1, 12),
        change_weights=plain,
        zone_range=(2, 3),
        weights="zipf",
    )
    assert _scenario_digest(2, 60, without) == _scenario_digest(2, 60, with_placement)


PLACED = st.builds(
    ScenarioSettings,
    queue_range=st.just((1, 40)),
    consumer_range=st.just((1, 10)),
    change_count_range=st.just((1, 6)),
    change_weights=st.just(dict.fromkeys(CHANGE_KINDS, 1.0) | {"zone_recovery": 4.0}),
    zone_range=st.sampled_from([(2, 3), (1, 4), (3, 3)]),
    weights=st.sampled_from(WEIGHT_DISTRIBUTIONS),
)


def _steps(seed: int, index: int, chosen: ScenarioSettings) -> list[Step]:
    return list(Scenario(seed, index, chosen).steps())


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6), st.integers(0, 10**6), PLACED)
def test_placement_changes_keep_their_promises(
    seed: int, index: int, chosen: ScenarioSettings
) -> None:
    steps = _steps(seed, index, chosen)
    out: dict[str, list[str]] = {}
    for before, step in itertools.pairwise(steps):
        assert step.consumer_zones is not None
        assert step.queue_zones is not None
        assert step.weights is not None
        zones = step.consumer_zones
        if step.kind == "zone_outage":
            assert step.queues is before.queues or step.queues == before.queues
            left = set(before.consumers) - set(step.consumers)
            (zone,) = {zones[consumer] for consumer in left}
            assert left == {c for c in before.consumers if zones[c] == zone}
            assert set(step.consumers) < set(before.consumers)
            assert step.consumers
            assert step.departed == len(left)
            out = {zone: sorted(left)}
        elif step.kind == "zone_recovery":
            ((zone, gone),) = out.items()
            assert sorted(set(step.consumers) - set(before.consumers)) == gone
            assert set(before.consumers) <= set(step.consumers)
            assert step.joined == len(gone)
            out = {}
        elif step.kind == "load_shift":
            assert step.consumers == before.consumers
            assert step.queues == before.queues
            assert step.consumer_zones is before.consumer_zones
            assert step.weights is not before.weights
            changed = [q for q in step.queues if step.weights[q] != before.weights[q]]
            assert changed
            if chosen.weights == "hot":
                hot = [q for q in step.queues if step.weights[q] == HOT_WEIGHT]
                assert len(hot) == 1
                assert hot[0] in changed
            else:
                assert all(step.weights[q] > before.weights[q] for q in changed)
        elif out:  # nobody joins the zone that is out
            (zone,) = out
            joined = set(step.consumers) - set(before.consumers) - set(out[zone])
            assert all(zones[consumer] != zone for consumer in joined)
        if step.kind != "load_shift" and step.queues is before.queues:
            assert step.weights is before.weights
            assert step.queue_zones is before.queue_zones


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10**6), st.integers(0, 10**6), PLACED)
def test_every_member_and_queue_is_placed_within_the_settings(
    seed: int, index: int, chosen: ScenarioSettings
) -> None:
    assert chosen.zone_range is not None
    _low, high = chosen.zone_range
    steps = _steps(seed, index, chosen)
    zones_seen: set[str] = set()
    for step in steps:
        assert step.consumer_zones is not None
        assert step.queue_zones is not None
        assert step.weights is not None
        for queue in step.queues:
            held = step.queue_zones[queue]
            assert 1 <= len(held) <= REPLICATION_FACTOR
            zones_seen |= held
            assert step.weights[queue] >= 0
        zones_seen |= {step.consumer_zones[consumer] for consumer in step.consumers}
        with pytest.raises(TypeError):
            step.weights[step.queues[0]] = 1.0  # type: ignore[index]
    assert len(zones_seen) <= high
    if chosen.weights == "hot":
        first = steps[0]
        assert first.weights is not None
        assert sorted(first.weights[q] for q in first.queues)[-1] == HOT_WEIGHT


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**63), st.integers(0, 10**9), PLACED)
def test_the_same_seed_gives_the_same_placement(
    seed: int, index: int, chosen: ScenarioSettings
) -> None:
    assert _steps(seed, index, chosen) == _steps(seed, index, chosen)


def test_the_placement_kinds_occur_and_only_with_placement() -> None:
    kinds = {"zone_outage", "zone_recovery", "load_shift"}
    placed = ScenarioSettings(
        queue_range=(1, 40), consumer_range=(2, 10), zone_range=(2, 3), weights="uniform"
    )
    seen = {step.kind for s in generate_scenarios(1, range(200), placed) for step in s.steps()}
    assert kinds <= seen
    plain = {step.kind for s in generate_scenarios(1, range(200), SMALL) for step in s.steps()}
    assert not kinds & plain


def test_zipf_weights_are_skewed_by_rank() -> None:
    chosen = ScenarioSettings(queue_range=(50, 50), consumer_range=(3, 3), weights="zipf")
    first = next(Scenario(1, 0, chosen).steps())
    assert first.weights is not None
    assert sorted(first.weights.values(), reverse=True) == [1 / rank for rank in range(1, 51)]


@pytest.mark.parametrize(
    ("given", "culprit"),
    [
        ({"zone_range": (0, 2)}, "zone_range"),
        ({"zone_range": (1, 99)}, "zone_range"),
        ({"weights": "pareto"}, "unknown weights 'pareto'"),
        ({"change_weights": {"zone_outage": 1.0}}, "zone_outage"),
        ({"change_weights": {"load_shift": 1.0}, "zone_range": (2, 3)}, "load_shift"),
    ],
)
def test_bad_placement_settings_name_the_culprit(given: dict[str, object], culprit: str) -> None:
    with pytest.raises(ValueError, match=culprit):
        ScenarioSettings(**given)  # type: ignore[arg-type]
