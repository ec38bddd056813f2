"""Zones and load against stickiness: every strategy `rebalancing compare` scores by default (the
zone- and load-aware ones with them) on the same seeded scenarios, with zones (2-3 per group),
then with zones and Zipf weights, then with zones and one hot queue.

    python benchmarks/zones_and_weights.py [--scenarios 300] [--out benchmarks/results]

Writes zones_and_weights.md (the commands, commit, date and machine load at the top, then a
table per setting) and two figures beside it: zones_and_weights_cross_zone.png (cross-zone
fraction against stickiness) and zones_and_weights_load.png (load ratio against load kept).
Each setting is one `compare(profile)` run of the pure-Python core, so each table is what
`rebalancing compare <the setting's options> --table` prints in its placement columns. The
sizes (8-256 queues, 2-32 consumers, 300 scenarios each) keep the run to about a minute and a
half on a shared 2-core machine (load average 3).
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import shlex
import sys
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
from matplotlib.transforms import Bbox

from rebalancing.evaluation.command.compare import compare
from rebalancing.evaluation.command.profile import add_profile_arguments, new_parser, profile_from
from rebalancing.evaluation.scoring.aggregates import ALL_CHANGES, Aggregate
from rebalancing.strategies import STRATEGIES
from shared import commit, description

ROOT = Path(__file__).resolve().parents[1]

GROUP = ["--queues", "8:256", "--consumers", "2:32", "--seed", "1"]
"""The group every setting shares (the change mix is the default: every change kind alike,
which with zones includes zone_outage and zone_recovery, with weights load_shift)."""


@dataclass(frozen=True)
class Setting:
    """One run: its name in the files, its heading, and its placement options."""

    name: str
    title: str
    options: tuple[str, ...]


SETTINGS = (
    Setting("zones", "Zones (2-3 per group)", ("--zones", "2:3")),
    Setting("zipf", "Zones and Zipf weights", ("--zones", "2:3", "--weights", "zipf")),
    Setting("hot", "Zones and one hot queue", ("--zones", "2:3", "--weights", "hot")),
)

Summary = Mapping[tuple[str, str], Mapping[str, Aggregate]]


def mean(summary: Summary, strategy: str, metric: str, change: str = ALL_CHANGES) -> float | None:
    """The mean of `metric` over the strategy's rebalances of kind `change` (None if none)."""
    aggregate = summary.get((strategy, change), {}).get(metric)
    return None if aggregate is None else aggregate.mean


def strategies_of(summary: Summary) -> list[str]:
    return sorted({strategy for strategy, _ in summary})


def aware_of(strategy: str) -> str:
    """What the strategy reads besides ids: "zones", "load", "zones and load" or ""."""
    uses = STRATEGIES[strategy].uses if strategy in STRATEGIES else frozenset()
    zones = "consumer_zones" in uses
    load = "weights" in uses
    return " and ".join(word for word, on in (("zones", zones), ("load", load)) if on)


