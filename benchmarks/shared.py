"""What several benchmarks do alike: time a call, and build the floor strategies are compared with.

Imported by the benchmark scripts (which run with this folder first on sys.path) and by their
worker processes (started with this folder as the working directory).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar, cast

Result = TypeVar("Result")
Item = TypeVar("Item")
Key = TypeVar("Key", bound=Hashable)


def timed(
    call: Callable[[], Result], repeats: int, budget_seconds: float = math.inf
) -> tuple[float, int, Result]:
    """Median seconds of `repeats` calls (fewer once they add up to `budget_seconds`), the number
    of calls made, and the last call's result.

    Each call is timed alone: the previous result is freed before the clock starts, so dropping
    a million-entry plan is never charged to the next call.
    """
    timings: list[float] = []
    result: Result | None = None
    while len(timings) < repeats and sum(timings) < budget_seconds:
        result = None
        started = time.perf_counter()
        result = call()
        timings.append(time.perf_counter() - started)
    return statistics.median(timings), len(timings), cast(Result, result)


def floor(queues: Sequence[Item], consumers: Sequence[Key]) -> dict[Key, Sequence[Item]]:
    """The least any strategy must do: one list per consumer holding its share of the queues."""
    size = -(-len(queues) // len(consumers))
    return {consumer: queues[i * size : (i + 1) * size] for i, consumer in enumerate(consumers)}
