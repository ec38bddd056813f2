"""The Spark glue of the harness (the only module that imports pyspark).

spark.range(n) of scenario indices -> one mapInArrow, where each partition scores its scenarios
with the pure-Python core and counts the values of their rows itself (pyarrow and numpy:
rebalancing.harness.columns.count_values), handing Spark only a table of counts per partition
(how often each value of each metric occurs per strategy and change kind, and per size bucket),
not the rows -> Spark adds up the counts of each value over the partitions, per change kind
and over all of a strategy's changes (grouping sets), with exact sums -> per group, the
statistics -> Parquet, summary.md, summary.csv, run.json, figures, report.html. Counts of
values and exact decimal sums merge the same way however the rows are partitioned, so every
aggregate but the timings (counted by logarithmic bucket) is the same for any partitioning at
any scale, percentiles included. With `--raw` the rows are scored by a rows-producing
mapInArrow, written to rows.parquet, read back and counted by a mapInArrow of the same counting
function, so the aggregates are the same as without it.

The same job runs on an embedded local[*] Spark, under spark-submit on a cluster, and through a
Spark Connect server (`--remote sc://...`): the package and a user's strategy modules go to the
executors with the job (rebalancing.harness.shipping), and the driver collects only the
aggregates (a few dozen rows), which it writes itself, so its memory does not grow with the
number of scenarios and `--out` need not be on a filesystem the executors share (only `--raw`,
written by the executors, does).
"""

from __future__ import annotations

import functools
import importlib.util
import math
import os
import platform
import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pyspark
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention

from rebalancing.evaluation.command.profile import run_description
from rebalancing.evaluation.decision.verdict import Verdict
from rebalancing.evaluation.scoring.aggregates import ALL_CHANGES, METRICS, PERCENTILES, STATISTICS
from rebalancing.harness.columns import (
    COUNT_DDL,
    GROUP,
    ROW_SCHEMA,
    SPARK_DDL,
    TIMING_BUCKETS_PER_DECADE,
    TIMING_METRICS,
    count_partition,
    in_worker,
    score_and_count_partition,
    score_arrow_partition,
)
from rebalancing.harness.options import HarnessOptions
from rebalancing.harness.reports import write_reports
from rebalancing.harness.shipping import ShippingPlan, is_this_package, plan_shipping

LOOPBACK = "127.0.0.1"
"""The address the driver binds on an embedded local Spark (its ports and web UI stay private)."""

SCENARIOS_PER_PARTITION = 10_000
"""Default partition size: a task of about a minute, so a long run's progress bar moves and a
slow task does not hold the last core idle for long."""

WORKER_ALLOCATOR = {
    "MALLOC_MMAP_THRESHOLD_": str(32 << 20),
    "MALLOC_TRIM_THRESHOLD_": str(256 << 20),
    "MALLOC_TOP_PAD_": str(64 << 20),
}
"""glibc's allocator settings for the Python workers of an embedded local session (a variable
already in the environment wins): arrays of up to 32 MiB, such as the SAC kernel's FIFO columns
(4 MiB each at 4,096 queues x 256 apps), come from the heap and go back to it, instead of being
mapped fresh and faulted in page by page in every scenario; the heap keeps up to 256 MiB free.
On the million-scenario mix, `python benchmarks/worker_settings.py`: minor page faults per 600
scenarios 26,700 -> 5,100, CPU time 5% lower. A cluster's executors are left as their
operator set them. Set when the session is built (a SparkContext that already runs keeps its
own), over any spark.executorEnv.MALLOC_* of spark-defaults.conf."""

_ADDED_PY_FILES: set[tuple[str, str]] = set()
"""(application id, path) of every file this process has added with addPyFile: adding one
again only makes Spark warn (it never replaces a file an application has)."""


