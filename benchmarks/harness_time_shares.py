"""Where a harness executor's time goes: generating the scenarios, each strategy's own work,
the scoring around it, the rows as Arrow batches, and counting their values.

Usage: python benchmarks/harness_time_shares.py [--scenarios 2000] [--repeats 3]
       [--strategies averagely,sticky,sac] [--mix join=1,leave=1,...]
Runs what a Spark partition runs (rebalancing.harness.columns), in this one process, on the
harness's scenarios 0..N-1 (seed 1, the harness's default sizes, `--mix` as the harness takes
it), timing each part apart:
- generation: the scenarios' steps generated alone;
- each strategy: the sum of its rows' `assign_micros` (its own work, sessions included; a
  compiled twin's calls are not timed, replay.TIMED_EVERY, and count in the scoring);
- scoring: the rest of the scoring core's time (the contract's checks, the scores, the rows);
- Arrow: the rows as record batches (`rows_to_batch`, per `--scenarios-per-batch`);
- counting: the value counts the partition hands Spark (`count_values`).
Prints a Markdown table of medians over --repeats runs (wall seconds; the machine's load
average beside them, since a shared machine stretches every part).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator

from rebalancing.evaluation.scenarios.changes import Scenario, ScenarioSettings, generate_scenarios
from rebalancing.evaluation.scoring.replay import ScoreRow, score_scenarios
from rebalancing.harness.columns import count_values, rows_to_batch
from rebalancing.harness.options import parse_options
from rebalancing.strategies import STRATEGIES


def settings_for(scenarios: int, strategies: str, mix: str | None) -> ScenarioSettings:
    """The harness's own reading of these options."""
    with tempfile.TemporaryDirectory() as out:
        arguments = ["--scenarios", str(scenarios), "--strategies", strategies, "--out", out]
        return parse_options(arguments + (["--mix", mix] if mix else [])).settings


def one_run(
    scenarios: int, names: list[str], settings: ScenarioSettings, per_batch: int
) -> dict[str, float]:
    """Seconds per part for one pass over the scenarios."""

    def fresh() -> Iterator[Scenario]:
        return generate_scenarios(1, range(scenarios), settings)

    started = time.perf_counter()
    for scenario in fresh():
        for _ in scenario.steps():
            pass
    generation = time.perf_counter() - started

    chosen = {name: STRATEGIES[name] for name in names}
    started = time.perf_counter()
    rows: list[ScoreRow] = list(score_scenarios(fresh(), chosen))
    core = time.perf_counter() - started
    assign: dict[str, float] = defaultdict(float)
    for row in rows:
        assign[row.strategy] += (row.assign_micros or 0.0) / 1e6  # None: a twin, untimed

    size = max(per_batch * len(rows) // max(scenarios, 1), 1)  # rows per batch, on average
    started = time.perf_counter()
    batches = [rows_to_batch(rows[start : start + size]) for start in range(0, len(rows), size)]
    arrow = time.perf_counter() - started
    started = time.perf_counter()
    for _ in count_values(batches):
        pass
    counting = time.perf_counter() - started

    parts = {"generation": generation}
    parts.update({f"strategy {name}": assign[name] for name in names})
    parts["scoring"] = core - generation - sum(assign.values())
    parts["Arrow batches"] = arrow
    parts["counting"] = counting
    return parts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scenarios", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--strategies", default="averagely,sticky,sac")
    parser.add_argument("--mix", help="change-kind weights, as the harness takes them")
    parser.add_argument("--scenarios-per-batch", type=int, default=32)
    options = parser.parse_args()
    names = options.strategies.split(",")
    settings = settings_for(options.scenarios, options.strategies, options.mix)
    one_run(min(20, options.scenarios), names, settings, options.scenarios_per_batch)  # warm up
    runs = [
        one_run(options.scenarios, names, settings, options.scenarios_per_batch)
        for _ in range(options.repeats)
    ]
    medians = {part: statistics.median(run[part] for run in runs) for part in runs[0]}
    total = sum(medians.values())
    print(
        f"{options.scenarios} scenarios x {', '.join(names)}; mix {options.mix or 'default'}; "
        f"load average {os.getloadavg()[0]:.2f}; medians of {options.repeats} runs; "
        f"all parts {total:.2f} s = {options.scenarios / total:.0f} scenarios/s in one process\n"
    )
    print("| part | seconds | ms per scenario | share |")
    print("|---|---|---|---|")
    for part, seconds in medians.items():
        print(
            f"| {part} | {seconds:.2f} | {1000 * seconds / options.scenarios:.2f} "
            f"| {100 * seconds / total:.1f}% |"
        )


if __name__ == "__main__":
    main()
