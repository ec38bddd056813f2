"""report.html from the pure-Python core: every parameter, every summary row and column, every
figure embedded, everything escaped, nothing to fetch; and, in a headless Chromium (installed
with apt when missing, tests/browser.py), a page whose figures all decode and show."""

from __future__ import annotations

import base64
import dataclasses
import html
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import pytest

from rebalancing.evaluation.command.compare import compare
from rebalancing.evaluation.command.profile import Profile
from rebalancing.evaluation.decision.systems import SYSTEM_VERDICTS
from rebalancing.evaluation.report import plots
from rebalancing.evaluation.report.page import (
    REPORT_PAGE,
    FigureFile,
    markdown_table_html,
    render_report_page,
    write_report_page,
)
from rebalancing.evaluation.report.tables import SUMMARY_COLUMNS, markdown_table
from rebalancing.evaluation.report.verdict_text import conclusion
from rebalancing.evaluation.scenarios.changes import ScenarioSettings, generate_scenarios
from rebalancing.evaluation.scoring.aggregates import summarise
from rebalancing.evaluation.scoring.replay import score_scenarios
from rebalancing.strategies import STRATEGIES
from tests.browser import Chromium, assert_answer_first, assert_report_renders, install_chromium

SMALL = ScenarioSettings(queue_range=(1, 60), consumer_range=(1, 12))
CHOSEN = {name: STRATEGIES[name] for name in ("averagely", "sticky", "sac")}
SUMMARY = summarise(score_scenarios(generate_scenarios(5, range(20), SMALL), CHOSEN))
RUN_INFO: dict[str, Any] = {
    "scenarios": 20,
    "seed": 5,
    "strategies": list(CHOSEN),
    "queue_range": (1, 60),
    "change_weights": {"join": 1.0, "crash": 2.5},
    "raw_rows": False,
    "not_shipped": [],
    "master": "local[2]",
    "versions": {"python": "3.11.2", "rebalancing": "0.1.0"},
}


class PageParts(HTMLParser):
    """The tags, attributes and text of a page, as a browser's parser sees them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.styles: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        (self.styles if self._in_style else self.text).append(data)

    def named(self, tag: str) -> list[dict[str, str | None]]:
        return [attributes for name, attributes in self.tags if name == tag]


def parse(page: str) -> PageParts:
    parts = PageParts()
    parts.feed(page)
    parts.close()
    return parts


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[FigureFile]]:
    """The figures of SUMMARY and its report page, written into a fresh directory."""
    out = tmp_path_factory.mktemp("report")
    figures = plots.save_all(SUMMARY, out)
    return write_report_page(out, RUN_INFO, SUMMARY, figures), figures


@pytest.fixture(scope="module")
def browser() -> Chromium:
    """Debian's chromium, installed with apt when missing (a failed install fails the test)."""
    return install_chromium()


def test_the_page_shows_every_parameter_row_column_and_figure(
    report: tuple[Path, list[FigureFile]],
) -> None:
    page, figures = report
    assert page.name == REPORT_PAGE
    assert [figure.path.name for figure in figures] == [
        "stickiness.png",
        "moves.png",
        "queues_paused.png",
        "stickiness_gap.png",
        "assign_time.png",
        "releases.png",
        "rounds.png",
    ]
    parts = parse(page.read_text(encoding="utf-8"))
    text = "".join(parts.text)
    for label, value in (
        ("scenarios", "20"),
        ("queue range", "1, 60"),
        ("strategies", "averagely, sticky, sac"),
        ("raw rows", "no"),
        ("not shipped", "none"),
        ("master", "local[2]"),
        ("join", "1.0"),
        ("crash", "2.5"),
        ("rebalancing", "0.1.0"),
    ):
        assert f"{label}{value}" in text, (label, value)
    header, _, *rows = markdown_table(SUMMARY).splitlines()
    summary_table = page.read_text(encoding="utf-8").split('<table class="summary">')[1]
    summary_table = summary_table.split("</table>")[0]
    column_titles = [cell.strip() for cell in header.strip("|").split("|")]
    assert _cell_texts(summary_table, "th") == column_titles
    assert summary_table.count("<tr") == 1 + len(rows) == 1 + len(SUMMARY)
    images = parts.named("img")
    assert [image["src"] for image in images] == [
        "data:image/png;base64," + base64.b64encode(figure.path.read_bytes()).decode()
        for figure in figures
    ]
    for figure in figures:
        assert figure.title in text
        assert figure.reading in text


