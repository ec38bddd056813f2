"""The Spark glue of the harness (the only module that imports pyspark).

spark.range(n) of scenario indices -> mapInArrow, where each partition scores its scenarios
with the pure-Python core and hands back Arrow batches -> aggregates per strategy and change
kind (and per strategy over all changes) -> Parquet, summary.md, summary.csv, run.json.
Means and standard deviations come from exact decimal sums, and percentiles and maxima do not
depend on order, so every aggregate but the timings is the same for any partitioning.

The same job runs on an embedded local[*] Spark, under spark-submit on a cluster, and through a
Spark Connect server (`--remote sc://...`): the package and a user's strategy modules go to the
executors with the job (rebalancing.harness.shipping), and the driver collects only the
aggregates (a few dozen rows), which it writes itself, so its memory does not grow with the
number of scenarios and `--out` need not be on a filesystem the executors share (only `--raw`,
written by the executors, does).
"""

from __future__ import annotations

import functools
import os
import platform
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pyspark
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention

from rebalancing.evaluation.aggregates import ALL_CHANGES, METRICS
from rebalancing.harness.columns import ROW_SCHEMA, SPARK_DDL, score_arrow_partition
from rebalancing.harness.options import HarnessOptions
from rebalancing.harness.reports import write_reports
from rebalancing.harness.shipping import ShippingPlan, plan_shipping

SCENARIOS_PER_PARTITION = 10_000
"""Default partition size: a task of about a minute, so a long run's progress bar moves and a
slow task does not hold the last core idle for long."""

EXACT_PERCENTILES_UP_TO = 200_000
"""Above this many scenarios, percentiles are approximate (percentile_approx, accuracy 10^5):
exact ones hold every value of a group in one task's memory."""


_ADDED_PY_FILES: set[tuple[str, str]] = set()
"""(application id, path) of every file this process has added with addPyFile: adding one
again only makes Spark warn (it never replaces a file an application has)."""


def build_session(options: HarnessOptions) -> SparkSession:
    """The session: a Spark Connect one for `--remote`; else `--master` if given, spark-submit's
    when submitted, local[*] otherwise."""
    if options.remote:
        return SparkSession.builder.remote(options.remote).appName("rebalancing-harness").create()
    builder = SparkSession.builder.appName("rebalancing-harness")
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ
    if options.master:
        builder = builder.master(options.master)
    elif not submitted:
        builder = builder.master("local[*]")
    if not submitted:  # embedded: the workers run this interpreter, with this environment
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = builder.config("spark.ui.showConsoleProgress", "true")
    return builder.getOrCreate()


def is_connect(session: SparkSession) -> bool:
    """Whether `session` drives a Spark Connect server (it has no SparkContext then)."""
    return type(session).__module__.startswith("pyspark.sql.connect")


def ship_to_executors(session: SparkSession, strategy_specs: tuple[str, ...]) -> ShippingPlan:
    """Put the rebalancing package and the user's strategy modules on the executors' Python path
    (addPyFile; addArtifacts over Spark Connect), so that executors without the project
    installed, and without a filesystem shared with the driver, run the job unchanged."""
    plan = plan_shipping(strategy_specs)
    for path in plan.files:
        if is_connect(session):
            session.addArtifacts(str(path), pyfile=True)
            continue
        context = session.sparkContext
        if (context.applicationId, str(path)) not in _ADDED_PY_FILES:  # once per application
            context.addPyFile(str(path))
            _ADDED_PY_FILES.add((context.applicationId, str(path)))
    return plan


def default_parallelism(session: SparkSession) -> int:
    """The cluster's default parallelism; over Spark Connect, which has no SparkContext, the
    number of partitions spark.range gets by default (a small job on the server)."""
    if not is_connect(session):
        return session.sparkContext.defaultParallelism
    partition_ids = session.range(0, 1 << 16).select(F.spark_partition_id().alias("partition"))
    counted = partition_ids.agg(F.count_distinct("partition").alias("partitions")).first()
    return int(counted["partitions"]) if counted else 1


