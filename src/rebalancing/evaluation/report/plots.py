"""Plots of a summary (the structure of rebalancing.evaluation.scoring.aggregates), for the
report's PNGs and the notebooks.

Most functions take the summary (strategy, change kind) -> metric -> Aggregate, draw on a new
matplotlib figure and return it (a notebook shows it inline); `save_all` writes the report's
PNG files (HARNESS_FIGURES, each with the title and reading report.html shows beside it). The
two size profiles (protocol cost against group size, assign-call time against queue count) are
drawn from size lines: from the rows, which the pure-Python path keeps, or from the size
profiles the harness computes in Spark (profiles.parquet; `save_size_profiles`). A figure is
drawn on its own Agg canvas, not through pyplot; matplotlib is imported here only (the
`spark` and `notebooks` extras install it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import FuncFormatter

from rebalancing.evaluation.report.captions import BANDS as BANDS
from rebalancing.evaluation.report.captions import COMPUTE_TIME, caption
from rebalancing.evaluation.report.figure_files import DPI, Drawing, save_drawings
from rebalancing.evaluation.report.figure_files import save_figures as save_figures
from rebalancing.evaluation.report.page import FigureFile
from rebalancing.evaluation.scoring.aggregates import ALL_CHANGES, Aggregate, Summary
from rebalancing.evaluation.scoring.definitions import SCORES
from rebalancing.evaluation.scoring.replay import ScoreRow


def _figure(width: float, height: float, columns: int = 1) -> tuple[Figure, Any]:
    """A new figure of `width` x `height` inches at DPI with `columns` axes side by side, on
    its own Agg canvas: not pyplot's (nothing to close, no global state), and at the saving
    resolution, so that laying it out and saving it measure the text with one renderer."""
    figure = Figure(figsize=(width, height), dpi=DPI)
    FigureCanvasAgg(figure)
    return figure, figure.subplots(1, columns)


def _laid_out(figure: Figure) -> Figure:
    """`figure` with its axes fitted to their labels once (tight_layout), the layout then
    fixed: a figure that keeps a layout engine is drawn twice when saved, once to lay it out
    again."""
    figure.tight_layout()
    figure.set_layout_engine(None)
    return figure


def _strategies(summary: Summary) -> list[str]:
    return sorted({strategy for strategy, _ in summary})


def _colours(strategies: list[str]) -> dict[str, Any]:
    palette = colormaps["tab10" if len(strategies) <= 10 else "tab20"]
    return {strategy: palette(index % palette.N) for index, strategy in enumerate(strategies)}


def quantile_bands(
    summary: Summary,
    metric: str,
    title: str,
    label: str,
    bounds: tuple[float, float] | None = None,
) -> Figure:
    """The distribution of `metric` per change kind, strategies side by side: a band from the
    5th to the 95th percentile, a whisker from the minimum to the maximum with ticks at the 1st
    and 99th percentiles, a white line at the median and a dot at the mean; both tails show, so
    a score whose bad rebalances are its low values (stickiness) shows them too. Every mark is a
    value the metric took, so none leaves its range (`bounds`)."""
    strategies = _strategies(summary)
    measured = {change for (_, change), metrics in summary.items() if metrics[metric].count}
    changes = [*sorted(measured - {ALL_CHANGES}), ALL_CHANGES]
    colours = _colours(strategies)
    figure, axes = _figure(max(9.0, 1.2 * len(changes)), 5.0)
    width = 0.8 / max(len(strategies), 1)
    places, aggregates, painted = [], [], []
    for offset, strategy in enumerate(strategies):
        for index, change in enumerate(changes):
            metrics = summary.get((strategy, change))
            aggregate = metrics[metric] if metrics else None
            if aggregate is not None and aggregate.count:
                places.append(index - 0.4 + (offset + 0.5) * width)
                aggregates.append(aggregate)
                painted.append(colours[strategy])
    _distribution_marks(axes, places, aggregates, painted, width * 0.9)
    axes.set_xticks(range(len(changes)), changes, rotation=25, ha="right")
    axes.set_xlim(-0.5, len(changes) - 0.5)
    if bounds is not None:
        margin = 0.02 * (bounds[1] - bounds[0])
        axes.set_ylim(bounds[0] - margin, bounds[1] + margin)
    axes.set_ylabel(label)
    axes.set_title(title)
    axes.legend(
        handles=[Patch(color=colours[strategy], label=strategy) for strategy in strategies],
        fontsize=8,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),  # beside, not over
    )
    return _laid_out(figure)


def _distribution_marks(
    axes: Any,
    places: Sequence[float],
    aggregates: Sequence[Aggregate],
    colours: Sequence[Any],
    width: float,
    across: bool = False,
    scale: float = 1.0,
) -> None:
    """The distribution of each of `aggregates` (its values times `scale`) at its place on
    the x axis (on the y axis `across`, the values then along x), in its colour: a band from
    p5 to p95 (at least a hairline, so a constant one shows) `width` wide, a whisker from min
    to max with ticks at p1 and p99, a white median line and a black mean dot. One artist per
    kind of mark, not one per mark: a figure draws in a fraction of the time."""

    def at(statistic: str) -> list[float]:
        return [scale * (getattr(aggregate, statistic) or 0.0) for aggregate in aggregates]

    if not aggregates:
        return
    half = width / 2
    lows, highs = at("p5"), at("p95")
    _bands(
        axes,
        [
            (place - half, low, width, max(high - low, 0.0))
            for place, low, high in zip(places, lows, highs, strict=True)
        ],
        colours,
        across,
    )
    along, crosswise = (axes.hlines, axes.vlines) if across else (axes.vlines, axes.hlines)
    along(places, at("min"), at("max"), colors=colours, linewidth=1, zorder=2)  # over bands
    for tail in ("p1", "p99"):
        values = (at(tail), places) if across else (places, at(tail))
        tick = ("|", 100) if across else ("_", 49)  # marker, area: 10 or 7 points long
        axes.scatter(*values, c=colours, marker=tick[0], s=tick[1], linewidths=1.0, zorder=2)
    starts, ends = [place - half for place in places], [place + half for place in places]
    crosswise(at("p50"), starts, ends, color="white", linewidth=1.5 if across else 1.2, zorder=2)
    means = (at("mean"), places) if across else (places, at("mean"))
    dot = 3.5 if across else 2.5
    axes.plot(*means, marker="o", linestyle="none", color="black", markersize=dot)


def _bands(
    axes: Any,
    corners: Sequence[tuple[float, float, float, float]],
    colours: Sequence[Any],
    across: bool = False,
) -> None:
    """Rectangles (place, low, width, span: x, y, width, height; `across`, y, x, height,
    width) in `colours`, as bar() draws them (the value axis reaching exactly to their low
    side) but at their exact values: bar() given several rectangles measures each height from
    the first one's bottom, so a top can land a rounding error past the value it shows."""
    for (place, low, width, span), colour in zip(corners, colours, strict=True):
        corner, size = ((low, place), (span, width)) if across else ((place, low), (width, span))
        band = Rectangle(corner, *size, facecolor=colour, edgecolor=colour, linewidth=1.5)
        (band.sticky_edges.x if across else band.sticky_edges.y).append(low)
        axes.add_patch(band)


