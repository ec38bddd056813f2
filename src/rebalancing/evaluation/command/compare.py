"""`rebalancing compare` on one machine, without Spark: score a profile's candidates on its
scenarios with the pure-Python core, write the run's outputs and return the verdict. The same
profile scored by the Spark harness gives the same aggregates (timings aside), so the same
verdict; the harness is for millions of scenarios, this for an answer in seconds.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from rebalancing.evaluation.command.pipes import quiet_when_the_reader_leaves
from rebalancing.evaluation.command.profile import (
    ParameterError,
    Profile,
    add_profile_arguments,
    new_parser,
    profile_from,
    run_description,
)
from rebalancing.evaluation.decision.migration import migration_lines
from rebalancing.evaluation.decision.systems import ANY_SYSTEM, SYSTEM_VERDICTS
from rebalancing.evaluation.decision.verdict import Verdict
from rebalancing.evaluation.report.outputs import write_outputs
from rebalancing.evaluation.report.tables import markdown_table
from rebalancing.evaluation.report.verdict_text import render_text
from rebalancing.evaluation.scenarios.changes import Scenario, generate_scenarios
from rebalancing.evaluation.scoring.aggregates import Aggregate, summarise
from rebalancing.evaluation.scoring.replay import score_scenarios

Summary = dict[tuple[str, str], dict[str, Aggregate]]


@dataclass(frozen=True)
class Comparison:
    """A finished comparison: its summary, its verdict, how long it took, and where its outputs
    are (None when it wrote none)."""

    summary: Summary
    verdict: Verdict
    seconds: float
    out: Path | None


def score_profile(profile: Profile, progress: bool = False) -> Summary:
    """The summary of the profile's strategies on its scenarios (rows held in memory), each
    inside its system's protocol where the system declares one (System.protocol)."""
    system = SYSTEM_VERDICTS[profile.system]
    chosen = system.strategies(profile.strategies)
    strategies = {strategy.name: strategy for strategy in chosen}
    scenarios: Iterator[Scenario] = generate_scenarios(
        profile.seed, range(profile.scenarios), profile.settings
    )
    if progress:
        scenarios = _with_progress(scenarios, profile.scenarios)
    protocol = system.protocols(strategies)  # what the candidates run inside
    rows = score_scenarios(
        scenarios, strategies, profile.views, profile.view_settings, protocol=protocol
    )
    return summarise(rows)


def compare(profile: Profile, progress: bool = False) -> Comparison:
    """Score `profile`, decide, and write the outputs into `profile.out` when it is set."""
    started = time.perf_counter()
    summary = score_profile(profile, progress)
    seconds = time.perf_counter() - started
    if profile.out is None:
        return Comparison(summary, profile.verdict_on(summary), seconds, None)
    run_info = {
        **run_description(profile),
        "engine": "pure Python, one process (rebalancing compare)",
        "wall_seconds": round(seconds, 3),
    }
    verdict = profile.verdict_on(summary)
    write_outputs(profile.out, summary, run_info, verdict, profile.describe())
    return Comparison(summary, verdict, seconds, profile.out)


def _with_progress(scenarios: Iterator[Scenario], total: int) -> Iterator[Scenario]:
    """The scenarios with a progress bar and the time left on standard error (tqdm), when that
    is a terminal; as they are otherwise, and without tqdm (it comes with the spark extra)."""
    if not sys.stderr.isatty():
        return scenarios
    try:
        from tqdm import tqdm
    except ImportError:
        return scenarios
    return iter(tqdm(scenarios, total=total, unit=" scenarios", file=sys.stderr))


def compare_parser(prog: str) -> argparse.ArgumentParser:
    """The options of a comparison: the profile's, and --table."""
    parser = new_parser(
        prog,
        "Which strategy for my group? Score the candidate strategies of --system on scenarios "
        "drawn from the group's profile, write summary.md, summary.csv, run.json and "
        "report.html into --out, and print the verdict.",
    )
    add_profile_arguments(parser, scenarios=1000, out="out/compare")
    parser.add_argument(
        "--table", action="store_true", help="also print the full table (it is in summary.md)"
    )
    return parser


def closing_lines(verdict: Verdict, profile: Profile, seconds: float | None = None) -> str:
    """The verdict as the terminal shows it, then where the report and the full table are."""
    lines = [render_text(verdict, "The group: " + profile.describe())]
    system = SYSTEM_VERDICTS[profile.system]
    if profile.current is not None and verdict.recommended:
        # a tie that holds what the group runs: nothing to change; else each pick's move
        picks = [profile.current] if profile.current in verdict.recommended else []
        for pick in picks or verdict.recommended:
            moves = migration_lines(profile.current, pick, system.pairs)
            lines += [textwrap.fill(line, width=100) for line in moves]
    if profile.out is not None:
        lines.append(
            f"\nReport: {(profile.out / 'report.html').resolve()}"
            f"\nFull table and glossary: {(profile.out / 'summary.md').resolve()}"
        )
    if seconds is not None:
        lines.append(f"Scored in {seconds:.1f} s.")
    if profile.system == ANY_SYSTEM:
        lines.append(for_your_system())
    return "\n".join(lines)


def for_your_system() -> str:
    """The closing lines of a comparison under `any`, whose verdict is for no system: the
    command that gives the verdict for the user's own."""
    systems = [name for name in SYSTEM_VERDICTS if name != ANY_SYSTEM]
    return (
        "\nThis verdict is for no system in particular. For yours, with your group's --queues, "
        "--consumers and --mix:\n"
        "  rebalancing compare --system SYSTEM\n"
        f"SYSTEM one of {', '.join(systems)} (rebalancing systems describes them)."
    )


def print_comparison(profile: Profile, table: bool) -> None:
    """Compare in this process and print the verdict (the full table first with `table`)."""
    comparison = compare(profile, progress=True)
    if table:
        print(markdown_table(comparison.summary) + "\n")
    print(closing_lines(comparison.verdict, profile, comparison.seconds))


def main(
    arguments: Sequence[str] | None = None, prog: str = "python -m rebalancing.evaluation"
) -> int:
    """A comparison in one process; 2 with one line naming the culprit on a bad parameter;
    quiet when the reader of its output (`head`) leaves early."""

    def run() -> int:
        namespace = compare_parser(prog).parse_args(arguments)
        try:
            profile = profile_from(namespace)
        except ParameterError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        print_comparison(profile, namespace.table)
        return 0

    return quiet_when_the_reader_leaves(run)
