"""The Spark harness end to end, on a session-scoped local[2] Spark (tests/harness/conftest.py)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyspark import __version__ as pyspark_version
from pyspark.sql import SparkSession

from rebalancing.evaluation.command.compare import closing_lines
from rebalancing.evaluation.decision.systems import SYSTEM_VERDICTS
from rebalancing.evaluation.report.tables import markdown_table
from rebalancing.evaluation.scenarios.changes import generate_scenarios
from rebalancing.evaluation.scoring.aggregates import Aggregate, aggregate, summarise
from rebalancing.evaluation.scoring.replay import score_scenarios
from rebalancing.harness.job import default_partitions, distributions, run, score_counts
from rebalancing.harness.options import HarnessOptions, ParameterError, parse_options
from rebalancing.harness.reports import to_summary
from rebalancing.strategies import DEFAULT_STRATEGIES, STRATEGIES
from tests.harness.spark_runs import run_without_reports

DEFAULTS = {name: STRATEGIES[name] for name in DEFAULT_STRATEGIES}

SMALL = ["--queues", "1:120", "--consumers", "1:24", "--changes", "1:4"]
TIMINGS = ("assign_micros",)


def _aggregates(out: Path) -> list[dict[str, Any]]:
    table = pq.read_table(out / "aggregates.parquet")
    return sorted(table.to_pylist(), key=lambda row: (row["strategy"], row["change"]))


def _assert_close(actual: Aggregate, expected: Aggregate, context: object) -> None:
    """Equal counts; every other statistic equal up to the last bits of a double."""
    assert actual.count == expected.count, context
    for statistic in ("mean", "stddev", "p50", "p95", "p99", "max"):
        wanted, got = getattr(expected, statistic), getattr(actual, statistic)
        assert (wanted is None) == (got is None), (context, statistic)
        if wanted is not None:
            assert math.isclose(got, wanted, rel_tol=1e-9, abs_tol=1e-12), (context, statistic)


EVERY_OUTPUT_RUN = ["--scenarios", "20", "--seed", "3", "--raw", *SMALL]
"""The run whose files, terminal and verdict the two tests of `harness_command` read."""


@dataclass(frozen=True)
class CommandRun:
    """A run of `python -m rebalancing.harness`: its options (as parsed before it ran, its
    output directory empty) and what it printed."""

    options: HarnessOptions
    completed: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def harness_command(tmp_path_factory: pytest.TempPathFactory) -> CommandRun:
    """`python -m rebalancing.harness` run once, as `make run` runs it (its own embedded
    Spark, started with the harness's log settings). One run serves the test of every output
    and the test of its quiet terminal, which needs a JVM of its own (some 25 s of CPU)."""
    arguments = [*EVERY_OUTPUT_RUN, "--out", str(tmp_path_factory.mktemp("harness-command"))]
    options = parse_options(arguments)
    completed = subprocess.run(
        [sys.executable, "-m", "rebalancing.harness", *arguments],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    return CommandRun(options, completed)


def test_a_run_writes_every_output(harness_command: CommandRun) -> None:
    options, out = harness_command.options, harness_command.options.out
    for name in (
        "aggregates.parquet",
        "rows.parquet",
        "summary.csv",
        "profiles.parquet",
        "summary.md",
        "run.json",
        "report.html",
        "stickiness.png",
        "stickiness_gap.png",
        "moves.png",
        "assign_time.png",
        "releases.png",
        "rounds.png",
        "releases_by_group_size.png",
        "assign_time_by_queue_count.png",
    ):
        assert (out / name).exists(), name
    assert (out / "releases.png").read_bytes().startswith(b"\x89PNG")
    summary = (out / "summary.md").read_text()
    assert markdown_table(to_summary(_aggregates(out))) in summary
    assert summary.startswith("# Which strategy for this group?")
    verdict = options.profile.verdict_on(to_summary(_aggregates(out)))
    assert verdict.recommended
    assert set(verdict.recommended) <= set(DEFAULT_STRATEGIES)
    # the terminal shows the verdict on the aggregates written, where the files are, and how
    # long the scoring took (run.json's wall seconds, as the local engine's "Scored in" line)
    info = json.loads((out / "run.json").read_text())
    assert harness_command.completed.stdout.rstrip("\n") == closing_lines(
        verdict, options.profile, info["wall_seconds"]
    )
    assert info["scenarios"] == 20
    assert info["strategies"] == list(DEFAULT_STRATEGIES)
    assert info["versions"]["pyspark"] == pyspark_version
    assert info["scenarios_per_second"] > 0
    assert info["percentiles"].startswith("exact")
    assert info["views"] == "broker"
    assert not (out / "client_views.png").exists()  # no view disagreed
    raw = pq.read_table(out / "rows.parquet")
    expected_rows = list(
        score_scenarios(generate_scenarios(3, range(20), options.settings), DEFAULTS)
    )
    assert raw.num_rows == len(expected_rows)
    csv_lines = (out / "summary.csv").read_text().splitlines()
    assert len(csv_lines) == 1 + len(_aggregates(out))


def test_embedded_spark_says_nothing_before_the_verdict(harness_command: CommandRun) -> None:
    """The driver's JVM starts with the harness's log settings (job.LOG_SETTINGS): none of
    Spark's start-up lines (Hadoop's NativeCodeLoader warning, the default log level) reach
    the terminal, as `make run` shows it."""
    completed = harness_command.completed
    assert "NativeCodeLoader" not in completed.stderr
    assert " WARN " not in completed.stderr  # a Spark log line: "26/11/28 14:50:01 WARN ..."
    assert "Setting default log level" not in completed.stderr
    assert completed.stdout.startswith("Which strategy for this group")


def test_aggregates_equal_the_pure_python_cores(spark: SparkSession, tmp_path: Path) -> None:
    options = parse_options(["--scenarios", "30", "--seed", "8", "--out", str(tmp_path), *SMALL])
    run_without_reports(options, spark)
    from_spark = to_summary(_aggregates(tmp_path))
    rows = score_scenarios(generate_scenarios(8, range(30), options.settings), DEFAULTS)
    from_core = summarise(rows)
    assert from_spark.keys() == from_core.keys()
    for group, metrics in from_core.items():
        for metric, expected in metrics.items():
            if metric in TIMINGS:
                continue
            _assert_close(from_spark[group][metric], expected, (group, metric))


def test_aggregates_with_zones_and_weights_equal_the_pure_python_cores(
    spark: SparkSession, tmp_path: Path
) -> None:
    placed = ["--zones", "2:3", "--weights", "zipf", "--system", "kafka-cooperative"]
    options = parse_options(
        ["--scenarios", "30", "--seed", "4", "--out", str(tmp_path), *SMALL, *placed]
    )
    assert "rack_aware_range" in options.strategies
    run(options, spark)
    from_spark = to_summary(_aggregates(tmp_path))
    system = SYSTEM_VERDICTS[options.system]  # its candidates run inside its protocol
    chosen = {strategy.name: strategy for strategy in system.strategies(options.strategies)}
    scenarios = generate_scenarios(4, range(30), options.settings)
    rows = score_scenarios(scenarios, chosen, protocol=system.protocols(chosen))
    from_core = summarise(rows)
    assert from_spark.keys() == from_core.keys()
    assert from_core[("rack_aware_range", "all")]["seconds_to_balance"].count
    assert from_core[("rack_aware_range", "all")]["cross_zone_fraction"].count
    assert from_core[("lag_greedy", "all")]["load_ratio"].count
    for group, metrics in from_core.items():
        for metric, expected in metrics.items():
            if metric in TIMINGS:
                continue
            actual = from_spark[group][metric]
            if expected.stddev is not None and expected.stddev < 1e-3:
                # the harness squares each value in doubles (job._exact_sums): its variance is
                # exact to some 1e-16 per value, and a load ratio of a few rebalances that
                # differ in the 6th digit has a variance of 1e-12; compare the variances
                assert actual.stddev is not None
                assert math.isclose(actual.stddev**2, expected.stddev**2, abs_tol=1e-15)
                actual = replace(actual, stddev=expected.stddev)
            _assert_close(actual, expected, (group, metric))


def test_the_leaderless_protocols_time_scores_reach_the_aggregates_as_the_core_computes_them(
    spark: SparkSession, tmp_path: Path
) -> None:
    chosen = ("event_hubs_balanced", "event_hubs_greedy", "kcl", "sac")
    options = parse_options(
        [
            "--scenarios",
            "20",
            "--seed",
            "4",
            "--strategies",
            ",".join(chosen),
            "--out",
            str(tmp_path),
            *SMALL,
        ]
    )
    run_without_reports(options, spark)
    from_spark = to_summary(_aggregates(tmp_path))
    strategies = {name: STRATEGIES[name] for name in chosen}
    from_core = summarise(
        score_scenarios(generate_scenarios(4, range(20), options.settings), strategies)
    )
    assert from_spark.keys() == from_core.keys()
    for group, metrics in from_core.items():
        for metric in ("claims", "steals", "seconds_to_balance", "queue_seconds_unowned"):
            expected = metrics[metric]
            assert expected.count > 0 or group[0] == "sac", (group, metric)
            _assert_close(from_spark[group][metric], expected, (group, metric))
        _assert_close(
            from_spark[group]["queue_seconds_doubly_owned"],
            metrics["queue_seconds_doubly_owned"],
            group,
        )


def test_aggregates_do_not_depend_on_the_partitioning(spark: SparkSession, tmp_path: Path) -> None:
    # the strategies whose rows hang on seeds (SAC's random releases; the stability check's
    # steps for all), on plain and protocol paths
    arguments = ["--scenarios", "24", "--strategies", "averagely,sticky,sac_random", *SMALL]
    results = []
    for partitions in ("1", "7"):
        out = tmp_path / partitions
        options = parse_options([*arguments, "--partitions", partitions, "--out", str(out)])
        run_without_reports(options, spark)
        results.append(
            [
                {key: value for key, value in row.items() if not key.startswith(TIMINGS)}
                for row in _aggregates(out)
            ]
        )
    assert results[0] == results[1]


def test_aggregates_are_computed_once_and_written_sorted(
    spark: SparkSession, tmp_path: Path
) -> None:
    options = parse_options(["--scenarios", "12", "--out", str(tmp_path), *SMALL])
    plan = distributions(score_counts(spark, options, partitions=3))
    executed = plan._jdf.queryExecution().executedPlan().toString().lower()
    # A global sort would add a range exchange, whose sampling job computes every aggregate twice;
    # a second branch over the rows (say, for the over-all-changes rows) would score them twice.
    # Scoring and counting are one mapInArrow: the rows never reach Spark.
    assert "rangepartitioning" not in executed
    assert executed.count("mapinarrow") == 1
    run_without_reports(options, spark)
    files = list((tmp_path / "aggregates.parquet").glob("*.parquet"))
    assert len(files) == 1
    keys = [(row["strategy"], row["change"]) for row in pq.read_table(files[0]).to_pylist()]
    assert keys == sorted(keys)
    assert len(keys) == len(set(keys)) > len(DEFAULTS)


def test_raw_rows_give_the_same_aggregates_as_counting_in_the_scoring(
    spark: SparkSession, tmp_path: Path
) -> None:
    """With --raw the rows are written, read back and counted by a mapInArrow of their own; the
    aggregates and profiles equal the job's, where each partition counts its rows as it scores
    them (all but the timings' own statistics, which differ from run to run)."""
    outputs = {}
    for raw in ([], ["--raw"]):
        out = tmp_path / ("raw" if raw else "counted")
        arguments = ["--scenarios", "24", "--seed", "6", "--partitions", "3", *SMALL, *raw]
        arguments += ["--strategies", "averagely,sticky,sac"]  # plain and protocol rows
        run_without_reports(parse_options([*arguments, "--out", str(out)]), spark)
        profiles = pq.read_table(out / "profiles.parquet").to_pylist()
        outputs[bool(raw)] = (
            [
                {key: value for key, value in row.items() if not key.startswith(TIMINGS)}
                | {"assign_micros_count": row["assign_micros_count"]}
                for row in _aggregates(out)
            ],
            [
                row
                if row["metric"] not in TIMINGS
                else {
                    "count": row["count"],
                    **{key: row[key] for key in ("strategy", "facet", "bucket", "metric")},
                }
                for row in profiles
            ],
        )
    assert (tmp_path / "raw" / "rows.parquet").exists()
    assert not (tmp_path / "counted" / "rows.parquet").exists()
    assert outputs[True] == outputs[False]
    assert len(outputs[True][1]) > 0


def test_big_runs_get_partitions_of_at_most_ten_thousand_scenarios() -> None:
    assert default_partitions(300, parallelism=2) == 4
    assert default_partitions(100_000, parallelism=2) == 10
    assert default_partitions(1_000_001, parallelism=2) == 101
    assert default_partitions(1_000_000, parallelism=64) == 128


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--scenarios", "0"], "--scenarios must be between 1 and"),
        (["--scenarios", "10000000000000000000"], "--scenarios must be between 1 and"),
        (["--mix", "join=nan"], "--mix: weight of 'join' must be a finite number >= 0"),
        (["--mix", "crash=1e999"], "--mix: weight of 'crash' must be a finite number >= 0"),
        (["--strategies", ".relative:f"], "expected package.module:function"),
        (["--strategies", "sticky:"], "expected package.module:function"),
        (["--strategies", "sticky,nope"], "--strategies: unknown strategy 'nope'"),
        (["--queues", "9:3"], "--queues: need 1 <= LOW <= HIGH"),
        (["--consumers", "x"], "--consumers: expected a count N or a range LOW:HIGH"),
        (["--mix", "join=1,explode=2"], "--mix: unknown change kind 'explode'"),
        (["--partitions", "-1"], "--partitions must be positive"),
        (["--out", "/proc/no-such-place"], "--out: cannot write"),
        (["--remote", "localhost:15002"], "--remote: expected sc://HOST:PORT"),
        (
            ["--master", "local[1]", "--remote", "sc://127.0.0.1:15002"],
            "--remote and --master exclude each other",
        ),
        (["--strategies", "no_such_module:assign"], "could not import module 'no_such_module'"),
    ],
)
def test_bad_parameters_fail_before_spark_naming_the_parameter(
    arguments: list[str], message: str
) -> None:
    with pytest.raises(ParameterError, match=message.replace("(", r"\(")):
        parse_options(arguments)
    completed = subprocess.run(
        [sys.executable, "-m", "rebalancing.harness", *arguments],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 2
    assert message in completed.stderr
    assert len(completed.stderr.strip().splitlines()) == 1


@pytest.mark.thorough  # make test submits the same entry file to the standalone cluster
def test_the_entry_file_runs_under_spark_submit(tmp_path: Path) -> None:
    spark_submit = Path(sys.executable).parent / "spark-submit"
    entry = Path(__file__).parents[2] / "jobs" / "score_strategies.py"
    environment = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    completed = subprocess.run(
        [
            str(spark_submit),
            "--master",
            "local[1]",
            "--conf",
            "spark.ui.enabled=false",
            str(entry),
            "--scenarios",
            "12",
            "--strategies",
            "sticky,averagely",
            "--out",
            str(tmp_path),
            *SMALL,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=environment,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert "| sticky | all |" in (tmp_path / "summary.md").read_text()
    assert json.loads((tmp_path / "run.json").read_text())["master"] == "local[1]"


def test_size_profiles_are_the_distributions_of_each_size_bucket(
    spark: SparkSession, tmp_path: Path
) -> None:
    options = parse_options(["--scenarios", "24", "--seed", "5", "--out", str(tmp_path), *SMALL])
    run_without_reports(options, spark)
    profiles = pq.read_table(tmp_path / "profiles.parquet").to_pylist()
    rows = [
        row
        for row in score_scenarios(generate_scenarios(5, range(24), options.settings), DEFAULTS)
        if not row.failed
    ]
    expected: dict[tuple[str, str, int, str], list[float]] = {}
    for row in rows:
        sizes = {"group_size": row.queue_count * row.consumer_count, "queue_count": row.queue_count}
        for facet, metric in (("group_size", "releases"), ("queue_count", "assign_micros")):
            value = getattr(row, metric)
            if value is None:
                continue
            bucket = max(sizes[facet], 1).bit_length()
            expected.setdefault((row.strategy, facet, bucket, metric), []).append(value)
            expected.setdefault((row.strategy, facet, bucket, "size"), []).append(sizes[facet])
    got = {(row["strategy"], row["facet"], row["bucket"], row["metric"]): row for row in profiles}
    assert got.keys() == expected.keys()
    protocol = {strategy for strategy, facet, _, _ in expected if facet == "group_size"}
    assert protocol == {name for name, strategy in DEFAULTS.items() if strategy.open_session}
    for key, values in expected.items():
        wanted = aggregate(values)
        assert got[key]["count"] == wanted.count, key
        if key[3] != "assign_micros":  # timings are counted by logarithmic bucket
            for statistic in ("mean", "p50", "p95", "p99", "max"):
                assert math.isclose(got[key][statistic], getattr(wanted, statistic)), key


def test_client_views_run_on_the_executors_and_reach_the_summary(
    spark: SparkSession, tmp_path: Path
) -> None:
    arguments = ["--scenarios", "30", "--seed", "4", "--strategies", "averagely,sticky", *SMALL]
    views = ["--views", "client", "--stale-probability", "0.6", "--max-delay", "2"]
    options = parse_options([*arguments, *views, "--out", str(tmp_path)])
    run(options, spark)
    from_spark = to_summary(_aggregates(tmp_path))
    rows = score_scenarios(
        generate_scenarios(4, range(30), options.settings),
        {name: STRATEGIES[name] for name in ("averagely", "sticky")},
        "client",
        options.view_settings,
    )
    from_core = summarise(rows)
    view_metrics = ("queue_periods_read_twice", "queue_periods_unread", "periods_to_agree")
    for group, metrics in from_core.items():
        for metric in view_metrics:
            _assert_close(from_spark[group][metric], metrics[metric], (group, metric))
    assert (from_spark[("averagely", "all")]["queue_periods_unread"].max or 0) > 0
    # sticky needs the whole previous plan: broker-side in either mode, so views never disagree
    assert all(from_spark[("sticky", "all")][metric].max == 0 for metric in view_metrics)
    assert "read twice mean" in (tmp_path / "summary.md").read_text()
    info = json.loads((tmp_path / "run.json").read_text())
    assert info["views"] == "client"
    assert info["view_settings"]["stale_probability"] == 0.6
    assert (tmp_path / "client_views.png").read_bytes().startswith(b"\x89PNG")
    assert "What client-side rebalancing costs" in (tmp_path / "report.html").read_text()


def test_bad_view_settings_fail_before_spark_naming_them() -> None:
    with pytest.raises(ParameterError, match="stale_probability must be a probability"):
        parse_options(["--views", "client", "--stale-probability", "1.5"])
    with pytest.raises(ParameterError, match="max_delay must be at least 1"):
        parse_options(["--max-delay", "0"])


def test_an_out_holding_an_earlier_run_is_refused_before_spark_unless_replaced(
    tmp_path: Path,
) -> None:
    (tmp_path / "rows.parquet").mkdir()
    (tmp_path / "rows.parquet" / "part-0.parquet").write_bytes(b"old")
    (tmp_path / "client_views.png").write_bytes(b"old")
    (tmp_path / "run.json").write_text("{}")
    with pytest.raises(
        ParameterError,
        match=r"earlier run's files \(client_views.png, rows.parquet, run.json\); give another",
    ):
        parse_options(["--out", str(tmp_path)])
    assert (tmp_path / "client_views.png").exists()
    parse_options(["--out", str(tmp_path), "--replace"])
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("def assign(:\n", "SyntaxError"),
        ("raise RuntimeError('no broker here')\n", "RuntimeError: no broker here"),
    ],
)
def test_a_user_module_that_fails_to_import_is_one_line_and_exit_2(
    source: str, message: str, tmp_path: Path
) -> None:
    (tmp_path / "broken_strategy.py").write_text(source)
    completed = subprocess.run(
        [sys.executable, "-m", "rebalancing.harness", "--strategies", "broken_strategy:assign"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )
    assert completed.returncode == 2
    assert "could not import module 'broken_strategy'" in completed.stderr
    assert message in completed.stderr
    assert "Traceback" not in completed.stderr
