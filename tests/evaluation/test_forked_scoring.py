"""A comparison's batches scored in forked processes give the rows one process gives, in the
same order (the assign calls' measured microseconds aside), for plain strategies and for
strategies inside a protocol session, batch after batch in the same processes; a small batch is
scored by the reference engine, a large one by the kernels, with the same rows; a strategy
defined here (not importable by a child) is scored too; a bad number of workers is refused
naming it."""

from __future__ import annotations

from typing import Any

import pytest

from rebalancing.contract import Id
from rebalancing.evaluation.command.compare import (
    KERNEL_FROM,
    PARALLEL_FROM,
    ScenarioScoring,
    batch_engine,
    compare,
)
from rebalancing.evaluation.command.profile import Profile
from rebalancing.evaluation.scenarios.changes import ScenarioSettings
from rebalancing.evaluation.scoring.rows import ScoreRow
from rebalancing.strategies import Strategy

SMALL = ScenarioSettings(queue_range=(4, 24), consumer_range=(1, 6), change_count_range=(1, 4))

MEASURED = {"assign_micros"}
"""Row fields that are a clock's reading, not a score: they differ between any two runs."""


def scored(row: ScoreRow) -> dict[str, Any]:
    fields = row.__slots__ if hasattr(row, "__slots__") else tuple(vars(row))
    return {name: getattr(row, name) for name in fields if name not in MEASURED}


@pytest.mark.parametrize("system", ["kafka-cooperative", "rocketmq-client", "rabbitmq-sac"])
def test_forked_batches_give_the_rows_of_one_process_in_its_order(system: str) -> None:
    profile = Profile(system=system, scenarios=PARALLEL_FROM, seed=11, settings=SMALL)
    with (
        ScenarioScoring(profile, workers=1) as alone,
        ScenarioScoring(profile, workers=2) as forked,
    ):
        alone.score_to(profile.scenarios)
        forked.score_to(profile.scenarios)
    assert len(forked.rows) == len(alone.rows) > profile.scenarios
    assert [scored(row) for row in forked.rows] == [scored(row) for row in alone.rows]
    assert forked.scenario_means() == alone.scenario_means()


def first_consumer_takes_all(
    queues: list[Id], consumers: list[Id], previous: object
) -> dict[Id, list[Id]]:
    """A deliberately bad strategy defined in a test module: everything to the first."""
    plan: dict[Id, list[Id]] = {consumer: [] for consumer in consumers}
    if consumers:
        plan[sorted(consumers)[0]] = sorted(queues)
    return plan


def test_a_strategy_defined_in_the_callers_module_is_scored_in_the_children() -> None:
    mine = Strategy("first_takes_all", first_consumer_takes_all, "a test")
    profile = Profile(system="any", scenarios=PARALLEL_FROM, seed=5, settings=SMALL)
    with ScenarioScoring(profile, workers=2) as scoring:
        scoring.strategies = {"first_takes_all": mine}
        scoring.score_to(profile.scenarios)
    assert {row.strategy for row in scoring.rows} == {"first_takes_all"}
    assert any(row.balance_degree for row in scoring.rows)  # its plans, not another's


def test_later_batches_are_scored_in_the_processes_the_first_forked() -> None:
    profile = Profile(system="kafka-eager", scenarios=3 * PARALLEL_FROM, seed=3, settings=SMALL)
    with ScenarioScoring(profile, workers=1) as alone:
        alone.score_to(profile.scenarios)
    with ScenarioScoring(profile, workers=2) as forked:
        forked.score_to(PARALLEL_FROM)
        assert forked._pool is not None
        first = set(forked._pool._processes or {})
        forked.score_to(profile.scenarios)
        assert set(forked._pool._processes or {}) == first
        assert len(first) == 2
    assert forked._pool is None  # closed with the scoring
    assert [scored(row) for row in forked.rows] == [scored(row) for row in alone.rows]
    assert forked.scenario_means() == alone.scenario_means()


def test_a_small_batch_is_scored_by_the_reference_and_a_large_one_by_the_kernels() -> None:
    assert batch_engine(1) == batch_engine(KERNEL_FROM - 1) == "reference"
    assert batch_engine(KERNEL_FROM) is None  # the default: the kernels, numba being installed
    # the two engines give the same rows: scenarios 0..KERNEL_FROM-1 in one large batch, and
    # the same scenarios in small batches
    profile = Profile(system="rocketmq-broker", scenarios=KERNEL_FROM, seed=8, settings=SMALL)
    with ScenarioScoring(profile, workers=1) as large, ScenarioScoring(profile, workers=1) as small:
        large.score_to(KERNEL_FROM)
        for end in range(KERNEL_FROM // 4, KERNEL_FROM + 1, KERNEL_FROM // 4):
            small.score_to(end)
    assert [scored(row) for row in small.rows] == [scored(row) for row in large.rows]


@pytest.mark.parametrize("workers", [0, -1, 1.5, "2"])
def test_a_bad_number_of_workers_is_refused_naming_it(workers: Any) -> None:
    profile = Profile(system="any", scenarios=4, settings=SMALL)
    with pytest.raises(ValueError, match="workers must be a positive integer"):
        ScenarioScoring(profile, workers=workers)
    with pytest.raises(ValueError, match="workers"):
        compare(profile, workers=workers)