def default_partitions(scenarios: int, parallelism: int) -> int:
    """Twice the cores, or more for big runs: at most SCENARIOS_PER_PARTITION per partition."""
    return max(2 * parallelism, -(-scenarios // SCENARIOS_PER_PARTITION))


def score_rows(spark: SparkSession, options: HarnessOptions, partitions: int) -> DataFrame:
    """One row per (scenario, step, strategy), computed in `partitions` partitions."""
    indices = spark.range(0, options.scenarios, numPartitions=partitions)
    scorer = functools.partial(
        score_arrow_partition,
        base_seed=options.seed,
        strategy_specs=options.strategies,
        settings=options.settings,
        scenarios_per_batch=options.scenarios_per_batch,
    )
    return indices.mapInArrow(scorer, SPARK_DDL)


TIMING_METRICS = frozenset({"assign_micros"})
"""Metrics that differ from run to run anyway: summed as doubles (no exactness to keep)."""


def _exact_sum_type(metric: str) -> str | None:
    """The decimal type whose sums of `metric` are exact: integers (and booleans) at scale 0;
    fractions at scale 18, where a value's rounding (5e-19) cannot reach the 1e-9 the
    variance, a small difference of large sums, must keep. None for a timing metric."""
    if metric in TIMING_METRICS:
        return None
    kind = ROW_SCHEMA.field(metric).type
    return "decimal(38,18)" if pa.types.is_floating(kind) else "decimal(38,0)"


def _metric_aggregates(metric: str, exact_percentiles: bool) -> list[Column]:
    """count, mean, stddev, p50/p95/p99 and max of one score column.

    The sums of values and of their squares (each squared in double, exactly for integers
    below 2^26) are decimals, so that they do not depend on the order the rows arrive in, and
    every aggregate but the timings is the same for any partitioning.
    """
    value = F.col(metric).cast("double")
    count = F.count(value)
    exact_type = _exact_sum_type(metric)
    if exact_type is None:
        total = F.sum(value)
        total_of_squares = F.sum(value * value)
    else:
        total = F.sum(F.col(metric).cast(exact_type)).cast("double")
        total_of_squares = F.sum((value * value).cast(exact_type)).cast("double")
    variance = (total_of_squares - total * total / count) / (count - 1)
    fractions = "array(0.5, 0.95, 0.99)"
    quantiles = (
        F.expr(f"percentile(CAST({metric} AS DOUBLE), {fractions})")
        if exact_percentiles
        else F.expr(f"percentile_approx(CAST({metric} AS DOUBLE), {fractions}, 100000)")
    )
    return [
        count.alias(f"{metric}_count"),
        (total / count).alias(f"{metric}_mean"),
        F.when(count > 1, F.sqrt(F.greatest(variance, F.lit(0.0)))).alias(f"{metric}_stddev"),
        quantiles.alias(f"{metric}_quantiles"),
        F.max(value).alias(f"{metric}_max"),
    ]


def aggregate(rows: DataFrame, exact_percentiles: bool) -> DataFrame:
    """Per (strategy, change) and per strategy over all changes (change = ALL_CHANGES)."""
    columns = [
        column for metric in METRICS for column in _metric_aggregates(metric, exact_percentiles)
    ]
    grouped = rows.rollup("strategy", "change").agg(*columns).where(F.col("strategy").isNotNull())
    selected = [F.col("strategy"), F.coalesce(F.col("change"), F.lit(ALL_CHANGES)).alias("change")]
    for metric in METRICS:
        selected += [F.col(f"{metric}_count"), F.col(f"{metric}_mean"), F.col(f"{metric}_stddev")]
        for position, name in enumerate(("p50", "p95", "p99")):
            selected.append(F.col(f"{metric}_quantiles")[position].alias(f"{metric}_{name}"))
        selected.append(F.col(f"{metric}_max"))
    # A few dozen rows: one partition sorted in place. A global orderBy would first run a sampling
    # job for its range boundaries, computing every percentile a second time.
    return grouped.select(*selected).repartition(1).sortWithinPartitions("strategy", "change")


def collect_aggregates(aggregates: DataFrame, out: Path) -> list[dict[str, Any]]:
    """Compute the aggregates once, bring them to the driver as Arrow (a few dozen rows, however
    many scenarios) and write them to `out`/aggregates.parquet from there."""
    table = aggregates.toArrow()
    target = out / "aggregates.parquet"
    if target.is_dir():
        shutil.rmtree(target)
    elif target.exists():
        target.unlink()
    target.mkdir(parents=True)
    pq.write_table(table, target / "part-00000.parquet")
    rows: list[dict[str, Any]] = table.to_pylist()
    return rows


def run(options: HarnessOptions, spark: SparkSession | None = None) -> str:
    """Run the whole job; returns the Markdown summary (also written to `options.out`)."""
    started = time.perf_counter()
    session = spark or build_session(options)
    connect = is_connect(session)
    master = options.remote if connect else session.sparkContext.master
    shipping = ship_to_executors(session, options.strategies)
    partitions = options.partitions or default_partitions(
        options.scenarios, default_parallelism(session)
    )
    rows = score_rows(session, options, partitions)
    out = options.out.resolve()
    if options.raw:
        rows.write.mode("overwrite").parquet(str(out / "rows.parquet"))
        rows = session.read.parquet(str(out / "rows.parquet"))
    exact = options.scenarios <= EXACT_PERCENTILES_UP_TO
    collected = collect_aggregates(aggregate(rows, exact), out)
    wall = time.perf_counter() - started
    run_info: dict[str, Any] = {
        "scenarios": options.scenarios,
        "seed": options.seed,
        "strategies": list(options.strategies),
        "queue_range": options.settings.queue_range,
        "consumer_range": options.settings.consumer_range,
        "change_count_range": options.settings.change_count_range,
        "change_weights": dict(options.settings.change_weights),
        "partitions": partitions,
        "master": master,
        "spark_connect": connect,
        "shipped_to_executors": [path.name for path in shipping.files],
        "not_shipped": shipping.not_shipped,
        "percentiles": "exact" if exact else "approximate (percentile_approx, accuracy 100000)",
        "raw_rows": options.raw,
        "wall_seconds": round(wall, 3),
        "scenarios_per_second": round(options.scenarios / wall, 2),
        "versions": {
            "python": platform.python_version(),
            "pyspark": pyspark.__version__,
            "pyarrow": pa.__version__,
            "rebalancing": _package_version(),
        },
        "cores": os.cpu_count(),
    }
    return write_reports(out, collected, run_info)


def _package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rebalancing")
    except PackageNotFoundError:
        return "unknown"