def _cell_texts(page: str, tag: str) -> list[str]:
    cells: list[str] = []

    class Cells(HTMLParser):
        inside = 0

        def handle_starttag(self, name: str, attrs: list[tuple[str, str | None]]) -> None:
            if name == tag:
                self.inside += 1
                cells.append("")

        def handle_endtag(self, name: str) -> None:
            if name == tag:
                self.inside -= 1

        def handle_data(self, data: str) -> None:
            if self.inside:
                cells[-1] += data

    Cells().feed(page)
    return cells


def test_the_page_needs_no_network_and_no_other_file(
    report: tuple[Path, list[FigureFile]],
) -> None:
    page = report[0].read_text(encoding="utf-8")
    parts = parse(page)
    assert "http://" not in page
    assert "https://" not in page
    for tag, attributes in parts.tags:
        assert tag not in ("script", "link", "iframe", "object", "embed", "base"), tag
        for name in ("src", "href", "srcset", "data", "poster"):
            reference = attributes.get(name)
            if reference is not None:
                assert reference.startswith(("data:", "#")), (tag, name, reference[:80])
    anchors = {attributes["id"] for _, attributes in parts.tags if attributes.get("id")}
    links = [attributes["href"] for attributes in parts.named("a")]
    assert links
    assert all(link is not None and link[1:] in anchors for link in links)
    assert "url(" not in "".join(parts.styles)
    assert "@import" not in "".join(parts.styles)


def test_everything_from_the_run_is_escaped(report: tuple[Path, list[FigureFile]]) -> None:
    hostile = "<script>alert('x')</script> & <b>"
    metrics = SUMMARY[("sticky", "all")]
    summary = {(hostile, "all"): metrics, ("sticky", hostile): metrics}
    png = report[1][0].path
    page = render_report_page(
        {hostile: hostile, "nested": {hostile: [hostile, 1]}},
        summary,
        [FigureFile(png, hostile, hostile)],
        title=hostile,
    )
    parts = parse(page)
    assert [tag for tag, _ in parts.tags if tag in ("script", "b")] == []
    assert parts.named("img")[0]["alt"] == hostile
    text = "".join(parts.text)
    assert text.count(hostile) >= 7  # title, heading, contents, key, value, list, rows, caption


def test_a_summary_without_rows_and_a_run_without_figures_still_make_a_page(
    tmp_path: Path,
) -> None:
    page = write_report_page(tmp_path, {}, {}, [])
    parts = parse(page.read_text(encoding="utf-8"))
    assert parts.named("img") == []
    assert "This run wrote no figures." in "".join(parts.text)
    page_text = page.read_text(encoding="utf-8")
    summary_table = page_text.split('<table class="summary">')[1].split("</table>")[0]
    assert _cell_texts(summary_table, "th") == [
        cell.strip() for cell in markdown_table({}).splitlines()[0].strip("|").split("|")
    ]


def test_the_summary_table_is_the_markdown_table_cell_for_cell() -> None:
    changed = dataclasses.replace(SUMMARY[("sac", "all")]["moves"], mean=1234.5)
    summary = {("sac", "all"): {**SUMMARY[("sac", "all")], "moves": changed}}
    markdown = markdown_table(summary)
    rendered = markdown_table_html(markdown)
    expected = [cell.strip() for cell in markdown.splitlines()[2].strip("|").split("|")]
    assert _cell_texts(rendered, "td") == expected
    assert '<td class="number">1,234</td>' in rendered  # moves: a count, so no decimals
    assert '<tr class="all-changes">' in rendered