def _percent(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{100 * value:.{digits}f}"


def _number(value: float | None, digits: int) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


Column = tuple[str, Callable[[Summary, str], str]]

ZONE_COLUMNS: tuple[Column, ...] = (
    ("cross-zone %", lambda s, name: _percent(mean(s, name, "cross_zone_fraction"))),
    ("gap to fewest (pp)", lambda s, name: _percent(mean(s, name, "cross_zone_gap"))),
    (
        "cross-zone % after an outage",
        lambda s, name: _percent(mean(s, name, "cross_zone_fraction", "zone_outage")),
    ),
    ("spread", lambda s, name: _number(mean(s, name, "spread"), 2)),
)
LOAD_COLUMNS: tuple[Column, ...] = (
    ("load ratio", lambda s, name: _number(mean(s, name, "load_ratio"), 2)),
    ("gap to bound", lambda s, name: _number(mean(s, name, "load_ratio_gap"), 3)),
    ("load kept %", lambda s, name: _percent(mean(s, name, "load_kept"))),
    ("load moved %", lambda s, name: _percent(mean(s, name, "load_moved"))),
)
STICKINESS_COLUMNS: tuple[Column, ...] = (
    ("stickiness %", lambda s, name: _percent(mean(s, name, "stickiness"))),
    ("moves", lambda s, name: _number(mean(s, name, "moves"), 1)),
    (
        "moves when unchanged",
        lambda s, name: _number(mean(s, name, "moves_when_unchanged"), 2),
    ),
)


def table(summary: Summary, weighted: bool) -> str:
    """One row per strategy: load columns first with weights (ordered by the load ratio's gap to
    its bound), zone columns first without (ordered by the cross-zone fraction)."""
    columns = (
        (*LOAD_COLUMNS, *ZONE_COLUMNS[:2], *STICKINESS_COLUMNS)
        if weighted
        else (*ZONE_COLUMNS, *STICKINESS_COLUMNS)
    )
    order = "load_ratio_gap" if weighted else "cross_zone_fraction"
    names = sorted(
        strategies_of(summary),
        key=lambda name: (_or_infinity(mean(summary, name, order)), name),
    )
    header = ["strategy", "reads", *(title for title, _ in columns)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name in names:
        cells = [
            f"`{name}`",
            aware_of(name) or "ids",
            *(cell(summary, name) for _, cell in columns),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _or_infinity(value: float | None) -> float:
    return math.inf if value is None else value


def _or_zero(value: float | None) -> float:
    return 0.0 if value is None else value


def bound_mean(summary: Summary, metric: str, gap: str) -> float | None:
    """The mean of the bound a gap is measured to (metric minus gap, the same rows for every
    strategy): the fewest cross-zone fraction, or the load ratio's lower bound."""
    values = [
        value - difference
        for name in strategies_of(summary)
        if (value := mean(summary, name, metric)) is not None
        and (difference := mean(summary, name, gap)) is not None
    ]
    return None if not values else sum(values) / len(values)


def dots(
    axes: Any,
    points: Mapping[str, tuple[float, float]],
    colours: Mapping[str, Any],
    hollow: Collection[str] = (),
) -> list[list[str]]:
    """One dot per strategy (hollow for the names in `hollow`); returns the names grouped by
    dot, strategies at the same point sharing one."""
    together: dict[tuple[float, float], list[str]] = {}
    for name, point in points.items():
        together.setdefault((round(point[0], 4), round(point[1], 4)), []).append(name)
    for names in together.values():
        colour = colours[names[0]]
        axes.scatter(
            *zip(points[names[0]], strict=True),
            s=36,
            zorder=3,
            color="white" if names[0] in hollow else colour,
            edgecolors=colour,
        )
    return sorted(together.values(), key=lambda names: points[names[0]])


def place_labels(
    axes: Any,
    groups: Sequence[Sequence[str]],
    points: Mapping[str, tuple[float, float]],
    colours: Mapping[str, Any],
) -> None:
    """Name each dot (call it once the figure is laid out for good: see `freeze_layout`). Each
    label goes to the first of a few places around its dot (NEAR, then FAR) that stays inside
    the axes and covers no other dot, no text and no label placed before it, or where none is
    free, to the place covering the least: a greedy placement, enough for twenty dots."""
    renderer = axes.figure.canvas.get_renderer()
    inside = axes.get_window_extent(renderer)
    boxes = []
    for names in groups:  # a dot is 6 points across: 8 pixels, at the default 100 dots per inch
        x, y = axes.transData.transform(points[names[0]])
        boxes.append(Bbox.from_bounds(x - 4, y - 4, 8, 8))
    placed = [text.get_window_extent(renderer) for text in axes.texts]
    if axes.get_legend() is not None:
        placed.append(axes.get_legend().get_window_extent(renderer))
    for index, names in enumerate(groups):
        point = points[names[0]]
        obstacles = [*placed, *boxes[:index], *boxes[index + 1 :]]
        best: tuple[float, tuple[float, float]] = (math.inf, NEAR[0])
        for offset in (*NEAR, *FAR):
            label = _label(axes, names, point, offset, colours[names[0]], offset not in NEAR)
            box = label.get_window_extent(renderer)
            label.remove()
            outside = box.width * box.height - _overlap(box, inside)
            covered = outside + sum(_overlap(box, obstacle) for obstacle in obstacles)
            best = min(best, (covered, offset))
            if covered == 0:
                break
        offset = best[1]
        label = _label(axes, names, point, offset, colours[names[0]], offset not in NEAR)
        box = label.get_window_extent(renderer)
        placed.append(box)


NEAR: tuple[tuple[float, float], ...] = ((6, 2), (6, -10), (-6, 2), (-6, -10), (0, 8), (0, -16))
"""Where a label goes first, in points from its dot: right, left, above, below."""

FAR: tuple[tuple[float, float], ...] = tuple(
    (round(radius * math.cos(angle)), round(radius * math.sin(angle)) - 4)
    for radius in (22, 36, 50)
    for angle in (math.pi * step / 4 for step in (1, -1, 3, -3, 2, -2, 0, 4))
)
"""Where it goes when those are taken, joined to its dot by a thin line."""


def _overlap(first: Bbox, second: Bbox) -> float:
    """The area two boxes share (0 when they do not meet)."""
    width = min(first.x1, second.x1) - max(first.x0, second.x0)
    height = min(first.y1, second.y1) - max(first.y0, second.y0)
    return float(max(width, 0) * max(height, 0))


def freeze_layout(figure: Any) -> None:
    """Lay the figure out once (constrained layout) and keep that layout: labels placed in
    screen space afterwards stay where they were placed when the figure is saved."""
    figure.canvas.draw()
    figure.set_layout_engine("none")


def _label(
    axes: Any,
    names: Sequence[str],
    point: tuple[float, float],
    offset: tuple[float, float],
    colour: Any,
    leader: bool,
) -> Any:
    """The names at `offset` points from `point`, joined to it by a thin line when `leader`."""
    return axes.annotate(
        ", ".join(names),
        point,
        xytext=offset,
        textcoords="offset points",
        ha="left" if offset[0] > 0 else "right" if offset[0] < 0 else "center",
        fontsize=7,
        color=colour,
        arrowprops={"arrowstyle": "-", "color": "0.7", "lw": 0.6} if leader else None,
    )


GROUP_COLOURS = {"zones": "tab:blue", "load": "tab:orange", "zones and load": "tab:purple"}


def _colours(names: Sequence[str]) -> dict[str, Any]:
    return {name: GROUP_COLOURS.get(aware_of(name), "0.35") for name in names}


def _legend(axes: Any, groups: Sequence[str], hollow: str | None = None) -> None:
    """Which colour reads what (and what a hollow dot means, when given)."""
    handles = [
        Line2D([], [], marker="o", linestyle="", color=GROUP_COLOURS.get(group, "0.35"))
        for group in groups
    ]
    labels = [f"reads {group}" if group else "reads ids only" for group in groups]
    if hollow is not None:
        handles.append(
            Line2D([], [], marker="o", linestyle="", color="0.35", markerfacecolor="white")
        )
        labels.append(hollow)
    axes.legend(handles, labels, fontsize=8, loc="best")


def cross_zone_figure(summary: Summary) -> Any:
    """Cross-zone fraction (mean, %) against stickiness (mean, %), a labelled dot per strategy
    and a dashed line at the fewest any balanced plan reaches."""
    figure, axes = plt.subplots(figsize=(9, 6), layout="constrained")
    names = strategies_of(summary)
    points = {
        name: (100 * stickiness, 100 * cross_zone)
        for name in names
        if (stickiness := mean(summary, name, "stickiness")) is not None
        and (cross_zone := mean(summary, name, "cross_zone_fraction")) is not None
    }
    fewest = bound_mean(summary, "cross_zone_fraction", "cross_zone_gap")
    if fewest is not None:
        axes.axhline(100 * fewest, color="0.5", linestyle="--", linewidth=1)
        axes.annotate(
            "fewest any balanced plan reads (mean)",
            (0.01, 100 * fewest),
            xycoords=("axes fraction", "data"),
            xytext=(0, 3),
            textcoords="offset points",
            fontsize=7,
            color="0.4",
        )
    unbalanced = [name for name in names if _or_zero(mean(summary, name, "spread")) > 1]
    groups = dots(axes, points, _colours(names), hollow=unbalanced)
    axes.margins(x=0.12, y=0.08)
    axes.set_ylim(bottom=0)
    _legend(axes, ["", "zones"], hollow="counts not balanced (mean spread over 1)")
    axes.set_xlabel("stickiness: queues that kept their consumer per rebalance (mean, %)")
    axes.set_ylabel("cross-zone fraction: queues read outside their zones (mean, %)")
    axes.set_title("Cross-zone reads against stickiness (zones 2-3, every change kind)")
    axes.grid(alpha=0.3)
    freeze_layout(figure)
    place_labels(axes, groups, points, _colours(names))
    return figure


def load_figure(summaries: Mapping[str, Summary]) -> Any:
    """Per weighted setting, the load ratio (mean) against load kept (mean, %), a labelled dot
    per strategy and a dashed line at the mean lower bound no plan beats."""
    figure, all_axes = plt.subplots(
        1, len(summaries), figsize=(7 * len(summaries), 6), layout="constrained", squeeze=False
    )
    labelling = []
    for axes, (title, summary) in zip(all_axes[0], summaries.items(), strict=True):
        names = strategies_of(summary)
        points = {
            name: (100 * kept, ratio)
            for name in names
            if (kept := mean(summary, name, "load_kept")) is not None
            and (ratio := mean(summary, name, "load_ratio")) is not None
        }
        bound = bound_mean(summary, "load_ratio", "load_ratio_gap")
        if bound is not None:
            axes.axhline(bound, color="0.5", linestyle="--", linewidth=1)
            axes.annotate(
                "lower bound no plan beats (mean)",
                (0.01, bound),
                xycoords=("axes fraction", "data"),
                xytext=(0, -9),
                textcoords="offset points",
                fontsize=7,
                color="0.4",
            )
        groups = dots(axes, points, _colours(names))
        axes.margins(x=0.12, y=0.08)
        _legend(axes, ["", "zones", "load", "zones and load"])
        axes.set_xlabel("load kept: share of the load that kept its consumer (mean, %)")
        axes.set_ylabel("load ratio: most-loaded consumer over the mean (mean)")
        axes.set_title(title)
        axes.grid(alpha=0.3)
        labelling.append((axes, groups, points, _colours(names)))
    freeze_layout(figure)
    for axes, groups, points, colours in labelling:
        place_labels(axes, groups, points, colours)
    return figure


def arguments(setting: Setting, scenarios: int) -> list[str]:
    return [*setting.options, *GROUP, "--scenarios", str(scenarios)]


def run(setting: Setting, scenarios: int) -> tuple[Summary, float]:
    """The setting's summary as `rebalancing compare` computes it, and the seconds it took."""
    parser = new_parser("rebalancing compare", "")
    add_profile_arguments(parser, scenarios=scenarios, out=None)
    profile = profile_from(parser.parse_args(arguments(setting, scenarios)))
    comparison = compare(profile)
    return comparison.summary, comparison.seconds


def page(
    summaries: Mapping[str, Summary],
    seconds: Mapping[str, float],
    scenarios: int,
    header: str,
) -> str:
    sections = [
        "# Zones and load against stickiness",
        "",
        header,
        "",
        "Every column is a mean over every rebalance of every scenario (all change kinds), but "
        "'after an outage', over the zone_outage rebalances only. Cross-zone % and its gap are "
        "percentages of the queues (the gap in percentage points to the fewest any balanced plan "
        "of the same group reaches; below 0 for a plan that is not balanced); load ratio is the "
        "most-loaded consumer's load over the mean, its gap to max(mean, heaviest queue) / mean; "
        "moves when unchanged counts the queues a plan moves when applied to itself (the 4th "
        "step of each scenario). 'reads' says which inputs besides ids the strategy takes. "
        "The definitions are in docs/reference/scores.md (Zones and weights).",
    ]
    for setting in SETTINGS:
        command = "rebalancing compare " + shlex.join(arguments(setting, scenarios)) + " --table"
        sections += [
            "",
            f"### {setting.title}",
            "",
            f"`{command}` ({seconds[setting.name]:.0f} s here)",
            "",
            table(summaries[setting.name], weighted="--weights" in setting.options),
        ]
    return "\n".join(sections) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=description(__doc__))
    parser.add_argument("--scenarios", type=int, default=300)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    given = parser.parse_args()
    load = os.getloadavg()[0]
    started = time.perf_counter()
    summaries: dict[str, Summary] = {}
    seconds: dict[str, float] = {}
    for setting in SETTINGS:
        summaries[setting.name], seconds[setting.name] = run(setting, given.scenarios)
        print(f"{setting.name}: {seconds[setting.name]:.0f} s", file=sys.stderr)
    elapsed = time.perf_counter() - started
    command = f"python benchmarks/zones_and_weights.py --scenarios {given.scenarios}"
    header = (
        f"`{command}`, {datetime.date.today().isoformat()}, commit {commit()}, "
        f"{os.cpu_count()} cores, load average {load:.1f} at the start and "
        f"{os.getloadavg()[0]:.1f} at the end; {elapsed:.0f} s in all. Three settings, each "
        f"{given.scenarios} seeded scenarios (seed 1) of 8-256 queues and 2-32 consumers, "
        "the default change mix (every change kind alike: with zones it includes zone_outage "
        "and zone_recovery, with weights load_shift), every strategy `rebalancing compare` "
        "scores by default on the same scenarios (the zone- and load-aware ones included). "
        "Sizes and scenario counts are small so that the run takes minutes on a shared "
        "2-core machine; the scores are exact and do not depend on the machine. Figures: "
        "`zones_and_weights_cross_zone.png` (the first setting) and "
        "`zones_and_weights_load.png` (the other two) beside this file."
    )
    given.out.mkdir(parents=True, exist_ok=True)
    (given.out / "zones_and_weights.md").write_text(
        page(summaries, seconds, given.scenarios, header), encoding="utf-8"
    )
    figure = cross_zone_figure(summaries["zones"])
    figure.savefig(given.out / "zones_and_weights_cross_zone.png", dpi=110)
    plt.close(figure)
    figure = load_figure(
        {
            "Zipf weights (zones 2-3)": summaries["zipf"],
            "One hot queue, 10 times the others (zones 2-3)": summaries["hot"],
        }
    )
    figure.savefig(given.out / "zones_and_weights_load.png", dpi=110)
    plt.close(figure)
    print(f"wrote {given.out / 'zones_and_weights.md'} and its two figures", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
