"""A Spark standalone cluster (a master and workers) and a Spark Connect server on 127.0.0.1,
started from pyspark's own distribution: what the cluster tests and the driver-memory benchmark
run the job on, without downloading Spark. Also a command, from the repository's root, to try
the harness's cluster path on one machine:

    python -m tools.local_cluster [--workers 2] [--connect] [--directory DIR]

prints the master's URL (for `--master`; with `--connect`, a Connect server's URL for
`--remote` on the next line), runs until Ctrl-C or SIGTERM, then stops every daemon.

pyspark's wheel carries `bin/spark-class` and every jar (the Connect server's included) but not
the `sbin/start-master.sh` family, so the daemons are started here with `spark-class` (the master
and workers) and `spark-submit --class ...SparkConnectServer`, each as a private process with its
own ports, work and log directories under one root, its own session (no terminal signals), and
no PYTHONPATH of the caller. `stop()` ends every process started here, and its children (a
worker's executors, their Python workers), by process id. Linux only (/proc).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Self

from tools.machine import serve_until_stopped

LOOPBACK = "127.0.0.1"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
CONNECT_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"

_CALLER_ONLY_VARIABLES = (
    "PYTHONPATH",
    "PYSPARK_PYTHON",
    "PYSPARK_DRIVER_PYTHON",
    "PYSPARK_GATEWAY_PORT",
    "PYSPARK_GATEWAY_SECRET",
    "SPARK_REMOTE",
    "SPARK_CONNECT_MODE_ENABLED",
    "SPARK_CONF_DIR",
)
"""The caller's settings a daemon must not inherit: a daemon (and the executors it starts) sees
only what a machine of the cluster would."""


class ClusterStartError(RuntimeError):
    """A daemon exited or did not become ready in time; the message ends with its log."""


def spark_home() -> Path:
    """pyspark's installed distribution (bin/, jars/), found without importing pyspark."""
    found = importlib.util.find_spec("pyspark")
    if found is None or not found.submodule_search_locations:
        raise ClusterStartError("pyspark is not installed: no Spark distribution to start")
    return Path(next(iter(found.submodule_search_locations)))


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        port: int = probe.getsockname()[1]
        return port


