"""What several benchmarks do alike: time a call, and build the floor strategies are compared with.

Imported by the benchmark scripts (which run with this folder first on sys.path) and by their
worker processes (started with this folder as the working directory).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
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
