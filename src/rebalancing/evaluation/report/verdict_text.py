"""The verdict as a person reads it: the table of deciding scores in ranking order, who stands
where, the conclusion and how to run the pick, for the terminal (about 30 lines, the conclusion
last) and as Markdown (summary.md's head, the docs). The decision itself is
rebalancing.evaluation.decision.verdict.
"""

from __future__ import annotations

import textwrap

from rebalancing.evaluation.decision.reasons import first_few
from rebalancing.evaluation.decision.systems import how_to_run
from rebalancing.evaluation.decision.verdict import Verdict, ranking
from rebalancing.evaluation.scoring.aggregates import FLOORS
from rebalancing.evaluation.scoring.definitions import SCORES, format_value

TERMINAL_ROWS = 12
"""The most candidates the terminal's table shows (in ranking order; the others are counted,
summary.md and the report show them all), so that the verdict stays within about 30 lines
whatever the number of candidates (zones and weights bring six more)."""


TERMINAL_WIDTH = 120
"""The widest the terminal's table gets: columns that decide nothing go first (`_fitted`)."""


TERMINAL_DOMINATED = 5
"""With more dominated candidates than this, the terminal names them without by whom."""


def _header(metric: str, statistic: str) -> str:
    score = SCORES[metric]
    named = score.label if statistic == "mean" else f"{score.label} {statistic}"
    unit = {"%": "%", "µs": "µs", "s": "s"}.get(score.unit, "")
    return f"{named} {unit}".strip()


def _floored(verdict: Verdict, shown: tuple[str, str]) -> bool:
    """Whether the column is a mean printed beside its floor (aggregates.FLOORS): one whose
    floor some candidate measured."""
    metric, statistic = shown
    return (
        statistic == "mean"
        and metric in FLOORS
        and any(floors.get(metric) is not None for floors in verdict.floors.values())
    )


def _cell(verdict: Verdict, name: str, shown: tuple[str, str]) -> str:
    """A value of the table; a floored mean with its floor in brackets: "2.57 (2.53)"."""
    score = SCORES[shown[0]]
    value = format_value(score, verdict.table[name][shown])
    floor = verdict.floors.get(name, {}).get(shown[0]) if _floored(verdict, shown) else None
    return value if floor is None else f"{value} ({format_value(score, floor)})"


def table(verdict: Verdict) -> tuple[list[str], list[list[str]]]:
    """The verdict's table as text cells: a header, then one row per candidate in ranking
    order, with its standing (recommended, tie, dominated, set aside, or not dominated). The
    load ratio and the cross-zone fraction come with their floors in brackets (the best any
    plan of the same groups could do: FLOOR_NOTE)."""
    headers = [
        "strategy",
        *(
            _header(*shown) + (" (floor)" if _floored(verdict, shown) else "")
            for shown in verdict.system.shown
        ),
        "standing",
    ]
    rows = []
    for name in ranking(verdict):
        if verdict.is_sole:
            standing = "only candidate"
        elif name in verdict.recommended:
            standing = "tie" if verdict.is_tie else "recommended"
        elif name in verdict.broken:
            standing = "set aside"
        elif name in verdict.dominated:
            standing = "dominated"
        else:
            standing = "not dominated"
        cells = [_cell(verdict, name, shown) for shown in verdict.system.shown]
        rows.append([name, *cells, standing])
    return headers, rows


def conclusion(verdict: Verdict) -> str:
    """The recommendation in one line, then its reason."""
    if not verdict.recommended:
        return "No recommendation. " + verdict.reason
    if verdict.is_tie:
        return "Tie. " + verdict.reason
    if verdict.is_sole:  # nothing compared: no "use it"
        return verdict.reason
    return f"Use {verdict.recommended[0]}. " + verdict.reason


def render_text(verdict: Verdict, profile: str, width: int = 100) -> str:
    """The verdict for a terminal: at most about 30 lines, the conclusion last."""
    headers, rows = table(verdict)
    rows, hidden = rows[:TERMINAL_ROWS], rows[TERMINAL_ROWS:]
    headers, rows = _fitted(verdict, headers, rows)
    widths = [max(len(row[index]) for row in [headers, *rows]) for index in range(len(headers))]
    lines = [
        f"Which strategy for this group on {verdict.system.title}?",
        _wrap(profile, width),
        _wrap(f"What it pays for: {verdict.system.costs}.", width),
        "",
        "  ".join(
            cell.ljust(w) if index in (0, len(headers) - 1) else cell.rjust(w)
            for index, (cell, w) in enumerate(zip(headers, widths, strict=True))
        ).rstrip(),
    ]
    for row in rows:
        lines.append(
            "  ".join(
                cell.ljust(w) if index in (0, len(row) - 1) else cell.rjust(w)
                for index, (cell, w) in enumerate(zip(row, widths, strict=True))
            ).rstrip()
        )
    if hidden:
        lines.append(f"... and {len(hidden)} more, ranked lower (every one: summary.md)")
    lines.append("")
    lines += standing_lines(verdict, width)
    lines.append(_wrap(conclusion(verdict), width))
    how = how_line(verdict)
    if how:
        lines.append(_wrap(how, width))
    return "\n".join(lines)


