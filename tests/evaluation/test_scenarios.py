"""Scenarios: generated from (base_seed, index) alone, lazily, within their settings."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rebalancing.evaluation.scenarios import (
    CHANGE_KINDS,
    INITIAL,
    Scenario,
    ScenarioSettings,
    Step,
    generate_scenarios,
)

# Digest of the steps of scenarios 0..19 of base seed 7: pins generation to the same values on
# every machine and process. A deliberate change of the generator updates it (and says so).
GOLDEN_DIGEST = "b82b9a0137e774555a003d7a3e8928b852642cb539cd77baa7b4b5df9e9c2527"

_DIGEST_PROGRAM = """
import hashlib, json
from rebalancing.evaluation.scenarios import generate_scenarios
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
    assert 2 <= len(steps) <= 1 + settings.change_count_range[1]
    for before, after in itertools.pairwise(steps):
        assert after.index == before.index + 1
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
