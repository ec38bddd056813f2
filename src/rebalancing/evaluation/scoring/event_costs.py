"""What the two event-cost benchmarks share (protocol_time: the leaderless protocols; kafka_time:
Kafka's group protocols): a group's member names drawn from a seed, an event's costs over seeded
runs summarised per setup, event and group size (CostSummary), their Markdown tables, and the
lines of their figures (a median against group size, shaded up to the 95th percentile).
Runtime complexity: O(runs) to summarise, O(summaries x group sizes) a table.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rebalancing.evaluation.scoring.aggregates import aggregate


def positive_integer(name: str, value: object) -> int:
    """`value`, checked to be an int of at least 1 (ValueError naming `name` otherwise)."""
    if type(value) is not int or value < 1:
        raise ValueError(f"{name} must be a positive integer, not {value!r}")
    return value


def seeded_names(rng: random.Random, count: int, prefix: str) -> list[str]:
    """`count` distinct names `<prefix>-NNNN` drawn from `rng`, in the order drawn: their
    numbers from 0 to 10 x `count`, so a name sorts at a place the seed decides (the names
    matter to strategies that order members by name)."""
    return [f"{prefix}-{number:04d}" for number in rng.sample(range(10 * count), count)]


@dataclass(frozen=True)
class CostSummary:
    """One protocol's costs of one event at one group size over its seeded runs: the median
    and the 95th percentile of each score (None: the protocol does not count it), the largest
    spread once over (None: not measured), and how many runs did not settle."""

    protocol: str
    event: str
    consumers: int
    queues: int
    runs: int
    median: Mapping[str, float | None]
    p95: Mapping[str, float | None]
    spread_max: int | None
    unsettled: int


def summarise_costs(
    costs: Iterable[Any],
    scores: Sequence[str],
    *,
    consumers: str,
    queues: str,
    spread: str | None = None,
) -> list[CostSummary]:
    """The CostSummary of each (protocol, event, group size) among `costs` (objects with
    `protocol`, `event`, `converged` and each of `scores` as attributes; `consumers`, `queues`
    and `spread` name the attributes holding the group's members, its queues and the spread
    once over, None: none), in the order they first appear."""
    groups: dict[tuple[str, str, int], list[Any]] = {}
    for cost in costs:
        groups.setdefault((cost.protocol, cost.event, getattr(cost, consumers)), []).append(cost)
    summaries = []
    for (protocol, event, size), runs in groups.items():
        distributions = {score: aggregate(getattr(run, score) for run in runs) for score in scores}
        spreads = [] if spread is None else [getattr(run, spread) for run in runs]
        measured = [value for value in spreads if value is not None]
        summaries.append(
            CostSummary(
                protocol=protocol,
                event=event,
                consumers=size,
                queues=getattr(runs[0], queues),
                runs=len(runs),
                median={score: distributions[score].p50 for score in scores},
                p95={score: distributions[score].p95 for score in scores},
                spread_max=max(measured) if measured else None,
                unsettled=sum(not run.converged for run in runs),
            )
        )
    return summaries


def number(value: float | None) -> str:
    """A figure for a table: n/a for None, three significant digits below 100."""
    if value is None:
        return "n/a"
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def markdown_table(summaries: Sequence[CostSummary], event: str, score: str) -> str:
    """One Markdown table: a row per protocol, a column per group size, each cell the median
    and, in brackets, the 95th percentile of `score` on `event`."""
    chosen = [summary for summary in summaries if summary.event == event]
    sizes = sorted({summary.consumers for summary in chosen})
    protocols = list(dict.fromkeys(summary.protocol for summary in chosen))
    by_key = {(summary.protocol, summary.consumers): summary for summary in chosen}
    queues = {summary.consumers: summary.queues for summary in chosen}
    header = [f"{size} x {queues[size]}" for size in sizes]
    lines = [
        "| protocol | " + " | ".join(header) + " |",
        "|---|" + "---|" * len(sizes),
    ]
    for protocol in protocols:
        cells = []
        for size in sizes:
            summary = by_key.get((protocol, size))
            if summary is None:
                cells.append("")
                continue
            median, tail = summary.median[score], summary.p95[score]
            cell = number(median) if median is None else f"{number(median)} ({number(tail)})"
            if summary.unsettled:
                cell += f" ({summary.unsettled} unsettled)"
            cells.append(cell)
        lines.append(f"| `{protocol}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown_tables(
    summaries: Sequence[CostSummary],
    *,
    titles: Mapping[str, str],
    labels: Mapping[str, str],
    columns: str,
    counted_only: bool = False,
) -> str:
    """Every event's tables, one per score of `labels`, each under a heading that says what it
    holds (the event's title of `titles`; `columns` names the group sizes); `counted_only`: a
    table keeps only the rows whose protocol counts the score (a score no protocol counts has
    no table)."""
    parts = []
    runs = max((summary.runs for summary in summaries), default=0)
    for event in dict.fromkeys(summary.event for summary in summaries):
        for score, label in labels.items():
            rows = [
                summary
                for summary in summaries
                if not counted_only or summary.median.get(score) is not None
            ]
            if not any(summary.event == event for summary in rows):
                continue
            parts.append(
                f"### {titles[event].capitalize()}: {label}\n\n"
                f"Median (95th percentile) of {runs} seeded runs; columns: {columns}.\n\n"
                f"{markdown_table(rows, event, score)}\n"
            )
    return "\n".join(parts)


def median_lines(
    axes: Any,
    summaries: Sequence[CostSummary],
    event: str,
    score: str,
    protocols: Iterable[str],
    styles: Mapping[str, tuple[str, str]],
) -> None:
    """On `axes`, for each of `protocols` in that order that has a median of `score` on
    `event`: its medians against the group size as a line with marks (its colour and line
    style from `styles`, else matplotlib's next colour, solid), shaded up to the 95th
    percentile."""
    for protocol in protocols:
        points = sorted(
            (summary.consumers, summary.median[score], summary.p95[score])
            for summary in summaries
            if summary.event == event
            and summary.protocol == protocol
            and summary.median[score] is not None
        )
        if not points:
            continue
        colour, style = styles.get(protocol, (None, "-"))
        sizes = [point[0] for point in points]
        medians = [point[1] for point in points]
        axes.plot(sizes, medians, marker="o", label=protocol, color=colour, linestyle=style)
        axes.fill_between(sizes, medians, [point[2] for point in points], color=colour, alpha=0.15)
