"""What the cluster, Connect and user-strategy tests share: the run they all score, the user's
strategy module, how aggregates are compared, and how a driver is launched and always reaped."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from rebalancing.harness import job
from rebalancing.harness.options import HarnessOptions
from tests.conftest import JIT_OPTIONS
from tools.local_cluster import LOOPBACK, spark_home, stop_process_tree

REPOSITORY = Path(__file__).parents[2]
ENTRY_FILE = REPOSITORY / "jobs" / "score_strategies.py"
SMALL = ["--queues", "1:120", "--consumers", "1:24", "--changes", "1:4"]
TIMINGS = ("assign_micros",)

USER_PACKAGE = "user_crc_strategies"
USER_STRATEGY = f"{USER_PACKAGE}.crc:by_crc"
USER_STRATEGY_SOURCE = '''"""A user's own strategy, outside the package (the README's example)."""

import zlib

from rebalancing.contract import empty_plan, prepare


def by_crc(queues, consumers, previous=None):
    group = prepare(queues, consumers, previous)
    plan = empty_plan(group.consumers)
    for queue in group.queues if plan else ():
        plan[group.consumers[zlib.crc32(repr(queue).encode()) % len(plan)]].append(queue)
    return plan
'''

CLUSTER_RUN = (
    "--scenarios",
    "120",
    "--seed",
    "11",
    "--strategies",
    f"averagely,sticky,{USER_STRATEGY}",
    *SMALL,
)
"""The scenarios the default cluster and Connect runs score (and the embedded reference), a
user's own strategy among them; the compiled scores (numba) run on the executors, each compiling
them in its first task (some 8 s of CPU), then about a second of scoring per task."""

CLUSTER_RUN_WITH_SAC = (
    "--scenarios",
    "300",
    "--seed",
    "11",
    "--strategies",
    f"averagely,sticky,sac,{USER_STRATEGY}",
    *SMALL,
)
"""The thorough cluster runs: more scenarios and the SAC protocol too, whose numba kernel each
executor compiles in its first task (some 20 s more of CPU)."""

EmbeddedAggregates = Callable[[tuple[str, ...]], list[dict[str, Any]]]
"""Run arguments (CLUSTER_RUN, CLUSTER_RUN_WITH_SAC) -> their aggregates on the embedded Spark
(the `embedded_aggregates` fixture of tests/harness/conftest.py)."""

EXECUTOR_LACKS = ("pandas", "matplotlib")
"""Installed here, but not on the executors of the cluster tests: only pyarrow, numpy and numba
(and pyspark, which comes with Spark) are what the scoring needs there."""


DRIVER_TIMEOUT_SECONDS = 600


def comparable_aggregates(out: Path) -> list[dict[str, Any]]:
    """The run's aggregate rows in (strategy, change) order, without the timing columns (the
    only ones that may differ from one run to another)."""
    rows = pq.read_table(out / "aggregates.parquet").to_pylist()
    return [
        {name: value for name, value in row.items() if not name.startswith(TIMINGS)}
        for row in sorted(rows, key=lambda row: (row["strategy"], row["change"]))
    ]


def driver_environment(executor_python: Path, user_directory: Path) -> dict[str, str]:
    """A driver's environment: this interpreter for the driver, `executor_python` for the
    executors, the user's strategies importable on the driver only (before this process's own
    PYTHONPATH), binding to loopback."""
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("PYSPARK_GATEWAY", "SPARK_CONNECT_MODE"))
        and name not in ("SPARK_REMOTE", "SPARK_HOME", "PYTHONPATH")
    }
    environment.update(
        PYSPARK_DRIVER_PYTHON=sys.executable,
        PYSPARK_PYTHON=str(executor_python),
        PYTHONPATH=os.pathsep.join(
            part for part in (str(user_directory), os.environ.get("PYTHONPATH")) if part
        ),
        SPARK_LOCAL_IP=LOOPBACK,
    )
    return environment


def spark_submit_command(master: str, out: Path, *job_arguments: str) -> list[str]:
    """spark-submit of the unchanged entry file to `master`, UI off, few shuffle partitions,
    the executors' JVMs compiling as the tests' others do (tests/conftest.py's JIT_OPTIONS)."""
    return [
        str(spark_home() / "bin" / "spark-submit"),
        "--master",
        master,
        "--conf",
        "spark.ui.enabled=false",
        "--conf",
        f"spark.executor.extraJavaOptions={JIT_OPTIONS}",
        "--conf",
        "spark.sql.shuffle.partitions=4",
        str(ENTRY_FILE),
        *job_arguments,
        "--out",
        str(out),
    ]


@dataclass
class DriverRun:
    """A driver process whose output goes to files; `finish` always reaps it."""

    process: subprocess.Popen[bytes]
    stdout: Path
    stderr: Path

    @classmethod
    def start(cls, command: list[str], environment: dict[str, str], logs: Path) -> DriverRun:
        logs.mkdir(parents=True, exist_ok=True)
        stdout, stderr = logs / "driver.out", logs / "driver.err"
        with stdout.open("wb") as out_handle, stderr.open("wb") as err_handle:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=out_handle,
                stderr=err_handle,
                env=environment,
                cwd=logs,
                start_new_session=True,
            )
        return cls(process, stdout, stderr)

    def finish(self, timeout: float = DRIVER_TIMEOUT_SECONDS) -> int:
        """Wait for the driver; stop it and its children (by pid) if it overruns `timeout`.
        Returns its exit status."""
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            stop_process_tree(self.process)
            raise
        finally:
            if self.process.poll() is None:
                stop_process_tree(self.process)

    def log(self) -> str:
        """The driver's stderr (Spark's log) and stdout, for assertions and failure messages."""
        return self.stderr.read_text(errors="replace") + self.stdout.read_text(errors="replace")


def run_driver(
    command: list[str], environment: dict[str, str], logs: Path, timeout: float
) -> DriverRun:
    """Run a driver to its end (see DriverRun.finish)."""
    driver = DriverRun.start(command, environment, logs)
    driver.finish(timeout)
    return driver


def run_without_reports(options: HarnessOptions, spark: SparkSession) -> None:
    """The harness's job (job.run) with everything the tests of its numbers read, in `out`:
    aggregates.parquet, profiles.parquet, rows.parquet with --raw; without what run() writes
    last from them (summary.md, run.json, the figures, report.html: 4 to 9 CPU-seconds of the
    driver's, more than a small run's scoring), which test_a_run_writes_every_output, the
    client views' test and the report page's test check."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(job, "write_reports", lambda *arguments, **keywords: None)
        job.run(options, spark)
