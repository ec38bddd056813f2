"""Scenarios: generated from (base_seed, index) alone, lazily, within their settings."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rebalancing.contract import SortedIds, sorted_distinct_ids
from rebalancing.evaluation.scenarios.changes import (
    CHANGE_KINDS,
    INITIAL,
    KINDS,
    WEIGHT_KINDS,
    ZONE_KINDS,
    Scenario,
    ScenarioSettings,
    Step,
    change_kind,
    generate_scenarios,
)

# Digest of the steps of scenarios 0..19 of base seed 7: pins generation to the same values on
# every machine and process. A deliberate change of the generator updates it (and says so):
# last when the churn kinds (rolling_restart, autoscaling, flapping) joined the default mix.
GOLDEN_DIGEST = "6a32859ec56fb117b3e41d6241bbfc1c44b9f7a10df512c9e077ba81fa240378"

_DIGEST_PROGRAM = """
import hashlib, json
from rebalancing.evaluation.scenarios.changes import generate_scenarios
digest = hashlib.sha256()
for scenario in generate_scenarios(7, range(20)):
    for step in scenario.steps():
        digest.update(json.dumps([step.index, step.kind, step.queues, step.consumers, step.joined,
                                  step.departed, step.queues_added, step.queues_removed]).encode())
print(digest.hexdigest())
"""


@pytest.mark.parametrize("hash_seed", ["0", "1", "987654"])
def test_scenarios_are_the_same_in_every_process(hash_seed: str) -> None:
    completed = subprocess.run(
        [sys.executable, "-c", _DIGEST_PROGRAM],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": hash_seed},
    )
    assert completed.stdout.strip() == GOLDEN_DIGEST


def _steps(base_seed: int, index: int, settings: ScenarioSettings | None = None) -> list[Step]:
    return list(Scenario(base_seed, index, settings or ScenarioSettings()).steps())


@given(st.integers(0, 2**63), st.integers(0, 10**9))
def test_same_seed_and_index_give_the_same_scenario(base_seed: int, index: int) -> None:
    assert _steps(base_seed, index) == _steps(base_seed, index)


def test_different_indices_give_different_scenarios() -> None:
    starts = {(len(s[0].queues), s[0].consumers) for s in (_steps(1, i) for i in range(50))}
    assert len(starts) == 50


def test_steps_are_generated_lazily() -> None:
    steps = Scenario(1, 0).steps()
    assert isinstance(steps, Iterator)
    assert next(steps).kind == INITIAL


@given(st.integers(0, 1000), st.integers(0, 1000))
def test_every_step_is_a_valid_non_empty_group_that_matches_its_change(
    base_seed: int, index: int
) -> None:
    settings = ScenarioSettings(queue_range=(1, 300), consumer_range=(1, 40))
    steps = _steps(base_seed, index, settings)
    first = steps[0]
    assert first.index == 0
    assert first.kind == INITIAL
    assert 1 <= len(first.queues) <= 300
    assert 1 <= len(first.consumers) <= 40
    assert len(steps) >= 2
    for step in steps:  # sorted and distinct, as SortedIds.of_sorted trusts the generator
        for ids, kind in ((step.queues, "queue"), (step.consumers, "consumer")):
            assert type(ids) is SortedIds
            assert list(ids) == sorted_distinct_ids(tuple(ids), kind)
    for before, after in itertools.pairwise(steps):
        assert after.index == before.index + 1
        if set(after.queues) == set(before.queues):  # the very same object: nothing to check
            assert after.queues is before.queues
        assert after.kind in CHANGE_KINDS
        assert len(set(after.queues)) == len(after.queues) >= 1
        assert len(set(after.consumers)) == len(after.consumers) >= 1
        assert list(after.consumers) == sorted(after.consumers)
        assert after.joined == len(set(after.consumers) - set(before.consumers))
        assert after.departed == len(set(before.consumers) - set(after.consumers))
        assert after.queues_added == len(set(after.queues) - set(before.queues))
        assert after.queues_removed == len(set(before.queues) - set(after.queues))
        changed = (after.joined, after.departed, after.queues_added, after.queues_removed)
        assert any(changed), "every step changes the group"


def test_sizes_are_skewed_towards_small_groups_but_reach_large_ones() -> None:
    sizes = sorted(len(_steps(3, index)[0].queues) for index in range(400))
    assert sizes[len(sizes) // 2] < 4096 // 8, "the median group is small"
    assert sizes[-1] > 4096 // 4, "large groups occur"


def test_change_weights_choose_the_mix() -> None:
    settings = ScenarioSettings(change_weights={"leave": 1.0})
    kinds = {step.kind for index in range(30) for step in _steps(5, index, settings)[1:]}
    # A group of one consumer cannot lose one: it gets a join instead.
    assert kinds <= {"leave", "join"}
    assert "leave" in kinds


def test_generate_scenarios_covers_the_index_range() -> None:
    scenarios = list(generate_scenarios(9, range(5, 8)))
    assert [scenario.index for scenario in scenarios] == [5, 6, 7]
    assert all(scenario.base_seed == 9 for scenario in scenarios)


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"queue_range": (0, 5)}, ValueError, "queue_range"),
        ({"consumer_range": (9, 3)}, ValueError, "consumer_range"),
        ({"change_count_range": (1.5, 3)}, TypeError, "change_count_range"),
        ({"change_weights": {"explode": 1.0}}, ValueError, "unknown change kind 'explode'"),
        ({"change_weights": {"join": -1.0}}, ValueError, "weight of change kind 'join'"),
        ({"change_weights": {"join": 0.0}}, ValueError, "at least one change kind"),
    ],
)
def test_bad_settings_are_rejected_naming_the_setting(
    arguments: dict[str, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        ScenarioSettings(**arguments)  # type: ignore[arg-type]


def _one_change(kind: str, index: int, consumers: tuple[int, int] = (2, 40)) -> list[Step]:
    settings = ScenarioSettings(
        queue_range=(1, 50),
        consumer_range=consumers,
        change_count_range=(1, 1),
        change_weights={kind: 1.0},
    )
    return _steps(11, index, settings)


@pytest.mark.parametrize("index", range(20))
def test_a_rolling_restart_takes_every_consumer_out_and_back_once_a_quarter_at_a_time(
    index: int,
) -> None:
    first, *restart = _one_change("rolling_restart", index)
    batch = -(-len(first.consumers) // 4)
    assert len(restart) == 2 * -(-len(first.consumers) // batch)
    restarted: list[str] = []
    for leaving, returning in zip(restart[::2], restart[1::2], strict=True):
        gone = set(first.consumers) - set(leaving.consumers)
        assert 1 <= len(gone) <= batch
        restarted += gone
        assert (leaving.departed, leaving.joined) == (len(gone), 0)
        assert returning.consumers == first.consumers  # back under the same ids
        assert (returning.departed, returning.joined) == (0, len(gone))
        assert {leaving.kind, returning.kind} == {"rolling_restart"}
    assert sorted(restarted) == sorted(first.consumers)


def _autoscaling(index: int) -> tuple[Step, list[Step]]:
    """The starting group and the steps of one autoscaling change (groups of 1 to 40)."""
    first, *scaling = _one_change("autoscaling", index, consumers=(1, 40))
    return first, scaling


@settings(max_examples=1000)
@given(st.integers(0, 10**9))
@example(index=0)
def test_autoscaling_takes_two_to_four_steps_one_way_of_one_size(index: int) -> None:
    first, scaling = _autoscaling(index)
    assert 2 <= len(scaling) <= 4
    sizes = {step.joined + step.departed for step in scaling}
    assert len(sizes) == 1
    (size,) = sizes
    assert 2 <= size <= max(2, len(first.consumers) // 4)
    assert all(step.joined == 0 for step in scaling) or all(step.departed == 0 for step in scaling)
    counts = [len(step.consumers) for step in [first, *scaling]]
    assert all(abs(after - before) == size for before, after in itertools.pairwise(counts))
    assert all(step.consumers and step.kind == "autoscaling" for step in scaling)


def test_autoscaling_scales_in_where_two_steps_leave_a_consumer_and_out_elsewhere() -> None:
    directions: dict[str, list[int]] = {"in": [], "out": []}
    for index in range(400):
        first, scaling = _autoscaling(index)
        size = scaling[0].joined + scaling[0].departed
        directions["in" if scaling[0].departed else "out"].append(len(first.consumers) - 2 * size)
    assert min(directions["in"]) >= 1  # two steps in leave a consumer at least
    assert len(directions["in"]) > 100  # about half of the groups large enough
    assert min(directions["out"]) < 1  # the groups too small to scale in scale out


@pytest.mark.parametrize("index", range(20))
def test_a_flapping_consumer_crashes_and_rejoins_under_its_id_again_and_again(index: int) -> None:
    first, *flaps = _one_change("flapping", index)
    assert 4 <= len(flaps) <= 10
    gone = {
        consumer for step in flaps[::2] for consumer in set(first.consumers) - set(step.consumers)
    }
    assert len(gone) == 1
    assert all(step.consumers == first.consumers for step in flaps[1::2])


def test_the_churn_kinds_need_two_consumers_and_a_single_one_gets_a_join() -> None:
    for kind in ("rolling_restart", "flapping"):
        steps = _one_change(kind, 0, consumers=(1, 1))
        assert [step.kind for step in steps[1:]] == ["join"]


def test_every_change_kind_is_one_entry_of_the_table_that_the_settings_and_generator_read() -> None:
    assert tuple(KINDS) == CHANGE_KINDS
    assert {name for name, kind in KINDS.items() if kind.needs == "zones"} == ZONE_KINDS
    assert {name for name, kind in KINDS.items() if kind.needs == "weights"} == WEIGHT_KINDS
    assert all(name == kind.name for name, kind in KINDS.items())


@pytest.mark.parametrize("name", ["", "Join", "mixd", "join ", None])
def test_an_unknown_change_kind_is_an_error_naming_it_never_a_mixed_change(name: object) -> None:
    with pytest.raises(ValueError, match=r"unknown change kind .*known: join, join_burst"):
        change_kind(name)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown change kind"):
        ScenarioSettings(change_weights={name: 1.0})  # type: ignore[dict-item]


@given(st.integers(0, 2**32), st.integers(0, 500))
@settings(max_examples=60, deadline=None)
def test_each_kind_makes_steps_of_its_own_kind(base_seed: int, index: int) -> None:
    every_kind = ScenarioSettings(
        queue_range=(1, 40), consumer_range=(1, 12), zone_range=(1, 3), weights="hot"
    )
    for step in Scenario(base_seed, index, every_kind).steps():
        assert step.kind == "initial" or step.kind in KINDS