@pytest.mark.parametrize(
    ("markdown", "message"),
    [
        ("just text", "a header line and a delimiter line"),
        ("| a | b |\n| c | d |", "a header line and a delimiter line"),
        ("| a | b |\n|---|---|\n| 1 | 2 | 3 |", "3 cells where the header has 2"),
        ("| a | b |\n|---|---|\n 1 | 2", "not a Markdown table row"),
    ],
)
def test_what_is_not_a_markdown_table_is_refused(markdown: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        markdown_table_html(markdown)


def test_an_escaped_pipe_stays_in_its_cell() -> None:
    rendered = markdown_table_html("| a | b |\n|---|---|\n| x \\| y | 2 |")
    assert _cell_texts(rendered, "td") == ["x | y", "2"]


def test_a_file_that_is_not_an_image_is_refused(tmp_path: Path) -> None:
    table = tmp_path / "summary.csv"
    table.write_text("a,b\n")
    with pytest.raises(ValueError, match="not an image file"):
        render_report_page({}, SUMMARY, [FigureFile(table, "table", "no")])


def test_every_figure_decodes_and_shows_in_a_browser(
    report: tuple[Path, list[FigureFile]], browser: Chromium, tmp_path: Path
) -> None:
    page, figures = report
    assert_report_renders(
        browser, page, [figure.path for figure in figures], tmp_path / "page.png", height=3000
    )


def test_the_browser_check_sees_an_image_that_did_not_load(
    browser: Chromium, tmp_path: Path
) -> None:
    page = tmp_path / "broken.html"
    page.write_text(
        "<!DOCTYPE html><html><body>"
        '<img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAf">'
        '<img src="missing.png">'
        "</body></html>"
    )
    assert browser.image_sizes(page) == [(True, 0, 0), (True, 0, 0)]


def test_a_comparison_report_opens_with_the_verdict_in_the_first_window(
    browser: Chromium, tmp_path: Path
) -> None:
    profile = Profile(
        system="kafka-eager",
        scenarios=30,
        seed=2,
        strategies=SYSTEM_VERDICTS["kafka-eager"].candidates(),
        settings=ScenarioSettings(queue_range=(64, 64), consumer_range=(4, 12)),
        out=tmp_path,
    )
    verdict = compare(profile).verdict
    page = tmp_path / REPORT_PAGE
    text = page.read_text(encoding="utf-8")
    assert text.index('<section id="answer">') < text.index("<nav>") < text.index('id="summary"')
    assert html.escape(conclusion(verdict)) in text
    assert "Deciding score: moves per rebalance" in text
    glossary = text.split('<table class="glossary">')[1]
    for column in SUMMARY_COLUMNS:
        assert html.escape(column.header) in glossary
    figures = sorted(tmp_path.glob("*.png"))
    assert len(parse(text).named("img")) == len(figures)
    assert_answer_first(browser, page)
    shown = browser.image_sizes(page)
    assert all(complete and width > 0 for complete, width, _ in shown), shown


def test_the_parameters_show_ids_that_paste_back_into_the_command_line() -> None:
    """A nested mapping's keys are ids (strategies, change kinds), shown as they are; the top
    level's keys, run.json's field names, read with spaces."""
    from rebalancing.evaluation.report.page import parameters_html

    shown = parameters_html(
        {
            "change_weights": {"rolling_restart": 3.0},
            "verdict": {"dominated": {"eager:round_robin": ["cooperative:cooperative_sticky"]}},
        }
    )
    text = "".join(parse(shown).text)
    assert "change weights" in text
    assert "rolling_restart3.0" in text
    assert "eager:round_robincooperative:cooperative_sticky" in text
    assert "round robin" not in text
    assert "rolling restart" not in text
