"""report.html: one self-contained page a person opens to read a run: the answer first (the
group's profile and the verdict: which strategy, and why), then one figure per deciding score,
the other figures, the summary table with its glossary and the run's parameters; every figure
with a short reading of what to look at in it.

The page works offline and on its own: the figures are embedded as base64 `data:` URIs, the
style is inline, there is no JavaScript and nothing refers to another file or to the network,
so it can be mailed or attached to an issue as one file. Everything that comes from a run (names,
parameters, captions) is HTML-escaped. The page is generic: it renders whatever the run's
parameters hold, every column `aggregates.markdown_table` produces (it converts that very
table, so the page and summary.md never disagree) and any list of figures.
"""

from __future__ import annotations

import base64
import html
import mimetypes
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from rebalancing.evaluation.decision.verdict import Verdict
from rebalancing.evaluation.report.tables import (
    PLACEMENT_COLUMNS,
    SUMMARY_COLUMNS,
    VIEW_COLUMNS,
    markdown_table,
)
from rebalancing.evaluation.report.verdict_text import conclusion, how_line, standing_lines, table
from rebalancing.evaluation.scoring.aggregates import ALL_CHANGES, Aggregate

REPORT_PAGE = "report.html"
"""The page's file name in a run's output directory."""

DEFAULT_TITLE = "Queue-assignment strategies: scoring report"

SUMMARY_NOTE = (
    "One row per strategy and kind of membership change; the rows whose change is "
    f"“{ALL_CHANGES}” aggregate every change of the strategy. Scroll sideways for every column."
)

_STYLE = """
body { font-family: system-ui, "DejaVu Sans", sans-serif; margin: 0 auto; max-width: 1400px;
       padding: 1rem 2rem 3rem; color: #1b1b1b; background: #fff; line-height: 1.45; }
h1 { font-size: 1.6rem; margin-bottom: 0.3rem; }
h2 { font-size: 1.25rem; margin-top: 2.2rem; border-bottom: 1px solid #ccc; }
h3 { font-size: 1.05rem; margin: 0 0 0.3rem; }
nav ul { padding-left: 1.2rem; margin: 0.3rem 0; }
table { border-collapse: collapse; font-size: 0.85rem; }
th, td { border: 1px solid #d5d5d5; padding: 0.2rem 0.5rem; vertical-align: top; }
th { background: #f0f0f0; text-align: left; }
table.parameters th { font-weight: 600; white-space: nowrap; }
table.parameters table.parameters { font-size: 1em; }
.scroll { overflow-x: auto; }
table.summary th { white-space: normal; min-width: 4.5rem; vertical-align: bottom; }
table.summary td { white-space: nowrap; }
table.summary td.number { text-align: right; font-variant-numeric: tabular-nums; }
table.summary th:first-child, table.summary td:first-child {
    position: sticky; left: 0; background: #fff; }
table.summary th:first-child { background: #f0f0f0; }
table.summary tr.all-changes td { font-weight: 600; background: #f6f8fc; }
table.summary tr.new-strategy td { border-top: 2px solid #888; }
figure { margin: 1.8rem 0; }
figure img { display: block; max-width: 100%; height: auto; border: 1px solid #e2e2e2;
             box-sizing: border-box; }
p.reading { margin: 0 0 0.6rem; max-width: 60rem; }
section#answer { background: #f6f8fc; border: 1px solid #c9d3e6; padding: 0.4rem 1rem 0.8rem; }
section#answer h2 { margin-top: 0.4rem; border: none; }
p.conclusion { font-size: 1.1rem; font-weight: 600; margin: 0.4rem 0; max-width: 70rem; }
p.profile, p.costs, p.standing, p.how { margin: 0.2rem 0; max-width: 80rem; }
p.standing { font-size: 0.9rem; line-height: 1.35; }
table.verdict td.number { text-align: right; font-variant-numeric: tabular-nums; }
table.verdict tr.recommended td { font-weight: 600; background: #e3f1e3; }
table.glossary td:first-child { white-space: nowrap; font-weight: 600; }
"""

_NUMBER = re.compile(r"-?[\d,]*\.?\d+|n/a")
_DELIMITER = re.compile(r"\|(\s*:?-+:?\s*\|)+")
_UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


class FigureFile(NamedTuple):
    """A figure written to disk, what it is called on the page and what to look at in it."""

    path: Path
    title: str
    reading: str


