"""Plots of a summary (the structure of rebalancing.evaluation.aggregates), for the harness's
PNGs and the notebooks.

Each function takes the summary (strategy, change kind) -> metric -> Aggregate, draws on a new
matplotlib figure and returns it (a notebook shows it inline); `save_all` writes the harness's
PNG files. matplotlib picks its headless backend by itself where there is no display; it is
imported here only (the `spark` and `notebooks` extras install it).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from rebalancing.evaluation.aggregates import ALL_CHANGES, Aggregate

Summary = dict[tuple[str, str], dict[str, Aggregate]]


def _strategies(summary: Summary) -> list[str]:
    return sorted({strategy for strategy, _ in summary})


def balance_vs_stickiness(summary: Summary) -> Figure:
    """Mean stickiness (x) against mean balance degree (y), one point per strategy and change
    kind, with one-standard-deviation error bars: up and to the left is worse."""
    figure, axes = plt.subplots(figsize=(8, 5.5))
    for strategy in _strategies(summary):
        points = [
            (change, metrics)
            for (name, change), metrics in summary.items()
            if name == strategy and change != ALL_CHANGES and metrics["stickiness"].count
        ]
        if not points:
            continue
        axes.errorbar(
            [metrics["stickiness"].mean or 0.0 for _, metrics in points],
            [metrics["balance_degree"].mean or 0.0 for _, metrics in points],
            xerr=[metrics["stickiness"].stddev or 0.0 for _, metrics in points],
            yerr=[metrics["balance_degree"].stddev or 0.0 for _, metrics in points],
            fmt="o",
            capsize=3,
            alpha=0.8,
            label=strategy,
        )
        for change, metrics in points:
            axes.annotate(
                change,
                (metrics["stickiness"].mean or 0.0, metrics["balance_degree"].mean or 0.0),
                fontsize=7,
                alpha=0.7,
            )
    axes.set_xlabel("stickiness (mean, share of queues kept)")
    axes.set_ylabel("balance degree (mean std-dev of queue counts)")
    axes.set_title("Balance vs stickiness per strategy and change kind")
    axes.legend()
    figure.tight_layout()
    return figure


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


def save_all(summary: Summary, out: Path) -> list[Path]:
    """Write the harness's PNG plots into `out`; return their paths."""
    written = []
    for name, figure in (
        ("balance_vs_stickiness.png", balance_vs_stickiness(summary)),
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
