"""A private RabbitMQ broker for tests and experiments: Debian's `rabbitmq-server` started as a
plain child process on 127.0.0.1, with its own data directory, node name, ports and epmd.

    with PrivateBroker.start() as broker:
        connection = pika.BlockingConnection(pika.URLParameters(broker.amqp_url))
        consumers = broker.list_consumers()

Or as a command, from the repository's root, for members run as separate processes: it prints
the AMQP URL on its first line, runs until Ctrl-C (or SIGTERM), then stops the broker and
removes its directory (a `--directory` given is kept):

    python -m tools.rabbitmq_broker [--directory DIR]

Why each choice:

- The package's own scripts (`/usr/lib/rabbitmq/bin`, i.e. its `lib/rabbitmq/bin`) are run, not
  the `/usr/sbin` wrappers: those switch to the `rabbitmq` user, whose home holds another Erlang
  cookie, so our `rabbitmqctl` could not talk to our node. HOME points into the private directory,
  so the node and its CLI share a cookie made for this broker alone.
- Missing scripts are installed with `apt-get install -y rabbitmq-server` (non-interactive; root
  or passwordless sudo needed). A failed install raises `BrokerUnavailableError` with apt's output:
  tests that need a broker fail with that message, they are never skipped. On a machine with an
  init system and no policy-rc.d, installing the package may also start Debian's own service on
  the default ports; nothing here uses or stops it.
- The Erlang VM starts `epmd -daemon` when none answers on its port, and that daemon outlives
  the VM. So epmd is started first, in the foreground, on a private port bound to 127.0.0.1, as
  our own child (ERL_EPMD_PORT points the node and its CLI at it), and the node is told never to
  start one (`-start_epmd false`).
- Each child runs in a new session (its own process group). `stop()` asks the node to stop
  (SIGTERM: Erlang stops its applications), waits, then kills the broker's process group and
  epmd by their ids: the shell script, beam.smp, erl_child_setup, inet_gethost. `stop()` also
  runs at interpreter exit, and both children are started under `setpriv --pdeathsig TERM`, so
  even a killed test session leaves no broker behind.
- Ports are free ports of 127.0.0.1 found by binding port 0; plugins are off (none is needed).
Start-up takes about 5 s on an idle machine; `start()` waits until an AMQP handshake succeeds.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from tools.machine import (
    PackageInstallError,
    apt_install,
    serve_until_stopped,
    stop_process_group,
)

SCRIPT_DIRECTORIES = (Path("/usr/lib/rabbitmq/bin"),)
"""Where Debian's package puts its own (non-switching) scripts."""


class BrokerUnavailableError(RuntimeError):
    """RabbitMQ could not be installed or started; the message says what happened."""


def find_scripts() -> Path | None:
    """The directory holding `rabbitmq-server` and `rabbitmqctl`, or None.

    RABBITMQ_SCRIPTS (a directory) wins over the Debian location, for other installations."""
    candidates = [Path(os.environ["RABBITMQ_SCRIPTS"])] if "RABBITMQ_SCRIPTS" in os.environ else []
    for directory in [*candidates, *SCRIPT_DIRECTORIES]:
        if (directory / "rabbitmq-server").exists() and (directory / "rabbitmqctl").exists():
            return directory
    return None


def install_rabbitmq(apt_get: str = "apt-get", timeout: float = 900.0) -> Path:
    """Install Debian's rabbitmq-server when its scripts are missing; the scripts' directory.

    Runs `apt_get install -y rabbitmq-server` as root (or through passwordless sudo),
    non-interactively, waiting up to 10 minutes for a dpkg lock another install holds, after an
    `update` when the package is unknown (a fresh image has no package lists).
    BrokerUnavailableError, with apt's output, when it fails."""
    found = find_scripts()
    if found is not None:
        return found
    try:
        apt_install("rabbitmq-server", apt_get, timeout)
    except PackageInstallError as error:
        raise BrokerUnavailableError(str(error)) from error
    found = find_scripts()
    if found is None:
        raise BrokerUnavailableError(
            "rabbitmq-server was installed but its scripts are not in "
            f"{', '.join(str(path) for path in SCRIPT_DIRECTORIES)}"
        )
    return found


