"""What several benchmarks do alike: time a call, build the floor strategies are compared with, and
import the package as it was at another commit beside the working tree's.

Imported by the benchmark scripts (which run with this folder first on sys.path) and by their
worker processes (started with this folder as the working directory).
"""

from __future__ import annotations

import io
import math
import re
import statistics
import subprocess
import tarfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar, cast

from rebalancing.contract import ConsumerT, QueueT, empty_plan

Result = TypeVar("Result")


def timed(
    call: Callable[[], Result],
    repeats: int,
    budget_seconds: float = math.inf,
    warm_up: bool = False,
) -> tuple[float, int, Result]:
    """Median seconds of `repeats` calls (fewer once they add up to `budget_seconds`), the number
    of calls made, and the last call's result.

    Each call is timed alone: the previous result is freed before the clock starts, so dropping
    a million-entry plan is never charged to the next call. With `warm_up`, one untimed call
    comes first: at a million ids the first calls after a different one can pay page faults
    the later ones do not (the allocator adapts to the block sizes it sees), so which calls pay
    would depend on what ran before. Use it for figures that are divided by one another (a call
    over the floor): each is then its own steady state.
    """
    timings: list[float] = []
    result: Result | None = call() if warm_up else None
    while len(timings) < repeats and sum(timings) < budget_seconds:
        result = None
        started = time.perf_counter()
        result = call()
        timings.append(time.perf_counter() - started)
    return statistics.median(timings), len(timings), cast(Result, result)


def floor(queues: Sequence[QueueT], consumers: list[ConsumerT]) -> dict[ConsumerT, list[QueueT]]:
    """The least any strategy must do: one list per consumer holding its share of the queues.

    Built the fastest way we measured, the strategies' own: lists from `empty_plan`, then filled
    with contiguous slices (at a million queues 4-8 ms, where storing the slices took 10-12 ms).
    """
    size = -(-len(queues) // len(consumers))
    plan: dict[ConsumerT, list[QueueT]] = empty_plan(consumers)
    for index, owned in enumerate(plan.values()):
        owned.extend(queues[index * size : (index + 1) * size])
    return plan


REPOSITORY = Path(__file__).resolve().parent.parent


def commit() -> str:
    """The checkout's short commit hash, for a results file's header ("unknown" outside git)."""
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=REPOSITORY,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


BEFORE = "rebalancing_before"

# `rebalancing` as a module path (imports, and strings such as "rebalancing.strategies.sticky");
# the word in prose is renamed too, harmlessly, but not names such as "rebalancing-harness"
_MODULE_PATH = re.compile(r"(?<![\w.])rebalancing(?=[.\s,)\"'])")

# what would still import the working tree's package from the old one
_LEFT_OVER = re.compile(r"\b(from|import)\s+rebalancing\b|[\"']rebalancing\.")


def source_at(revision: str, into: Path) -> Path:
    """The package's source at `revision` extracted as `into/src/rebalancing`; returns
    `into/src`, a folder to put first on PYTHONPATH."""
    archive = subprocess.run(
        ["git", "-C", str(REPOSITORY), "archive", revision, "src/rebalancing"],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def before_tree(revision: str, into: Path) -> None:
    """The package at `revision` as `into/rebalancing_before`, its own imports renamed: with
    `into` on sys.path, `import rebalancing_before` gives the old package beside the working
    tree's `rebalancing`, so that a before/after runs in one process (one minute of a shared
    machine for both sides of each ratio)."""
    source_at(revision, into)
    package = into / BEFORE
    (into / "src" / "rebalancing").rename(package)
    for module in package.rglob("*.py"):
        text = module.read_text()
        renamed = re.sub(r"\b(from|import) rebalancing\b", rf"\1 {BEFORE}", text)
        renamed = _MODULE_PATH.sub(BEFORE, renamed)
        if left_over := _LEFT_OVER.search(renamed):
            raise RuntimeError(f"{module}: {left_over.group()!r} would import the working tree")
        module.write_text(renamed)


def description(doc: str | None) -> str:
    """A script's first docstring paragraph on one line: its --help description (the first line
    alone stops mid-sentence)."""
    return " ".join((doc or "").split("\n\n")[0].split())