LOG_SETTINGS = Path(__file__).with_name("log4j2.properties")
"""The driver's log settings when Spark is embedded, from the JVM's first line: none of Spark's
start-up lines (Hadoop's NativeCodeLoader warning, the default level it sets) before the
verdict; the level is lowered to errors once the session is up."""


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
        # the driver's JVM starts with our log settings, quiet from its first line (see there)
        builder = builder.config(
            "spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={LOG_SETTINGS.as_uri()}"
        )
        if (options.master or "local[*]").startswith("local"):
            # the driver's ports and its web UI on the loopback address only (Spark picks the
            # first interface's otherwise); a caller's own SPARK_LOCAL_IP wins
            os.environ.setdefault("SPARK_LOCAL_IP", LOOPBACK)
            for name, value in WORKER_ALLOCATOR.items():
                builder = builder.config(f"spark.executorEnv.{name}", os.environ.get(name, value))
    # the stage progress bar only where a person watches a terminal: elsewhere (a log, CI) it
    # is noise mixed into the verdict
    builder = builder.config("spark.ui.showConsoleProgress", str(sys.stderr.isatty()).lower())
    session = builder.getOrCreate()
    if not submitted:
        # embedded, the terminal is the verdict's: Spark's warnings would bury it (under
        # spark-submit its own log settings stand, lost executors and tasks included)
        session.sparkContext.setLogLevel("ERROR")
    return session


def is_connect(session: SparkSession) -> bool:
    """Whether `session` drives a Spark Connect server (it has no SparkContext then)."""
    return type(session).__module__.startswith("pyspark.sql.connect")


def ship_to_executors(session: SparkSession, strategy_specs: tuple[str, ...]) -> ShippingPlan:
    """Put the rebalancing package and the user's strategy modules on the executors' Python path
    (addPyFile; addArtifacts over Spark Connect), so that executors without the project
    installed, and without a filesystem shared with the driver, run the job unchanged.

    On a local master (`local`, `local[...]`: the workers are this machine's, started from the
    driver's JVM) whose Python workers import the package from the driver's own files, the
    package is not shipped: imported from a zip that Spark puts in a new directory for every
    application, its numba kernels would be compiled afresh in every worker of every run (21 s
    of CPU each against 1 s from the cache, benchmarks/worker_settings.py; and a new directory
    in numba's cache each time); from those files they come from numba's cache. A worker is
    asked where it finds the package (one task, on the worker the job then reuses), so its own
    environment, working directory and Python path (spark.executorEnv, files added before)
    decide; any failure ships the package."""
    master = "" if is_connect(session) else (session.sparkContext.master or "")
    local = master == "local" or master.startswith("local[")
    drivers_copy = local and is_this_package(_worker_package_origin(session))
    plan = plan_shipping(strategy_specs, ship_package=not drivers_copy)
    for path in plan.files:
        if is_connect(session):
            session.addArtifacts(str(path), pyfile=True)
            continue
        context = session.sparkContext
        if (context.applicationId, str(path)) not in _ADDED_PY_FILES:  # once per application
            context.addPyFile(str(path))
            _ADDED_PY_FILES.add((context.applicationId, str(path)))
    return plan


def _package_origin(_: int) -> str | None:
    """Where this Python finds the rebalancing package (run on a worker)."""
    spec = importlib.util.find_spec("rebalancing")
    return spec.origin if spec is not None else None


def _worker_package_origin(session: SparkSession) -> str | None:
    """Where a Python worker of `session` finds the rebalancing package; None when it finds
    none or the question fails."""
    try:
        origins = session.sparkContext.parallelize([0], 1).map(_package_origin).collect()
    except Exception:  # any failure means: ship the package
        return None
    return origins[0] if origins else None


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


def _scorer(function: Any, options: HarnessOptions) -> Any:
    """`function` (a mapInArrow function over scenario indices) bound to the run's parameters."""
    return functools.partial(
        in_worker,
        function=function,
        base_seed=options.seed,
        strategy_specs=options.strategies,
        settings=options.settings,
        scenarios_per_batch=options.scenarios_per_batch,
        views=options.views,
        view_settings=options.view_settings,
        system=options.system,  # its candidates and the protocols they run inside
        static_membership=options.static_membership,  # with static members (Kafka's)
    )


def score_rows(spark: SparkSession, options: HarnessOptions, partitions: int) -> DataFrame:
    """One row per (scenario, step, strategy), computed in `partitions` partitions: what `--raw`
    writes (otherwise the partitions count the rows' values as they score them, score_counts)."""
    indices = spark.range(0, options.scenarios, numPartitions=partitions)
    return indices.mapInArrow(_scorer(score_arrow_partition, options), SPARK_DDL)


