"""What a run leaves behind, besides Parquet: summary.md, summary.csv, run.json, PNG plots and
report.html, the one page that shows them all (rebalancing.evaluation.report_page).

The aggregate rows (one per strategy and change kind, columns `<metric>_<statistic>`) are turned
back into the structure of rebalancing.evaluation.aggregates, so that the Markdown table is the
very one the
pure-Python path prints.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rebalancing.evaluation.aggregates import METRICS, Aggregate, markdown_table
from rebalancing.evaluation.plots import save_all, save_size_profiles
from rebalancing.evaluation.report_page import write_report_page

STATISTICS = ("count", "mean", "stddev", "p50", "p95", "p99", "max")


def to_summary(
    aggregate_rows: Sequence[Mapping[str, Any]],
) -> dict[tuple[str, str], dict[str, Aggregate]]:
    """(strategy, change) -> metric -> Aggregate, sorted like aggregates.summarise."""
    summary: dict[tuple[str, str], dict[str, Aggregate]] = {}
    for row in aggregate_rows:
        summary[(row["strategy"], row["change"])] = {
            metric: Aggregate(
                count=int(row[f"{metric}_count"]),
                **{
                    statistic: (
                        None
                        if row[f"{metric}_{statistic}"] is None
                        else float(row[f"{metric}_{statistic}"])
                    )
                    for statistic in STATISTICS[1:]
                },
            )
            for metric in METRICS
        }
    return dict(sorted(summary.items()))


def write_reports(
    out: Path,
    aggregate_rows: Sequence[Mapping[str, Any]],
    run_info: Mapping[str, Any],
    profile_rows: Sequence[Mapping[str, Any]] = (),
) -> str:
    """Write summary.md, summary.csv, run.json, the plots (the size profiles among them, from
    `profile_rows`) and report.html into `out`; return the table."""
    summary = to_summary(aggregate_rows)
    table = markdown_table(summary)
    (out / "summary.md").write_text(table + "\n", encoding="utf-8")
    columns = ["strategy", "change"] + [
        f"{metric}_{statistic}" for metric in METRICS for statistic in STATISTICS
    ]
    with (out / "summary.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        for row in sorted(aggregate_rows, key=lambda row: (row["strategy"], row["change"])):
            writer.writerow(row)
    (out / "run.json").write_text(json.dumps(run_info, indent=2, default=str) + "\n", "utf-8")
    figures = save_all(summary, out) + save_size_profiles(profile_rows, out)
    write_report_page(out, run_info, summary, figures)
    return table
