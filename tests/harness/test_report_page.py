"""The harness's report.html (written by harness.reports.write_reports) on a small embedded run:
it shows run.json, every summary row and every PNG the run wrote, and it loads, with every
figure decoded and painted, in a headless Chromium (tests/browser.py: installed with apt when
missing, private and offline, stopped by process id)."""

from __future__ import annotations

import base64
import csv
import html
import json
import re
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from rebalancing.evaluation.decision.systems import SYSTEM_VERDICTS
from rebalancing.evaluation.report.plots import HARNESS_FIGURES, SIZE_PROFILE_FIGURES
from rebalancing.harness.job import run
from rebalancing.harness.options import parse_options
from tests.browser import Chromium, assert_answer_first, assert_report_renders, install_chromium

RUN = [
    "--scenarios",
    "24",
    "--seed",
    "11",
    "--strategies",
    "averagely,sticky,cooperative_sticky",
    "--queues",
    "1:80",
    "--consumers",
    "1:12",
    "--changes",
    "1:3",
]


@pytest.fixture(scope="module")
def browser() -> Chromium:
    """Debian's chromium, installed with apt when missing (a failed install fails the test)."""
    return install_chromium()


def test_a_run_writes_a_report_page_that_shows_it_all_in_a_browser(
    spark: SparkSession, browser: Chromium, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    run(parse_options([*RUN, "--out", str(out)]), spark)
    page = out / "report.html"
    text = page.read_text(encoding="utf-8")
    assert not re.search(r"https?://", text)
    info = json.loads((out / "run.json").read_text(encoding="utf-8"))
    for key in ("scenarios", "seed", "master", "partitions", "percentiles"):
        assert f"<td>{html.escape(str(info[key]))}</td>" in text, key
    assert f"<td>{', '.join(info['strategies'])}</td>" in text
    assert f"<td>{info['versions']['pyspark']}</td>" in text
    with (out / "summary.csv").open(encoding="utf-8") as handle:
        groups = [(row["strategy"], row["change"]) for row in csv.DictReader(handle)]
    summary_table = text.split('<table class="summary">')[1].split("</table>")[0]
    cells = re.findall(r"<tr(?: class=\"[^\"]*\")?><td>([^<]*)</td><td>([^<]*)</td>", summary_table)
    assert cells == groups
    # cooperative_sticky draws the protocol figures; broker views leave out client_views.png
    # first the deciding scores of the verdict's system (any: every default strategy)
    # (those the run measured: no time to balance for plain strategies, say)
    criteria = info["verdict"]["deciding_scores"]
    assert set(criteria) <= set(SYSTEM_VERDICTS["any"].criteria)
    assert {"balance_degree", "queues_paused", "moves", "stickiness"} <= set(criteria)
    deciding = [f"deciding_{metric}.png" for metric in criteria if metric != "converged"]
    shown = [
        (name, title, reading)
        for name, _, title, reading in HARNESS_FIGURES
        if name != "client_views.png"
    ] + [(name, title, reading) for name, _, _, _, title, reading in SIZE_PROFILE_FIGURES]
    pngs = [out / name for name in deciding] + [out / name for name, _, _ in shown]
    assert all(png.exists() for png in pngs)
    embedded = re.findall(r'<img src="data:image/png;base64,([^"]+)"', text)
    assert [base64.b64decode(image) for image in embedded] == [png.read_bytes() for png in pngs]
    for _, title, reading in shown:
        assert f"<h3>{html.escape(title)}</h3>" in text
        assert html.escape(reading) in text
    assert_report_renders(browser, page, pngs, tmp_path / "page.png", height=4200)
    assert_answer_first(browser, page)
