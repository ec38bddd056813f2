"""`rebalancing compare` on one machine, without Spark: score a profile's candidates on its
scenarios with the pure-Python core, write the run's outputs and return the verdict. The same
profile scored by the Spark harness gives the same aggregates (timings aside); the harness is for
millions of scenarios, this for an answer in seconds.

The verdict compares candidates paired, scenario by scenario (each scenario's mean over its
rebalances, kept as the rows are scored). With `--scenarios auto` (the default) the scenarios are
scored in growing batches, in this process, until the verdict is settled or the cap is reached
(rebalancing.evaluation.decision.stopping); scenario i is the same whichever way it is drawn, so
a run that stopped at 400 scored what `--scenarios 400` scores.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from rebalancing.evaluation.command.pipes import quiet_when_the_reader_leaves
from rebalancing.evaluation.command.profile import (
    AUTO,
    ParameterError,
    Profile,
    add_profile_arguments,
    new_parser,
    profile_from,
    run_description,
)
from rebalancing.evaluation.command.progress import Progress
from rebalancing.evaluation.decision.differences import ScenarioMeans
from rebalancing.evaluation.decision.migration import migration_lines
from rebalancing.evaluation.decision.reasons import drawn_until_decided
from rebalancing.evaluation.decision.stopping import draw_until_settled, looks, unsettled
from rebalancing.evaluation.decision.systems import ANY_SYSTEM, SYSTEM_VERDICTS
from rebalancing.evaluation.decision.verdict import Verdict
from rebalancing.evaluation.report.figure_files import DrawingProcess
from rebalancing.evaluation.report.outputs import get_ready_to_draw, write_outputs
from rebalancing.evaluation.report.tables import markdown_table
from rebalancing.evaluation.report.verdict_text import render_text
from rebalancing.evaluation.scenarios.changes import Scenario, generate_scenarios
from rebalancing.evaluation.scoring.aggregates import Aggregate, summarise
from rebalancing.evaluation.scoring.replay import ScoreRow, score_scenarios

Summary = dict[tuple[str, str], dict[str, Aggregate]]


@dataclass(frozen=True)
class Comparison:
    """A finished comparison: its summary, its verdict, how long it took, where its outputs
    are (None when it wrote none), and the profile as scored (with `--scenarios auto`, the
    number of scenarios it took)."""

    summary: Summary
    verdict: Verdict
    seconds: float
    out: Path | None
    profile: Profile | None = None


class ScenarioScoring:
    """A profile's scenarios scored in order, batch by batch: every row kept for the summary,
    and each scenario's mean over its rebalances, per strategy, on each deciding score of the
    profile's system (what the paired comparisons read)."""

    def __init__(self, profile: Profile, progress: Progress | None = None) -> None:
        self.profile = profile
        self.progress = progress
        system = SYSTEM_VERDICTS[profile.system]
        self.strategies = {
            strategy.name: strategy for strategy in system.strategies(profile.strategies)
        }
        self.protocol = system.protocols(self.strategies)  # what the candidates run inside
        self.metrics = system.criteria
        self.rows: list[ScoreRow] = []
        self.scored = 0
        # strategy -> metric -> scenario -> [sum, count] of the defined values
        self.sums: dict[str, dict[str, dict[int, list[float]]]] = defaultdict(
            lambda: defaultdict(dict)
        )

    def score_to(self, count: int, label: str = "", then: str = "") -> None:
        """Score the scenarios from the last one scored up to `count` (exclusive); `label` and
        `then` describe the batch on the progress line (Progress.batch)."""
        scenarios: Iterator[Scenario] = generate_scenarios(
            self.profile.seed, range(self.scored, count), self.profile.settings
        )
        if self.progress is not None:
            self.progress.batch(self.scored, count, label, then)
            scenarios = self.progress.scenarios(scenarios)
        rows = score_scenarios(
            scenarios,
            self.strategies,
            self.profile.views,
            self.profile.view_settings,
            protocol=self.protocol,
        )
        for row in rows:
            self.rows.append(row)
            of_strategy = self.sums[row.strategy]
            for metric in self.metrics:
                value = getattr(row, metric)
                if value is None:
                    continue
                entry = of_strategy[metric].get(row.scenario)
                if entry is None:
                    of_strategy[metric][row.scenario] = [float(value), 1.0]
                else:
                    entry[0] += value
                    entry[1] += 1
        self.scored = max(self.scored, count)

    def summary(self) -> Summary:
        return summarise(self.rows)

    def scenario_means(self) -> ScenarioMeans:
        """strategy -> metric -> scenario -> its mean over the scenario's rebalances."""
        return {
            strategy: {
                metric: {index: total / count for index, (total, count) in means.items()}
                for metric, means in metrics.items()
            }
            for strategy, metrics in self.sums.items()
        }


