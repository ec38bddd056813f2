"""What a run leaves behind, whichever path scored it (`rebalancing compare` in one process, or
the Spark harness): summary.md (the verdict, the table, the glossary), summary.csv, run.json, the
PNG figures and report.html, the one page that opens with the answer.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rebalancing.evaluation.decision.verdict import Verdict
from rebalancing.evaluation.report.page import FigureFile, write_report_page
from rebalancing.evaluation.report.tables import glossary_lines, markdown_table, shown_columns
from rebalancing.evaluation.report.verdict_text import render_markdown, table
from rebalancing.evaluation.scoring.aggregates import METRICS, STATISTICS, Summary
from rebalancing.evaluation.scoring.definitions import SCORES

if TYPE_CHECKING:
    from rebalancing.evaluation.report.figure_files import Drawing


def wide_rows(summary: Summary) -> list[dict[str, Any]]:
    """The summary as one flat row per (strategy, change): columns `<metric>_<statistic>`."""
    return [
        {
            "strategy": strategy,
            "change": change,
            **{
                f"{metric}_{statistic}": getattr(metrics[metric], statistic)
                for metric in METRICS
                for statistic in STATISTICS
            },
        }
        for (strategy, change), metrics in summary.items()
    ]


def deciding_drawings(summary: Summary, verdict: Verdict) -> list[Drawing]:
    """One figure per deciding score of the verdict's system (convergence, a yes or no per
    rebalance, is in the table instead), the candidates in the verdict's order, still to draw
    (plots.save_drawings)."""
    from rebalancing.evaluation.report.plots import BANDS, deciding_score

    order = [row[0] for row in table(verdict)[1]]
    drawings: list[Drawing] = []
    for metric in verdict.system.criteria:
        if metric == "converged":
            continue
        score = SCORES[metric]
        better = "It must be 0." if score.better == "zero" else f"{score.better.title()} is better."
        drawings.append(
            (
                f"deciding_{metric}.png",
                partial(deciding_score, summary, metric, order),
                f"Deciding score: {score.label} per rebalance",
                f"{better} {score.definition[0].upper()}{score.definition[1:]}. Over every "
                f"rebalance of every scenario, one line per candidate. {BANDS}",
            )
        )
    return drawings


def deciding_figures(summary: Summary, verdict: Verdict, out: Path) -> list[FigureFile]:
    """Draw the deciding_drawings into `out`; return the files with their titles and readings."""
    from rebalancing.evaluation.report.figure_files import save_drawings

    return save_drawings(deciding_drawings(summary, verdict), out)


def write_outputs(
    out: Path,
    summary: Summary,
    run_info: Mapping[str, Any],
    verdict: Verdict,
    described: str,
    csv_rows: Sequence[Mapping[str, Any]] | None = None,
    extra_figures: Sequence[FigureFile] = (),
    processes: int = 1,
) -> None:
    """Write summary.md, summary.csv (`csv_rows`, or the summary's wide rows), run.json, the
    figures (the deciding scores', the usual ones, then `extra_figures`; drawn by `processes`
    processes, plots.save_drawings) and report.html into `out`: `verdict` is the decision on
    `summary`, `described` the profile in a sentence. matplotlib is imported here, not with
    this module: a command prints its verdict before it draws."""
    plain = {group: dict(metrics) for group, metrics in summary.items()}
    columns = shown_columns(summary)
    (out / "summary.md").write_text(
        "# Which strategy for this group?\n\n"
        + render_markdown(verdict, described)
        + "\n\n# Summary table\n\n"
        + markdown_table(plain)
        + "\n\n# Glossary\n\n"
        + "\n".join(f"- {line}" for line in glossary_lines(columns))
        + "\n",
        encoding="utf-8",
    )
    rows = csv_rows if csv_rows is not None else wide_rows(summary)
    fields = ["strategy", "change"] + [
        f"{metric}_{statistic}" for metric in METRICS for statistic in STATISTICS
    ]
    with (out / "summary.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        for row in sorted(rows, key=lambda row: (row["strategy"], row["change"])):
            writer.writerow(row)
    info = {
        **run_info,
        "verdict": {
            "recommended": list(verdict.recommended),
            "deciding_scores": list(verdict.system.criteria),
            "reason": verdict.reason,
            "dominated": verdict.dominated,
            "set_aside": verdict.broken,
        },
    }
    (out / "run.json").write_text(json.dumps(info, indent=2, default=str) + "\n", "utf-8")
    from rebalancing.evaluation.report.figure_files import save_drawings
    from rebalancing.evaluation.report.plots import harness_drawings

    drawings = deciding_drawings(summary, verdict) + harness_drawings(plain)
    figures = save_drawings(drawings, out, processes) + list(extra_figures)
    write_report_page(out, info, summary, figures, answer=(verdict, described))
