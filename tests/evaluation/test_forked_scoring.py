"""A comparison's batches scored in forked processes give the rows one process gives, in the
same order (the assign calls' measured microseconds aside), for plain strategies and for
strategies inside a protocol session; a strategy defined here (not importable by a child) is
scored too; a bad number of workers is refused naming it."""

from __future__ import annotations

from typing import Any

import pytest

from rebalancing.contract import Id
from rebalancing.evaluation.command.compare import PARALLEL_FROM, ScenarioScoring, compare
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
    alone, forked = ScenarioScoring(profile, workers=1), ScenarioScoring(profile, workers=2)
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
    scoring = ScenarioScoring(profile, workers=2)
    scoring.strategies = {"first_takes_all": mine}
    scoring.score_to(profile.scenarios)
    assert {row.strategy for row in scoring.rows} == {"first_takes_all"}
    assert any(row.balance_degree for row in scoring.rows)  # its plans, not another's


@pytest.mark.parametrize("workers", [0, -1, 1.5, "2"])
def test_a_bad_number_of_workers_is_refused_naming_it(workers: Any) -> None:
    profile = Profile(system="any", scenarios=4, settings=SMALL)
    with pytest.raises(ValueError, match="workers must be a positive integer"):
        ScenarioScoring(profile, workers=workers)
    with pytest.raises(ValueError, match="workers"):
        compare(profile, workers=workers)