def score_counts(spark: SparkSession, options: HarnessOptions, partitions: int) -> DataFrame:
    """The counts of the values of the score rows (COUNT_SCHEMA), scored and counted in one
    mapInArrow over `partitions` partitions: a few count tables per partition, a value that
    several partitions hold in each of them."""
    indices = spark.range(0, options.scenarios, numPartitions=partitions)
    return indices.mapInArrow(_scorer(score_and_count_partition, options), COUNT_DDL)


def count_rows(rows: DataFrame) -> DataFrame:
    """The counts of the values of score rows already scored (`--raw`, read back from Parquet),
    by the same counting function as score_counts."""
    return rows.mapInArrow(functools.partial(in_worker, function=count_partition), COUNT_DDL)


SUM_COLUMNS = (
    "integral",
    "integral_square",
    "fraction",
    "fraction_square",
    "timing",
    "timing_square",
)
"""The sums of a value and of its square, in the one of three forms that fits the metric."""


def _is_integral(metric: str) -> bool:
    """Whether the row column `metric` holds integers or booleans (a size always does)."""
    return metric == "size" or not pa.types.is_floating(ROW_SCHEMA.field(metric).type)


INTEGRAL_METRICS = tuple(
    metric for metric in (*METRICS, "size") if metric not in TIMING_METRICS and _is_integral(metric)
)
FRACTION_METRICS = tuple(
    metric for metric in METRICS if metric not in TIMING_METRICS and not _is_integral(metric)
)


def value_counts(counts: DataFrame) -> DataFrame:
    """How often each value (key) of each metric occurs per group (GROUP), per change kind and
    over all of a strategy's changes (group ALL_CHANGES), with its exact sums, from the
    partitions' counts (score_counts or count_rows): counts merge the same way whatever the
    partitioning, so everything computed from them but the timings does not depend on it. The
    sums are taken from the counts, a table of distinct values."""
    # The partitions' counts of a value added up, per change kind and over every change (group
    # null in the second grouping set): one aggregation, one shuffle of the count tables.
    merged = counts.groupingSets(
        [["strategy", "facet", "group", "metric", "key"], ["strategy", "facet", "metric", "key"]],
        "strategy",
        "facet",
        "group",
        "metric",
        "key",
    ).agg(
        F.sum("count").alias("count"),
        F.max("timing_max").alias("timing_max"),
        F.sum("timing").alias("timing"),
        F.sum("timing_square").alias("timing_square"),
    )
    over_all = F.col("group").isNull()
    merged = merged.where(~over_all | (F.col("facet") == "change")).withColumn(
        "group", F.coalesce(F.col("group"), F.lit(ALL_CHANGES))
    )
    return merged.select(*GROUP, "key", "count", *_exact_sums(), "timing", "timing_square")


SECONDS_METRICS = (
    "seconds_to_balance",
    "queue_seconds_unowned",
    "queue_seconds_doubly_owned",
    "queue_seconds_paused",
)
"""The fractions that are a protocol's seconds, whose squares _exact_sums keeps wider."""


def _exact_sums() -> list[Column]:
    """The sums of a key's occurrences and of their squares, exactly: count times the key, as
    decimal(38,0) for integers (and booleans), as decimal(38,18) for fractions, where a value's
    rounding (5e-19) cannot reach the 1e-9 the variance, a small difference of large sums, must
    keep; the square of a protocol's seconds (SECONDS_METRICS) as decimal(30,15), so that
    queue-seconds in the tens of thousands (Event Hubs' 180 s expiry) square without overflow
    (rounding 5e-16 on a square a double holds to 1e-16 of itself). The square is taken in double
    (exact for integers below 2^26) and then cast, so each row adds the same exact number
    wherever it is counted. Keys up to 10^4.5 (fractions; 10^7.5 seconds) and 10^27 (integers),
    counts up to 10^10 per value and group. Also the maximum."""
    key, count = F.col("key"), F.col("count").cast("decimal(10,0)")
    square = key * key
    integral, fraction = (
        F.col("metric").isin(*INTEGRAL_METRICS),
        F.col("metric").isin(*FRACTION_METRICS),
    )
    seconds = F.col("metric").isin(*SECONDS_METRICS)
    return [
        F.when(integral, key.cast("decimal(27,0)") * count).alias("integral"),
        F.when(integral, square.cast("decimal(27,0)") * count).alias("integral_square"),
        F.when(fraction, key.cast("decimal(27,18)") * count).alias("fraction"),
        F.when(fraction & ~seconds, square.cast("decimal(27,18)") * count)
        .when(fraction & seconds, (square.cast("decimal(30,15)") * count).cast("decimal(38,18)"))
        .alias("fraction_square"),
        F.coalesce(F.col("timing_max"), key).alias("max"),
    ]


