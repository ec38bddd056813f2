"""`python -m rebalancing.evaluation`: score the strategies on scenarios with the pure-Python
core and print the per-strategy, per-change-kind table (the Spark harness does the same at
scale)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from rebalancing.evaluation.aggregates import markdown_table, summarise
from rebalancing.evaluation.replay import score_scenarios
from rebalancing.evaluation.scenarios import generate_scenarios
from rebalancing.strategies import DEFAULT_STRATEGIES, STRATEGIES, select


def parse_arguments(arguments: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m rebalancing.evaluation",
        description="Score queue-assignment strategies on randomised membership changes.",
    )
    parser.add_argument("--scenarios", type=int, default=2000, help="number of scenarios")
    parser.add_argument("--seed", type=int, default=1, help="base seed of the scenarios")
    parser.add_argument(
        "--strategies",
        default=",".join(DEFAULT_STRATEGIES),
        help=f"comma-separated strategy names or package.module:function (default: all of "
        f"{', '.join(DEFAULT_STRATEGIES)}; also known: "
        f"{', '.join(sorted(set(STRATEGIES) - set(DEFAULT_STRATEGIES)))})",
    )
    namespace = parser.parse_args(arguments)
    if namespace.scenarios <= 0:
        parser.error(f"--scenarios must be positive, got {namespace.scenarios}")
    try:
        names = select(namespace.strategies)
    except ValueError as error:
        parser.error(f"--strategies: {error}")
    namespace.strategies = names
    return namespace


def main(arguments: Sequence[str] | None = None) -> int:
    options = parse_arguments(arguments)
    strategies = {strategy.name: strategy for strategy in options.strategies}
    started = time.perf_counter()
    rows = score_scenarios(generate_scenarios(options.seed, range(options.scenarios)), strategies)
    summary = summarise(rows)
    elapsed = time.perf_counter() - started
    print(markdown_table(summary))
    print(
        f"\n{options.scenarios} scenarios (seed {options.seed}) x {len(strategies)} strategies "
        f"scored in {elapsed:.1f} s ({options.scenarios / elapsed:,.0f} scenarios/s)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
