"""One candidate against another on one deciding score: the difference of their means over
every rebalance, its 95% interval (Welch's, normal quantile 1.96) and which is better, with a
band inside which two means are level however many scenarios tell them apart.

The interval does not use the pairing of the rebalances (both candidates ran the same
scenarios), so it is wide, and it errs toward "can't tell" rather than toward a difference that
is not there. Runtime complexity: O(1) a comparison.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rebalancing.evaluation.scoring.aggregates import Aggregate
from rebalancing.evaluation.scoring.definitions import Score

CONFIDENCE_QUANTILE = 1.96
"""The normal quantile of the two-sided 95% interval of a difference of means."""


LEVEL_FRACTION = 0.10
"""Two means closer than this fraction of the larger one are level, however many scenarios tell
them apart: a balance of 0.38 against 0.40 queues decides nothing a person would act on."""


@dataclass(frozen=True)
class Difference:
    """A candidate against another on one criterion: the difference of their means (first minus
    second), the half-width of its 95% interval, and which is better (-1: the first, 1: the
    second, 0: the scenarios cannot tell)."""

    metric: str
    difference: float
    half_width: float
    better: int


def compare(first: Aggregate, second: Aggregate, score: Score) -> Difference:
    """`first` against `second` on the mean of `score`, with Welch's 95% interval."""
    first_mean, second_mean = first.mean, second.mean
    if first_mean is None or second_mean is None or math.isnan(first_mean - second_mean):
        return Difference(score.metric, math.nan, math.inf, 0)
    difference = first_mean - second_mean
    larger = max(abs(first_mean), abs(second_mean))
    if abs(difference) <= max(1e-9, LEVEL_FRACTION * larger):
        return Difference(score.metric, difference, 0.0, 0)
    variance = _variance_of_mean(first) + _variance_of_mean(second)
    half_width = CONFIDENCE_QUANTILE * math.sqrt(variance)
    if abs(difference) <= half_width:
        return Difference(score.metric, difference, half_width, 0)
    first_lower = difference < 0
    first_better = first_lower == (score.better in ("lower", "zero"))
    return Difference(score.metric, difference, half_width, -1 if first_better else 1)


def _variance_of_mean(aggregate: Aggregate) -> float:
    if aggregate.count < 2 or aggregate.stddev is None:
        return math.inf if aggregate.count < 2 else 0.0
    return aggregate.stddev**2 / aggregate.count