def distributions(counts: DataFrame) -> DataFrame:
    """Per group: the count, the exact sums, the maximum, and for each percentile the two values
    it lies between and the weight of the upper one (linear interpolation between closest ranks,
    as Spark's and numpy's exact percentiles), found by running sums over the sorted value
    counts. A few rows per group; `finish` turns them into statistics on the driver."""
    counted = value_counts(counts)
    through = Window.partitionBy(*GROUP).orderBy("key").rowsBetween(Window.unboundedPreceding, 0)
    ranked = counted.withColumn("through", F.sum("count").over(through)).withColumn(
        "total", F.sum("count").over(Window.partitionBy(*GROUP))
    )
    first_rank, last_rank = F.col("through") - F.col("count"), F.col("through") - 1
    columns = [
        F.sum("count").alias("count"),
        F.max("max").alias("max"),
        F.min("key").alias("min"),
        *[F.sum(name).alias(name) for name in SUM_COLUMNS],
    ]
    for name, fraction in PERCENTILES:
        position = (F.col("total") - 1).cast("double") * F.lit(fraction)
        lower = F.floor(position)
        upper = F.least(lower + 1, F.col("total") - 1)
        for end, rank in (("lower", lower), ("upper", upper)):
            holds_rank = (first_rank <= rank) & (rank <= last_rank)
            columns.append(F.max(F.when(holds_rank, F.col("key"))).alias(f"{name}_{end}"))
        columns.append(F.max(position - lower).alias(f"{name}_weight"))
    return ranked.groupBy(*GROUP).agg(*columns)


def _statistics(distribution: Mapping[str, Any]) -> dict[str, float | int | None]:
    """count, mean, stddev, the percentiles and max of one group's distribution row, with the
    arithmetic of rebalancing.evaluation.scoring.aggregates (sample standard deviation; the
    interpolated percentile lower * (1 - weight) + upper * weight)."""
    count = int(distribution["count"])
    sums = [
        distribution[name]
        for name in ("integral", "fraction", "timing")
        if distribution[name] is not None
    ]
    squares = [
        distribution[name]
        for name in ("integral_square", "fraction_square", "timing_square")
        if distribution[name] is not None
    ]
    total, total_of_squares = float(sums[0]), float(squares[0])
    variance = (total_of_squares - total * total / count) / (count - 1) if count > 1 else None
    statistics: dict[str, float | int | None] = {
        "count": count,
        "mean": total / count,
        "stddev": None if variance is None else math.sqrt(max(variance, 0.0)),
    }
    for name, _ in PERCENTILES:
        lower, upper = distribution[f"{name}_lower"], distribution[f"{name}_upper"]
        weight = distribution[f"{name}_weight"]
        statistics[name] = lower * (1 - weight) + upper * weight
    statistics["min"] = float(distribution["min"])
    statistics["max"] = float(distribution["max"])
    return statistics


