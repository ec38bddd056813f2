"""Aggregates of score rows per (strategy, change kind): the Summary the decision reads.

For every metric: count of defined values, mean, sample standard deviation, the minimum, the 1st,
5th, 50th, 95th and 99th percentiles (linear interpolation between closest ranks, as Spark SQL's
exact `percentile` and numpy's default) and the maximum: both tails, since for some scores
(stickiness) the bad rebalances are the low ones. Undefined values (None) are left out, as SQL
nulls are.
Runtime complexity: O(rows log rows) (the percentiles sort).
"""

from __future__ import annotations

import math
import operator
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from rebalancing.evaluation.scoring.replay import ScoreRow

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
    "moves_when_unchanged",
    "rebalances_to_fixed_point",
    "claims",
    "steals",
    "seconds_to_balance",
    "queue_seconds_unowned",
    "queue_seconds_doubly_owned",
    "cross_zone_fraction",
    "cross_zone_gap",
    "load_ratio",
    "load_ratio_gap",
    "load_kept",
    "load_moved",
    "queue_seconds_paused",
    "heartbeats",
)
"""The row columns that are aggregated: every score of DESIGN.md, the protocol cost, the
client-view costs, the stability score, the protocols' time scores and the placement scores
(zones and weights), then the Kafka protocols' paused partition-seconds and heartbeats (last, so
that the columns before them stay where they were)."""

ALL_CHANGES = "all"
"""The change-kind label of the aggregate over every step of a strategy."""


@dataclass(frozen=True)
class Aggregate:
    """Distribution of one metric over a set of rows; every field but count is None when empty."""

    count: int
    mean: float | None
    stddev: float | None
    min: float | None
    p1: float | None
    p5: float | None
    p50: float | None
    p95: float | None
    p99: float | None
    max: float | None


STATISTICS: tuple[str, ...] = (
    "count",
    "mean",
    "stddev",
    "min",
    "p1",
    "p5",
    "p50",
    "p95",
    "p99",
    "max",
)
"""The fields of an Aggregate, in order: the columns `<metric>_<statistic>` of the summaries."""

PERCENTILES: tuple[tuple[str, float], ...] = (
    ("p1", 0.01),
    ("p5", 0.05),
    ("p50", 0.50),
    ("p95", 0.95),
    ("p99", 0.99),
)
"""The percentiles an Aggregate holds, by field name."""


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
        return Aggregate(0, *(None,) * (len(STATISTICS) - 1))
    defined.sort()
    mean, stddev = _mean_and_stddev(defined)
    return Aggregate(
        count=len(defined),
        mean=mean,
        stddev=stddev,
        min=defined[0],
        max=defined[-1],
        **{name: percentile(defined, fraction) for name, fraction in PERCENTILES},
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


FLOORS: Mapping[str, str] = {
    "load_ratio": "load_ratio_gap",
    "cross_zone_fraction": "cross_zone_gap",
}
"""The scores printed beside their floor, each with the score of its distance to it: the load
ratio's floor is its lower bound over every plan of the group (max(mean, heaviest queue) over
the mean), the cross-zone fraction's the fewest any balanced plan of the group reaches."""


def mean_floor(metrics: Mapping[str, Aggregate], metric: str) -> float | None:
    """The mean over the rebalances of `metric`'s floor (FLOORS): its mean less its gap's, both
    defined on the same rows (an exact plan of a group with the facts); None when not measured."""
    score, gap = metrics.get(metric), metrics.get(FLOORS[metric])
    if score is None or gap is None or score.mean is None or gap.mean is None:
        return None
    return score.mean - gap.mean


Summary = Mapping[tuple[str, str], Mapping[str, Aggregate]]
"""(strategy, change kind) -> metric -> Aggregate: what `summarise` returns, and what the Spark
harness's aggregation gives back in the same shape."""

Overall = Mapping[str, Mapping[str, Aggregate]]
"""strategy -> metric -> its aggregate over every rebalance (a Summary's "all" rows)."""
