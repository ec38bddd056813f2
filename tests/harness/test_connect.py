"""The job through Spark Connect: a Connect server from pyspark's distribution on 127.0.0.1 (its
jar ships with pyspark), driven by `python -m rebalancing.harness --remote sc://...`. The Python
path (mapInArrow over Connect) works: the package and the user's strategy module reach the
server's Python workers as the session's artifacts, and the aggregates equal the embedded run's.

The client runs in its own process: a Connect session switches pyspark's functions to their
Connect forms for the whole process, which the embedded session of the other tests must not see.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.harness.spark_runs import (
    CLUSTER_RUN,
    USER_PACKAGE,
    EmbeddedAggregates,
    comparable_aggregates,
    driver_environment,
    run_driver,
)
from tools.local_cluster import ConnectServer


def test_the_job_runs_through_spark_connect_with_the_embedded_runs_aggregates(
    connect_server: ConnectServer,
    embedded_aggregates: EmbeddedAggregates,
    executor_python: Path,
    user_strategy_directory: Path,
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    driver = run_driver(
        [
            sys.executable,
            "-m",
            "rebalancing.harness",
            "--remote",
            connect_server.url,
            *CLUSTER_RUN,
            "--out",
            str(out),
        ],
        driver_environment(executor_python, user_strategy_directory),
        tmp_path / "client",
        timeout=600,
    )
    assert driver.process.returncode == 0, driver.log()[-4000:]
    assert comparable_aggregates(out) == embedded_aggregates(CLUSTER_RUN)
    info = json.loads((out / "run.json").read_text())
    assert info["spark_connect"] is True
    assert info["master"] == connect_server.url
    assert info["shipped_to_executors"] == ["rebalancing.zip", f"{USER_PACKAGE}.zip"]
    assert info["partitions"] == 4  # twice the server's two cores, found over Connect
