"""The job on a real Spark standalone cluster on 127.0.0.1 (a master and two one-core workers from
pyspark's distribution, one cluster for all these tests): submitted unchanged with spark-submit,
to executors whose Python has the dependencies but not the project nor the user's strategy
module, it gives the embedded run's aggregates, also when one worker's executor is killed in the
middle of the job. The default run makes both checks in one job; `thorough` adds a job without
a kill, with more scenarios and SAC's numba kernel compiled on the executors."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.harness.spark_runs import (
    CLUSTER_RUN,
    CLUSTER_RUN_WITH_SAC,
    EXECUTOR_LACKS,
    USER_PACKAGE,
    USER_STRATEGY,
    DriverRun,
    EmbeddedAggregates,
    comparable_aggregates,
    driver_environment,
    run_driver,
    spark_submit_command,
)
from tools.local_cluster import (
    StandaloneCluster,
    command_line,
    process_tree,
    stop_process_tree,
)


def test_the_executors_python_has_the_dependencies_but_not_the_project(
    executor_python: Path, user_strategy_directory: Path
) -> None:
    environment = {"PYTHONPATH": str(user_strategy_directory)}  # ignored by the executor's Python
    dependencies = subprocess.run(
        [str(executor_python), "-c", "import numba, numpy, pyarrow, pyspark"],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )
    assert dependencies.returncode == 0, dependencies.stderr
    for module in ("rebalancing", USER_PACKAGE, *EXECUTOR_LACKS):
        missing = subprocess.run(
            [str(executor_python), "-c", f"import {module}"],
            capture_output=True,
            text=True,
            env=environment,
            timeout=120,
        )
        assert missing.returncode == 1
        assert "ImportError" in missing.stderr or "ModuleNotFoundError" in missing.stderr


def _assert_shipped_and_summarised(out: Path, cluster: StandaloneCluster) -> None:
    """The run's record: the cluster's master, the package and the user's module shipped to the
    executors as zips (nothing left out), the user's strategy in the summary."""
    info = json.loads((out / "run.json").read_text())
    assert info["master"] == cluster.master_url
    assert info["shipped_to_executors"] == ["rebalancing.zip", f"{USER_PACKAGE}.zip"]
    assert info["not_shipped"] == {}
    assert f"| {USER_STRATEGY} | all |" in (out / "summary.md").read_text()