def _parent_pid(pid: int) -> int | None:
    try:
        # the parent id is the 2nd field after the parenthesised command name
        return int((Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def process_tree(root: int) -> list[int]:
    """`root` and every process descended from it (root first), from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            parent = _parent_pid(int(entry.name))
            if parent is not None:
                children.setdefault(parent, []).append(int(entry.name))
    tree, pending = [], [root]
    while pending:
        pid = pending.pop()
        tree.append(pid)
        pending.extend(children.get(pid, []))
    return tree


def command_line(pid: int) -> str:
    """The process's command line, arguments separated by spaces ('' once it has gone)."""
    try:
        raw = (Path("/proc") / str(pid) / "cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _signal_all(pids: Iterable[int], signal_number: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal_number)


def stop_process_tree(
    process: subprocess.Popen[Any] | int, grace_seconds: float = 15.0
) -> list[int]:
    """SIGTERM `process` (a Popen or a pid) and its descendants, SIGKILL whatever is left after
    `grace_seconds`, and reap `process` when it is our child. Returns the pids signalled."""
    pid = process if isinstance(process, int) else process.pid
    tree = process_tree(pid)
    _signal_all(tree, signal.SIGTERM)
    deadline = time.monotonic() + grace_seconds
    while time.monotonic() < deadline:
        if isinstance(process, subprocess.Popen):
            process.poll()
        if not any(_alive(member) for member in tree):
            break
        time.sleep(0.2)
    _signal_all([member for member in tree if _alive(member)], signal.SIGKILL)
    if isinstance(process, subprocess.Popen):
        process.wait(timeout=30)
    return tree


def daemon_environment(root: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a daemon rooted at `root`: the caller's without its Python and Spark
    settings, plus SPARK_HOME, loopback binding, and local/log/conf directories under `root`."""
    environment = {
        name: value for name, value in os.environ.items() if name not in _CALLER_ONLY_VARIABLES
    }
    conf = root / "conf"
    for directory in (conf, root / "local", root / "logs"):
        directory.mkdir(parents=True, exist_ok=True)
    environment.update(
        SPARK_HOME=str(spark_home()),
        SPARK_LOCAL_IP=LOOPBACK,
        SPARK_LOCAL_DIRS=str(root / "local"),
        SPARK_LOG_DIR=str(root / "logs"),
        SPARK_CONF_DIR=str(conf),
    )
    environment.update(extra or {})
    return environment


@dataclass
class Daemon:
    """One started process: its name, the process, its log file."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path
    _log_handle: IO[bytes] | None = field(default=None, repr=False)

    @classmethod
    def start(
        cls, name: str, command: list[str], environment: Mapping[str, str], log: Path
    ) -> Daemon:
        """Start `command` in its own session, stdout and stderr into `log`."""
        log.parent.mkdir(parents=True, exist_ok=True)
        handle = log.open("wb")
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=subprocess.STDOUT,
            env=dict(environment),
            start_new_session=True,
        )
        return cls(name, process, log, handle)

    def check_running(self) -> None:
        """ClusterStartError with the log's end if the process has exited."""
        if self.process.poll() is not None:
            raise ClusterStartError(
                f"{self.name} exited with status {self.process.returncode}:\n{self.log_tail()}"
            )

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """End the process and its descendants (see stop_process_tree), then anything left in
        the session it was started in (children orphaned by an earlier death); close the log."""
        if self.process.poll() is None:
            stop_process_tree(self.process)
        # The process group is ours: its id is the daemon's pid, not reused while the group lives.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        if self._log_handle is not None:
            self._log_handle.close()
            self._log_handle = None


def _wait_until(
    condition: Callable[[], object], daemons: Iterable[Daemon], timeout: float, what: str
) -> object:
    """Poll `condition()` until it returns something truthy; ClusterStartError if a daemon dies
    or `timeout` seconds pass."""
    watched = list(daemons)
    deadline = time.monotonic() + timeout
    while True:
        for daemon in watched:
            daemon.check_running()
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            tails = "\n".join(f"--- {d.name}:\n{d.log_tail()}" for d in watched)
            raise ClusterStartError(f"{what} not ready after {timeout:.0f} s\n{tails}")
        time.sleep(0.5)


def _write_properties(path: Path, properties: Mapping[str, str]) -> Path:
    path.write_text("".join(f"{key} {value}\n" for key, value in properties.items()))
    return path


class StandaloneCluster:
    """A master and `workers` workers on 127.0.0.1, each worker with `cores_per_worker` cores.

    Use as a context manager, or call start() and stop(). `master_url` is what spark-submit's
    `--master` takes. The master's REST submission server is off (it would want port 6066).
    """

    def __init__(
        self,
        root: Path,
        workers: int = 2,
        cores_per_worker: int = 1,
        worker_memory: str = "2g",
    ) -> None:
        self.root = root
        self.worker_count = workers
        self.cores_per_worker = cores_per_worker
        self.worker_memory = worker_memory
        self.master_port = 0
        self.master_ui_port = 0
        self.master: Daemon | None = None
        self.workers: list[Daemon] = []

    @property
    def master_url(self) -> str:
        return f"spark://{LOOPBACK}:{self.master_port}"

    @property
    def master_ui_url(self) -> str:
        return f"http://{LOOPBACK}:{self.master_ui_port}"

    def status(self) -> dict[str, Any]:
        """The master's JSON status (workers, applications); {} while it does not answer."""
        try:
            with urllib.request.urlopen(f"{self.master_ui_url}/json/", timeout=5) as response:
                status: dict[str, Any] = json.loads(response.read())
                return status
        except (OSError, urllib.error.URLError, ValueError):
            return {}

    def start(self, timeout: float = 180.0) -> Self:
        """Start the master, then the workers; return once every worker is registered."""
        spark_class = str(spark_home() / "bin" / "spark-class")
        try:
            self.master_port, self.master_ui_port = free_port(), free_port()
            master_root = self.root / "master"
            master_root.mkdir(parents=True, exist_ok=True)
            properties = _write_properties(
                master_root / "master.properties", {"spark.master.rest.enabled": "false"}
            )
            self.master = Daemon.start(
                "master",
                [
                    spark_class,
                    MASTER_CLASS,
                    "--host",
                    LOOPBACK,
                    "--port",
                    str(self.master_port),
                    "--webui-port",
                    str(self.master_ui_port),
                    "--properties-file",
                    str(properties),
                ],
                daemon_environment(master_root),
                master_root / "master.log",
            )
            _wait_until(
                lambda: self.status().get("status") == "ALIVE",
                [self.master],
                timeout,
                "the master",
            )
            for index in range(self.worker_count):
                self.workers.append(self._start_worker(spark_class, index))
            _wait_until(
                lambda: self.status().get("aliveworkers") == self.worker_count,
                [self.master, *self.workers],
                timeout,
                f"{self.worker_count} workers",
            )
        except BaseException:
            self.stop()
            raise
        return self

    def _start_worker(self, spark_class: str, index: int) -> Daemon:
        worker_root = self.root / f"worker-{index}"
        work_dir = worker_root / "work"
        work_dir.mkdir(parents=True, exist_ok=True)
        return Daemon.start(
            f"worker-{index}",
            [
                spark_class,
                WORKER_CLASS,
                "--host",
                LOOPBACK,
                "--port",
                "0",
                "--webui-port",
                "0",
                "--cores",
                str(self.cores_per_worker),
                "--memory",
                self.worker_memory,
                "--work-dir",
                str(work_dir),
                self.master_url,
            ],
            daemon_environment(worker_root),
            worker_root / "worker.log",
        )

    def active_application_ids(self) -> list[str]:
        """The ids of the applications running on the cluster now (app-...)."""
        return [str(application["id"]) for application in self.status().get("activeapps", [])]

    def executor_pids(self, worker_index: int, application_id: str | None = None) -> list[int]:
        """The executor JVMs that worker `worker_index` runs now, of `application_id` only when
        given (a finished application's executors may still be on their way out)."""
        worker = self.workers[worker_index]
        wanted = f"--app-id {application_id}" if application_id else ""
        executors = []
        for pid in process_tree(worker.process.pid)[1:]:
            line = command_line(pid)
            if EXECUTOR_CLASS in line and wanted in line:
                executors.append(pid)
        return executors

    def stop(self) -> None:
        """Stop the workers (and their executors), then the master; safe to call twice."""
        for daemon in [*reversed(self.workers), *([self.master] if self.master else [])]:
            daemon.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


class ConnectServer:
    """A Spark Connect server on 127.0.0.1 (the jar ships with pyspark), its own Spark running
    on `master`; its executors run `python` (PYSPARK_PYTHON) for Python UDFs and mapInArrow.

    `url` is what `--remote` takes.
    """

    def __init__(self, root: Path, master: str = "local[2]", python: str | None = None) -> None:
        self.root = root
        self.master = master
        self.python = python
        self.port = 0
        self.daemon: Daemon | None = None

    @property
    def url(self) -> str:
        return f"sc://{LOOPBACK}:{self.port}"

    def _listening(self) -> bool:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.settimeout(1)
            return probe.connect_ex((LOOPBACK, self.port)) == 0

    def start(self, timeout: float = 180.0) -> Self:
        """Start the server; return once its gRPC port accepts connections."""
        self.port = free_port()
        extra = {"PYSPARK_PYTHON": self.python} if self.python else {}
        try:
            self.daemon = Daemon.start(
                "connect-server",
                [
                    str(spark_home() / "bin" / "spark-submit"),
                    "--class",
                    CONNECT_SERVER_CLASS,
                    "--name",
                    "rebalancing-connect-server",
                    "--master",
                    self.master,
                    "--conf",
                    f"spark.connect.grpc.binding.address={LOOPBACK}",
                    "--conf",
                    f"spark.connect.grpc.binding.port={self.port}",
                    "--conf",
                    "spark.ui.enabled=false",
                ],
                daemon_environment(self.root, extra),
                self.root / "connect-server.log",
            )
            _wait_until(self._listening, [self.daemon], timeout, "the Spark Connect server")
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self.daemon is not None:
            self.daemon.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m tools.local_cluster`: start a standalone cluster (and with --connect a Connect
    server on it), print the URLs, keep them until Ctrl-C or SIGTERM, then stop them."""
    parser = argparse.ArgumentParser(
        prog="python -m tools.local_cluster",
        description="A Spark standalone cluster on 127.0.0.1, from pyspark's own jars.",
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cores-per-worker", type=int, default=1)
    parser.add_argument("--worker-memory", default="2g")
    parser.add_argument(
        "--connect", action="store_true", help="also a Spark Connect server on the cluster"
    )
    parser.add_argument(
        "--directory", type=Path, help="work and log directories (default: a temporary one)"
    )
    arguments = parser.parse_args(argv)
    if arguments.workers < 1 or arguments.cores_per_worker < 1:
        parser.error("--workers and --cores-per-worker must be at least 1")
    with contextlib.ExitStack() as stack:
        root = arguments.directory or Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="spark-local-"))
        )
        cluster = StandaloneCluster(
            root / "cluster",
            arguments.workers,
            arguments.cores_per_worker,
            arguments.worker_memory,
        )
        stack.enter_context(cluster)
        print(cluster.master_url, flush=True)
        daemons = [*cluster.workers, *([cluster.master] if cluster.master else [])]
        if arguments.connect:
            server = ConnectServer(root / "connect", cluster.master_url, sys.executable)
            stack.enter_context(server)
            print(server.url, flush=True)
            daemons += [server.daemon] if server.daemon else []
        print(
            f"master UI {cluster.master_ui_url}; logs under {root}; Ctrl-C stops it",
            file=sys.stderr,
            flush=True,
        )

        def exited() -> str | None:
            try:
                for daemon in daemons:
                    daemon.check_running()
            except ClusterStartError as error:
                return str(error)
            return None

        return serve_until_stopped(exited)


if __name__ == "__main__":
    raise SystemExit(main())
