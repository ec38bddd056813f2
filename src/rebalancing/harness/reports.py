"""What a harness run leaves behind: its aggregate rows (one per strategy and change kind,
columns `<metric>_<statistic>`) turned back into the structure of
rebalancing.evaluation.scoring.aggregates, so that summary.md, the verdict and report.html are the
very
ones the pure-Python path writes (rebalancing.evaluation.report.outputs), and the size profiles
drawn.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rebalancing.evaluation.command.profile import Profile
from rebalancing.evaluation.decision.verdict import Verdict
from rebalancing.evaluation.report.outputs import write_outputs
from rebalancing.evaluation.report.plots import save_size_profiles
from rebalancing.evaluation.scoring.aggregates import METRICS, STATISTICS, Aggregate


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


def scored_seconds(out: Path) -> float | None:
    """How long the run whose run.json is in `out` took to score (its `wall_seconds`: the Spark
    session, the scoring and the aggregates, not the report), for the closing "Scored in" line
    the local engine prints too; None without one."""
    try:
        seconds = json.loads((out / "run.json").read_text(encoding="utf-8"))["wall_seconds"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return float(seconds) if isinstance(seconds, (int, float)) else None


def write_reports(
    out: Path,
    aggregate_rows: Sequence[Mapping[str, Any]],
    run_info: Mapping[str, Any],
    profile: Profile,
    profile_rows: Sequence[Mapping[str, Any]] = (),
) -> Verdict:
    """Write summary.md, summary.csv, run.json, the plots (the size profiles among them, from
    `profile_rows`) and report.html into `out`; return the verdict."""
    summary = to_summary(aggregate_rows)
    verdict = profile.verdict_on(summary)
    write_outputs(
        out,
        summary,
        run_info,
        verdict,
        profile.describe(),
        csv_rows=aggregate_rows,
        extra_figures=save_size_profiles(
            profile_rows, out, verdict.system.name, verdict.system.vendor
        ),
    )
    return verdict
