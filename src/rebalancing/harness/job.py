"""The Spark glue of the harness (the only module that imports pyspark).

spark.range(n) of scenario indices -> mapInArrow, where each partition scores its scenarios
with the pure-Python core and hands back Arrow batches -> aggregates per strategy and change
kind (and per strategy over all changes) -> Parquet, summary.md, summary.csv, run.json.
Means and standard deviations come from exact decimal sums, and percentiles and maxima do not
depend on order, so every aggregate but the timings is the same for any partitioning.
"""

from __future__ import annotations

import functools
import os
import platform
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyspark
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention

import rebalancing
from rebalancing.evaluation.aggregates import ALL_CHANGES, METRICS
from rebalancing.evaluation.scenarios import ScenarioSettings
from rebalancing.harness.columns import SPARK_DDL, score_index_batches
from rebalancing.harness.options import HarnessOptions
from rebalancing.harness.reports import write_reports

SCENARIOS_PER_PARTITION = 10_000
"""Default partition size: a task of about a minute, so a long run's progress bar moves and a
slow task does not hold the last core idle for long."""

EXACT_PERCENTILES_UP_TO = 200_000
"""Above this many scenarios, percentiles are approximate (percentile_approx, accuracy 10^5):
exact ones hold every value of a group in one task's memory."""


def build_session(options: HarnessOptions) -> SparkSession:
    """The session: `--master` if given; spark-submit's when submitted; else local[*]."""
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


def ship_package(spark: SparkSession) -> None:
    """Zip the rebalancing package and add it to the executors' Python path, so that a cluster
    whose executors do not have it installed runs the job unchanged."""
    package_dir = Path(rebalancing.__file__).parent
    archive = Path(tempfile.mkdtemp(prefix="rebalancing-")) / "rebalancing.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        for path in package_dir.rglob("*.py"):
            bundle.write(path, path.relative_to(package_dir.parent))
    spark.sparkContext.addPyFile(str(archive))


def _score_partition(
    batches: Iterator[pa.RecordBatch],
    base_seed: int,
    strategy_names: tuple[str, ...],
    settings: ScenarioSettings,
    scenarios_per_batch: int,
) -> Iterator[pa.RecordBatch]:
    index_batches = (batch.column("id").to_pylist() for batch in batches)
    yield from score_index_batches(
        index_batches, base_seed, strategy_names, settings, scenarios_per_batch
    )


def default_partitions(scenarios: int, parallelism: int) -> int:
    """Twice the cores, or more for big runs: at most SCENARIOS_PER_PARTITION per partition."""
    return max(2 * parallelism, -(-scenarios // SCENARIOS_PER_PARTITION))


def score_rows(spark: SparkSession, options: HarnessOptions, partitions: int) -> DataFrame:
    """One row per (scenario, step, strategy), computed in `partitions` partitions."""
    indices = spark.range(0, options.scenarios, numPartitions=partitions)
    scorer = functools.partial(
        _score_partition,
        base_seed=options.seed,
        strategy_names=options.strategies,
        settings=options.settings,
        scenarios_per_batch=options.scenarios_per_batch,
    )
    return indices.mapInArrow(scorer, SPARK_DDL)


def _metric_aggregates(metric: str, exact_percentiles: bool) -> list[Column]:
    value = F.col(metric).cast("double")
    exact = F.col(metric).cast("decimal(38,10)")
    count = F.count(value)
    total = F.sum(exact).cast("double")
    total_of_squares = F.sum((value * value).cast("decimal(38,10)")).cast("double")
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


def run(options: HarnessOptions, spark: SparkSession | None = None) -> str:
    """Run the whole job; returns the Markdown summary (also written to `options.out`)."""
    started = time.perf_counter()
    session = spark or build_session(options)
    master = session.sparkContext.master
    ship_package(session)
    partitions = options.partitions or default_partitions(
        options.scenarios, session.sparkContext.defaultParallelism
    )
    rows = score_rows(session, options, partitions)
    out = options.out.resolve()
    if options.raw:
        rows.write.mode("overwrite").parquet(str(out / "rows.parquet"))
        rows = session.read.parquet(str(out / "rows.parquet"))
    exact = options.scenarios <= EXACT_PERCENTILES_UP_TO
    aggregates = aggregate(rows, exact)
    aggregates.write.mode("overwrite").parquet(str(out / "aggregates.parquet"))
    collected = [
        row.asDict() for row in session.read.parquet(str(out / "aggregates.parquet")).collect()
    ]
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
