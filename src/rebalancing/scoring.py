"""The pure-Python scoring core: scenarios in, one flat row of scores per rebalance out.

Each strategy runs through each scenario on its own: step 0 assigns from scratch, every later
step rebalances from the strategy's own previous plan. A row holds the scenario's coordinates,
the change, the group sizes, every score of rebalancing.scores, the wall time of the `assign`
call and, for protocol strategies (rebalancing.strategies.PROTOCOLS), the protocol cost:
releases, protocol steps, rounds and whether the protocol converged (None for the others).
The Spark harness runs exactly this code in its partitions; nothing here imports Spark.
Runtime complexity: per step and strategy, the strategy's own cost plus O(|Q| + |C| log |C|).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from rebalancing.contract import AssignFunction
from rebalancing.sac.schedulers import ProtocolRun
from rebalancing.scenarios import Scenario
from rebalancing.scores import Scores, score
from rebalancing.strategies import PROTOCOLS, ProtocolRunFunction


@dataclass(frozen=True)
class ScoreRow:
    """The scores of one strategy on one step of one scenario."""

    base_seed: int
    scenario: int
    step: int
    strategy: str
    change: str
    queue_count: int
    consumer_count: int
    joined: int
    departed: int
    queues_added: int
    queues_removed: int
    balance_degree: float | None
    spread: int
    stickiness: float | None
    optimal_stickiness: float | None
    stickiness_gap: float | None
    kept: int
    moves: int
    revocations: int
    orphans: int
    duplicates: int
    unknown_queues: int
    unknown_consumers: int
    assign_micros: float
    releases: int | None = None
    protocol_steps: int | None = None
    rounds: int | None = None
    converged: bool | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


ROW_FIELDS: tuple[str, ...] = tuple(field.name for field in fields(ScoreRow))
"""Column names of a row, in order."""


def score_scenario(
    scenario: Scenario,
    strategies: Mapping[str, AssignFunction],
    protocols: Mapping[str, ProtocolRunFunction] = PROTOCOLS,
) -> Iterator[ScoreRow]:
    """Rows for every (step, strategy) of `scenario`, step by step, strategies in name order.

    A strategy whose name is in `protocols` is run through that entry (the same strategy,
    reporting its protocol cost).
    """
    names = sorted(strategies)
    plans: dict[str, dict[Any, list[Any]] | None] = dict.fromkeys(names)
    for step in scenario.steps():
        for name in names:
            previous = plans[name]
            run: ProtocolRun | None = None
            started = time.perf_counter_ns()
            if name in protocols:
                run = protocols[name](step.queues, step.consumers, previous)
                plan = run.owners
            else:
                plan = strategies[name](step.queues, step.consumers, previous)
            elapsed = time.perf_counter_ns() - started
            plans[name] = plan
            scores: Scores = score(step.queues, step.consumers, previous, plan)
            yield ScoreRow(
                base_seed=scenario.base_seed,
                scenario=scenario.index,
                step=step.index,
                strategy=name,
                change=step.kind,
                queue_count=len(step.queues),
                consumer_count=len(step.consumers),
                joined=step.joined,
                departed=step.departed,
                queues_added=step.queues_added,
                queues_removed=step.queues_removed,
                assign_micros=elapsed / 1000,
                releases=run.releases if run else None,
                protocol_steps=run.steps if run else None,
                rounds=run.rounds if run else None,
                converged=run.converged if run else None,
                **vars(scores),  # its fields, without the deep copy asdict makes
            )


def score_scenarios(
    scenarios: Iterable[Scenario],
    strategies: Mapping[str, AssignFunction],
    protocols: Mapping[str, ProtocolRunFunction] = PROTOCOLS,
) -> Iterator[ScoreRow]:
    """Rows for every scenario in turn, lazily (one scenario's state in memory at a time)."""
    for scenario in scenarios:
        yield from score_scenario(scenario, strategies, protocols)
