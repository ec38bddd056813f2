"""The leaderless SAC group on a real RabbitMQ against the simulation: releases and seconds to
settle per phase (cold start, one join, one graceful leave; with --crash, one member's
connection closed by the broker) for a few group sizes.

Usage: python -m benchmarks.rabbitmq_sac [--sizes 16x4,64x8,128x16] [--repeats 3]
                                        [--release highest] [--crash] [--amqp-url URL]
(from the repository's root: it imports tools/). One private broker (tools.rabbitmq_broker;
installed with apt when missing) serves every run unless --amqp-url names one; each run is
`python -m tools.rabbitmq_experiment`'s experiment on its own group. Prints a Markdown table:
per size and phase, the real releases (median and range over the repeats), the simulated
releases (rebalancing.strategies.sac.Session, deterministic), the median seconds to settle
(range), and how many runs settled.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
from collections.abc import Iterator
from typing import Any

from tools.rabbitmq_broker import PrivateBroker, private_broker
from tools.rabbitmq_experiment import run_experiment


def _sizes(text: str) -> list[tuple[int, int]]:
    sizes = []
    for item in text.split(","):
        queues, _, apps = item.partition("x")
        sizes.append((int(queues), int(apps)))
    return sizes


@contextlib.contextmanager
def _broker(amqp_url: str | None) -> Iterator[tuple[str, PrivateBroker | None]]:
    if amqp_url:
        yield amqp_url, None
        return
    with private_broker() as broker:
        yield broker.amqp_url, broker


def _spread(values: list[float], digits: int) -> str:
    median = statistics.median(values)
    if digits == 0:
        return f"{median:.0f} ({min(values):.0f}-{max(values):.0f})"
    return f"{median:.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=_sizes, default=_sizes("16x4,64x8,128x16"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--release", default="highest")
    parser.add_argument("--variant", default="id")
    parser.add_argument("--crash", action="store_true", help="add the crash phase")
    parser.add_argument("--amqp-url")
    options = parser.parse_args()
    results: dict[tuple[int, int], list[dict[str, Any]]] = {}
    with _broker(options.amqp_url) as (amqp_url, broker):
        for queues, apps in options.sizes:
            for repeat in range(options.repeats):
                results.setdefault((queues, apps), []).append(
                    run_experiment(
                        amqp_url,
                        queues,
                        apps,
                        broker=broker,
                        group=f"bench-{queues}x{apps}-{repeat}",
                        release=options.release,
                        variant=options.variant,
                        seed=repeat,
                        crash=options.crash,
                    )
                )
    print(
        f"release {options.release}, Position {options.variant}; {options.repeats} runs per size"
        " (median, range)\n"
    )
    print("| queues x apps | phase | real releases | simulated | seconds to settle | settled |")
    print("|---|---|---|---|---|---|")
    for (queues, apps), runs in results.items():
        for index, name in enumerate(phase["phase"] for phase in runs[0]["phases"]):
            phases = [run["phases"][index] for run in runs]
            simulated = sorted({phase["simulated_releases"] for phase in phases})
            print(
                f"| {queues} x {apps} | {name} "
                f"| {_spread([phase['releases'] for phase in phases], 0)} "
                f"| {', '.join(str(value) for value in simulated)} "
                f"| {_spread([phase['settle_seconds'] for phase in phases], 2)} "
                f"| {sum(phase['settled'] for phase in phases)}/{len(phases)} |"
            )


if __name__ == "__main__":
    main()
