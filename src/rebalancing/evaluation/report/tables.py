"""The glossary's tables: which statistic of which score is a column of summary.md, the report
and the terminal's table, the column headers and their one-line definitions, and the summary as a
Markdown table. The scores themselves (meaning, unit, direction, precision) are
rebalancing.evaluation.scoring.definitions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rebalancing.evaluation.scoring.aggregates import Aggregate
from rebalancing.evaluation.scoring.definitions import (
    SCORES,
    STATISTIC_NAMES,
    Score,
    definition_on,
    format_value,
)

COLUMN_NOTES: Mapping[tuple[str, str], str] = {
    ("seconds_to_balance", "p95"): (
        "It can be below the mean: when fewer than 5% of rebalances are long (a crash waits "
        "for a session timeout or a lease to expire), all of them lie above the 95th "
        "percentile, yet they pull the mean up."
    ),
}
"""What a column's definition adds where its reading surprises: (metric, statistic) -> one
sentence. The time's p95 below its mean is rare long rebalances, not an error: `--system kafka
--queues 64 --consumers 4:16 --mix rolling_restart=3,crash=1 --scenarios 100 --seed 1` has 4.5%
crash rebalances of 43-48 s and the others at most 3 s under the eager protocol, so its p95 is
3.00 s under a mean of 4.43 s (both computed again from the rows by hand)."""


@dataclass(frozen=True)
class Column:
    """One column of the summary table: a statistic of a score ("rebalances" is the count)."""

    header: str
    metric: str
    statistic: str

    @property
    def score(self) -> Score:
        return SCORES[self.metric]

    def definition(self, vendor: str | None = None) -> str:
        """The column's meaning in one line, for the glossary (as it reads on `vendor`'s
        system: definitions.definition_on)."""
        if self.statistic == "count":
            return "rebalances scored (every step of every scenario)"
        statistic = STATISTIC_NAMES[self.statistic]
        note = COLUMN_NOTES.get((self.metric, self.statistic))
        defined = f"{statistic} of {self.score.label}: {definition_on(self.score, vendor)}"
        return f"{defined}. {note}" if note else defined

    @property
    def unit(self) -> str:
        return "rebalances" if self.statistic == "count" else self.score.unit

    def format(self, value: float | None) -> str:
        """The value as the table prints it: percentages with one decimal, counts as integers
        where they are integers, other numbers with up to three significant decimals."""
        if self.statistic == "count":
            return "n/a" if value is None else f"{int(value):,}"
        return format_value(self.score, value)


def _column(metric: str, statistic: str) -> Column:
    score = SCORES[metric]
    unit = f" {score.unit}" if score.unit in ("%", "µs") else ""
    return Column(f"{score.label} {statistic}{unit}", metric, statistic)


SUMMARY_COLUMNS: tuple[Column, ...] = (
    Column("rebalances", "balance_degree", "count"),
    _column("balance_degree", "mean"),
    _column("balance_degree", "p95"),
    _column("spread", "max"),
    _column("stickiness", "mean"),
    _column("stickiness", "p5"),
    _column("stickiness", "min"),
    _column("optimal_stickiness", "mean"),
    _column("stickiness_gap", "mean"),
    _column("stickiness_gap", "max"),
    _column("moves", "mean"),
    _column("moves", "p95"),
    _column("queues_paused", "mean"),
    _column("queues_paused", "p95"),
    _column("assign_micros", "p50"),
    _column("assign_micros", "p99"),
    _column("releases", "mean"),
    _column("releases", "p95"),
    _column("protocol_steps", "mean"),
    _column("rounds", "max"),
    _column("converged", "mean"),
    _column("claims", "mean"),
    _column("steals", "mean"),
    _column("seconds_to_balance", "mean"),
    _column("seconds_to_balance", "p95"),
    _column("queue_seconds_unowned", "mean"),
    _column("queue_seconds_doubly_owned", "mean"),
    _column("queue_seconds_paused", "mean"),
    _column("heartbeats", "mean"),
    _column("moves_when_unchanged", "max"),
    _column("rebalances_to_fixed_point", "max"),
    _column("orphans", "max"),
    _column("duplicates", "max"),
    _column("unknown_queues", "max"),
    _column("unknown_consumers", "max"),
    _column("failed", "mean"),
)
"""The columns of summary.md and of the report's table, after strategy and change."""

VIEW_COLUMNS: tuple[Column, ...] = (
    _column("queue_periods_read_twice", "mean"),
    _column("queue_periods_unread", "mean"),
    _column("periods_to_agree", "max"),
)
"""The client-view columns, shown only when some views disagreed."""

PLACEMENT_COLUMNS: tuple[Column, ...] = (
    _column("cross_zone_fraction", "mean"),
    _column("cross_zone_gap", "mean"),
    _column("load_ratio", "mean"),
    _column("load_ratio", "p95"),
    _column("load_ratio_gap", "mean"),
    _column("load_kept", "mean"),
    _column("load_moved", "mean"),
)
"""The placement columns (zones, weights), shown only when some rows have zones or weights."""


def glossary_lines(columns: tuple[Column, ...], vendor: str | None = None) -> list[str]:
    """One line per column: `header` (unit): definition (as it reads on `vendor`'s system);
    for summary.md and `--help`."""
    return [f"{column.header} ({column.unit}): {column.definition(vendor)}" for column in columns]


def scores_help() -> str:
    """The scores in a few lines each, for the command lines' `--help` epilog."""
    lines = ["scores (every column of summary.md is a statistic of one of them):"]
    for score in SCORES.values():
        better = "must be 0" if score.better == "zero" else f"{score.better} is better"
        lines.append(f"  {score.label} ({score.unit}, {better}): {score.definition}")
    return "\n".join(lines)


def shown_columns(summary: Mapping[tuple[str, str], Mapping[str, Aggregate]]) -> tuple[Column, ...]:
    """The columns of the summary's table: glossary.SUMMARY_COLUMNS; the client-view columns
    when some views disagreed; the placement columns when some rows had zones or weights."""
    metrics = list(summary.values())
    with_views = any((one["periods_to_agree"].max or 0) > 0 for one in metrics)
    placed = any(one[column.metric].count for one in metrics for column in PLACEMENT_COLUMNS)
    return (
        SUMMARY_COLUMNS
        + (VIEW_COLUMNS if with_views else ())
        + (PLACEMENT_COLUMNS if placed else ())
    )


def markdown_table(summary: dict[tuple[str, str], dict[str, Aggregate]]) -> str:
    """The summary as a Markdown table: one line per (strategy, change kind), the columns of
    `shown_columns` (their definitions: glossary.glossary_lines)."""
    columns = shown_columns(summary)
    header = "| strategy | change | " + " | ".join(column.header for column in columns) + " |"
    lines = [header, "|" + "---|" * (len(columns) + 2)]
    for (strategy, change), metrics in summary.items():
        cells = [
            column.format(getattr(metrics[column.metric], column.statistic)) for column in columns
        ]
        lines.append("| " + " | ".join([strategy, change, *cells]) + " |")
    return "\n".join(lines)