def free_ports(count: int) -> list[int]:
    """`count` distinct TCP ports of 127.0.0.1 that nothing listens on now (the kernel's choice
    for port 0, all probes held open together so that no port comes twice)."""
    with contextlib.ExitStack() as stack:
        probes = [
            stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            for _ in range(count)
        ]
        for probe in probes:
            probe.bind(("127.0.0.1", 0))
        return [int(probe.getsockname()[1]) for probe in probes]


@dataclass
class PrivateBroker:
    """One running private broker; make it with `PrivateBroker.start()`, end it with `stop()`.

    `amqp_url` is where clients connect (guest/guest on 127.0.0.1, which RabbitMQ allows from
    the loopback interface only); `ctl(...)` runs rabbitmqctl against this node alone."""

    scripts: Path
    directory: Path
    node_name: str
    amqp_port: int
    environment: dict[str, str]
    broker_process: subprocess.Popen[bytes]
    epmd_process: subprocess.Popen[bytes]
    owns_directory: bool = True
    _stopped: bool = field(default=False, init=False, repr=False)

    @property
    def amqp_url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.amqp_port}/%2F?heartbeat=30"

    @classmethod
    def start(
        cls, directory: Path | None = None, startup_timeout: float = 120.0, install: bool = True
    ) -> PrivateBroker:
        """Install when needed, start epmd and the node, wait until AMQP answers."""
        scripts = install_rabbitmq() if install else find_scripts()
        if scripts is None:
            raise BrokerUnavailableError("rabbitmq-server is not installed")
        epmd = shutil.which("epmd") or _erlang_epmd()
        if epmd is None:
            raise BrokerUnavailableError("epmd (Erlang) was not found although rabbitmq is")
        owns_directory = directory is None
        base = Path(tempfile.mkdtemp(prefix="rabbitmq-")) if directory is None else directory
        base.mkdir(parents=True, exist_ok=True)
        node_name = f"rebalancing-{os.getpid()}-{base.name.replace('_', '-')}@localhost"
        epmd_port, amqp_port, dist_port = free_ports(3)
        environment = _environment(base, node_name, epmd_port, amqp_port, dist_port)
        log = (base / "epmd.log").open("wb")
        tied = _tied_to_this_process()
        epmd_process = subprocess.Popen(
            [*tied, epmd, "-port", str(epmd_port), "-address", "127.0.0.1"],
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        try:
            _wait_for_port(epmd_port, epmd_process, "epmd", timeout=30.0)
            server_log = (base / "server.out").open("wb")
            broker_process = subprocess.Popen(
                [*tied, str(scripts / "rabbitmq-server")],
                env=environment,
                cwd=base,
                stdin=subprocess.DEVNULL,
                stdout=server_log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            server_log.close()
        except BaseException:
            stop_process_group(epmd_process, grace=5.0)
            raise
        broker = cls(
            scripts=scripts,
            directory=base,
            node_name=node_name,
            amqp_port=amqp_port,
            environment=environment,
            broker_process=broker_process,
            epmd_process=epmd_process,
            owns_directory=owns_directory,
        )
        atexit.register(broker.stop)
        try:
            broker.wait_until_ready(startup_timeout)
        except BaseException:
            broker.stop()
            raise
        return broker

    def wait_until_ready(self, timeout: float) -> None:
        """Poll an AMQP handshake until it succeeds (the listener opens last in the boot)."""
        deadline = time.monotonic() + timeout
        while True:
            if self.broker_process.poll() is not None:
                raise BrokerUnavailableError(
                    f"rabbitmq-server exited with {self.broker_process.returncode} during start-up:"
                    f"\n{self.server_output()}"
                )
            if _amqp_answers(self.amqp_port):
                return
            if time.monotonic() > deadline:
                raise BrokerUnavailableError(
                    f"rabbitmq-server did not answer on port {self.amqp_port} within {timeout:.0f}"
                    f" s:\n{self.server_output()}"
                )
            time.sleep(0.2)

    def server_output(self, limit: int = 4000) -> str:
        """The end of what the node printed (start-up errors show here)."""
        try:
            text = (self.directory / "server.out").read_text(errors="replace")
        except OSError:
            return ""
        return text[-limit:]

    def ctl(self, *arguments: str, timeout: float = 120.0) -> str:
        """Run rabbitmqctl against this node; its standard output. RuntimeError on failure."""
        completed = subprocess.run(
            [str(self.scripts / "rabbitmqctl"), "-n", self.node_name, *arguments],
            env=self.environment,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if completed.returncode != 0:
            raise RuntimeError(
                f"rabbitmqctl {' '.join(arguments)} failed ({completed.returncode}): "
                f"{completed.stderr.strip() or completed.stdout.strip()}"
            )
        return completed.stdout

    def ctl_json(self, *arguments: str) -> list[dict[str, Any]]:
        """A rabbitmqctl listing as a list of rows (`--formatter json`)."""
        output = self.ctl(*arguments, "--quiet", "--formatter", "json").strip()
        rows: list[dict[str, Any]] = json.loads(output) if output else []
        return rows

    def list_consumers(self) -> list[dict[str, Any]]:
        """The broker's consumers: queue_name, consumer_tag, active (single active consumer)."""
        return self.ctl_json(
            "list_consumers", "queue_name", "consumer_tag", "active", "activity_status"
        )

    def list_queues(self) -> list[dict[str, Any]]:
        """name, messages (ready + unacknowledged) and consumers of every queue."""
        return self.ctl_json("list_queues", "name", "messages", "consumers")

    def close_connection(self, connection_name: str, reason: str = "closed by test") -> int:
        """Close every connection whose client named itself `connection_name` (pika's
        client_properties["connection_name"]), as an operator (or a failing network) would: the
        client gets no chance to clean up. How many were closed.

        The JSON listing shows client properties but node-relative pids, which close_connection
        does not accept; the table listing shows full pids: they are matched by connection name
        (its "address -> address" string)."""
        rows = self.ctl_json("list_connections", "name", "client_properties")
        names = {
            row["name"]
            for row in rows
            if ["connection_name", "longstr", connection_name] in row["client_properties"]
        }
        table = self.ctl("list_connections", "pid", "name", "--quiet", "--no-table-headers")
        closed = 0
        for line in table.splitlines():
            pid, _, name = line.partition("\t")
            if name.strip() in names:
                self.ctl("close_connection", pid.strip(), reason)
                closed += 1
        return closed

    def stop(self, timeout: float = 60.0) -> None:
        """Stop the node and epmd (their whole process groups) and remove the directory."""
        if self._stopped:
            return
        self._stopped = True
        stop_process_group(self.broker_process, grace=timeout)
        stop_process_group(self.epmd_process, grace=5.0)
        if self.owns_directory:
            shutil.rmtree(self.directory, ignore_errors=True)
        atexit.unregister(self.stop)

    def __enter__(self) -> PrivateBroker:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def _tied_to_this_process() -> list[str]:
    """A command prefix that makes the child get SIGTERM if this process dies first (even by
    SIGKILL, when atexit cannot run): util-linux `setpriv --pdeathsig`. Only from the main
    thread, since the kernel sends it when the creating *thread* exits; [] where unavailable."""
    setpriv = shutil.which("setpriv")
    if setpriv is None or threading.current_thread() is not threading.main_thread():
        return []
    return [setpriv, "--pdeathsig", "TERM", "--"]


def _erlang_epmd() -> str | None:
    """epmd from the Erlang installation when it is not on the PATH (Debian: /usr/lib/erlang)."""
    for candidate in sorted(Path("/usr/lib/erlang").glob("erts-*/bin/epmd"), reverse=True):
        return str(candidate)
    return None


def _environment(
    base: Path, node_name: str, epmd_port: int, amqp_port: int, dist_port: int
) -> dict[str, str]:
    """Everything the node and its CLI read, pointed at `base` and the private ports."""
    (base / "home").mkdir(exist_ok=True)
    (base / "rabbitmq-env.conf").write_text("")
    (base / "enabled_plugins").write_text("[].\n")
    (base / "rabbitmq.conf").write_text(
        "loopback_users.guest = true\n"
        "log.console = false\n"
        "log.file.level = info\n"
        # A 2-core machine shared with other work: no disk alarm on a nearly full disk.
        "disk_free_limit.absolute = 50MB\n"
    )
    kept = {
        name: value
        for name, value in os.environ.items()
        if name in ("PATH", "LANG", "LC_ALL", "TMPDIR") or name.startswith("LC_")
    }
    return {
        **kept,
        "HOME": str(base / "home"),
        "RABBITMQ_CONF_ENV_FILE": str(base / "rabbitmq-env.conf"),
        "RABBITMQ_CONFIG_FILE": str(base / "rabbitmq.conf"),
        "RABBITMQ_ADVANCED_CONFIG_FILE": str(base / "advanced.config"),
        "RABBITMQ_ENABLED_PLUGINS_FILE": str(base / "enabled_plugins"),
        "RABBITMQ_MNESIA_BASE": str(base / "mnesia"),
        "RABBITMQ_LOG_BASE": str(base / "log"),
        "RABBITMQ_PID_FILE": str(base / "rabbitmq.pid"),
        "RABBITMQ_NODENAME": node_name,
        "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
        "RABBITMQ_NODE_PORT": str(amqp_port),
        "RABBITMQ_DIST_PORT": str(dist_port),
        "ERL_EPMD_PORT": str(epmd_port),
        "ERL_EPMD_ADDRESS": "127.0.0.1",
        # No scheduler busy-waiting: on a shared machine a spinning VM takes the cores others
        # (the members, the CLI) need.
        "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": (
            "-start_epmd false -kernel inet_dist_use_interface {127,0,0,1} "
            "+sbwt none +sbwtdcpu none +sbwtdio none"
        ),
        "RABBITMQ_CTL_ERL_ARGS": (
            "-start_epmd false -kernel inet_dist_use_interface {127,0,0,1} "
            "+sbwt none +sbwtdcpu none +sbwtdio none"
        ),
        # The CLI's own node listens on 35672-35682 by default, shared with every other
        # broker's CLI on the machine: 0 lets the kernel choose a free port instead.
        "RABBITMQ_CTL_DIST_PORT_MIN": "0",
        "RABBITMQ_CTL_DIST_PORT_MAX": "0",
    }


def _wait_for_port(port: int, process: subprocess.Popen[bytes], name: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise BrokerUnavailableError(f"{name} exited with {process.returncode} at start")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.05)
    raise BrokerUnavailableError(f"{name} did not listen on port {port} within {timeout:.0f} s")


def _amqp_answers(port: int) -> bool:
    """True when the port answers the AMQP 0-9-1 protocol header with a Connection.Start frame."""
    try:
        with socket.create_connection(("127.0.0.1", port), 1.0) as connection:
            connection.settimeout(2.0)
            connection.sendall(b"AMQP\x00\x00\x09\x01")
            frame = connection.recv(7)
            return len(frame) == 7 and frame[0] == 1  # a method frame: Connection.Start
    except OSError:
        return False


@contextlib.contextmanager
def private_broker(directory: Path | None = None) -> Iterator[PrivateBroker]:
    """`PrivateBroker.start()` as a context manager that always stops it."""
    broker = PrivateBroker.start(directory)
    try:
        yield broker
    finally:
        broker.stop()


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m tools.rabbitmq_broker`: start a private broker, print its AMQP URL, keep it
    until Ctrl-C or SIGTERM, then stop it. Exit status 1 when the broker exits by itself."""
    parser = argparse.ArgumentParser(
        prog="python -m tools.rabbitmq_broker",
        description="Start a private RabbitMQ broker on 127.0.0.1 and print its AMQP URL.",
    )
    parser.add_argument(
        "--directory",
        type=Path,
        help="the broker's data and logs (kept at the end); default: a temporary directory",
    )
    arguments = parser.parse_args(argv)
    with private_broker(arguments.directory) as broker:
        print(broker.amqp_url, flush=True)
        print(
            f"RabbitMQ node {broker.node_name}, data and logs in {broker.directory}; "
            "Ctrl-C stops it",
            file=sys.stderr,
            flush=True,
        )

        def exited() -> str | None:
            if broker.broker_process.poll() is None:
                return None
            return f"the broker exited:\n{broker.server_output()}"

        return serve_until_stopped(exited)


if __name__ == "__main__":
    raise SystemExit(main())
