"""Fixtures of the harness tests: an embedded local[2] Spark, an executor's Python without the
project, a user's strategy package outside it, the embedded run every cluster run is compared
with, and the real daemons (a standalone cluster, a Spark Connect server) on 127.0.0.1.

Every daemon is a private process under a temporary directory, started only by the tests that
ask for it, and stopped by its process id (with its children) when they are done, also when
they fail.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from rebalancing.harness.job import run
from rebalancing.harness.options import parse_options
from tests.harness.spark_runs import (
    EXECUTOR_LACKS,
    USER_PACKAGE,
    USER_STRATEGY_SOURCE,
    EmbeddedAggregates,
    comparable_aggregates,
)
from tools.local_cluster import LOOPBACK, ConnectServer, StandaloneCluster


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """An embedded local[2] Spark for the whole session (UI off, few shuffle partitions)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", LOOPBACK)  # the driver's ports on loopback only
    session = (
        SparkSession.builder.master("local[2]")
        .appName("rebalancing-tests")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def executor_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Python the cluster's executors run: this interpreter with the installed dependencies
    but not the project, whose editable install is a .pth file that `-S` leaves unread, nor
    anything else of the caller's path, nor the driver-only EXECUTOR_LACKS (shadowed by
    packages that refuse to import): like a cluster machine with pyarrow, numpy and numba
    installed and neither the project nor the user's modules."""
    root = tmp_path_factory.mktemp("executor-python")
    for name in EXECUTOR_LACKS:
        (root / "absent" / name).mkdir(parents=True)
        (root / "absent" / name / "__init__.py").write_text(
            f"raise ImportError('{name} is not installed on the executors of the cluster tests')\n"
        )
    search_path = f"{root / 'absent'}:{sysconfig.get_paths()['purelib']}"
    wrapper = root / "python"
    wrapper.write_text(
        "#!/bin/sh\n"
        "# An executor's Python: pyarrow, numpy, numba, pyspark; see tests/harness/conftest.py.\n"
        f"PYTHONPATH='{search_path}' exec '{sys.executable}' -S \"$@\"\n"
    )
    wrapper.chmod(0o755)
    return wrapper


@pytest.fixture(scope="session")
def user_strategy_directory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory outside the installed package holding the user's strategy package
    (USER_PACKAGE, whose `crc` module defines `by_crc`)."""
    directory = tmp_path_factory.mktemp("user-strategies")
    package = directory / USER_PACKAGE
    package.mkdir()
    (package / "__init__.py").write_text('"""A user\'s own strategies."""\n')
    (package / "crc.py").write_text(USER_STRATEGY_SOURCE)
    return directory


@pytest.fixture(scope="session")
def embedded_aggregates(
    spark: SparkSession, user_strategy_directory: Path, tmp_path_factory: pytest.TempPathFactory
) -> EmbeddedAggregates:
    """The aggregates of a run on the embedded local[2] Spark, timings left out, run once per
    set of arguments: what every cluster and Connect run of the same scenarios must equal."""
    runs: dict[tuple[str, ...], list[dict[str, Any]]] = {}

    def aggregates(arguments: tuple[str, ...]) -> list[dict[str, Any]]:
        if arguments not in runs:
            out = tmp_path_factory.mktemp("embedded-run")
            with pytest.MonkeyPatch.context() as patch:  # the driver imports the user's module
                patch.syspath_prepend(str(user_strategy_directory))
                run(parse_options([*arguments, "--out", str(out)]), spark)
            runs[arguments] = comparable_aggregates(out)
        return runs[arguments]

    return aggregates


@pytest.fixture(scope="session")
def standalone_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """A master and two one-core workers on 127.0.0.1, from pyspark's distribution, shared by
    every cluster test (one group of tests/conftest.py: one worker of xdist starts it)."""
    with StandaloneCluster(tmp_path_factory.mktemp("standalone"), workers=2) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def connect_server(
    tmp_path_factory: pytest.TempPathFactory, executor_python: Path
) -> Iterator[ConnectServer]:
    """A Spark Connect server on 127.0.0.1 running local[2], its Python workers on
    `executor_python` (so the package reaches them only as the job's artifacts)."""
    root = tmp_path_factory.mktemp("connect")
    with ConnectServer(root, master="local[2]", python=str(executor_python)) as server:
        yield server
