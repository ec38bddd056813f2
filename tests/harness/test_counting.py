"""The partitions' counting of values (rebalancing.harness.columns.count_values) against a
plain-Python count of the same rows, and its timing buckets against Spark's own arithmetic."""

from __future__ import annotations

import dataclasses
import math
import struct
from collections import defaultdict
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention

from rebalancing.evaluation.scenarios.changes import ScenarioSettings, generate_scenarios
from rebalancing.evaluation.scoring.aggregates import METRICS
from rebalancing.evaluation.scoring.replay import ScoreRow, score_scenarios
from rebalancing.harness.columns import (
    COUNT_SCHEMA,
    ROW_SCHEMA,
    count_values,
    rows_to_batch,
    timing_keys,
)
from rebalancing.strategies import DEFAULT_STRATEGIES, STRATEGIES

SETTINGS = ScenarioSettings(queue_range=(1, 120), consumer_range=(1, 24), change_count_range=(1, 4))
Count = tuple[str, str, str, str]  # strategy, facet, group, metric
NAN_PAYLOAD = (0x7FF8_0000_0000_0001).to_bytes(8, "little")
"""A NaN of other bits than float("nan")'s, which Spark counts as the same value."""


def _edge_rows(template: ScoreRow) -> list[ScoreRow]:
    """Rows the scenarios rarely or never give: a failure, -0.0, NaN, zero and sub-microsecond
    timings, empty groups (size 1) and a group too big for a double's exact bit length."""
    edges: list[dict[str, Any]] = [
        {"failed": True, "releases": 3, "assign_micros": 7.0},
        {"stickiness_gap": -0.0, "balance_degree": -0.0, "assign_micros": 0.0},
        {"stickiness_gap": 0.0, "balance_degree": float("nan"), "assign_micros": 0.3},
        {"balance_degree": -math.nan, "stickiness": struct.unpack("<d", NAN_PAYLOAD)[0]},
        {"queue_count": 0, "consumer_count": 0, "releases": 0, "assign_micros": 1.0},
        {"queue_count": 2**40, "consumer_count": 2**21 + 1, "releases": 5, "assign_micros": 1e6},
        {"queue_count": 2**31 - 1, "consumer_count": 1, "releases": None, "converged": False},
        {"releases": 2, "converged": True, "assign_micros": 10.0, "change": "edge"},
    ]
    return [dataclasses.replace(template, **changes) for changes in edges]


def _rows() -> list[ScoreRow]:
    strategies = {name: STRATEGIES[name] for name in DEFAULT_STRATEGIES}
    rows = list(score_scenarios(generate_scenarios(21, range(30), SETTINGS), strategies))
    protocol = next(row for row in rows if row.releases is not None)
    return rows + _edge_rows(protocol) + _edge_rows(rows[0])


def _bucket(value: float) -> float:
    """A timing's key, written out independently: 10^(k/500), k = log10(value) * 500 rounded
    half away from zero."""
    if not value > 0:
        return value
    steps = Decimal(math.log10(value) * 500).quantize(Decimal(1), rounding=ROUND_HALF_UP)
    return float(10 ** (int(steps) / 500))


def _key(value: float) -> Any:
    """A key comparable in a dict: every NaN the same, -0.0 as 0.0."""
    return "nan" if math.isnan(value) else value + 0.0


def _oracle(rows: list[ScoreRow]) -> dict[Count, list[tuple[Any, int, Any, Any, Any]]]:
    """Per (strategy, facet, group, metric): (key, count, timing max, sum, sum of squares) per
    key in key order, counted row by row."""
    counts: dict[tuple[Count, Any], list[float]] = defaultdict(list)
    for row in rows:
        entries: list[tuple[str, str, str, Any]] = [
            ("change", row.change, metric, getattr(row, metric)) for metric in METRICS
        ]
        sizes = {"group_size": row.queue_count * row.consumer_count, "queue_count": row.queue_count}
        for facet, metric in (("group_size", "releases"), ("queue_count", "assign_micros")):
            value = getattr(row, metric)
            if row.failed or value is None:
                continue
            bucket = str(max(sizes[facet], 1).bit_length())
            entries.append((facet, bucket, metric, value))
            entries.append((facet, bucket, "size", max(sizes[facet], 1)))
        for facet, group, metric, value in entries:
            if value is None:
                continue
            value = float(value)
            key = _key(_bucket(value) if metric == "assign_micros" else value)
            counts[((row.strategy, facet, group, metric), key)].append(value)
    grouped: dict[Count, list[tuple[Any, int, Any, Any, Any]]] = defaultdict(list)
    for (group, key), values in counts.items():
        timing = group[3] == "assign_micros"
        sums = (max(values), math.fsum(values), math.fsum(v * v for v in values))
        grouped[group].append((key, len(values), *(sums if timing else (None, None, None))))
    return {group: sorted(entries, key=_order) for group, entries in grouped.items()}