def stickiness(summary: Summary) -> Figure:
    """Stickiness per change kind and strategy: how much of the group keeps its consumer."""
    return quantile_bands(
        summary,
        "stickiness",
        "Stickiness per change kind",
        "share of queues that kept their consumer",
        (0.0, 1.0),
    )


def moves(summary: Summary) -> Figure:
    """Moves per change kind and strategy: queues taken from a consumer that stayed."""
    return quantile_bands(
        summary, "moves", "Moves per change kind", "queues moved between consumers that stayed"
    )


def queues_paused(summary: Summary) -> Figure:
    """Queues paused per rebalance, per change kind and strategy."""
    return quantile_bands(
        summary, "queues_paused", "Queues paused per change kind", "queues with no consumer"
    )


def deciding_score(summary: Summary, metric: str, strategies: Sequence[str]) -> Figure | None:
    """One score over every rebalance, one distribution per strategy (quantile_bands' marks),
    the strategies in the verdict's order; None when none of them has a value."""
    shown = [
        name
        for name in strategies
        if (name, ALL_CHANGES) in summary and summary[(name, ALL_CHANGES)][metric].count
    ]
    if not shown:
        return None
    score = SCORES[metric]
    colours = _colours(sorted(shown))
    figure, axes = _figure(8.0, 0.9 + 0.45 * len(shown))
    _distribution_marks(
        axes,
        range(len(shown)),
        [summary[(name, ALL_CHANGES)][metric] for name in shown],
        [colours[name] for name in shown],
        0.5,
        across=True,
        scale=100.0 if score.percent else 1.0,
    )
    axes.set_yticks(range(len(shown)), shown)
    axes.invert_yaxis()
    unit = "%" if score.percent else score.unit
    axes.set_xlabel(f"{score.label} per rebalance ({unit}; {score.better} is better)")
    if score.percent:
        axes.set_xlim(-2, 102)
    return _laid_out(figure)


