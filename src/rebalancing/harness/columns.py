"""Score rows as Arrow record batches, and how often each value occurs in them: what the Spark
partitions hand back (never one Python object per row through Spark).

A partition scores its scenarios in batches of rows (ROW_SCHEMA) and counts the values of every
metric in them with pyarrow and numpy (count_values), so Spark receives a table of counts
(COUNT_SCHEMA), a few per partition, instead of the rows.

This is the module the executors import (score_and_count_partition runs there): it needs pyarrow,
numpy and the scoring core only, not pyspark's session, matplotlib or the reports, so an
executor's Python needs no more than the scoring does.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rebalancing.evaluation.decision.systems import SYSTEM_VERDICTS
from rebalancing.evaluation.scenarios.changes import Scenario, ScenarioSettings
from rebalancing.evaluation.scenarios.views import ViewSettings
from rebalancing.evaluation.scoring.aggregates import METRICS
from rebalancing.evaluation.scoring.replay import ScoreRow, score_scenarios
from rebalancing.evaluation.scoring.runner import ProtocolFactory
from rebalancing.strategies import Strategy, resolve


def _arrow_type(annotation: Any) -> pa.DataType:
    text = str(annotation)
    if text.startswith("int"):
        return pa.int64()
    if text.startswith("float"):
        return pa.float64()
    if text.startswith("bool"):
        return pa.bool_()
    if text.startswith("str"):
        return pa.string()
    raise TypeError(f"no Arrow type for row field annotation {text!r}")


ROW_SCHEMA = pa.schema([pa.field(f.name, _arrow_type(f.type)) for f in fields(ScoreRow)])
"""The Arrow schema of a score row (every field nullable)."""

_SPARK_TYPES = {
    pa.int64(): "BIGINT",
    pa.float64(): "DOUBLE",
    pa.bool_(): "BOOLEAN",
    pa.string(): "STRING",
}


def _spark_ddl(schema: pa.Schema) -> str:
    """`schema` as a Spark DDL string (so this module needs no pyspark import)."""
    return ", ".join(f"`{field.name}` {_SPARK_TYPES[field.type]}" for field in schema)


SPARK_DDL = _spark_ddl(ROW_SCHEMA)
"""The row schema as a Spark DDL string."""


def rows_to_batch(rows: list[ScoreRow]) -> pa.RecordBatch:
    columns = {name: [getattr(row, name) for row in rows] for name in ROW_SCHEMA.names}
    return pa.RecordBatch.from_pydict(columns, schema=ROW_SCHEMA)


def score_index_batches(
    index_batches: Iterable[Iterable[int]],
    base_seed: int,
    strategy_specs: tuple[str, ...],
    settings: ScenarioSettings,
    scenarios_per_batch: int,
    views: str = "broker",
    view_settings: ViewSettings | None = None,
    protocol: ProtocolFactory | Mapping[str, ProtocolFactory] | None = None,
    system: str | None = None,
    static_membership: bool = False,
) -> Iterator[pa.RecordBatch]:
    """Score the scenarios of each batch of indices; one Arrow batch per `scenarios_per_batch`,
    each consumer on its own view with `views="client"` (rebalancing.evaluation.scenarios.views),
    each strategy inside `protocol` (score_scenario's), or with `system` (a name of
    SYSTEM_VERDICTS), its candidates as the system resolves them, inside its protocols, with
    static members when `static_membership` (a Kafka system's only: System.protocols), as
    `rebalancing compare` builds them.

    `strategy_specs` are resolved here, where the scoring runs (an executor): registered names,
    or `package.module:function` from a module shipped with the job. Rows carry each strategy's
    name (the spec itself for a bare function).
    """
    if system is not None:
        declared = SYSTEM_VERDICTS[system]
        strategies = {strategy.name: strategy for strategy in declared.strategies(strategy_specs)}
        protocol = declared.protocols(strategies, static_membership)
    elif static_membership:
        raise ValueError("static_membership needs a Kafka system: give `system`")
    else:
        strategies = resolve_strategies(strategy_specs)
    pending: list[int] = []
    for indices in index_batches:
        pending.extend(indices)
        while len(pending) >= scenarios_per_batch:
            chunk, pending = pending[:scenarios_per_batch], pending[scenarios_per_batch:]
            yield _score_chunk(
                chunk, base_seed, strategies, settings, views, view_settings, protocol
            )
    if pending:
        yield _score_chunk(pending, base_seed, strategies, settings, views, view_settings, protocol)


def resolve_strategies(strategy_specs: tuple[str, ...]) -> dict[str, Strategy]:
    """Row label -> Strategy for each spec (see rebalancing.strategies.resolve)."""
    resolved = (resolve(spec) for spec in strategy_specs)
    return {strategy.name: strategy for strategy in resolved}


def _score_chunk(
    indices: list[int],
    base_seed: int,
    strategies: dict[str, Strategy],
    settings: ScenarioSettings,
    views: str,
    view_settings: ViewSettings | None,
    protocol: ProtocolFactory | Mapping[str, ProtocolFactory] | None,
) -> pa.RecordBatch:
    scenarios = (Scenario(base_seed, index, settings) for index in indices)
    rows = score_scenarios(scenarios, strategies, views, view_settings, protocol=protocol)
    return rows_to_batch(list(rows))


def score_arrow_partition(
    batches: Iterator[pa.RecordBatch],
    base_seed: int,
    strategy_specs: tuple[str, ...],
    settings: ScenarioSettings,
    scenarios_per_batch: int,
    views: str = "broker",
    view_settings: ViewSettings | None = None,
    protocol: ProtocolFactory | Mapping[str, ProtocolFactory] | None = None,
    system: str | None = None,
    static_membership: bool = False,
) -> Iterator[pa.RecordBatch]:
    """The mapInArrow function: batches of scenario indices (column `id`) in, score rows out."""
    index_batches = (batch.column("id").to_pylist() for batch in batches)
    yield from score_index_batches(
        index_batches,
        base_seed,
        strategy_specs,
        settings,
        scenarios_per_batch,
        views,
        view_settings,
        protocol,
        system,
        static_membership,
    )


def score_and_count_partition(
    batches: Iterator[pa.RecordBatch], **parameters: Any
) -> Iterator[pa.RecordBatch]:
    """The job's mapInArrow function: batches of scenario indices (column `id`) in, the counts of
    the values of their score rows out (count_values), so the rows never reach Spark.
    `parameters` are score_arrow_partition's, by keyword."""
    yield from count_values(score_arrow_partition(batches, **parameters))


def in_worker(
    batches: Iterator[pa.RecordBatch],
    function: Callable[..., Iterator[pa.RecordBatch]],
    **parameters: Any,
) -> Iterator[pa.RecordBatch]:
    """`function(batches, **parameters)` in a Spark Python worker, with everything alive when
    the task starts (the imported modules, numba's compiled kernels) moved out of the garbage
    collector's reach (gc.freeze): they live as long as the worker anyway, and collections of
    the oldest generation stop walking them again and again (a small gain: 2.9% -> 2.4% of the
    CPU time on the million-scenario mix, `python benchmarks/worker_settings.py`). A worker runs
    many tasks, so what the task before left as cyclic garbage is collected first: frozen, it
    would never be. Not for the driver or a test process, whose objects come and go."""
    gc.collect()  # cheap: what earlier tasks froze is not walked again
    gc.freeze()
    yield from function(batches, **parameters)


def count_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The mapInArrow function over rows already scored (`--raw` reads them back): score rows
    in, the counts of their values out, as score_and_count_partition gives them."""
    yield from count_values(batches)


TIMING_METRICS = frozenset({"assign_micros"})
"""Metrics that differ from run to run anyway: summed as doubles, and counted by logarithmic
bucket rather than by value (TIMING_BUCKETS_PER_DECADE), so their percentiles are approximate."""

TIMING_BUCKETS_PER_DECADE = 500
"""A timing is counted at the nearest of 500 logarithmic steps per power of ten, so its
percentiles are within 0.23% of the exact ones (a step is a factor of 10^(1/500)); its count,
mean, standard deviation and maximum come from the values themselves."""

PROFILES = {"group_size": "releases", "queue_count": "assign_micros"}
"""The size profiles the harness computes itself (it collects no rows): facet -> metric. Each
row that did not fail counts its metric, and its size (queues x consumers, or queues) as the
metric "size", under the power-of-two bucket of that size (its bit length), so that a plot
draws the median metric against the median size of each bucket, as
rebalancing.evaluation.report.plots does from the pure-Python path's rows."""

GROUP = ("strategy", "facet", "group", "metric")
"""What a distribution is of: a metric per (strategy, change kind) under the facet "change", or
per (strategy, size bucket) under a profile's facet."""

COUNT_SCHEMA = pa.schema(
    [
        pa.field("strategy", pa.string()),
        pa.field("facet", pa.string()),
        pa.field("group", pa.string()),
        pa.field("metric", pa.string()),
        pa.field("key", pa.float64()),
        pa.field("count", pa.int64()),
        pa.field("timing_max", pa.float64()),
        pa.field("timing", pa.float64()),
        pa.field("timing_square", pa.float64()),
    ]
)
"""A count of one value: how many rows of a strategy hold the value `key` of `metric` in `group`
of `facet` (a change kind under "change", a size bucket under a profile's facet); for a timing,
whose key is its logarithmic bucket, also the maximum, sum and sum of squares of the values
themselves (null for every other metric, whose sums follow exactly from key and count)."""

COUNT_DDL = _spark_ddl(COUNT_SCHEMA)
"""The count schema as a Spark DDL string."""

ROWS_PER_COUNT = 1 << 16
"""Rows gathered before they are counted: enough to make each pyarrow call worth its overhead,
few enough to hold (some 20 MB of rows)."""

COUNTS_PER_TABLE = 1 << 20
"""Distinct values held before a partition hands its counts to Spark ahead of its end."""

_POWERS_OF_TWO = np.left_shift(np.int64(1), np.arange(63, dtype=np.int64))
"""1, 2, 4, ... 2^62: how many of them are <= n is the bit length of n >= 1."""

_MERGED = ("count", "sum"), ("timing_max", "max"), ("timing", "sum"), ("timing_square", "sum")


def count_values(
    batches: Iterable[pa.RecordBatch],
    rows_per_count: int = ROWS_PER_COUNT,
    counts_per_table: int = COUNTS_PER_TABLE,
) -> Iterator[pa.RecordBatch]:
    """How often each value of each metric occurs in score-row batches (ROW_SCHEMA): count
    batches (COUNT_SCHEMA), with the entries of the harness's value counts (count_rows). Rows
    are counted every `rows_per_count` rows and the counts merged (all at once, when they
    might hold `counts_per_table` values), so a partition yields its counts once, at its end,
    or whenever `counts_per_table` distinct values have gathered (Spark sums the counts of a
    value that several tables hold)."""
    pending: list[pa.RecordBatch] = []
    pending_rows = 0
    counts: list[pa.Table] = []  # merged only when they might hold counts_per_table values
    for batch in batches:
        pending.append(batch)
        pending_rows += batch.num_rows
        if pending_rows < rows_per_count:
            continue
        counts.append(count_rows(pa.Table.from_batches(pending)))
        pending, pending_rows = [], 0
        if sum(table.num_rows for table in counts) >= counts_per_table:
            counts = [_merge(counts)]
            if counts[0].num_rows >= counts_per_table:
                yield from counts.pop().to_batches()
    if pending_rows:
        counts.append(count_rows(pa.Table.from_batches(pending)))
    if counts and (merged := _merge(counts)).num_rows:
        yield from merged.to_batches()


def count_rows(rows: pa.Table) -> pa.Table:
    """The counts (COUNT_SCHEMA) of the values of `rows` (score rows): every metric of METRICS
    per change kind (facet "change", group the row's `change`), and for each profile of
    PROFILES, per bit length of the row's size (at least 1), its metric and the size itself,
    from the rows that did not fail and hold the metric. Null values are not counted; -0.0 is
    counted as 0.0 and every NaN as one value, as Spark groups them."""
    strategy = _Labels(rows["strategy"])
    change = _Labels(rows["change"])
    values = {metric: _Values.of(rows[metric]) for metric in METRICS}
    slots = [_Slot("change", metric, change, values[metric]) for metric in METRICS]
    failed = pc.fill_null(pc.cast(rows["failed"], pa.bool_()), False)
    queue_count = pc.cast(rows["queue_count"], pa.int64())
    sizes = {
        "group_size": pc.multiply(queue_count, pc.cast(rows["consumer_count"], pa.int64())),
        "queue_count": queue_count,
    }
    for facet, metric in PROFILES.items():
        size = pc.max_element_wise(sizes[facet], pa.scalar(1, pa.int64()))  # a null size is 1
        bit_length = np.searchsorted(_POWERS_OF_TWO, size.to_numpy(), side="right")
        bucket = _Labels(pc.cast(pa.array(bit_length, pa.int64()), pa.string()))
        measured = values[metric].kept & ~_numpy(failed)
        slots.append(_Slot(facet, metric, bucket, _Values(values[metric].values, measured)))
        slots.append(_Slot(facet, "size", bucket, _Values.of(size).where(measured)))
    return _count_slots(strategy, slots)


def timing_keys(values: np.ndarray[Any, np.dtype[np.float64]]) -> np.ndarray[Any, np.dtype[Any]]:
    """The key a timing is counted under: for x > 0 the nearest logarithmic bucket,
    10^(round(log10(x) * TIMING_BUCKETS_PER_DECADE) / TIMING_BUCKETS_PER_DECADE), rounding
    halves away from zero as Spark's round does; x itself otherwise."""
    positive = values > 0
    steps = np.log10(np.where(positive, values, 1.0)) * TIMING_BUCKETS_PER_DECADE
    magnitude = np.abs(steps)
    whole = np.floor(magnitude)
    rounded = np.copysign(whole + (magnitude - whole >= 0.5), steps)
    return np.where(positive, np.power(10.0, rounded / TIMING_BUCKETS_PER_DECADE), values)


class _Labels:
    """A string column as small integer codes into its distinct values (so that filtering and
    grouping move integers, not strings)."""

    def __init__(self, column: pa.ChunkedArray | pa.Array) -> None:
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        encoded = pc.dictionary_encode(pc.cast(column, pa.string()))
        self.values: pa.Array = encoded.dictionary
        self.codes = _numpy(pc.fill_null(encoded.indices, len(self.values))).astype(np.int64)
        self.values = pa.concat_arrays([self.values, pa.nulls(1, pa.string())])  # code of null


def _numpy(column: pa.ChunkedArray | pa.Array) -> np.ndarray[Any, np.dtype[Any]]:
    """A column without nulls as a numpy array."""
    return np.asarray(column.to_numpy(zero_copy_only=False))


@dataclass(frozen=True)
class _Values:
    """A column as doubles (0.0 where null) and which of them are counted (`kept`)."""

    values: np.ndarray[Any, np.dtype[np.float64]]
    kept: np.ndarray[Any, np.dtype[np.bool_]]

    @staticmethod
    def of(column: pa.ChunkedArray | pa.Array) -> _Values:
        """The non-null values of `column`, cast to doubles as Arrow casts them (safe=False)."""
        as_double = pc.cast(column, pa.float64(), safe=False)
        if not column.null_count:
            return _Values(_numpy(as_double), np.ones(len(column), np.bool_))
        return _Values(_numpy(pc.fill_null(as_double, 0.0)), _numpy(pc.is_valid(column)))

    def where(self, measured: np.ndarray[Any, np.dtype[np.bool_]]) -> _Values:
        """The same values, counted only where also `measured`."""
        return _Values(self.values, self.kept & measured)


@dataclass(frozen=True)
class _Slot:
    """One (facet, metric) to count: `values` per strategy and per label of `group`."""

    facet: str
    metric: str
    group: _Labels
    values: _Values


_PAIR = np.dtype([("code", "<i8"), ("key", "<f8")])
"""A value to count: its slot, strategy and group as one code (_Codes), and its key."""

_TIMING_AGGREGATES = [
    ([], "count_all"),
    ("timing", "max"),
    ("timing", "sum"),
    ("timing_square", "sum"),
]
"""What the timings' group-by computes per (code, key)."""


def _count_slots(strategy: _Labels, slots: list[_Slot]) -> pa.Table:
    """The counts of every slot's kept values per strategy, group and key (the value, or a
    timing's bucket), in two Arrow calls per flush whatever the number of slots (a group-by
    per slot cost some 8 microseconds per row, mostly each call's fixed cost): the slots
    without timings in one hash of (code, key) pairs, the timing slots in one group-by that
    also sums them. The order of the counts means nothing."""
    codes = _Codes(strategy, slots)
    plain = [number for number, slot in enumerate(slots) if slot.metric not in TIMING_METRICS]
    timed = [number for number, slot in enumerate(slots) if slot.metric in TIMING_METRICS]
    return pa.concat_tables([_count_plain(codes, plain), _count_timed(codes, timed)])


def _count_plain(codes: _Codes, numbers: list[int]) -> pa.Table:
    """The counts of the kept values of the slots `numbers`: each (code, key) pair as 16 bytes
    that Arrow's value_counts hashes in one pass (some three times faster than a group-by
    over the code and the key)."""
    code, value = codes.kept(numbers)
    pairs = np.empty(len(code), _PAIR)
    pairs["code"] = code
    pairs["key"] = _normalized(value)
    counted = pc.value_counts(
        pa.FixedSizeBinaryArray.from_buffers(pa.binary(16), len(pairs), [None, pa.py_buffer(pairs)])
    )
    distinct = counted.field("values")
    pair = np.frombuffer(distinct.buffers()[1], _PAIR, distinct.offset + len(distinct))
    pair = pair[distinct.offset :]
    absent = pa.nulls(len(pair), pa.float64())
    return codes.labelled(
        pair["code"], pair["key"], counted.field("counts"), absent, absent, absent
    )


def _count_timed(codes: _Codes, numbers: list[int]) -> pa.Table:
    """The counts of the kept timings of the slots `numbers` per logarithmic bucket, with
    their maximum, sum and sum of squares (Arrow's group-by adds them in row order)."""
    code, value = codes.kept(numbers)
    columns = {
        "code": code,
        "key": _normalized(timing_keys(value)),
        "timing": value,
        "timing_square": value * value,
    }
    grouped = pa.table(columns).group_by(["code", "key"], use_threads=False)
    sums = grouped.aggregate(_TIMING_AGGREGATES)
    return codes.labelled(
        _numpy(sums["code"]),
        sums["key"],
        sums["count_all"],
        sums["timing_max"],
        sums["timing_sum"],
        sums["timing_square_sum"],
    )


def _normalized(keys: np.ndarray[Any, np.dtype[np.float64]]) -> np.ndarray[Any, np.dtype[Any]]:
    """`keys` with -0.0 as 0.0 and every NaN as the same NaN, so that equal keys (as Spark
    groups them) have equal bits."""
    keys = keys + 0.0  # -0.0 + 0.0 is 0.0
    keys[np.isnan(keys)] = np.nan
    return keys


class _Codes:
    """The slot, strategy and group of each value of `slots` as one integer code, and back."""

    def __init__(self, strategy: _Labels, slots: list[_Slot]) -> None:
        self.strategy = strategy
        self.slots = slots
        self.groups = max(len(slot.group.values) for slot in slots)
        self.per_slot = len(strategy.values) * self.groups
        # Each slot's codes of its rows' strategy and group (its codes less the slot's offset),
        # computed once per labelling (the slots of a facet share one).
        local: dict[int, np.ndarray[Any, np.dtype[np.int64]]] = {}
        for slot in slots:
            if id(slot.group) not in local:
                local[id(slot.group)] = strategy.codes * self.groups + slot.group.codes
        self.local = [local[id(slot.group)] for slot in slots]

    def kept(
        self, numbers: list[int]
    ) -> tuple[np.ndarray[Any, np.dtype[np.int64]], np.ndarray[Any, np.dtype[np.float64]]]:
        """The codes and values of the kept values of the slots `numbers`, slot by slot."""
        if not numbers:
            return np.empty(0, np.int64), np.empty(0, np.float64)
        kept = np.stack([self.slots[number].values.kept for number in numbers])
        values = np.stack([self.slots[number].values.values for number in numbers])[kept]
        codes = np.empty(kept.shape, np.int64)
        for row, number in enumerate(numbers):
            np.add(self.local[number], number * self.per_slot, out=codes[row])
        return codes[kept], values

    def labelled(self, code: np.ndarray[Any, np.dtype[np.int64]], *columns: Any) -> pa.Table:
        """A count table (COUNT_SCHEMA) of the codes `code` and the `columns` that follow the
        labels (key, count, timing_max, timing, timing_square)."""
        slot_of = code // self.per_slot
        group_labels = pa.concat_arrays([slot.group.values for slot in self.slots])
        group_start = np.cumsum([0] + [len(slot.group.values) for slot in self.slots[:-1]])
        labels = {
            "strategy": self.strategy.values.take(pa.array(code % self.per_slot // self.groups)),
            "facet": pa.array([one.facet for one in self.slots]).take(pa.array(slot_of)),
            "group": group_labels.take(pa.array(group_start[slot_of] + code % self.groups)),
            "metric": pa.array([one.metric for one in self.slots]).take(pa.array(slot_of)),
        }
        labels.update(zip(COUNT_SCHEMA.names[4:], columns, strict=True))
        return pa.table(labels, schema=COUNT_SCHEMA)


def _merge(counts: list[pa.Table]) -> pa.Table:
    """The count tables `counts` (COUNT_SCHEMA) as one: each value once, its counts and timing
    sums added (in the order of the tables, as merging them one by one would), its timing
    maximum the largest. Merging them all at once rather than one by one hashes each count
    once, not again at every merge."""
    if len(counts) == 1:
        return counts[0]
    merged = (
        pa.concat_tables(counts)
        .group_by([*GROUP, "key"], use_threads=False)
        .aggregate(list(_MERGED))
    )
    columns = {name: merged[name] for name in (*GROUP, "key")}
    columns.update({name: merged[f"{name}_{function}"] for name, function in _MERGED})
    return pa.table(columns, schema=COUNT_SCHEMA)