def _order(entry: tuple[Any, ...]) -> tuple[bool, float]:
    return (entry[0] == "nan", 0.0 if entry[0] == "nan" else entry[0])


def _counted(batches: list[pa.RecordBatch]) -> dict[Count, list[tuple[Any, int, Any, Any, Any]]]:
    """count_values' output in the oracle's form, the tables of one key added up."""
    totals: dict[tuple[Count, Any], list[Any]] = {}
    for row in pa.Table.from_batches(batches, schema=COUNT_SCHEMA).to_pylist():
        group = (row["strategy"], row["facet"], row["group"], row["metric"])
        entry = totals.setdefault((group, _key(row["key"])), [0, None, None, None])
        entry[0] += row["count"]
        if row["timing"] is not None:
            entry[1] = max(entry[1] or row["timing_max"], row["timing_max"])
            entry[2] = (entry[2] or 0.0) + row["timing"]
            entry[3] = (entry[3] or 0.0) + row["timing_square"]
    grouped: dict[Count, list[tuple[Any, int, Any, Any, Any]]] = defaultdict(list)
    for (group, key), (count, maximum, total, squares) in totals.items():
        grouped[group].append((key, count, maximum, total, squares))
    return {group: sorted(entries, key=_order) for group, entries in grouped.items()}


def _assert_equal_counts(
    got: dict[Count, list[tuple[Any, ...]]], expected: dict[Count, list[tuple[Any, ...]]]
) -> None:
    """Equal groups, keys and counts; a timing's key (a power of ten computed by two different
    libraries) and its sums equal up to rounding."""
    assert got.keys() == expected.keys()
    for group, entries in expected.items():
        assert len(got[group]) == len(entries), group
        for actual, wanted in zip(got[group], entries, strict=True):
            if group[3] != "assign_micros":
                assert actual == wanted, group
                continue
            assert actual[1] == wanted[1], group
            for got_number, wanted_number in zip(
                (actual[0], *actual[2:]), (wanted[0], *wanted[2:]), strict=True
            ):
                assert math.isclose(got_number, wanted_number, rel_tol=1e-12), group


@pytest.fixture(scope="module")
def rows() -> list[ScoreRow]:
    return _rows()


@pytest.mark.parametrize(
    ("rows_per_count", "counts_per_table"), [(1 << 16, 1 << 20), (100, 1 << 20), (50, 300)]
)
def test_the_counts_are_those_of_a_plain_count_of_the_rows(
    rows: list[ScoreRow], rows_per_count: int, counts_per_table: int
) -> None:
    batches = [rows_to_batch(rows[start : start + 37]) for start in range(0, len(rows), 37)]
    counted = list(count_values(batches, rows_per_count, counts_per_table))
    assert all(batch.schema == COUNT_SCHEMA for batch in counted)
    expected = _oracle(rows)
    _assert_equal_counts(_counted(counted), expected)
    facets = {group[1] for group in expected}
    assert facets == {"change", "group_size", "queue_count"}
    buckets = {facet: {group[2] for group in expected if group[1] == facet} for facet in facets}
    assert {"1", "62"} <= buckets["group_size"]  # empty groups; 2^61 + 2^40 pairs
    assert {"1", "31", "41"} <= buckets["queue_count"]  # 2^31 - 1 and 2^40 queues
    table = pa.Table.from_batches(counted, schema=COUNT_SCHEMA)
    values = [
        (*(row[name] for name in COUNT_SCHEMA.names[:4]), repr(row["key"]))
        for row in table.to_pylist()
    ]
    assert not [value for value in values if value[4] == "-0.0"]  # counted as 0.0
    assert any(value[4] == "nan" for value in values)  # each NaN of a group as one value
    if counts_per_table == 1 << 20:  # one table: every value once
        assert len(set(values)) == len(values)
    else:  # handed over in several tables, some values in more than one
        assert len(counted) > 1
        assert len(set(values)) < len(values)


_NANS = [math.nan, -math.nan, struct.unpack("<d", NAN_PAYLOAD)[0]]
_FRACTIONS = st.sampled_from([None, 0.0, -0.0, 0.5, math.inf, *_NANS]) | st.floats(-1e100, 1e100)
_INTEGERS = st.sampled_from([None, 0, 1, 2, 7]) | st.integers(-(2**62), 2**62)
_SIZES = st.sampled_from([0, 1, 2, 3, 5, 2**21 + 1, 2**31 - 1])
_TIMINGS = st.sampled_from([0.0, -0.0, -4.0, 0.3, 1.0, 10.0]) | st.floats(1e-3, 1e8)


