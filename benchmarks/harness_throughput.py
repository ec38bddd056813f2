"""Scenarios per second: the pure-Python core in one process vs the Spark job on local[1] and
local[2], on the same scenarios.

Usage: python benchmarks/harness_throughput.py [--scenarios 2000] [--repeats 3]
       [--strategies averagely,round_robin,sticky]
Prints a Markdown table of medians over --repeats runs. The Spark figures include the job's
planning, scoring, aggregation and writing, but not the session start (reported apart).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

from rebalancing.evaluation.aggregates import summarise
from rebalancing.evaluation.replay import score_scenarios
from rebalancing.evaluation.scenarios import generate_scenarios
from rebalancing.harness.options import parse_options
from rebalancing.strategies import STRATEGIES


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scenarios", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--strategies", default="averagely,round_robin,sticky")
    options = parser.parse_args()
    names = options.strategies.split(",")
    strategies = {name: STRATEGIES[name] for name in names}
    results: dict[str, list[float]] = {}

    core = []
    for _ in range(options.repeats):
        started = time.perf_counter()
        summarise(score_scenarios(generate_scenarios(1, range(options.scenarios)), strategies))
        core.append(time.perf_counter() - started)
    results["pure-Python core, 1 process"] = core

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
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
                harness_options = parse_options(
                    [
                        "--scenarios",
                        str(options.scenarios),
                        "--strategies",
                        options.strategies,
                        "--partitions",
                        str(4 * cores),
                        "--out",
                        out,
                    ]
                )
                started = time.perf_counter()
                run(harness_options, spark)
                timings.append(time.perf_counter() - started)
        spark.stop()
        results[f"Spark local[{cores}] (session start {session_start:.1f} s)"] = timings

    print(
        f"{options.scenarios} scenarios x {', '.join(names)}; {os.cpu_count()} cores; "
        f"medians of {options.repeats} runs\n"
    )
    print("| runner | wall s | scenarios/s | vs core |")
    print("|---|---|---|---|")
    baseline = statistics.median(core)
    for runner, timings in results.items():
        wall = statistics.median(timings)
        print(
            f"| {runner} | {wall:.1f} | {options.scenarios / wall:,.0f} | {baseline / wall:.2f}x |"
        )


if __name__ == "__main__":
    main()