def score_profile(profile: Profile, progress: bool = False) -> Summary:
    """The summary of the profile's strategies on its scenarios (rows held in memory), each
    inside its system's protocol where the system declares one (System.protocol), with a
    progress line on a terminal when `progress`."""
    shown = Progress() if progress else None
    scoring = ScenarioScoring(profile, shown)
    scoring.score_to(profile.scenarios)
    if shown is not None:
        shown.finish()
    return scoring.summary()


def compare(
    profile: Profile,
    progress: bool = False,
    before_outputs: Callable[[Comparison], None] | None = None,
) -> Comparison:
    """Score `profile` (its scenarios, or with `max_scenarios` until the verdict is settled),
    decide on paired differences, and write the outputs into `profile.out` when it is set:
    `before_outputs` is given the comparison first (the command prints the verdict then, so
    that it is read while the figures are drawn). The figures are drawn by a DrawingProcess
    forked now, which imports matplotlib while the scoring runs, and the processes it forks
    then, one per core (drawing_processes)."""
    drawing = None
    if profile.out is not None:
        drawing = DrawingProcess(get_ready_to_draw, drawing_processes())
    try:
        return _compared(profile, progress, before_outputs, drawing)
    finally:
        if drawing is not None:
            drawing.close()


def _compared(
    profile: Profile,
    progress: bool,
    before_outputs: Callable[[Comparison], None] | None,
    drawing: DrawingProcess | None,
) -> Comparison:
    """compare, its figures drawn by `drawing`."""
    started = time.perf_counter()
    shown = Progress() if progress else None
    scoring = ScenarioScoring(profile, shown)
    if profile.max_scenarios is None:
        scoring.score_to(
            profile.scenarios, then="; --scenarios auto would stop once the verdict is settled"
        )
        summary = scoring.summary()
        verdict = profile.verdict_on(summary, scoring.scenario_means())
    else:
        summaries: list[Summary] = []

        planned = looks(profile.max_scenarios)

        def verdict_at(count: int, confidence: float) -> Verdict:
            look = planned.index(count) + 1
            scoring.score_to(
                count,
                f"batch {look} of at most {len(planned)}",
                ", then the verdict is looked at again" if look < len(planned) else "",
            )
            summaries.append(scoring.summary())
            return profile.verdict_on(summaries[-1], scoring.scenario_means(), confidence)

        stopped = draw_until_settled(profile.max_scenarios, verdict_at)
        summary = summaries[-1]
        still_level = unsettled(stopped.verdict) if stopped.capped else []
        sentence = drawn_until_decided(
            stopped.scenarios, stopped.planned, stopped.confidence, still_level
        )
        verdict = replace(stopped.verdict, reason=f"{stopped.verdict.reason} {sentence}")
        profile = replace(profile, scenarios=stopped.scenarios)
    if shown is not None:
        shown.finish()
    seconds = time.perf_counter() - started
    if profile.out is None:
        return Comparison(summary, verdict, seconds, None, profile)
    comparison = Comparison(summary, verdict, seconds, profile.out, profile)
    if before_outputs is not None:
        before_outputs(comparison)
    run_info = {
        **run_description(profile),
        "engine": "pure Python, one process (rebalancing compare)",
        "wall_seconds": round(seconds, 3),
    }
    write_outputs(
        profile.out,
        summary,
        run_info,
        verdict,
        profile.describe(),
        processes=drawing_processes(),
        drawing=drawing,
    )
    return comparison


def drawing_processes() -> int:
    """How many processes draw a comparison's figures: one per core this process may run on,
    at most 4 (a report has about a dozen figures)."""
    cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    return max(1, min(4, len(cores) if cores else os.cpu_count() or 1))


def compare_parser(prog: str) -> argparse.ArgumentParser:
    """The options of a comparison: the profile's, and --table."""
    parser = new_parser(
        prog,
        "Which strategy for my group? Score the candidate strategies of --system on scenarios "
        "drawn from the group's profile, write summary.md, summary.csv, run.json and "
        "report.html into --out, and print the verdict.",
    )
    add_profile_arguments(parser, scenarios=AUTO, out="out/compare")
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
    """Compare in this process and print the verdict (the full table first with `table`)
    before the outputs are written."""

    def show(comparison: Comparison) -> None:
        if table:
            print(markdown_table(comparison.summary) + "\n")
        print(closing_lines(comparison.verdict, comparison.profile or profile, comparison.seconds))
        sys.stdout.flush()  # read while the figures are drawn

    comparison = compare(profile, progress=True, before_outputs=show)
    if comparison.out is None:
        show(comparison)


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
