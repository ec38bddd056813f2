"""Aggregates of score rows per (strategy, change kind), and the table a person reads.

For every metric: count of defined values, mean, sample standard deviation, the 50th, 95th and
99th percentiles (linear interpolation between closest ranks, as Spark SQL's exact `percentile`
and numpy's default) and the maximum. Undefined values (None) are left out, as SQL nulls are.
Runtime complexity: O(rows log rows) (the percentiles sort).
"""

from __future__ import annotations

import math
import operator
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rebalancing.evaluation.replay import ScoreRow

METRICS: tuple[str, ...] = (
    "balance_degree",
    "spread",
    "stickiness",
    "optimal_stickiness",
    "stickiness_gap",
    "kept",
    "moves",
    "revocations",
    "orphans",
    "duplicates",
    "unknown_queues",
    "unknown_consumers",
    "assign_micros",
    "releases",
    "protocol_steps",
    "rounds",
    "converged",
    "queues_paused",
    "failed",
    "queue_periods_read_twice",
    "queue_periods_unread",
    "periods_to_agree",
)
"""The row columns that are aggregated: every score of DESIGN.md, the protocol cost and the
client-view costs."""

ALL_CHANGES = "all"
"""The change-kind label of the aggregate over every step of a strategy."""


@dataclass(frozen=True)
class Aggregate:
    """Distribution of one metric over a set of rows; every field but count is None when empty."""

    count: int
    mean: float | None
    stddev: float | None
    p50: float | None
    p95: float | None
    p99: float | None
    max: float | None


def percentile(sorted_values: Sequence[float], fraction: float) -> float:
    """Linear-interpolation percentile of non-empty ascending `sorted_values`."""
    position = (len(sorted_values) - 1) * fraction
    lower = math.floor(position)
    upper = min(lower + 1, len(sorted_values) - 1)
    weight = position - lower
    return sorted_values[lower] * (1 - weight) + sorted_values[upper] * weight


def aggregate(values: Iterable[float | None]) -> Aggregate:
    """The distribution of the defined values among `values` (a bool counts as 0 or 1)."""
    defined = [value for value in values if value is not None]
    if not defined:
        return Aggregate(0, None, None, None, None, None, None)
    defined.sort()
    mean, stddev = _mean_and_stddev(defined)
    return Aggregate(
        count=len(defined),
        mean=mean,
        stddev=stddev,
        p50=percentile(defined, 0.50),
        p95=percentile(defined, 0.95),
        p99=percentile(defined, 0.99),
        max=defined[-1],
    )


def _mean_and_stddev(values: list[float]) -> tuple[float, float | None]:
    """The mean and the sample standard deviation (None for one value) of non-empty `values`.

    Integers (and booleans), what most scores are, exactly: from the integer sums of the values
    and of their squares, rounded once, as sqrt((n * sum(x^2) - (sum x)^2) / (n * (n - 1))).
    Floats by two passes of exactly rounded sums (math.fsum): the mean, then the squared
    deviations from it, corrected by the deviations' own sum (which is 0 but for the mean's
    rounding), accurate to a few units in the last place.
    """
    count = len(values)
    if set(map(type, values)) <= {int, bool}:
        total = sum(values)
        if count == 1:
            return total / count, None
        squares = sum(map(operator.mul, values, values))
        return total / count, math.sqrt((count * squares - total * total) / (count * (count - 1)))
    mean = math.fsum(values) / count
    if count == 1:
        return mean, None
    deviations = [value - mean for value in values]
    squared = math.fsum(map(operator.mul, deviations, deviations))
    drift = math.fsum(deviations)
    variance = (squared - drift * drift / count) / (count - 1)
    return mean, math.sqrt(max(variance, 0.0))


def summarise(rows: Iterable[ScoreRow]) -> dict[tuple[str, str], dict[str, Aggregate]]:
    """(strategy, change kind) -> metric -> Aggregate, plus (strategy, ALL_CHANGES) per strategy.

    Keys come sorted. The rows are held in memory, each as the tuple of its metrics: this is the
    small-run path; the Spark harness aggregates large runs.
    """
    metrics_of = operator.attrgetter(*METRICS)
    gathered: dict[tuple[str, str], list[tuple[float | None, ...]]] = defaultdict(list)
    for row in rows:
        gathered[(row.strategy, row.change)].append(metrics_of(row))
    columns: dict[tuple[str, str], list[list[float | None]]] = {}
    for (strategy, change), metric_rows in gathered.items():
        columns[(strategy, change)] = [list(column) for column in zip(*metric_rows, strict=True)]
        overall = columns.setdefault((strategy, ALL_CHANGES), [[] for _ in METRICS])
        for everything, column in zip(overall, columns[(strategy, change)], strict=True):
            everything.extend(column)
    return {
        group: dict(zip(METRICS, map(aggregate, columns[group]), strict=True))
        for group in sorted(columns)
    }


def markdown_table(summary: dict[tuple[str, str], dict[str, Aggregate]]) -> str:
    """The summary as a Markdown table: one line per (strategy, change kind); the client-view
    columns (rebalancing.evaluation.views) only when some views disagreed."""
    with_views = any((metrics["periods_to_agree"].max or 0) > 0 for metrics in summary.values())
    header = (
        "| strategy | change | rebalances | balance mean | balance p95 | spread max "
        "| stickiness mean | stickiness p50 | optimal mean | gap mean | gap max | kept mean "
        "| moves mean | moves p95 | assign µs p50 | assign µs p95 | releases mean "
        "| releases p95 | steps mean | rounds max | converged % | paused mean "
        "| orphans+duplicates max | unknown max | failed % |"
    )
    if with_views:
        header += (
            " queue-periods read twice mean | queue-periods unread mean | periods to agree max |"
        )
    lines = [header, "|" + "---|" * (header.count("|") - 1)]
    for (strategy, change), metrics in summary.items():
        broken = max(metrics["orphans"].max or 0, metrics["duplicates"].max or 0)
        unknown = max(metrics["unknown_queues"].max or 0, metrics["unknown_consumers"].max or 0)
        cells = [
            strategy,
            change,
            str(metrics["balance_degree"].count),
            _number(metrics["balance_degree"].mean),
            _number(metrics["balance_degree"].p95),
            _number(metrics["spread"].max),
            _number(metrics["stickiness"].mean),
            _number(metrics["stickiness"].p50),
            _number(metrics["optimal_stickiness"].mean),
            _number(metrics["stickiness_gap"].mean),
            _number(metrics["stickiness_gap"].max),
            _number(metrics["kept"].mean, digits=1),
            _number(metrics["moves"].mean),
            _number(metrics["moves"].p95),
            _number(metrics["assign_micros"].p50, digits=0),
            _number(metrics["assign_micros"].p95, digits=0),
            _number(metrics["releases"].mean, digits=1),
            _number(metrics["releases"].p95, digits=1),
            _number(metrics["protocol_steps"].mean, digits=1),
            _number(metrics["rounds"].max, digits=0),
            _number(_percent(metrics["converged"].mean), digits=1),
            _number(metrics["queues_paused"].mean, digits=1),
            _number(broken, digits=0),
            _number(unknown, digits=0),
            _number(_percent(metrics["failed"].mean), digits=1),
        ]
        if with_views:
            cells += [
                _number(metrics["queue_periods_read_twice"].mean, digits=2),
                _number(metrics["queue_periods_unread"].mean, digits=2),
                _number(metrics["periods_to_agree"].max, digits=0),
            ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _percent(fraction: float | None) -> float | None:
    return None if fraction is None else 100 * fraction


def _number(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"
