"""`rebalancing compare` on one machine, without Spark: score a profile's candidates on its
scenarios with the pure-Python core, write the run's outputs and return the verdict. The same
profile scored by the Spark harness gives the same aggregates (timings aside); the harness is for
millions of scenarios, this for an answer in seconds.

The verdict compares candidates paired, scenario by scenario (each scenario's mean over its
rebalances, kept as the rows are scored). With `--scenarios auto` (the default) the scenarios are
scored in growing batches (each in as many forked processes as the machine gives this one,
rows kept in scenario order) until the verdict is settled or the cap is reached
(rebalancing.evaluation.decision.stopping); scenario i is the same whichever way it is drawn, so
a run that stopped at 400 scored what `--scenarios 400` scores.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import textwrap
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
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
    profile's system (what the paired comparisons read). A batch is scored in `workers`
    forked processes (by default one per core this process may run on, or this process alone
    on a platform that cannot fork)."""

    def __init__(
        self, profile: Profile, progress: Progress | None = None, workers: int | None = None
    ) -> None:
        self.profile = profile
        self.progress = progress
        self.workers = (usable_cores() if can_fork() else 1) if workers is None else workers
        if type(self.workers) is not int or self.workers < 1:
            raise ValueError(f"workers must be a positive integer, not {workers!r}")
        if self.workers > 1 and not can_fork():
            raise ValueError(
                f"workers={workers!r}: several processes score by forking this one, which this "
                "platform cannot do; give workers=1"
            )
        system = SYSTEM_VERDICTS[profile.system]
        self.strategies = {
            strategy.name: strategy for strategy in system.strategies(profile.strategies)
        }
        # what the candidates run inside
        self.protocol = system.protocols(self.strategies, profile.static_membership)
        self.metrics = system.criteria
        self.rows: list[ScoreRow] = []
        self.scored = 0
        self._pool: ProcessPoolExecutor | None = None  # forked at the first batch that needs it
        # strategy -> metric -> scenario -> [sum, count] of the defined values
        self.sums: dict[str, dict[str, dict[int, list[float]]]] = defaultdict(
            lambda: defaultdict(dict)
        )

    def __enter__(self) -> ScenarioScoring:
        return self

    def __exit__(self, *exception: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the forked processes, if a batch forked them (the batches still queued are
        cancelled: an interrupted comparison does not wait for them)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def score_to(self, count: int, label: str = "", then: str = "") -> None:
        """Score the scenarios from the last one scored up to `count` (exclusive); `label` and
        `then` describe the batch on the progress line (Progress.batch)."""
        if self.progress is not None:
            self.progress.batch(self.scored, count, label, then)
        indices = range(self.scored, count)
        engine = batch_engine(len(indices))
        rows: Iterable[ScoreRow]
        try:
            if self.workers > 1 and len(indices) >= PARALLEL_FROM:
                rows = self._scored_in_processes(indices, engine)
            else:
                rows = self._scored_here(indices, self.progress, engine)
            for row in rows:
                self._file(row)
        except BaseException:
            # an interrupted scoring leaves no process behind: the chunks still queued are
            # cancelled, not scored for nothing
            self.close()
            raise
        self.scored = max(self.scored, count)

    def _file(self, row: ScoreRow) -> None:
        """Keep `row`, and add its deciding scores to its scenario's sums."""
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

    def _scored_here(
        self, indices: range, progress: Progress | None, engine: str | None
    ) -> Iterator[ScoreRow]:
        """The rows of scenarios `indices`, scored in this process by `engine`, lazily, each
        scenario counted on `progress`."""
        scenarios: Iterator[Scenario] = generate_scenarios(
            self.profile.seed, indices, self.profile.settings
        )
        if progress is not None:
            scenarios = progress.scenarios(scenarios)
        return score_scenarios(
            scenarios,
            self.strategies,
            self.profile.views,
            self.profile.view_settings,
            engine=engine,
            protocol=self.protocol,
        )

    def _scored_in_processes(self, indices: range, engine: str | None) -> list[ScoreRow]:
        """The rows of scenarios `indices` in the order one process gives them, scored by
        `engine` in `workers` forked processes, chunk by chunk (a scenario is the same wherever
        it is scored: its seed is its index's). The processes are forked at the first such
        batch and serve the later ones (what they loaded, numba's kernels among it, stays
        loaded) until `close` (score_to closes them on an error or an interrupt); they inherit
        this scoring by fork, so a strategy defined in a notebook or a user's module needs no
        pickling; only rows come back."""
        chunk = max(1, min(CHUNK_MOST, len(indices) // (self.workers * 4)))
        chunks = [indices[start : start + chunk] for start in range(0, len(indices), chunk)]
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                self.workers,
                mp_context=multiprocessing.get_context("fork"),
                initializer=_adopt,
                initargs=(self,),  # inherited by the fork, never pickled
            )
        rows: list[ScoreRow] = []
        parts = self._pool.map(_score_chunk, chunks, [engine] * len(chunks))
        for part, scored in zip(chunks, parts, strict=True):
            rows += scored
            if self.progress is not None:
                for _ in part:
                    self.progress.scenario_done()
        if self.progress is not None:
            self.progress.batch_done()
        return rows

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


PARALLEL_FROM = 8
"""A batch of at least this many scenarios is scored in several processes when the machine has
more than one core for this one (fewer are not worth the forks)."""

CHUNK_MOST = 64
"""The most scenarios a process scores before its rows come back (the progress line moves and
the rows of a large batch do not all wait in a child)."""

KERNEL_FROM = 100
"""A batch of fewer scenarios is scored by the reference engine, a larger one by the compiled
kernels (replay.ENGINES; the rows are the same: tests/evaluation/test_compiled_scores.py):
loading numba and its cached kernels costs a process about 0.4 CPU-s, more than they save on a
small batch such as the tutorial's first look of 50 scenarios (its whole command: 2.84 CPU-s,
against 3.71 before this and the pool kept across batches, benchmarks/results/verdict_speed.md),
and a first run then compiles nothing."""

_FORKED_SCORING: ScenarioScoring | None = None
"""In a forked child: the scoring that forked it (set by _adopt, read by _score_chunk)."""


def batch_engine(scenarios: int) -> str | None:
    """The engine a batch of `scenarios` is scored by: the reference below KERNEL_FROM, else
    the default (the kernels where numba is installed)."""
    return "reference" if scenarios < KERNEL_FROM else None


def _adopt(scoring: ScenarioScoring) -> None:
    """In a forked child, as it starts: remember the scoring that forked it."""
    global _FORKED_SCORING
    _FORKED_SCORING = scoring


def _score_chunk(indices: range, engine: str | None) -> list[ScoreRow]:
    """In a forked child: the rows of scenarios `indices` of the scoring that forked it."""
    assert _FORKED_SCORING is not None, "a chunk is scored only in a child forked by a batch"
    return list(_FORKED_SCORING._scored_here(indices, None, engine))  # the parent shows progress


def can_fork() -> bool:
    """Whether this platform forks processes (not Windows): the batches are scored in forked
    processes only there, and in this one elsewhere."""
    return "fork" in multiprocessing.get_all_start_methods()


def usable_cores() -> int:
    """The cores this process may run on (its affinity where the platform says, else all)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def score_profile(profile: Profile, progress: bool = False, workers: int | None = None) -> Summary:
    """The summary of the profile's strategies on its scenarios (rows held in memory), each
    inside its system's protocol where the system declares one (System.protocol), with a
    progress line on a terminal when `progress`."""
    shown = Progress() if progress else None
    with ScenarioScoring(profile, shown, workers) as scoring:
        scoring.score_to(profile.scenarios)
    if shown is not None:
        shown.finish()
    return scoring.summary()


def compare(
    profile: Profile,
    progress: bool = False,
    before_outputs: Callable[[Comparison], None] | None = None,
    workers: int | None = None,
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
        return _compared(profile, progress, before_outputs, drawing, workers)
    finally:
        if drawing is not None:
            drawing.close()


def _compared(
    profile: Profile,
    progress: bool,
    before_outputs: Callable[[Comparison], None] | None,
    drawing: DrawingProcess | None,
    workers: int | None,
) -> Comparison:
    """compare, its figures drawn by `drawing`, its batches scored in `workers` processes."""
    started = time.perf_counter()
    shown = Progress() if progress else None
    with ScenarioScoring(profile, shown, workers) as scoring:
        summary, verdict, profile = _decided(profile, scoring)
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
        "engine": (
            f"pure Python, {scoring.workers} processes (rebalancing compare)"
            if scoring.workers > 1
            else "pure Python, one process (rebalancing compare)"
        ),
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


def _decided(profile: Profile, scoring: ScenarioScoring) -> tuple[Summary, Verdict, Profile]:
    """Score `profile`'s scenarios with `scoring` (all of them, or batch by batch until the
    verdict is settled) and decide: the summary, the verdict, and the profile with the number
    of scenarios it took."""
    if profile.max_scenarios is None:
        scoring.score_to(
            profile.scenarios, then="; --scenarios auto would stop once the verdict is settled"
        )
        summary = scoring.summary()
        verdict = profile.verdict_on(summary, scoring.scenario_means())
    else:
        planned = looks(profile.max_scenarios)
        latest: dict[str, Summary] = {}  # the summary at the last look, which stops the run

        def verdict_at(count: int, confidence: float) -> Verdict:
            look = planned.index(count) + 1
            scoring.score_to(
                count,
                f"batch {look} of at most {len(planned)}",
                ", then the verdict is looked at again" if look < len(planned) else "",
            )
            latest["summary"] = scoring.summary()
            return profile.verdict_on(latest["summary"], scoring.scenario_means(), confidence)

        stopped = draw_until_settled(profile.max_scenarios, verdict_at)
        summary = latest["summary"]
        still_level = unsettled(stopped.verdict) if stopped.capped else []
        sentence = drawn_until_decided(
            stopped.scenarios,
            stopped.planned,
            stopped.confidence,
            still_level,
            compared=bool(stopped.verdict.differences),
        )
        verdict = replace(stopped.verdict, reason=f"{stopped.verdict.reason} {sentence}")
        profile = replace(profile, scenarios=stopped.scenarios)
    return summary, verdict, profile


def drawing_processes() -> int:
    """How many processes draw a comparison's figures: one per core this process may run on,
    at most 4 (a report has about a dozen figures)."""
    return min(4, usable_cores())


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
    return "\n".join(
        [
            "",
            *textwrap.wrap(
                "This verdict is for no system in particular. For yours, with your group's "
                "--queues, --consumers and --mix:",
                width=100,
                break_on_hyphens=False,
            ),
            "  rebalancing compare --system SYSTEM",
            *textwrap.wrap(
                f"SYSTEM one of {', '.join(systems)} (rebalancing systems describes them).",
                width=100,
                break_on_hyphens=False,
            ),
        ]
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
