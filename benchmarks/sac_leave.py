"""The SAC protocol to quiescence after one app leaves a balanced group, both Position variants.

Usage: python benchmarks/sac_leave.py [--queues 10000] [--apps 100] [--repeats 5]
                                      [--engine reference|kernel]
Prints a Markdown table: median wall time, releases, rounds, steps, convergence, final spread.
"""

from __future__ import annotations

import argparse
from functools import partial

from rebalancing.sac.model import POSITION_VARIANTS
from rebalancing.strategies import sac, sticky
from shared import timed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queues", type=int, default=10_000)
    parser.add_argument("--apps", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--engine", choices=sac.ENGINES, default="reference")
    options = parser.parse_args()
    queues = list(range(options.queues))
    apps = [f"app-{number:05d}" for number in range(options.apps)]
    previous = sticky.assign(queues, apps)  # balanced: counts differ by at most one
    remaining = apps[: options.apps // 2] + apps[options.apps // 2 + 1 :]
    print(
        f"{options.queues:,} queues x {options.apps} apps, one app leaves; {options.engine}; "
        f"medians of {options.repeats}\n"
    )
    print("| Position | seconds | releases | rounds | steps | converged | spread |")
    print("|---|---|---|---|---|---|---|")
    for variant in POSITION_VARIANTS:
        call = partial(sac.run, queues, remaining, previous, variant, engine=options.engine)
        seconds, _, run = timed(call, options.repeats)
        counts = [len(owned) for owned in run.owners.values()]
        print(
            f"| {variant} | {seconds:.3f} | {run.releases:,} | {run.rounds:,} "
            f"| {run.steps:,} | {run.converged} | {max(counts) - min(counts)} |"
        )


if __name__ == "__main__":
    main()
