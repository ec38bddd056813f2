"""Releases of the SAC protocol under seeded random interleavings, both Position variants.

Usage: python benchmarks/sac_release_distribution.py [--queues 64] [--apps 8] [--runs 200]
Each run starts from the spec's Init (every app stopped) and takes uniformly chosen enabled
actions until none is enabled or the step bound is hit, like a TLC simulation. Prints a Markdown
table: mean, p50, p95 and max releases and steps, and the share of runs that hit the bound.
"""

from __future__ import annotations

import argparse
import random
import statistics

from rebalancing.evaluation.scoring.aggregates import percentile
from rebalancing.sac.model import POSITION_VARIANTS, SacState, terminal_invariant_violations
from rebalancing.sac.schedulers import run_random


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queues", type=int, default=64)
    parser.add_argument("--apps", type=int, default=8)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    options = parser.parse_args()
    print(f"{options.queues} queues x {options.apps} apps, {options.runs} random interleavings\n")
    print(
        "| Position | releases mean | p50 | p95 | max | steps mean | not converged "
        "| unbalanced terminal |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for variant in POSITION_VARIANTS:
        releases, steps = [], []
        not_converged = unbalanced = 0
        for run_index in range(options.runs):
            state = SacState.initial(
                list(range(options.queues)), [f"app-{n:03d}" for n in range(options.apps)]
            )
            run = run_random(state, variant, random.Random(options.seed * 1_000_003 + run_index))
            releases.append(float(run.releases))
            steps.append(float(run.steps))
            not_converged += not run.converged
            unbalanced += run.converged and bool(terminal_invariant_violations(state))
        ordered = sorted(releases)
        print(
            f"| {variant} | {statistics.fmean(releases):.1f} | {percentile(ordered, 0.5):.0f} "
            f"| {percentile(ordered, 0.95):.0f} | {ordered[-1]:.0f} "
            f"| {statistics.fmean(steps):.0f} | {100 * not_converged / options.runs:.1f}% "
            f"| {unbalanced} |"
        )


if __name__ == "__main__":
    main()