def finish(
    distribution_rows: Sequence[Mapping[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The aggregate rows (one per strategy and change kind, columns `<metric>_<statistic>`,
    count 0 and the rest None for a metric without values), sorted; and the size-profile rows
    (strategy, facet, bucket, metric and the statistics), sorted."""
    empty = {"count": 0, **{name: None for name in STATISTICS[1:]}}
    wide: dict[tuple[str, str], dict[str, Any]] = {}
    profiles: list[dict[str, Any]] = []
    for distribution in distribution_rows:
        statistics = _statistics(distribution)
        strategy, group, metric = (distribution[key] for key in ("strategy", "group", "metric"))
        if distribution["facet"] == "change":
            row = wide.setdefault(
                (strategy, group),
                {
                    "strategy": strategy,
                    "change": group,
                    **{
                        f"{name}_{statistic}": value
                        for name in METRICS
                        for statistic, value in empty.items()
                    },
                },
            )
            row.update({f"{metric}_{name}": value for name, value in statistics.items()})
        else:
            profiles.append(
                {
                    "strategy": strategy,
                    "facet": distribution["facet"],
                    "bucket": int(group),
                    "metric": metric,
                    **statistics,
                }
            )
    profile_order = ("strategy", "facet", "bucket", "metric")
    return (
        [wide[key] for key in sorted(wide)],
        sorted(profiles, key=lambda row: tuple(row[key] for key in profile_order)),
    )


def _write_parquet(rows: Sequence[Mapping[str, Any]], schema: pa.Schema, target: Path) -> None:
    """`rows` as one Parquet file in the directory `target` (replaced), laid out as Spark does."""
    if target.is_dir():
        shutil.rmtree(target)
    elif target.exists():
        target.unlink()
    target.mkdir(parents=True)
    table = pa.Table.from_pylist(list(rows), schema=schema)
    pq.write_table(table, target / "part-00000.parquet")


AGGREGATE_SCHEMA = pa.schema(
    [pa.field("strategy", pa.string()), pa.field("change", pa.string())]
    + [
        pa.field(f"{metric}_{statistic}", pa.int64() if statistic == "count" else pa.float64())
        for metric in METRICS
        for statistic in STATISTICS
    ]
)
PROFILE_SCHEMA = pa.schema(
    [
        pa.field("strategy", pa.string()),
        pa.field("facet", pa.string()),
        pa.field("bucket", pa.int64()),
        pa.field("metric", pa.string()),
    ]
    + [
        pa.field(statistic, pa.int64() if statistic == "count" else pa.float64())
        for statistic in STATISTICS
    ]
)


def collect_aggregates(
    counts: DataFrame, out: Path
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Compute the distributions of the value counts `counts` once, bring them to the driver as
    Arrow (a few rows per strategy, change kind and metric, however many scenarios), and write
    the aggregates and the size profiles to `out`/aggregates.parquet and `out`/profiles.parquet
    from there."""
    aggregates, profiles = finish(distributions(counts).toArrow().to_pylist())
    _write_parquet(aggregates, AGGREGATE_SCHEMA, out / "aggregates.parquet")
    _write_parquet(profiles, PROFILE_SCHEMA, out / "profiles.parquet")
    return aggregates, profiles


def run(options: HarnessOptions, spark: SparkSession | None = None) -> Verdict:
    """Run the whole job, write its outputs into `options.out` and return the verdict."""
    started = time.perf_counter()
    session = spark or build_session(options)
    connect = is_connect(session)
    master = options.remote if connect else session.sparkContext.master
    shipping = ship_to_executors(session, options.strategies)
    partitions = options.partitions or default_partitions(
        options.scenarios, default_parallelism(session)
    )
    out = options.out.resolve()
    if options.raw:
        rows = score_rows(session, options, partitions)
        rows.write.mode("overwrite").parquet(str(out / "rows.parquet"))
        counts = count_rows(session.read.parquet(str(out / "rows.parquet")))
    else:
        counts = score_counts(session, options, partitions)
    aggregates, profiles = collect_aggregates(counts, out)
    wall = time.perf_counter() - started
    run_info: dict[str, Any] = {
        **run_description(options.profile),
        "partitions": partitions,
        "master": master,
        "spark_connect": connect,
        "shipped_to_executors": [path.name for path in shipping.files],
        "not_shipped": shipping.not_shipped,
        "percentiles": (
            "exact, from counts of each value (timings: from logarithmic buckets, "
            f"{TIMING_BUCKETS_PER_DECADE} a decade)"
        ),
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
    return write_reports(out, aggregates, run_info, options.profile, profiles)


def _package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rebalancing")
    except PackageNotFoundError:
        return "unknown"