@pytest.mark.thorough
def test_spark_submit_to_the_standalone_cluster_equals_the_embedded_run(
    standalone_cluster: StandaloneCluster,
    embedded_aggregates: EmbeddedAggregates,
    executor_python: Path,
    user_strategy_directory: Path,
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    driver = run_driver(
        spark_submit_command(standalone_cluster.master_url, out, *CLUSTER_RUN_WITH_SAC),
        driver_environment(executor_python, user_strategy_directory),
        tmp_path / "driver",
        timeout=600,
    )
    assert driver.process.returncode == 0, driver.log()[-4000:]
    assert comparable_aggregates(out) == embedded_aggregates(CLUSTER_RUN_WITH_SAC)
    _assert_shipped_and_summarised(out, standalone_cluster)


def _python_workers(executor: int) -> list[int]:
    return [pid for pid in process_tree(executor)[1:] if "pyspark" in command_line(pid)]


KILL_ATTEMPTS = 2
"""Runs of the killed-executor test before it fails for a kill that found the executor idle."""


def _kill_an_executor_once_it_runs_tasks(
    cluster: StandaloneCluster, driver: DriverRun, timeout: float = 300
) -> tuple[str, int]:
    """Wait until the job's executor on worker 0 has started a Python worker (a task of the
    scoring stage runs), then SIGKILL the executor and its Python processes. Returns the
    application's id and the executor's pid."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert driver.process.poll() is None, "the job ended before an executor could be killed"
        applications = cluster.active_application_ids()
        if len(applications) == 1:
            for executor in cluster.executor_pids(0, applications[0]):
                if _python_workers(executor):
                    for pid in process_tree(executor):  # the JVM and its Python workers
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(pid, signal.SIGKILL)
                    return applications[0], executor
        time.sleep(0.1)
    raise AssertionError(f"no executor of worker 0 ran a task within {timeout:.0f} s")


@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param(CLUSTER_RUN, id="default"),
        pytest.param(CLUSTER_RUN_WITH_SAC, id="with-sac", marks=pytest.mark.thorough),
    ],
)
def test_a_job_whose_executor_is_killed_mid_run_finishes_with_identical_aggregates(
    arguments: tuple[str, ...],
    standalone_cluster: StandaloneCluster,
    embedded_aggregates: EmbeddedAggregates,
    executor_python: Path,
    user_strategy_directory: Path,
    tmp_path: Path,
) -> None:
    for attempt in range(1, KILL_ATTEMPTS + 1):
        out = tmp_path / f"out-{attempt}"
        driver = DriverRun.start(
            # 32 partitions: tasks short and many, so the kill lands mid-stage even on a loaded
            # machine, with work left for the driver to notice the lost executor and run again
            spark_submit_command(
                standalone_cluster.master_url, out, *arguments, "--partitions", "32"
            ),
            driver_environment(executor_python, user_strategy_directory),
            tmp_path / f"driver-{attempt}",
        )
        try:
            application, killed = _kill_an_executor_once_it_runs_tasks(standalone_cluster, driver)
            status = driver.finish()
        finally:
            if driver.process.poll() is None:
                stop_process_tree(driver.process)
        log = driver.log()
        assert status == 0, log[-4000:]
        assert killed not in standalone_cluster.executor_pids(0)
        if "Lost executor" in log or attempt == KILL_ATTEMPTS:
            break
        # no "Lost executor" in the driver's log: seen once in several full runs on an idle
        # machine (2026-12-04), the cause not established (a kill while the executor held no
        # task is the likely one); the kill is tried again on a new run
    assert "Lost executor" in log, log[-6000:]  # the driver saw the executor go,
    assert "Lost task" in log, log[-6000:]  # in the middle of a task, which ran again elsewhere
    executor_directories = standalone_cluster.root / "worker-0" / "work" / application
    assert len(list(executor_directories.iterdir())) >= 2, "worker 0 started no new executor"
    assert comparable_aggregates(out) == embedded_aggregates(arguments)
    _assert_shipped_and_summarised(out, standalone_cluster)


def _running(pids: list[int]) -> list[int]:
    """The processes of `pids` that still run (a zombie has ended: only its entry is left)."""
    running = []
    for pid in pids:
        with contextlib.suppress(OSError, IndexError):
            if (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                running.append(pid)
    return running


@pytest.mark.xdist_group("spark")
def test_the_cluster_command_prints_the_master_and_stops_every_daemon_at_sigterm(
    tmp_path: Path,
) -> None:
    """`python -m tools.local_cluster`: the URL it prints is a master with its worker
    registered; SIGTERM stops the master, the worker and their children, and exits 0."""
    command = [sys.executable, "-m", "tools.local_cluster", "--workers", "1"]
    command += ["--worker-memory", "1g", "--directory", str(tmp_path)]
    process = subprocess.Popen(
        command,
        cwd=Path(__file__).parents[2],  # tools/ runs from the repository's root
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        assert process.stderr is not None
        master = process.stdout.readline().strip()
        assert master.startswith("spark://127.0.0.1:"), process.stderr.read()
        interface = process.stderr.readline().split()[2]  # "master UI http://...; logs ..."
        with urllib.request.urlopen(f"{interface.rstrip(';')}/json/", timeout=10) as response:
            status = json.loads(response.read())
        assert status["url"] == master
        assert status["aliveworkers"] == 1
        daemons = process_tree(process.pid)[1:]
        assert len(daemons) >= 2  # the master and the worker
        process.send_signal(signal.SIGTERM)
        assert process.wait(120) == 0
        deadline = time.monotonic() + 30.0  # a JVM may take a moment to go, once signalled
        while _running(daemons) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _running(daemons) == []
    finally:
        stop_process_tree(process)