def write_report_page(
    out: Path,
    run_info: Mapping[str, Any],
    summary: Mapping[tuple[str, str], Mapping[str, Aggregate]],
    figures: Sequence[FigureFile],
    title: str = DEFAULT_TITLE,
    answer: tuple[Verdict, str] | None = None,
) -> Path:
    """Write REPORT_PAGE into the directory `out` and return its path (see render_report_page)."""
    page = out / REPORT_PAGE
    page.write_text(render_report_page(run_info, summary, figures, title, answer), encoding="utf-8")
    return page


def render_report_page(
    run_info: Mapping[str, Any],
    summary: Mapping[tuple[str, str], Mapping[str, Aggregate]],
    figures: Sequence[FigureFile],
    title: str = DEFAULT_TITLE,
    answer: tuple[Verdict, str] | None = None,
) -> str:
    """The page as a string: the answer (`answer`: the verdict and the profile it is for, as
    one sentence), contents, the figures, read from their files and embedded, in the order
    given, the summary table (the columns of aggregates.markdown_table) with its glossary, and
    the run's parameters (`run_info`, as run.json holds them)."""
    summary_table = markdown_table({group: dict(metrics) for group, metrics in summary.items()})
    contents = [(_figure_anchor(index), figure.title) for index, figure in enumerate(figures)]
    contents += [("summary", "Summary table and glossary"), ("parameters", "Parameters of the run")]
    navigation = "".join(
        f'<li><a href="#{anchor}">{html.escape(label)}</a></li>' for anchor, label in contents
    )
    answer_section = "" if answer is None else answer_html(*answer)
    if figures:
        figure_sections = "\n".join(
            figure_html(figure, _figure_anchor(index)) for index, figure in enumerate(figures)
        )
    else:
        figure_sections = "<p>This run wrote no figures.</p>"
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
<style>{_STYLE}</style>
</head>
<body>
<h1>{html.escape(title)}</h1>
{answer_section}
<nav><ul>{navigation}</ul></nav>
<section id="figures">
<h2>Figures</h2>
{figure_sections}
</section>
<section id="summary">
<h2>Summary table</h2>
<p>{html.escape(SUMMARY_NOTE)}</p>
<div class="scroll">
{markdown_table_html(summary_table)}
</div>
<h3>Glossary</h3>
{glossary_html(None if answer is None else answer[0].system.vendor)}
</section>
<section id="parameters">
<h2>Parameters of the run</h2>
{parameters_html(run_info)}
</section>
</body>
</html>
"""


def answer_html(verdict: Verdict, profile: str) -> str:
    """The verdict as the page's first section: the conclusion, the group's profile, what the
    system pays for, the candidates' table with their standing, and the notes."""
    headers, rows = table(verdict)
    head = "".join(f"<th>{html.escape(cell)}</th>" for cell in headers)
    body = []
    for row in rows:
        recommended = row[-1] in ("recommended", "tie", "only candidate")
        cells = "".join(
            f'<td class="number">{html.escape(cell)}</td>'
            if 0 < index < len(row) - 1
            else f"<td>{html.escape(cell)}</td>"
            for index, cell in enumerate(row)
        )
        body.append(f'<tr class="recommended">{cells}</tr>' if recommended else f"<tr>{cells}</tr>")
    notes = "".join(
        f'<p class="standing">{html.escape(line)}</p>' for line in standing_lines(verdict, 0)
    )
    how = how_line(verdict)
    how_html = f'<p class="how">{html.escape(how)}</p>' if how else ""
    return (
        '<section id="answer">'
        f"<h2>Which strategy for this group on {html.escape(verdict.system.title)}?</h2>"
        f'<p class="conclusion">{html.escape(conclusion(verdict))}</p>'
        f"{how_html}"
        f'<p class="profile">The group: {html.escape(profile)}</p>'
        f'<p class="costs">What it pays for: {html.escape(verdict.system.costs)}.</p>'
        f'<div class="scroll"><table class="verdict"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>{notes}</section>"
    )


def glossary_html(vendor: str | None = None) -> str:
    """Every column of the summary table: its unit and definition (rebalancing.evaluation.
    glossary, the source summary.md and --help share), as it reads on `vendor`'s system."""
    rows = "".join(
        f"<tr><td>{html.escape(column.header)}</td><td>{html.escape(column.unit)}</td>"
        f"<td>{html.escape(column.definition(vendor))}</td></tr>"
        for column in (*SUMMARY_COLUMNS, *VIEW_COLUMNS, *PLACEMENT_COLUMNS)
    )
    return (
        '<table class="glossary"><thead><tr><th>column</th><th>unit</th><th>definition</th>'
        f"</tr></thead><tbody>{rows}</tbody></table>"
    )


