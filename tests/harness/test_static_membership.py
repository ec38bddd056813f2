"""`--static-membership` on the Spark harness: the executors build each Kafka candidate's
protocol session with static members (KIP-345), so a run scores exactly the rows, and the
aggregates, that `rebalancing compare --engine local` scores for the same profile and seed.
On the session's local[2] Spark (tests/harness/conftest.py), in its xdist group."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from pyspark.sql import SparkSession

from rebalancing.evaluation.command.compare import ScenarioScoring
from rebalancing.evaluation.scoring.rows import ScoreRow
from rebalancing.harness.options import parse_options
from rebalancing.harness.reports import to_summary
from tests.harness.spark_runs import TIMINGS, run_without_reports

STATIC_RUN = (
    "--system",
    "kafka",
    "--static-membership",
    "--strategies",
    "eager:range,cooperative:cooperative_sticky,consumer:uniform",
    "--queues",
    "4:12",
    "--consumers",
    "2:5",
    "--changes",
    "1:3",
    "--mix",
    "rolling_restart=3,crash=1",
    "--scenarios",
    "12",
    "--seed",
    "5",
    "--partitions",
    "3",
)
"""A dozen small Kafka groups, rolling restarts most of their changes, each protocol once."""


def _comparable(row: dict[str, Any]) -> dict[str, Any]:
    """A score row without its timings (the only columns that differ from run to run)."""
    return {name: value for name, value in row.items() if not name.startswith(TIMINGS)}


def _order(row: dict[str, Any]) -> tuple[int, int, str]:
    return (row["scenario"], row["step"], row["strategy"])


def _local_rows(scoring: ScenarioScoring) -> list[dict[str, Any]]:
    rows: list[ScoreRow] = scoring.rows
    return sorted((_comparable(row.as_dict()) for row in rows), key=_order)


def test_a_static_run_on_spark_scores_the_rows_the_local_engine_scores(
    spark: SparkSession, tmp_path: Path
) -> None:
    options = parse_options([*STATIC_RUN, "--raw", "--out", str(tmp_path)])
    assert options.static_membership
    assert options.profile.static_membership
    run_without_reports(options, spark)
    from_spark = sorted(
        (_comparable(row) for row in pq.read_table(tmp_path / "rows.parquet").to_pylist()),
        key=_order,
    )
    local = ScenarioScoring(options.profile, workers=1)  # compare --engine local's scoring
    local.score_to(options.scenarios)
    assert from_spark == _local_rows(local)
    # the executors ran static members: a restart moves nothing, its partitions held for it
    restarts = [row for row in from_spark if row["change"] == "rolling_restart"]
    assert restarts
    assert all(row["moves"] == 0 and row["orphans"] == 0 for row in restarts)
    assert any(row["queue_seconds_unowned"] for row in restarts)  # the wait while it is down
    dynamic = ScenarioScoring(replace(options.profile, static_membership=False), workers=1)
    dynamic.score_to(options.scenarios)
    assert any(row.moves for row in dynamic.rows if row.change == "rolling_restart")
    # and the aggregates the verdict reads are the local engine's summary
    aggregates = pq.read_table(tmp_path / "aggregates.parquet").to_pylist()
    summary, expected = to_summary(aggregates), local.summary()
    assert summary.keys() == expected.keys()
    for group, metrics in expected.items():
        for metric, wanted in metrics.items():
            if metric.startswith(TIMINGS):
                continue
            got = summary[group][metric]
            assert got.count == wanted.count, (group, metric)
            for statistic in ("mean", "stddev", "p50", "p95", "p99", "max"):
                value, other = getattr(got, statistic), getattr(wanted, statistic)
                assert (value is None) == (other is None), (group, metric, statistic)
                if value is not None:
                    assert math.isclose(value, other, rel_tol=1e-9, abs_tol=1e-12), (
                        group,
                        metric,
                        statistic,
                    )
