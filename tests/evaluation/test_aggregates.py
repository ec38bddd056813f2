"""Aggregation of rows and the printed table."""

from __future__ import annotations

import math
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rebalancing.evaluation.report.tables import markdown_table
from rebalancing.evaluation.scenarios.changes import ScenarioSettings, generate_scenarios
from rebalancing.evaluation.scoring.aggregates import (
    ALL_CHANGES,
    METRICS,
    aggregate,
    percentile,
    summarise,
)
from rebalancing.evaluation.scoring.replay import score_scenarios
from rebalancing.strategies import STRATEGIES


def test_percentiles_interpolate_linearly_between_closest_ranks() -> None:
    values = [1.0, 2.0, 3.0, 4.0, 10.0]
    assert percentile(values, 0.5) == 3.0
    assert percentile(values, 0.95) == pytest.approx(4.0 + 0.8 * 6.0)
    assert percentile(values, 1.0) == 10.0
    assert percentile([7.0], 0.99) == 7.0


def test_aggregate_ignores_undefined_values() -> None:
    result = aggregate([1.0, None, 3.0])
    assert (result.count, result.mean, result.max) == (2, 2.0, 3.0)
    assert result.stddev == pytest.approx(math.sqrt(2))
    assert aggregate([None]).count == 0
    assert aggregate([None]).mean is None
    assert aggregate([5.0]).stddev is None


def test_summary_has_every_change_kind_and_an_overall_line_per_strategy() -> None:
    settings = ScenarioSettings(queue_range=(1, 100), consumer_range=(1, 20))
    rows = list(score_scenarios(generate_scenarios(1, range(40), settings), STRATEGIES))
    summary = summarise(rows)
    for name in STRATEGIES:
        changes = {row.change for row in rows if row.strategy == name}
        assert {change for strategy, change in summary if strategy == name} == changes | {
            ALL_CHANGES
        }
        overall = summary[(name, ALL_CHANGES)]
        assert set(overall) == set(METRICS)
        assert overall["balance_degree"].count == sum(1 for row in rows if row.strategy == name)
    table = markdown_table(summary).splitlines()
    assert len(table) == 2 + len(summary)
    assert all(line.count("|") == table[0].count("|") for line in table)


@given(st.lists(st.integers(min_value=0, max_value=10**6), min_size=1, max_size=200))
def test_integer_mean_and_stddev_equal_the_exact_ones(values: list[int]) -> None:
    result = aggregate(values)
    assert result.mean == pytest.approx(statistics.fmean(values), rel=1e-15)
    if len(values) > 1:
        assert result.stddev == pytest.approx(statistics.stdev(values), rel=1e-15, abs=0)
    assert result.max == max(values)


@given(
    st.lists(
        # the scores' range: ratios, times; not values whose squares underflow
        st.just(0.0) | st.floats(min_value=1e-9, max_value=1e6) | st.none(),
        min_size=1,
        max_size=200,
    )
)
def test_float_mean_and_stddev_are_within_rounding_of_the_exact_ones(
    values: list[float | None],
) -> None:
    defined = [value for value in values if value is not None]
    result = aggregate(values)
    assert result.count == len(defined)
    if not defined:
        return
    assert result.mean == pytest.approx(statistics.fmean(defined), rel=1e-15)
    if len(defined) > 1:
        exact = statistics.stdev(defined)
        assert result.stddev == pytest.approx(exact, rel=1e-9, abs=1e-12 * max(defined))