def _fitted(
    verdict: Verdict, headers: list[str], rows: list[list[str]]
) -> tuple[list[str], list[list[str]]]:
    """The table without its widest columns that decide nothing (no criterion), one by one,
    until it fits in TERMINAL_WIDTH (zones and weights add two columns)."""
    shown = [None, *verdict.system.shown, None]  # the strategy and standing columns: kept
    while True:
        widths = [max(len(row[index]) for row in [headers, *rows]) for index in range(len(headers))]
        if sum(widths) + 2 * (len(widths) - 1) <= TERMINAL_WIDTH:
            return headers, rows
        droppable = [
            index
            for index, column in enumerate(shown)
            if column is not None and column[0] not in verdict.system.criteria
        ]
        if not droppable:
            return headers, rows
        widest = max(droppable, key=lambda index: widths[index])
        del shown[widest]
        headers = [cell for index, cell in enumerate(headers) if index != widest]
        rows = [[cell for index, cell in enumerate(row) if index != widest] for row in rows]


def how_line(verdict: Verdict) -> str | None:
    """How to run the recommendation on the verdict's system (nothing for a tie)."""
    if len(verdict.recommended) != 1:
        return None
    return how_to_run(verdict.system.name, verdict.recommended[0])


def standing_lines(verdict: Verdict, width: int) -> list[str]:
    """Who is dominated and by whom, who is set aside and why, who is not a candidate, notes."""
    order = ranking(verdict)
    lines = []
    if verdict.dominated:
        dominated = "; ".join(
            f"{name} by {first_few(sorted(verdict.dominated[name], key=order.index))}"
            for name in order
            if name in verdict.dominated
        )
        if width and len(verdict.dominated) > TERMINAL_DOMINATED:  # a terminal: names only
            names = [name for name in order if name in verdict.dominated]
            dominated = f"{', '.join(names)} (by whom: summary.md)"
        lines.append(
            _wrap(f"Dominated (worse or level on every deciding score): {dominated}.", width)
        )
    if verdict.broken:
        broken = "; ".join(f"{name}: {why}" for name, why in verdict.broken.items())
        lines.append(_wrap(f"Set aside, a score that must be 0 was not: {broken}.", width))
    if verdict.not_candidates:
        lines.append(
            _wrap(
                f"Not candidates on {verdict.system.name}: {', '.join(verdict.not_candidates)}.",
                width,
            )
        )
    if verdict.missing:
        lines.append(_wrap(f"Not scored in this run: {', '.join(verdict.missing)}.", width))
    lines += [_wrap(note, width) for note in verdict.notes]
    if any(_floored(verdict, shown) for shown in verdict.system.shown):  # short on a terminal
        lines.append(_wrap(FLOOR_NOTE if not width else FLOOR_NOTE_SHORT, width))
    return lines


FLOOR_NOTE_SHORT = "(floor): the best any plan of the same groups could do (summary.md says which)."
"""The floors' note on a terminal, where the verdict keeps to about 30 lines."""


FLOOR_NOTE = (
    "(floor): the mean, over the same rebalances, of the best any plan of each group could do: "
    "for the load ratio a bound no plan goes below (the heaviest queue's weight or the mean "
    "load, whichever is larger, over the mean), for the cross-zone fraction the fewest "
    "cross-zone queues of a plan whose counts differ by at most one."
)
"""What the floors in brackets are, under a table that prints them."""


def render_markdown(verdict: Verdict, profile: str) -> str:
    """The verdict as Markdown (the docs' "Choosing a strategy" page, summary.md's head)."""
    headers, rows = table(verdict)
    lines = [
        f"**{verdict.system.title}** — {profile}",
        "",
        "| " + " | ".join(headers) + " |",
        "|" + "---|" * len(headers),
        *("| " + " | ".join(row) + " |" for row in rows),
        "",
        *(f"{line}\n" for line in standing_lines(verdict, 0)),
        f"**{conclusion(verdict)}**",
        *(["", how] if (how := how_line(verdict)) else []),
    ]
    return "\n".join(lines)


def _wrap(text: str, width: int) -> str:
    """`text` folded to `width` columns (0: left whole, for HTML and Markdown)."""
    if not width:
        return text
    return "\n".join(textwrap.wrap(text, width)) if text else ""
