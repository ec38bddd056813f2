"""What the tests and experiments need of the machine: Debian packages (rabbitmq-server,
chromium) installed when missing, and private processes stopped with everything they started.

`apt_install(package)` runs `apt-get install -y --no-install-recommends PACKAGE` as root (or
through passwordless sudo), non-interactively, waiting up to 10 minutes for a dpkg lock another
install holds, after an `update` when the package is unknown (a fresh image has no package
lists). It raises PackageInstallError, with apt's output, when that fails, so that a caller
(a test fixture) fails with the reason instead of skipping. `stop_process_group(process)`
ends a process started with `start_new_session=True` and every process in its group.
`serve_until_stopped(check)` is the loop of the commands that keep servers running until
Ctrl-C or SIGTERM. Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any


class PackageInstallError(RuntimeError):
    """A Debian package could not be installed; the message holds the command and apt's output."""


def apt_install(package: str, apt_get: str = "apt-get", timeout: float = 900.0) -> None:
    """Install `package` with apt (see the module docstring); PackageInstallError on failure."""
    prefix: list[str] = []
    if os.geteuid() != 0:
        if shutil.which("sudo") is None:
            raise PackageInstallError(
                f"{package} is not installed and this user is not root (no sudo either): "
                f"install it with `apt-get install -y {package}`"
            )
        prefix = ["sudo", "-n"]
    environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    apt = [*prefix, apt_get, "-o", "DPkg::Lock::Timeout=600"]
    install = [*apt, "install", "-y", "--no-install-recommends", package]
    completed = _run_step(install, environment, timeout)
    if completed.returncode != 0 and "Unable to locate package" in completed.stdout:
        _run_step([*apt, "update"], environment, timeout)
        completed = _run_step(install, environment, timeout)
    if completed.returncode != 0:
        raise PackageInstallError(
            f"`{' '.join(install)}` failed (exit {completed.returncode}):\n"
            f"{completed.stdout[-4000:]}"
        )


def _run_step(
    command: list[str], environment: Mapping[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            command,
            env=dict(environment),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise PackageInstallError(f"`{' '.join(command)}` could not run: {error}") from error


def stop_process_group(process: subprocess.Popen[Any], grace: float = 5.0) -> None:
    """SIGTERM the process group `process` leads (started with start_new_session=True), wait up
    to `grace` seconds for it, then SIGKILL the group: no child survives; `process` is reaped."""
    group = process.pid  # a new session: the process group id is the leader's process id
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(grace)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(10.0)


def serve_until_stopped(check: Callable[[], str | None], poll: float = 0.5) -> int:
    """Return 0 at Ctrl-C or SIGTERM (from the main thread; the caller then stops its servers),
    or 1 once `check()`, called every `poll` seconds, says why a server has died (printed)."""
    stop = threading.Event()
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: stop.set())
    while not stop.wait(poll):
        failure = check()
        if failure is not None:
            print(failure, file=sys.stderr, flush=True)
            return 1
    return 0