def stickiness_gap(summary: Summary) -> Figure:
    """Mean and maximum gap to the best achievable stickiness, per strategy and change kind
    (0 means the strategy kept every pair that balance allowed)."""
    figure, axes = _figure(9, 4.5)
    strategies = _strategies(summary)
    measured = {
        change for (_, change), metrics in summary.items() if metrics["stickiness_gap"].count
    }
    changes = [*sorted(measured - {ALL_CHANGES}), *sorted(measured & {ALL_CHANGES})]
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
    return _laid_out(figure)


def _quantile_bars(summary: Summary, metric: str, strategies: list[str], title: str) -> Figure:
    """p50, p95, p99 and max of `metric` per strategy as markers joined by a line, on a
    symmetric log axis (linear below 1): a value of 0 stays on the chart, where a bar on a log
    axis would vanish."""
    figure, axes = _figure(8, 4.5)
    statistics = ("p50", "p95", "p99", "max")
    markers = ("o", "s", "^", "v")
    for index, strategy in enumerate(strategies):
        aggregate = summary[(strategy, ALL_CHANGES)][metric]
        values = [getattr(aggregate, statistic) or 0.0 for statistic in statistics]
        axes.plot([index] * len(values), values, color="#999999", linewidth=1, zorder=1)
        for value, statistic, marker in zip(values, statistics, markers, strict=True):
            axes.plot(
                index,
                value,
                marker=marker,
                linestyle="none",
                color=f"C{statistics.index(statistic)}",
                label=statistic if index == 0 else None,
                zorder=2,
            )
    axes.set_xticks(range(len(strategies)), strategies, rotation=20, ha="right")
    axes.set_yscale("symlog", linthresh=1.0)
    axes.yaxis.set_major_formatter(FuncFormatter(_plain_number))  # 1, 10, 100: no mathtext
    highest = max(
        (summary[(strategy, ALL_CHANGES)][metric].max or 0.0 for strategy in strategies),
        default=1.0,
    )
    axes.set_ylim(0, max(highest, 1.0) * 2.5)  # room above the highest marker
    axes.set_title(title)
    axes.legend()
    return _laid_out(figure)


def _plain_number(value: float, _position: int | None = None) -> str:
    """A tick label in plain digits (1,000, not 10³): typesetting the powers of ten of a log
    axis as mathematics takes longer than drawing the rest of the figure."""
    return f"{value:,.0f}" if abs(value) >= 1 or value == 0 else f"{value:g}"


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


SizeLines = dict[str, list[tuple[float, float]]]
"""strategy -> (median size, median value) per power-of-two bucket of the size, by size."""