def parameters_html(run_info: Mapping[str, Any], nested: bool = False) -> str:
    """`run_info` as a two-column table, keys in their order; nested mappings become nested
    tables, lists of plain values comma-separated lists. The top level's keys, run.json's own
    field names, read with spaces for underscores; a nested mapping's keys are shown as they
    are (strategy ids, change kinds: `eager:round_robin`, `rolling_restart`), so that they can
    be pasted back into --strategies and --mix."""
    rows = "".join(
        f'<tr><th title="{html.escape(str(key))}">'
        f"{html.escape(str(key) if nested else str(key).replace('_', ' '))}</th>"
        f"<td>{_value_html(value)}</td></tr>"
        for key, value in run_info.items()
    )
    return f'<table class="parameters">{rows}</table>'


def _value_html(value: Any) -> str:
    if isinstance(value, Mapping):
        return parameters_html(value, nested=True) if value else "none"
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=str) if isinstance(value, set | frozenset) else list(value)
        if not items:
            return "none"
        if any(isinstance(item, Mapping | list | tuple) for item in items):
            return "<ol>" + "".join(f"<li>{_value_html(item)}</li>" for item in items) + "</ol>"
        return html.escape(", ".join(_scalar_text(item) for item in items))
    return html.escape(_scalar_text(value))


def _scalar_text(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def markdown_table_html(markdown: str) -> str:
    """A Markdown pipe table (header, delimiter, rows; `\\|` is a literal pipe) as an HTML
    table of class "summary": numbers (and n/a) right-aligned, the rows of ALL_CHANGES
    highlighted, a rule above each strategy's first row. ValueError when it is not such a
    table or a row has another number of cells than the header."""
    lines = [line for line in markdown.strip().splitlines() if line.strip()]
    if len(lines) < 2 or not _DELIMITER.fullmatch(lines[1].strip()):
        raise ValueError("not a Markdown table: a header line and a delimiter line are needed")
    header = _cells(lines[0])
    change_column = header.index("change") if "change" in header else None
    head = "".join(f"<th>{html.escape(cell)}</th>" for cell in header)
    body = []
    previous_first = None
    for line in lines[2:]:
        cells = _cells(line)
        if len(cells) != len(header):
            raise ValueError(f"{len(cells)} cells where the header has {len(header)}: {line!r}")
        classes = []
        if change_column is not None and cells[change_column] == ALL_CHANGES:
            classes.append("all-changes")
        if previous_first is not None and cells[0] != previous_first:
            classes.append("new-strategy")
        previous_first = cells[0]
        row_class = f' class="{" ".join(classes)}"' if classes else ""
        data = "".join(
            f'<td class="number">{html.escape(cell)}</td>'
            if _NUMBER.fullmatch(cell)
            else f"<td>{html.escape(cell)}</td>"
            for cell in cells
        )
        body.append(f"<tr{row_class}>{data}</tr>")
    return (
        f'<table class="summary"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def _cells(line: str) -> list[str]:
    stripped = line.strip()
    if not (stripped.startswith("|") and stripped.endswith("|") and len(stripped) > 1):
        raise ValueError(f"not a Markdown table row: {line!r}")
    return [cell.strip().replace("\\|", "|") for cell in _UNESCAPED_PIPE.split(stripped[1:-1])]


def figure_html(figure: FigureFile, anchor: str) -> str:
    """One figure: its title, its reading, and the image embedded as a `data:` URI."""
    media_type, _ = mimetypes.guess_type(figure.path.name)
    if media_type is None or not media_type.startswith("image/"):
        raise ValueError(f"{figure.path} is not an image file the page can embed")
    encoded = base64.b64encode(figure.path.read_bytes()).decode("ascii")
    return (
        f'<figure id="{anchor}">'
        f"<h3>{html.escape(figure.title)}</h3>"
        f'<p class="reading">{html.escape(figure.reading)}</p>'
        f'<img src="data:{media_type};base64,{encoded}" alt="{html.escape(figure.title)}">'
        f"</figure>"
    )


def _figure_anchor(index: int) -> str:
    return f"figure-{index + 1}"
