"""What a run leaves behind, whichever path scored it (`rebalancing compare` in one process, or
the Spark harness): summary.md (the verdict, the table, the glossary), summary.csv, run.json, the
PNG figures and report.html, the one page that opens with the answer.
"""

from __future__ import annotations

import csv
import importlib
import io
import json
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rebalancing.evaluation.decision.systems import SYSTEM_VERDICTS
from rebalancing.evaluation.decision.verdict import Verdict
from rebalancing.evaluation.report.page import FigureFile, write_report_page
from rebalancing.evaluation.report.tables import glossary_lines, markdown_table, shown_columns
from rebalancing.evaluation.report.verdict_text import render_markdown, table
from rebalancing.evaluation.scoring.aggregates import METRICS, STATISTICS, Summary
from rebalancing.evaluation.scoring.definitions import SCORES, definition_on

if TYPE_CHECKING:
    from rebalancing.evaluation.report.figure_files import Drawing, DrawingProcess


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


def deciding_drawings(
    summary: Summary, order: Sequence[str], criteria: Sequence[str], vendor: str | None = None
) -> list[Drawing]:
    """One figure per deciding score (`criteria`, a verdict's system's; convergence, a yes or
    no per rebalance, is in the table instead), the candidates in `order` (the verdict's),
    still to draw (figure_files.save_drawings); each score defined as on `vendor`'s system."""
    from rebalancing.evaluation.report.plots import BANDS, deciding_score

    drawings: list[Drawing] = []
    for metric in criteria:
        if metric == "converged":
            continue
        score = SCORES[metric]
        defined = definition_on(score, vendor)
        better = "It must be 0." if score.better == "zero" else f"{score.better.title()} is better."
        drawings.append(
            (
                f"deciding_{metric}.png",
                partial(deciding_score, summary, metric, order),
                f"Deciding score: {score.label} per rebalance",
                f"{better} {defined[0].upper()}{defined[1:]}. Over every "
                f"rebalance of every scenario, one line per candidate. {BANDS}",
            )
        )
    return drawings


def report_drawings(
    summary: Summary, order: Sequence[str], criteria: Sequence[str], system: str | None = None
) -> list[Drawing]:
    """A report's figures, still to draw: the deciding scores' (deciding_drawings), then the
    usual ones (plots.HARNESS_FIGURES), captioned for `system` (a name of SYSTEM_VERDICTS).
    Plain values in, so a DrawingProcess can be sent them."""
    from rebalancing.evaluation.report.plots import harness_drawings

    vendor = SYSTEM_VERDICTS[system].vendor if system in SYSTEM_VERDICTS else None
    plain = {group: dict(metrics) for group, metrics in summary.items()}
    return deciding_drawings(summary, order, criteria, vendor) + harness_drawings(
        plain, system, vendor
    )


def get_ready_to_draw() -> None:
    """Import the figures' module (matplotlib) and draw a small figure to memory: a process's
    first figure loads the fonts, the renderer and the PNG writer (DrawingProcess)."""
    importlib.import_module("rebalancing.evaluation.report.plots")
    from matplotlib.figure import Figure

    from rebalancing.evaluation.report.figure_files import DPI

    figure = Figure(figsize=(2.0, 1.0), dpi=DPI)
    figure.subplots().set_title("ready")
    figure.tight_layout()
    figure.savefig(io.BytesIO(), format="png", dpi=DPI)


def deciding_figures(summary: Summary, verdict: Verdict, out: Path) -> list[FigureFile]:
    """Draw the verdict's deciding_drawings into `out`; return the files with their titles and
    readings."""
    from rebalancing.evaluation.report.figure_files import save_drawings

    order = [row[0] for row in table(verdict)[1]]
    drawings = deciding_drawings(summary, order, verdict.system.criteria, verdict.system.vendor)
    return save_drawings(drawings, out)


def write_outputs(
    out: Path,
    summary: Summary,
    run_info: Mapping[str, Any],
    verdict: Verdict,
    described: str,
    csv_rows: Sequence[Mapping[str, Any]] | None = None,
    extra_figures: Sequence[FigureFile] = (),
    processes: int = 1,
    drawing: DrawingProcess | None = None,
) -> None:
    """Write summary.md, summary.csv (`csv_rows`, or the summary's wide rows), run.json, the
    figures (the deciding scores', the usual ones, then `extra_figures`; drawn by `drawing`,
    or here by `processes` processes: figure_files) and report.html into `out`: `verdict` is
    the decision on `summary`, `described` the profile in a sentence. matplotlib is imported
    where the figures are drawn, not with this module: a command prints its verdict first."""
    plain = {group: dict(metrics) for group, metrics in summary.items()}
    columns = shown_columns(summary)
    (out / "summary.md").write_text(
        "# Which strategy for this group?\n\n"
        + render_markdown(verdict, described)
        + "\n\n# Summary table\n\n"
        + markdown_table(plain)
        + "\n\n# Glossary\n\n"
        + "\n".join(f"- {line}" for line in glossary_lines(columns, verdict.system.vendor))
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
    order = [row[0] for row in table(verdict)[1]]
    job = (summary, order, list(verdict.system.criteria), verdict.system.name)
    figures = drawing.save(report_drawings, job, out) if drawing is not None else None
    if figures is None:
        from rebalancing.evaluation.report.figure_files import save_drawings

        figures = save_drawings(report_drawings(*job), out, processes)
    figures += extra_figures
    write_report_page(out, info, summary, figures, answer=(verdict, described))