def _size_medians(
    rows: Iterable[ScoreRow], size: Callable[[ScoreRow], int], value: Callable[[ScoreRow], Any]
) -> SizeLines:
    """The size lines of `rows` that did not fail, per bucket (the bit length of the size)."""
    buckets: dict[tuple[str, int], list[tuple[int, float]]] = {}
    for row in rows:
        measured = value(row)
        if measured is None or row.failed:
            continue
        bucket = max(size(row), 1).bit_length()
        buckets.setdefault((row.strategy, bucket), []).append((size(row), float(measured)))
    lines: SizeLines = {}
    for (strategy, _), points in sorted(buckets.items()):
        sizes = sorted(point[0] for point in points)
        values = sorted(point[1] for point in points)
        lines.setdefault(strategy, []).append((sizes[len(sizes) // 2], values[len(values) // 2]))
    return lines


def profile_lines(profiles: Iterable[Mapping[str, Any]], facet: str, metric: str) -> SizeLines:
    """The size lines of the harness's size profiles (rows of profiles.parquet: strategy, facet,
    bucket, metric, with the metric "size" beside it, and p50 among the statistics)."""
    medians: dict[tuple[str, int], dict[str, float]] = {}
    for row in profiles:
        if row["facet"] == facet and row["metric"] in (metric, "size") and row["count"]:
            medians.setdefault((row["strategy"], row["bucket"]), {})[row["metric"]] = row["p50"]
    lines: SizeLines = {}
    for (strategy, _), point in sorted(medians.items()):
        if metric in point and "size" in point:
            lines.setdefault(strategy, []).append((point["size"], point[metric]))
    return lines


def _size_plot(lines: SizeLines, xlabel: str, ylabel: str, title: str) -> Figure | None:
    """`lines` on log-log axes, without the points a log axis cannot show (not above 0, or
    NaN); None when none is left: no empty figure, and no warning from matplotlib."""
    lines = {name: [(x, y) for x, y in points if x > 0 and y > 0] for name, points in lines.items()}
    lines = {name: points for name, points in lines.items() if points}
    if not lines:
        return None
    figure, axes = _figure(8, 5.0)
    colours = _colours(sorted(lines))
    for strategy, points in lines.items():
        sizes, values = zip(*points, strict=True)
        axes.plot(sizes, values, marker="o", color=colours[strategy], label=strategy)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    axes.legend(fontsize=8)
    return _laid_out(figure)


def releases_by_group_size_lines(lines: SizeLines) -> Figure | None:
    """Protocol releases against queues x apps (log-log): `lines` of releases (median per
    power-of-two bucket of the product, every change kind together); None when empty."""
    if not lines:
        return None
    plus_one = {  # a log axis has no 0: a rebalance without a release is drawn at 1
        strategy: [(size, value + 1) for size, value in points]
        for strategy, points in lines.items()
    }
    return _size_plot(
        plus_one,
        "queues x apps (median of each power-of-two bucket)",
        "releases + 1 per rebalance (median)",
        "Protocol cost against group size",
    )


def releases_by_group_size(rows: Iterable[ScoreRow]) -> Figure | None:
    """releases_by_group_size_lines from the rows of the pure-Python path."""
    return releases_by_group_size_lines(
        _size_medians(rows, lambda row: row.queue_count * row.consumer_count, _releases)
    )


def _releases(row: ScoreRow) -> int | None:
    return row.releases


def assign_time_by_queue_count_lines(lines: SizeLines) -> Figure | None:
    """Median assign-call wall time against queue count (log-log), per strategy."""
    return _size_plot(
        lines,
        "queues (median of each power-of-two bucket)",
        "µs per rebalance (median)",
        f"{COMPUTE_TIME} against queue count",
    )


def assign_time_by_queue_count(rows: Iterable[ScoreRow]) -> Figure | None:
    """assign_time_by_queue_count_lines from the rows of the pure-Python path."""
    return assign_time_by_queue_count_lines(
        _size_medians(rows, lambda row: row.queue_count, lambda row: row.assign_micros)
    )


def client_views(summary: Summary) -> Figure | None:
    """What client-side rebalancing costs, per change kind and client-side strategy: the
    queue-periods read twice (duplicate consumption) and unread (stalled), mean and 95th
    percentile; broker-side, both are 0 by construction. None when no views disagreed."""
    client = sorted(
        {
            strategy
            for (strategy, _), metrics in summary.items()
            if (metrics["periods_to_agree"].max or 0) > 0
        }
    )
    if not client:
        return None
    changes = sorted({change for (strategy, change) in summary if strategy in client})
    colours = _colours(client)
    figure, axes_pair = _figure(max(10.0, 1.4 * len(changes)), 4.8, 2)
    width = 0.8 / len(client)
    for axes, metric, title in zip(
        axes_pair,
        ("queue_periods_read_twice", "queue_periods_unread"),
        ("Queue-periods read twice", "Queue-periods unread"),
        strict=True,
    ):
        for offset, strategy in enumerate(client):
            for index, change in enumerate(changes):
                aggregate = summary.get((strategy, change), {}).get(metric)
                if aggregate is None or not aggregate.count:
                    continue
                x = index - 0.4 + (offset + 0.5) * width
                axes.bar(x, aggregate.mean or 0.0, width * 0.9, color=colours[strategy])
                axes.plot([x], [aggregate.p95 or 0.0], marker="_", color="black", markersize=8)
        axes.set_xticks(range(len(changes)), changes, rotation=30, ha="right")
        axes.set_title(f"{title} per rebalance (bar: mean, tick: p95)")
    axes_pair[0].legend(
        handles=[Patch(color=colours[strategy], label=strategy) for strategy in client],
        fontsize=8,
    )
    figure.suptitle("Client-side rebalancing against broker-side (broker-side: always 0)")
    return _laid_out(figure)


FigureDrawing = Callable[[Summary], Figure | None]

HARNESS_FIGURES: tuple[tuple[str, FigureDrawing, str, str], ...] = tuple(
    (name, drawing, *caption(name))
    for name, drawing in (
        ("stickiness.png", stickiness),
        ("moves.png", moves),
        ("queues_paused.png", queues_paused),
        ("stickiness_gap.png", stickiness_gap),
        ("client_views.png", client_views),
        ("assign_time.png", assign_time),
        ("releases.png", releases),
        ("rounds.png", rounds),
    )
)
"""The harness's figures: file name, drawing, title and reading (what to look at in it, for
report.html); a drawing that returns None (no protocol strategy was scored) writes no file."""


def harness_drawings(
    summary: Summary, system: str | None = None, vendor: str | None = None
) -> list[Drawing]:
    """The HARNESS_FIGURES of `summary` as drawings for save_drawings, not drawn yet, their
    captions as they read on `system` (captions.caption)."""
    return [
        (name, partial(drawing, summary), *caption(name, system, vendor))
        for name, drawing, _, _ in HARNESS_FIGURES
    ]


def save_all(summary: Summary, out: Path, processes: int = 1) -> list[FigureFile]:
    """Write the HARNESS_FIGURES that have something to show into `out` as PNG files (drawn
    by `processes`); return each file with its title and reading, in that order."""
    return save_drawings(harness_drawings(summary), out, processes)


SIZE_PROFILE_FIGURES: tuple[
    tuple[str, str, str, Callable[[SizeLines], Figure | None], str, str], ...
] = tuple(
    (name, facet, metric, drawing, *caption(name))
    for name, facet, metric, drawing in (
        ("releases_by_group_size.png", "group_size", "releases", releases_by_group_size_lines),
        (
            "assign_time_by_queue_count.png",
            "queue_count",
            "assign_micros",
            assign_time_by_queue_count_lines,
        ),
    )
)
"""The size-profile figures: file, facet and metric of the profile, drawing, title, reading."""


def save_size_profiles(
    profiles: Iterable[Mapping[str, Any]],
    out: Path,
    system: str | None = None,
    vendor: str | None = None,
) -> list[FigureFile]:
    """Write the SIZE_PROFILE_FIGURES that have something to show, from the harness's size
    profiles, into `out`; return each file with its title and reading (as on `system`)."""
    profiles = list(profiles)
    drawn = []
    for name, facet, metric, drawing, _, _ in SIZE_PROFILE_FIGURES:
        lines = profile_lines(profiles, facet, metric)
        title, reading = caption(name, system, vendor)
        drawn.append((name, drawing(lines) if lines else None, title, reading))
    return save_figures(drawn, out)
