"""One candidate against another on one deciding score: the difference, its interval and which
is better, with a band inside which two candidates are level however many scenarios tell them
apart.

Paired, what `rebalancing compare` decides on: both candidates ran the same scenarios, so the
difference is taken scenario by scenario (each scenario's mean over its rebalances, first minus
second) and its interval over the scenarios, which are independent draws (one seed each); the
rebalances of one scenario are not (one group, one sequence of changes), so they are never
counted as separate observations. Pairing removes what the scenarios share (a large group is
hard to balance for every candidate), so a small steady margin is seen where an interval over
unpaired rows is wide. The interval is Student's t over the scenarios' differences at the
confidence asked (0.95 for a fixed run; a corrected one when scenarios are drawn until decided,
rebalancing.evaluation.decision.stopping).

The three outcomes read the interval against the level band (10% of the larger mean): better
when the whole interval lies beyond the band, settled level when it lies within it, and not
settled otherwise (counted as level: the scenarios cannot tell). This is the decision rule of an
equivalence margin (Schuirmann's two one-sided tests, 1987; Kruschke's "region of practical
equivalence"): more scenarios settle every difference but one exactly at the band's edge.

Unpaired, for a summary that carries no per-scenario means (the Spark harness's aggregates):
Welch's interval over every rebalance row (normal quantile 1.96), better when the point
difference is beyond the band and beyond the interval's half-width.
Runtime complexity: O(scenarios) a paired comparison, O(1) an unpaired one.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import NormalDist

from rebalancing.evaluation.scoring.aggregates import Aggregate
from rebalancing.evaluation.scoring.definitions import Score

CONFIDENCE = 0.95
"""The two-sided confidence of an interval when a run scores a fixed number of scenarios."""

CONFIDENCE_QUANTILE = 1.96
"""The normal quantile of the two-sided 95% interval of the unpaired (Welch) comparison."""


LEVEL_FRACTION = 0.10
"""Two means closer than this fraction of the larger one are level, however many scenarios tell
them apart: a balance of 0.38 against 0.40 queues decides nothing a person would act on. Kept at
10% with paired differences: the band is about what is worth acting on, not about noise, and
pairing only narrows the interval around the difference; it is also what makes a run stop,
since a difference that settles neither beyond nor within it needs ever more scenarios."""

ScenarioMeans = Mapping[str, Mapping[str, Mapping[int, float]]]
"""strategy -> metric -> scenario index -> the scenario's mean over its rebalances (scenarios
where the score has no value left out)."""


@dataclass(frozen=True)
class Difference:
    """A candidate against another on one criterion: the difference (first minus second), the
    half-width of its interval at `confidence`, which is better (-1: the first, 1: the second,
    0: level, or the scenarios cannot tell), whether that is settled (the interval wholly
    beyond or wholly within the level band), and over how many paired scenarios (0: unpaired,
    over rows)."""

    metric: str
    difference: float
    half_width: float
    better: int
    settled: bool = True
    scenarios: int = 0
    confidence: float = CONFIDENCE


def compare(first: Aggregate, second: Aggregate, score: Score) -> Difference:
    """`first` against `second` on the mean of `score` over rows, with Welch's 95% interval:
    for summaries without per-scenario means (the Spark harness's)."""
    first_mean, second_mean = first.mean, second.mean
    if first_mean is None or second_mean is None or math.isnan(first_mean - second_mean):
        return Difference(score.metric, math.nan, math.inf, 0, settled=False)
    difference = first_mean - second_mean
    band = _band(first_mean, second_mean)
    if abs(difference) <= band:
        return Difference(score.metric, difference, 0.0, 0)
    variance = _variance_of_mean(first) + _variance_of_mean(second)
    half_width = CONFIDENCE_QUANTILE * math.sqrt(variance)
    settled = abs(difference) - half_width > band
    if abs(difference) <= half_width:
        return Difference(score.metric, difference, half_width, 0, settled)
    return Difference(score.metric, difference, half_width, _which(difference, score), settled)


def compare_paired(
    first: Mapping[int, float],
    second: Mapping[int, float],
    score: Score,
    confidence: float = CONFIDENCE,
) -> Difference:
    """`first` against `second` on `score`, paired: the mean over the scenarios both have a
    value for of first's scenario mean minus second's, with Student's interval at
    `confidence`; better only when the interval lies wholly beyond the level band (of the
    larger of the two candidates' means over those scenarios)."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    pairs = [
        (first[index], second[index])
        for index in sorted(first.keys() & second.keys())
        if not math.isnan(first[index] - second[index])
    ]
    count = len(pairs)
    if not count:
        return Difference(score.metric, math.nan, math.inf, 0, False, 0, confidence)
    differences = [mine - theirs for mine, theirs in pairs]
    difference = math.fsum(differences) / count
    band = _band(
        math.fsum(mine for mine, _ in pairs) / count,
        math.fsum(theirs for _, theirs in pairs) / count,
    )
    if count < 2:
        half_width = 0.0 if differences[0] == 0 else math.inf
    else:
        deviations = [value - difference for value in differences]
        variance = math.fsum(value * value for value in deviations) / (count - 1)
        half_width = student_quantile(confidence, count - 1) * math.sqrt(variance / count)
    if abs(difference) - half_width > band:
        return Difference(
            score.metric,
            difference,
            half_width,
            _which(difference, score),
            True,
            count,
            confidence,
        )
    settled = abs(difference) + half_width <= band
    return Difference(score.metric, difference, half_width, 0, settled, count, confidence)


def _band(first_mean: float, second_mean: float) -> float:
    """The level band around two means: LEVEL_FRACTION of the larger (and never below 1e-9,
    so that two zeros are level)."""
    return max(1e-9, LEVEL_FRACTION * max(abs(first_mean), abs(second_mean)))


def _which(difference: float, score: Score) -> int:
    """-1 when a nonzero `difference` (first minus second) favours the first, else 1."""
    first_lower = difference < 0
    return -1 if first_lower == (score.better in ("lower", "zero")) else 1


def _variance_of_mean(aggregate: Aggregate) -> float:
    if aggregate.count < 2 or aggregate.stddev is None:
        return math.inf if aggregate.count < 2 else 0.0
    return aggregate.stddev**2 / aggregate.count


@functools.lru_cache(maxsize=1024)
def student_quantile(confidence: float, degrees: int) -> float:
    """The half-width factor of a two-sided `confidence` interval of Student's t with
    `degrees` degrees of freedom: t such that P(|T| <= t) = confidence. Exact for any number
    of degrees (bisection on the closed-form distribution of Abramowitz and Stegun 26.7.3 and
    26.7.4, in the angle theta = atan(t / sqrt(degrees))); the normal quantile with Fisher's
    correction terms (A&S 26.7.5) above 300 degrees, where they agree to 1e-9."""
    if degrees < 1:
        raise ValueError(f"degrees must be at least 1, got {degrees!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    z = NormalDist().inv_cdf((1 + confidence) / 2)
    if degrees > 300:
        terms = (
            (z**3 + z) / 4,
            (5 * z**5 + 16 * z**3 + 3 * z) / 96,
            (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384,
            (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160,
        )
        return z + math.fsum(term / degrees ** (power + 1) for power, term in enumerate(terms))
    low, high = 0.0, math.pi / 2
    for _ in range(100):
        middle = (low + high) / 2
        if _central_probability(middle, degrees) < confidence:
            low = middle
        else:
            high = middle
    return math.sqrt(degrees) * math.tan((low + high) / 2)


def _central_probability(theta: float, degrees: int) -> float:
    """P(|T| <= sqrt(degrees) * tan(theta)) for Student's t (A&S 26.7.3, 26.7.4)."""
    sine, cosine = math.sin(theta), math.cos(theta)
    squared = cosine * cosine
    if degrees % 2 == 0:
        term, total = 1.0, 1.0
        for k in range(1, degrees // 2):
            term *= squared * (2 * k - 1) / (2 * k)
            total += term
        return sine * total
    if degrees == 1:
        return 2 * theta / math.pi
    term, total = cosine, cosine
    for k in range(1, (degrees - 1) // 2):
        term *= squared * (2 * k) / (2 * k + 1)
        total += term
    return 2 / math.pi * (theta + sine * total)
