"""MkDocs hook: replace `<!-- glossary: scores -->` and `<!-- glossary: columns -->` on a page with
tables generated from rebalancing.evaluation.scoring.definitions, so the docs never describe a
score in
other words than summary.md, the command lines' --help and the report do.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from rebalancing.evaluation.report.tables import PLACEMENT_COLUMNS, SUMMARY_COLUMNS, VIEW_COLUMNS
from rebalancing.evaluation.scoring.definitions import SCORES

BETTER = {"lower": "lower", "higher": "higher", "zero": "must be 0"}


def cell(text: str) -> str:
    return text.replace("|", "\\|")


def scores_table() -> str:
    lines = ["| column | label | unit | better | definition |", "|---|---|---|---|---|"]
    for score in SCORES.values():
        lines.append(
            f"| `{score.metric}` | {cell(score.label)} | {cell(score.unit)} | "
            f"{BETTER[score.better]} | {cell(score.definition)} |"
        )
    return "\n".join(lines)


def columns_table() -> str:
    lines = ["| summary column | unit | meaning |", "|---|---|---|"]
    for column in (*SUMMARY_COLUMNS, *VIEW_COLUMNS, *PLACEMENT_COLUMNS):
        header, unit, meaning = cell(column.header), cell(column.unit), cell(column.definition())
        lines.append(f"| {header} | {unit} | {meaning} |")
    return "\n".join(lines)


def on_page_markdown(markdown: str, **_: Any) -> str:
    return markdown.replace("<!-- glossary: scores -->", scores_table()).replace(
        "<!-- glossary: columns -->", columns_table()
    )
