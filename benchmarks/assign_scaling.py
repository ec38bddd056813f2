"""Median wall time of each registered strategy's `assign`, fresh and after one consumer leaves.

Usage: python benchmarks/assign_scaling.py [--sizes 1000x10,10000x100,...] [--repeats 5]
Prints a Markdown table (medians of --repeats runs; the machines are shared, so read ratios).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

from rebalancing.strategies import STRATEGIES


def median_seconds(repeats: int, call: Callable[..., object], *arguments: object) -> float:
    timings = []
    for _ in range(repeats):
        started = time.perf_counter()
        call(*arguments)
        timings.append(time.perf_counter() - started)
    return statistics.median(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000x10,10000x100,100000x100,100000x1000")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--strategies",
        default="averagely,round_robin,sticky",
        help="the protocol strategies (sac) are far slower: see benchmarks/sac_leave.py",
    )
    options = parser.parse_args()
    print(f"cores: {os.cpu_count()}, repeats: {options.repeats} (medians, milliseconds)\n")
    print("| strategy | queues | consumers | fresh assign ms | one consumer leaves ms |")
    print("|---|---|---|---|---|")
    for size in options.sizes.split(","):
        queue_count, consumer_count = (int(part) for part in size.split("x"))
        queues = list(range(queue_count))
        consumers = [f"consumer-{index:05d}" for index in range(consumer_count)]
        for name in options.strategies.split(","):
            assign = STRATEGIES[name]
            previous = assign(queues, consumers, None)
            remaining = consumers[: consumer_count // 2] + consumers[consumer_count // 2 + 1 :]
            fresh = median_seconds(options.repeats, assign, queues, consumers, None)
            leave = median_seconds(options.repeats, assign, queues, remaining, previous)
            print(
                f"| {name} | {queue_count:,} | {consumer_count:,} "
                f"| {fresh * 1000:,.1f} | {leave * 1000:,.1f} |"
            )


if __name__ == "__main__":
    main()
