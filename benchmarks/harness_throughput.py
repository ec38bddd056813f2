"""Scenarios per second: the pure-Python core in one process vs the Spark job on local[1] and
local[2], on the same scenarios.

Usage: python benchmarks/harness_throughput.py [--scenarios 2000] [--repeats 3]
       [--strategies averagely,round_robin,sticky] [--mix join=1,leave=1,...]
       [--runners core,spark]
Prints a Markdown table of medians over --repeats runs. The core's rows are timed twice: with
the summary the small-run path computes (`summarise`, as the README's table always was), and the
rows alone; each also as CPU seconds of this process, which other work on a shared machine
disturbs less than wall time. `--mix` takes the harness's syntax (default: every change kind
alike; the kinds before the churn ones: join,join_burst,leave,crash,queues_added,queues_removed,
mixed). The Spark figures include the job's planning, scoring, aggregation and writing, but not
the session start (reported apart).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterator

from rebalancing.evaluation.scenarios.changes import Scenario, ScenarioSettings, generate_scenarios
from rebalancing.evaluation.scoring.aggregates import summarise
from rebalancing.evaluation.scoring.replay import score_scenarios
from rebalancing.harness.job import LOOPBACK
from rebalancing.harness.options import HarnessOptions, parse_options
from rebalancing.strategies import STRATEGIES, Strategy


def harness_options(options: argparse.Namespace, out: str, cores: int) -> HarnessOptions:
    """The harness's own options for this benchmark (and its reading of --mix)."""
    arguments = [
        "--scenarios",
        str(options.scenarios),
        "--strategies",
        options.strategies,
        "--partitions",
        str(4 * cores),
        "--out",
        out,
    ]
    if options.mix:
        arguments += ["--mix", options.mix]
    return parse_options(arguments)


def time_core(repeats: int, run: Callable[[], object]) -> tuple[list[float], list[float]]:
    """(wall seconds, CPU seconds of this process) of `repeats` calls of `run`."""
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        run()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return walls, cpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scenarios", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--strategies", default="averagely,round_robin,sticky")
    parser.add_argument("--mix", help="change-kind weights, as the harness takes them")
    parser.add_argument("--runners", default="core,spark", help="core, spark or both")
    options = parser.parse_args()
    names = options.strategies.split(",")
    runners = set(options.runners.split(","))
    strategies: dict[str, Strategy] = {name: STRATEGIES[name] for name in names}
    with tempfile.TemporaryDirectory() as out:
        settings: ScenarioSettings = harness_options(options, out, 1).settings
    results: dict[str, tuple[list[float], list[float] | None]] = {}

    def scenarios() -> Iterator[Scenario]:
        return generate_scenarios(1, range(options.scenarios), settings)

    if "core" in runners:
        results["pure-Python core, 1 process"] = time_core(
            options.repeats, lambda: summarise(score_scenarios(scenarios(), strategies))
        )
        results["pure-Python core, rows only (no summary)"] = time_core(
            options.repeats, lambda: deque(score_scenarios(scenarios(), strategies), maxlen=0)
        )

    if "spark" in runners:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", LOOPBACK)  # the driver's ports on loopback only
        from pyspark.sql import SparkSession

        from rebalancing.harness.job import run

        for cores in (1, 2):
            started = time.perf_counter()
            spark = (
                SparkSession.builder.master(f"local[{cores}]")
                .config("spark.ui.enabled", "false")
                .config("spark.ui.showConsoleProgress", "false")
                .getOrCreate()
            )
            session_start = time.perf_counter() - started
            timings = []
            for _ in range(options.repeats):
                with tempfile.TemporaryDirectory() as out:
                    chosen = harness_options(options, out, cores)
                    started = time.perf_counter()
                    run(chosen, spark)
                    timings.append(time.perf_counter() - started)
            spark.stop()
            results[f"Spark local[{cores}] (session start {session_start:.1f} s)"] = (
                timings,
                None,
            )

    print(
        f"{options.scenarios} scenarios x {', '.join(names)}; mix {options.mix or 'default'}; "
        f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f}; "
        f"medians of {options.repeats} runs\n"
    )
    print("| runner | wall s | scenarios/s | CPU s | scenarios/CPU s | vs core |")
    print("|---|---|---|---|---|---|")
    baseline = statistics.median(next(iter(results.values()))[0])
    for runner, (walls, cpus) in results.items():
        wall = statistics.median(walls)
        cpu = f"{statistics.median(cpus):.1f}" if cpus else "-"
        per_cpu = f"{options.scenarios / statistics.median(cpus):,.0f}" if cpus else "-"
        print(
            f"| {runner} | {wall:.1f} | {options.scenarios / wall:,.0f} | {cpu} | {per_cpu} "
            f"| {baseline / wall:.2f}x |"
        )


if __name__ == "__main__":
    main()
