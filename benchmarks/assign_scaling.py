"""Median wall time of each registered strategy's `assign`, fresh and after one consumer leaves,
beside the floor of merely building a result dict of that size.

Usage: python benchmarks/assign_scaling.py [--sizes 1000x10,10000x100,...] [--repeats 5]
       [--plot benchmarks/results/assign_scaling.png]
Prints a Markdown table (medians of --repeats runs, each after one untimed call; the machines
are shared, so read ratios);
with --plot, also draws time against queue count on log-log axes, where a straight line of
slope 1 is linear growth and slope 2 would be quadratic.
"""

from __future__ import annotations

import argparse
import os
from functools import partial

from rebalancing.strategies import STRATEGIES
from shared import floor, timed


def plot(
    timings: dict[str, list[tuple[int, float]]], floor_timings: list[tuple[int, float]], path: str
) -> None:
    """Log-log lines of seconds against queue count, one per (strategy, case), and the floor."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(7, 4.5))
    for label, points in timings.items():
        axes.plot(*zip(*points, strict=True), marker="o", label=label)
    axes.plot(*zip(*floor_timings, strict=True), "k--", label="floor: build the result dict")
    slowest = max(timings.values(), key=lambda points: points[-1][1])
    (first_size, first_seconds), last_size = slowest[0], slowest[-1][0]
    axes.plot(
        [first_size, last_size],
        [first_seconds * 2, first_seconds * 2 * last_size / first_size],
        ":",
        color="grey",
        label="linear growth (slope 1), for reference",
    )
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("queues (consumers = queues / 500)")
    axes.set_ylabel("median seconds per assign()")
    axes.set_title("assign() scaling, pure Python, one core")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000x10,10000x100,100000x100,100000x1000")
    parser.add_argument("--plot", help="write a log-log PNG of the timings to this path")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--strategies",
        default="averagely,round_robin,sticky",
        help="the protocol strategies (sac) are far slower: see benchmarks/sac_leave.py",
    )
    options = parser.parse_args()
    print(f"cores: {os.cpu_count()}, repeats: {options.repeats} (medians, milliseconds)\n")
    print("| strategy | queues | consumers | fresh assign ms | one consumer leaves ms | floor ms |")
    print("|---|---|---|---|---|---|")
    timings: dict[str, list[tuple[int, float]]] = {}
    floor_timings = []
    for size in options.sizes.split(","):
        queue_count, consumer_count = (int(part) for part in size.split("x"))
        queues = list(range(queue_count))
        consumers = [f"consumer-{index:05d}" for index in range(consumer_count)]
        floor_seconds, _, _ = timed(
            partial(floor, queues, consumers), options.repeats, warm_up=True
        )
        floor_timings.append((queue_count, floor_seconds))
        for name in options.strategies.split(","):
            assign = STRATEGIES[name].assign
            previous = assign(queues, consumers, None)
            remaining = consumers[: consumer_count // 2] + consumers[consumer_count // 2 + 1 :]
            fresh, _, _ = timed(
                partial(assign, queues, consumers, None), options.repeats, warm_up=True
            )
            leave, _, _ = timed(
                partial(assign, queues, remaining, previous), options.repeats, warm_up=True
            )
            timings.setdefault(f"{name}, fresh", []).append((queue_count, fresh))
            timings.setdefault(f"{name}, one leaves", []).append((queue_count, leave))
            print(
                f"| {name} | {queue_count:,} | {consumer_count:,} "
                f"| {fresh * 1000:,.1f} | {leave * 1000:,.1f} | {floor_seconds * 1000:,.2f} |",
                flush=True,
            )
    if options.plot:
        plot(timings, floor_timings, options.plot)


if __name__ == "__main__":
    main()
