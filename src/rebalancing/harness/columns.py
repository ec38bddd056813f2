"""Score rows as Arrow record batches: what the Spark partitions hand back, one batch per group
of scenarios (never one Python object per row through Spark).

This is the module the executors import (score_arrow_partition runs there): it needs pyarrow
and the scoring core only, not pyspark's session, matplotlib or the reports, so an executor's
Python needs no more than the scoring does.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import fields
from typing import Any

import pyarrow as pa

from rebalancing.evaluation.replay import ScoreRow, score_scenarios
from rebalancing.evaluation.scenarios import Scenario, ScenarioSettings
from rebalancing.evaluation.views import ViewSettings
from rebalancing.strategies import Strategy, resolve


def _arrow_type(annotation: Any) -> pa.DataType:
    text = str(annotation)
    if text.startswith("int"):
        return pa.int64()
    if text.startswith("float"):
        return pa.float64()
    if text.startswith("bool"):
        return pa.bool_()
    if text.startswith("str"):
        return pa.string()
    raise TypeError(f"no Arrow type for row field annotation {text!r}")


ROW_SCHEMA = pa.schema([pa.field(f.name, _arrow_type(f.type)) for f in fields(ScoreRow)])
"""The Arrow schema of a score row (every field nullable)."""

_SPARK_TYPES = {
    pa.int64(): "BIGINT",
    pa.float64(): "DOUBLE",
    pa.bool_(): "BOOLEAN",
    pa.string(): "STRING",
}
SPARK_DDL = ", ".join(f"{f.name} {_SPARK_TYPES[f.type]}" for f in ROW_SCHEMA)
"""The same schema as a Spark DDL string (so this module needs no pyspark import)."""


def rows_to_batch(rows: list[ScoreRow]) -> pa.RecordBatch:
    columns = {name: [getattr(row, name) for row in rows] for name in ROW_SCHEMA.names}
    return pa.RecordBatch.from_pydict(columns, schema=ROW_SCHEMA)


def score_index_batches(
    index_batches: Iterable[Iterable[int]],
    base_seed: int,
    strategy_specs: tuple[str, ...],
    settings: ScenarioSettings,
    scenarios_per_batch: int,
    views: str = "broker",
    view_settings: ViewSettings | None = None,
) -> Iterator[pa.RecordBatch]:
    """Score the scenarios of each batch of indices; one Arrow batch per `scenarios_per_batch`,
    each consumer on its own view with `views="client"` (rebalancing.evaluation.views).

    `strategy_specs` are resolved here, where the scoring runs (an executor): registered names,
    or `package.module:function` from a module shipped with the job. Rows carry each strategy's
    name (the spec itself for a bare function).
    """
    strategies = resolve_strategies(strategy_specs)
    pending: list[int] = []
    for indices in index_batches:
        pending.extend(indices)
        while len(pending) >= scenarios_per_batch:
            chunk, pending = pending[:scenarios_per_batch], pending[scenarios_per_batch:]
            yield _score_chunk(chunk, base_seed, strategies, settings, views, view_settings)
    if pending:
        yield _score_chunk(pending, base_seed, strategies, settings, views, view_settings)


def resolve_strategies(strategy_specs: tuple[str, ...]) -> dict[str, Strategy]:
    """Row label -> Strategy for each spec (see rebalancing.strategies.resolve)."""
    resolved = (resolve(spec) for spec in strategy_specs)
    return {strategy.name: strategy for strategy in resolved}


def _score_chunk(
    indices: list[int],
    base_seed: int,
    strategies: dict[str, Strategy],
    settings: ScenarioSettings,
    views: str,
    view_settings: ViewSettings | None,
) -> pa.RecordBatch:
    scenarios = (Scenario(base_seed, index, settings) for index in indices)
    return rows_to_batch(list(score_scenarios(scenarios, strategies, views, view_settings)))


def score_arrow_partition(
    batches: Iterator[pa.RecordBatch],
    base_seed: int,
    strategy_specs: tuple[str, ...],
    settings: ScenarioSettings,
    scenarios_per_batch: int,
    views: str = "broker",
    view_settings: ViewSettings | None = None,
) -> Iterator[pa.RecordBatch]:
    """The mapInArrow function: batches of scenario indices (column `id`) in, score rows out."""
    index_batches = (batch.column("id").to_pylist() for batch in batches)
    yield from score_index_batches(
        index_batches,
        base_seed,
        strategy_specs,
        settings,
        scenarios_per_batch,
        views,
        view_settings,
    )
