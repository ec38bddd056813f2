"""An idle machine on a shared one: while a timed run lasts, every other Python and Java process
of the machine (other benchmarks, test runs, Spark) is stopped with SIGSTOP, and continued
(SIGCONT) when it ends. Issue 40's speed targets are for an idle machine; on the shared 2-core
machines this project runs on, the other work's processes otherwise take turns with the timed
one, and the same command took 1.9 to 5.5 s.

Linux only (it reads /proc). The processes of the timed command (this process's descendants) and
this process's ancestors are never stopped; a process that starts while the run lasts is
stopped when found (the machine is swept every 0.05 s). Used by verdict_speed.py's
`--pause-others`.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

PAUSED_NAMES = (b"python", b"java")
"""A process is stopped when its command line holds one of these."""

SWEEP_SECONDS = 0.05
"""How often the machine is swept for processes to stop while a run lasts."""


def parent_of(pid: int) -> int | None:
    """The parent process id of `pid`, or None when it has gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("PPid:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def lineage(pid: int) -> set[int]:
    """`pid` and its ancestors up to the first process."""
    chain: set[int] = set()
    current: int | None = pid
    while current is not None and current > 1 and current not in chain:
        chain.add(current)
        current = parent_of(current)
    return chain


def _stop_others(stopped: set[int], ours: set[int]) -> None:
    """Stop every Python or Java process that is neither ours (`ours`: this process and its
    ancestors) nor descended from this process, adding each to `stopped`."""
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        if pid in ours or pid in stopped:
            continue
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if not any(name in command for name in PAUSED_NAMES) or me in lineage(pid):
            continue
        try:
            os.kill(pid, signal.SIGSTOP)
        except OSError:
            continue
        stopped.add(pid)


@contextmanager
def others_paused() -> Iterator[None]:
    """The other Python and Java processes stopped for the duration of the block."""
    ours, stopped = lineage(os.getpid()), set[int]()
    finished = threading.Event()

    def sweep() -> None:
        while not finished.is_set():
            _stop_others(stopped, ours)
            finished.wait(SWEEP_SECONDS)

    _stop_others(stopped, ours)
    sweeper = threading.Thread(target=sweep, daemon=True)
    sweeper.start()
    try:
        yield
    finally:
        finished.set()
        sweeper.join()
        for pid in stopped:
            with suppress(OSError):
                os.kill(pid, signal.SIGCONT)
