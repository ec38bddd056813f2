"""Plots of a summary (the structure of rebalancing.evaluation.aggregates), for the harness's
PNGs and the notebooks.

Most functions take the summary (strategy, change kind) -> metric -> Aggregate, draw on a new
matplotlib figure and return it (a notebook shows it inline); `save_all` writes the harness's
PNG files. The two size profiles (protocol cost against group size, rebalance time against queue
count) need the rows, which the pure-Python path keeps and the harness does not collect.
matplotlib picks its headless backend by itself where there is no display; it is
imported here only (the `spark` and `notebooks` extras install it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from rebalancing.evaluation.aggregates import ALL_CHANGES, Aggregate
from rebalancing.evaluation.replay import ScoreRow

Summary = dict[tuple[str, str], dict[str, Aggregate]]


def _strategies(summary: Summary) -> list[str]:
    return sorted({strategy for strategy, _ in summary})


def _colours(strategies: list[str]) -> dict[str, Any]:
    palette = plt.get_cmap("tab10" if len(strategies) <= 10 else "tab20")
    return {strategy: palette(index % palette.N) for index, strategy in enumerate(strategies)}


def quantile_bands(
    summary: Summary,
    metric: str,
    title: str,
    label: str,
    bounds: tuple[float, float] | None = None,
) -> Figure:
    """The distribution of `metric` per change kind, strategies side by side: a band from the
    median to the 95th percentile, a whisker on to the 99th, a tick at the maximum and a dot at
    the mean; every mark is a value the metric took, so none leaves its range (`bounds`)."""
    strategies = _strategies(summary)
    measured = {change for (_, change), metrics in summary.items() if metrics[metric].count}
    changes = [*sorted(measured - {ALL_CHANGES}), ALL_CHANGES]
    colours = _colours(strategies)
    figure, axes = plt.subplots(figsize=(max(9.0, 1.2 * len(changes)), 5.0))
    width = 0.8 / max(len(strategies), 1)
    for offset, strategy in enumerate(strategies):
        for index, change in enumerate(changes):
            metrics = summary.get((strategy, change))
            aggregate = metrics[metric] if metrics else None
            if aggregate is None or not aggregate.count:
                continue
            x = index - 0.4 + (offset + 0.5) * width
            p50, p95 = aggregate.p50 or 0.0, aggregate.p95 or 0.0
            axes.bar(x, max(p95 - p50, 0.0), width * 0.9, bottom=p50, color=colours[strategy])
            axes.plot([x, x], [p95, aggregate.p99 or p95], color=colours[strategy], linewidth=1)
            axes.plot(x, aggregate.max or p95, marker="_", color=colours[strategy], markersize=8)
            axes.plot(x, aggregate.mean or p50, marker="o", color="black", markersize=2.5)
    for strategy in strategies:
        axes.bar(0, 0, 0, color=colours[strategy], label=strategy)  # legend entries only
    axes.set_xticks(range(len(changes)), changes, rotation=25, ha="right")
    axes.set_xlim(-0.5, len(changes) - 0.5)
    if bounds is not None:
        axes.set_ylim(*bounds)
    axes.set_ylabel(label)
    axes.set_title(title)
    axes.legend(fontsize=8, ncols=2)
    figure.tight_layout()
    return figure


def stickiness(summary: Summary) -> Figure:
    """Stickiness per change kind and strategy: how much of the group keeps its consumer."""
    return quantile_bands(
        summary,
        "stickiness",
        "Stickiness per change kind (band: p50-p95, whisker: p99, tick: max, dot: mean)",
        "share of queues that kept their consumer",
        (0.0, 1.0),
    )


def moves(summary: Summary) -> Figure:
    """Moves per change kind and strategy: queues taken from a consumer that stayed."""
    return quantile_bands(
        summary,
        "moves",
        "Moves per change kind (band: p50-p95, whisker: p99, tick: max, dot: mean)",
        "queues moved between consumers that stayed",
    )


def stickiness_gap(summary: Summary) -> Figure:
    """Mean and maximum gap to the best achievable stickiness, per strategy and change kind
    (0 means the strategy kept every pair that balance allowed)."""
    figure, axes = plt.subplots(figsize=(9, 4.5))
    strategies = _strategies(summary)
    changes = sorted(
        {change for (_, change), metrics in summary.items() if metrics["stickiness_gap"].count}
    )
    width = 0.8 / max(len(strategies), 1)
    for offset, strategy in enumerate(strategies):
        means, tops = [], []
        for change in changes:
            gap = summary.get((strategy, change), {}).get("stickiness_gap")
            mean = (gap.mean or 0.0) if gap else 0.0
            means.append(mean)
            tops.append(((gap.max or 0.0) - mean) if gap else 0.0)
        axes.bar(
            [index + offset * width for index in range(len(changes))],
            means,
            width,
            yerr=[[0.0] * len(changes), tops],
            capsize=2,
            label=strategy,
        )
    axes.set_xticks(
        [index + 0.4 - width / 2 for index in range(len(changes))], changes, rotation=20
    )
    axes.set_ylabel("stickiness gap (bar: mean, whisker: max)")
    axes.set_title("Gap to the best achievable stickiness")
    axes.legend()
    figure.tight_layout()
    return figure


def _quantile_bars(summary: Summary, metric: str, strategies: list[str], title: str) -> Figure:
    figure, axes = plt.subplots(figsize=(8, 4.5))
    statistics = ("p50", "p95", "p99", "max")
    width = 0.8 / len(statistics)
    for offset, statistic in enumerate(statistics):
        values = [
            getattr(summary[(strategy, ALL_CHANGES)][metric], statistic) or 0.0
            for strategy in strategies
        ]
        axes.bar(
            [index + offset * width for index in range(len(strategies))],
            values,
            width,
            label=statistic,
        )
    axes.set_xticks([index + 0.4 - width / 2 for index in range(len(strategies))], strategies)
    axes.set_yscale("log")
    axes.set_title(title)
    axes.legend()
    figure.tight_layout()
    return figure


def assign_time(summary: Summary) -> Figure:
    """Quantiles of the assign wall time per strategy, on a log axis (microseconds)."""
    return _quantile_bars(
        summary, "assign_micros", _strategies(summary), "assign() wall time, µs (all changes)"
    )


def _protocol_strategies(summary: Summary) -> list[str]:
    return [
        strategy
        for strategy in _strategies(summary)
        if summary[(strategy, ALL_CHANGES)]["releases"].count
    ]


def releases(summary: Summary) -> Figure | None:
    """Quantiles of the protocol releases per protocol strategy; None when there is none."""
    protocol = _protocol_strategies(summary)
    if not protocol:
        return None
    return _quantile_bars(summary, "releases", protocol, "Protocol releases per rebalance")


def rounds(summary: Summary) -> Figure | None:
    """Quantiles of the protocol rounds (release waves) per protocol strategy, or None."""
    protocol = _protocol_strategies(summary)
    if not protocol:
        return None
    return _quantile_bars(summary, "rounds", protocol, "Protocol rounds per rebalance")


def _size_medians(
    rows: Iterable[ScoreRow], size: Callable[[ScoreRow], int], value: Callable[[ScoreRow], Any]
) -> dict[str, list[tuple[float, float]]]:
    """strategy -> (median size, median value) per power-of-two bucket of `size`."""
    buckets: dict[tuple[str, int], list[tuple[int, float]]] = {}
    for row in rows:
        measured = value(row)
        if measured is None or row.failed:
            continue
        bucket = max(size(row), 1).bit_length()
        buckets.setdefault((row.strategy, bucket), []).append((size(row), float(measured)))
    lines: dict[str, list[tuple[float, float]]] = {}
    for (strategy, _), points in sorted(buckets.items()):
        sizes = sorted(point[0] for point in points)
        values = sorted(point[1] for point in points)
        lines.setdefault(strategy, []).append((sizes[len(sizes) // 2], values[len(values) // 2]))
    return lines


def releases_by_group_size(rows: Iterable[ScoreRow]) -> Figure | None:
    """Protocol releases against queues x apps (log-log), the median per power-of-two bucket of
    the product, every change kind together; None when no row has releases."""
    rows = [row for row in rows if row.releases is not None]
    if not rows:
        return None
    figure, axes = plt.subplots(figsize=(8, 5.0))
    colours = _colours(sorted({row.strategy for row in rows}))
    for strategy, points in _size_medians(
        rows, lambda row: row.queue_count * row.consumer_count, lambda row: (row.releases or 0) + 1
    ).items():
        sizes, values = zip(*points, strict=True)
        axes.plot(sizes, values, marker="o", color=colours[strategy], label=strategy)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("queues x apps (median of each power-of-two bucket)")
    axes.set_ylabel("releases + 1 per rebalance (median)")
    axes.set_title("Protocol cost against group size")
    axes.legend(fontsize=8)
    figure.tight_layout()
    return figure


def assign_time_by_queue_count(rows: Iterable[ScoreRow]) -> Figure:
    """Median rebalance wall time against queue count (log-log), per strategy."""
    figure, axes = plt.subplots(figsize=(8, 5.0))
    lines = _size_medians(rows, lambda row: row.queue_count, lambda row: row.assign_micros)
    colours = _colours(sorted(lines))
    for strategy, points in lines.items():
        sizes, values = zip(*points, strict=True)
        axes.plot(sizes, values, marker="o", color=colours[strategy], label=strategy)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("queues (median of each power-of-two bucket)")
    axes.set_ylabel("µs per rebalance (median)")
    axes.set_title("Rebalance time against queue count")
    axes.legend(fontsize=8)
    figure.tight_layout()
    return figure


def save_all(summary: Summary, out: Path) -> list[Path]:
    """Write the harness's PNG plots into `out`; return their paths."""
    written = []
    for name, figure in (
        ("stickiness.png", stickiness(summary)),
        ("moves.png", moves(summary)),
        ("assign_time.png", assign_time(summary)),
        ("releases.png", releases(summary)),
        ("rounds.png", rounds(summary)),
    ):
        if figure is None:
            continue
        figure.savefig(out / name, dpi=110)
        plt.close(figure)
        written.append(out / name)
    return written