def _row(**values: Any) -> ScoreRow:
    """A row of these values, 0 in every field without a default."""
    fields = dataclasses.fields(ScoreRow)
    required = [field.name for field in fields if field.default is dataclasses.MISSING]
    return ScoreRow(**(dict.fromkeys(required, 0) | values))


_METRIC_VALUES = {
    metric: _FRACTIONS if pa.types.is_floating(ROW_SCHEMA.field(metric).type) else _INTEGERS
    for metric in METRICS
} | {
    "assign_micros": _TIMINGS,
    "converged": st.sampled_from([None, True, False]),
    "failed": st.sampled_from([None, True, False]),
}
"""Each metric's values: some that repeat (so that counts add up), nulls, NaNs, -0.0 and
integers beyond a double's exact ones; none whose square the plain count's sums would
overflow, and no NaN timings (no two NaNs have a comparable sum)."""

_ROWS = st.lists(
    st.builds(
        _row,
        strategy=st.sampled_from(["a", "b", "sticky"]),
        change=st.sampled_from(["join", "leave", "initial"]),
        queue_count=_SIZES,
        consumer_count=_SIZES,
        **_METRIC_VALUES,
    ),
    max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(_ROWS, st.integers(1, 40), st.integers(1, 400))
def test_any_rows_are_counted_as_a_plain_count_of_them_however_they_are_flushed(
    rows: list[ScoreRow], rows_per_count: int, counts_per_table: int
) -> None:
    """Every metric's column counted in one hash per flush, the timings in one group-by, and
    the count tables merged all at once: the counts of a row-by-row count, with nulls, NaNs,
    -0.0, values beyond a double's exact integers and all-null columns among the rows."""
    batches = [rows_to_batch(rows[start : start + 7]) for start in range(0, len(rows), 7)]
    counted = list(count_values(batches, rows_per_count, counts_per_table))
    assert all(batch.schema == COUNT_SCHEMA for batch in counted)
    _assert_equal_counts(_counted(counted), _oracle(rows))
    one_table = pa.Table.from_batches(count_values(batches, rows_per_count), schema=COUNT_SCHEMA)
    values = [(*list(row.values())[:4], repr(row["key"])) for row in one_table.to_pylist()]
    assert len(set(values)) == len(values)  # every NaN of a group as one value
    assert not [value for value in values if value[4] == "-0.0"]  # counted as 0.0


def test_no_rows_give_no_counts() -> None:
    assert list(count_values([])) == []
    assert list(count_values([rows_to_batch([])])) == []


def test_rows_without_any_metric_give_no_counts() -> None:
    nothing = _row(strategy="a", change="join", queue_count=3, consumer_count=2)
    rows = [dataclasses.replace(nothing, **dict.fromkeys(METRICS)) for _ in range(3)]
    assert list(count_values([rows_to_batch(rows)])) == []


def test_a_timing_halfway_between_buckets_goes_to_the_one_away_from_zero() -> None:
    """As Spark's round (HALF_UP): log10(x) * 500 = k + 0.5 exactly -> k + 1 for k >= 0, k for
    k < 0 (-1599.5 -> -1600)."""
    halfway: list[tuple[int, float]] = []
    for k in (-1600, -1300, -7, 0, 3, 999, 1000):
        x = np.float64(10 ** ((k + 0.5) / 500))
        for _ in range(8):  # the double whose numpy log10 lies exactly halfway, if any
            steps = float(np.log10(x) * 500)
            if steps == k + 0.5:
                halfway.append((k, float(x)))
                break
            x = np.nextafter(x, np.inf if steps < k + 0.5 else -np.inf)
    assert len(halfway) >= 4
    keys = timing_keys(np.array([x for _, x in halfway]))
    for (k, _), key in zip(halfway, keys, strict=True):
        assert math.isclose(key, 10 ** ((k + 1 if k >= 0 else k) / 500), rel_tol=1e-12), k


def test_timing_buckets_are_spark_sqls(spark: SparkSession) -> None:
    """The keys of the timings equal what the harness's Spark SQL expression gave them."""
    generator = np.random.default_rng(5)
    values = np.concatenate(
        [10 ** generator.uniform(-3, 7, 2000), [0.0, -0.0, -4.0, 1.0, 10.0, 1e-300, 2.5]]
    )
    frame = spark.createDataFrame([(float(value),) for value in values], "x double")
    steps = F.lit(500.0)
    bucket = F.pow(F.lit(10.0), F.round(F.log10("x") * steps) / steps)
    keyed = frame.select(F.when(F.col("x") > 0, bucket).otherwise(F.col("x")).alias("key"))
    from_spark = [row["key"] for row in keyed.collect()]
    for value, got, wanted in zip(values, timing_keys(values), from_spark, strict=True):
        assert math.isclose(got, wanted, rel_tol=1e-12), value
