"""`python -m rebalancing.evaluation`: score the strategies on scenarios with the pure-Python
core and print the per-strategy, per-change-kind table (the Spark harness does the same at
scale)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator, Sequence

from rebalancing.evaluation.aggregates import markdown_table, summarise
from rebalancing.evaluation.replay import score_scenarios
from rebalancing.evaluation.scenarios import Scenario, generate_scenarios
from rebalancing.evaluation.views import add_view_arguments, view_settings_from
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
    add_view_arguments(parser)
    namespace = parser.parse_args(arguments)
    try:
        namespace.view_settings = view_settings_from(namespace)
    except (TypeError, ValueError) as error:
        parser.error(f"views: {error}")
    if namespace.scenarios <= 0:
        parser.error(f"--scenarios must be positive, got {namespace.scenarios}")
    try:
        names = select(namespace.strategies)
    except ValueError as error:
        parser.error(f"--strategies: {error}")
    namespace.strategies = names
    return namespace


def _with_progress(scenarios: Iterator[Scenario], total: int) -> Iterator[Scenario]:
    """The scenarios with a progress bar and the time left on standard error (tqdm), when that
    is a terminal; as they are otherwise, and without tqdm (it comes with the spark extra)."""
    if not sys.stderr.isatty():
        return scenarios
    try:
        from tqdm import tqdm
    except ImportError:
        print("(no progress bar: pip install tqdm)", file=sys.stderr)
        return scenarios
    return iter(tqdm(scenarios, total=total, unit=" scenarios", file=sys.stderr))


def main(arguments: Sequence[str] | None = None) -> int:
    options = parse_arguments(arguments)
    strategies = {strategy.name: strategy for strategy in options.strategies}
    started = time.perf_counter()
    scenarios = _with_progress(
        generate_scenarios(options.seed, range(options.scenarios)), options.scenarios
    )
    rows = score_scenarios(scenarios, strategies, options.views, options.view_settings)
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
