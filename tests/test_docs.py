"""The documentation's promises: the site builds in strict mode (a broken link, a missing page or a
docstring mkdocstrings cannot render fails it), nothing points outside the repository, every
relative link of the README and the pages resolves, the scores page carries the glossary word for
word, the README stays a front page, and its Python examples and the pages' run as written.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rebalancing.evaluation.scoring.definitions import SCORES

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
MEASUREMENTS = sorted((ROOT / "benchmarks" / "results").rglob("*.md"))
LINKED_FILES = [README, *PAGES, *MEASUREMENTS]
SPECS = sorted(path for path in (ROOT / "specs").iterdir() if path.is_file())
"""The formal descriptions and their notes: they cite their sources as the docs do."""

# [text](target) and ![alt](target); a target ends at whitespace or the closing bracket.
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
NOT_RUN = "<!-- not run:"


def relative(path: Path) -> str:
    return str(path.relative_to(ROOT))


def links_of(path: Path) -> list[str]:
    """Every link target of a Markdown file, code spans and fenced blocks left out."""
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.MULTILINE | re.DOTALL)
    text = re.sub(r"`[^`\n]*`", "", text)
    return LINK.findall(text)


def run_python(arguments: list[str], directory: Path) -> subprocess.CompletedProcess[str]:
    """This interpreter with the worktree's sources first on the path, output captured."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, *arguments],
        cwd=directory,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.fixture(scope="module")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site as `mkdocs build --strict` makes it, in a temporary directory."""
    site = tmp_path_factory.mktemp("site")
    finished = run_python(["-m", "mkdocs", "build", "--strict", "--site-dir", str(site)], ROOT)
    assert finished.returncode == 0, (
        "mkdocs build --strict failed (the docs extra installs mkdocs):\n"
        + finished.stdout
        + finished.stderr
    )
    return site


def test_site_builds_in_strict_mode_with_every_page_of_the_nav(built_site: Path) -> None:
    for page in PAGES:
        if page.parent.name == "hooks":
            continue
        built = built_site / page.relative_to(DOCS).with_suffix(".html")
        assert built.is_file(), f"{relative(page)} was not built into {built.name}"


def test_a_benchmark_figure_is_published_where_the_page_showing_it_links(built_site: Path) -> None:
    """docs/hooks/figures.py: pages link benchmarks/results/*.png by their repository path."""
    page = built_site / "explanation" / "leaderless-protocols.html"
    sources = re.findall(r'<img[^>]*src="([^"]+)"', page.read_text())
    assert len(sources) == 3
    for source in sources:
        assert (page.parent / source).resolve().is_file(), source


def test_api_reference_is_generated_from_the_docstrings(built_site: Path) -> None:
    page = (built_site / "reference" / "api" / "strategies.html").read_text()
    assert "Balance first, then keep previous pairs" in page  # sticky's module docstring
    assert "def assign" in page or "assign(" in page


def test_built_site_fetches_nothing_from_the_network(built_site: Path) -> None:
    """Fonts and social cards off: the pages load no stylesheet or script from another host."""
    for html in built_site.rglob("*.html"):
        text = html.read_text()
        external = re.findall(r'<(?:link|script)[^>]+(?:href|src)="(https?://[^"]+)"', text)
        assert not external, f"{html.name} loads {external}"


def test_nothing_in_the_site_points_to_the_shared_folder(built_site: Path) -> None:
    """Not a link and not a mention: ../shared exists only on the machines the project was
    written on; sources are cited by their public origin (docs/explanation/sources.md)."""
    for html in built_site.rglob("*.html"):
        assert "shared/seeds" not in html.read_text(), f"{html.name} names shared/seeds"
        assert "../shared" not in html.read_text(), f"{html.name} names ../shared"


@pytest.mark.parametrize("path", [*LINKED_FILES, *SPECS], ids=relative)
def test_no_file_of_the_docs_links_to_the_shared_folder(path: Path) -> None:
    text = path.read_text()
    assert "../shared" not in text
    assert "shared/seeds" not in text
    assert "shared/DESIGN" not in text


def test_the_notebook_runner_is_shown_with_the_environments_python() -> None:
    """notebooks/execute.py needs nbclient (the notebooks extra): the system's `python` has
    none, so a page shows the command with the environment's Python."""
    shown = [
        f"{relative(path)}: {line.strip()}"
        for path in (README, *PAGES)
        for line in path.read_text(encoding="utf-8").splitlines()
        if "notebooks/execute.py" in line and line.split()[0] in ("python", "python3")
    ]
    assert shown == []


@pytest.mark.parametrize("path", LINKED_FILES, ids=relative)
def test_every_relative_link_resolves_to_a_file_of_the_repository(path: Path) -> None:
    for target in links_of(path):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        file_part = target.split("#", 1)[0]
        resolved = (path.parent / file_part).resolve()
        assert resolved.exists(), f"{relative(path)}: link {target!r} resolves to nothing"
        assert resolved.is_relative_to(ROOT), f"{relative(path)}: {target!r} leaves the repository"


def test_scores_page_carries_every_glossary_entry_word_for_word(built_site: Path) -> None:
    """The table is generated from rebalancing.evaluation.scoring.definitions.SCORES at build
    time."""
    page = (built_site / "reference" / "scores.html").read_text()
    for score in SCORES.values():
        for text in (score.metric, score.label, score.definition):
            escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            assert escaped in page, f"scores page lacks {text!r} of {score.metric}"


def test_readme_is_a_front_page_that_opens_with_the_two_commands() -> None:
    lines = README.read_text().splitlines()
    assert 150 <= len(lines) <= 250, f"README.md has {len(lines)} lines"
    commands = [line.split("#")[0].strip() for line in lines if line.startswith("    make ")]
    assert commands[:2] == ["make run", "make test"]


def test_readme_names_the_install_from_a_clone_not_a_package_index() -> None:
    text = README.read_text()
    assert "pip install -e ." in text
    assert "pip install 'rebalancing[" not in text
    assert 'pip install "rebalancing[' not in text


def python_examples(path: Path) -> list[str]:
    """The page's ```python blocks, except those right after a `<!-- not run: why -->` line."""
    text = path.read_text()
    examples = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip().splitlines()
        if before and before[-1].startswith(NOT_RUN):
            continue
        examples.append(match.group(1))
    return examples


PAGES_WITH_EXAMPLES = [path for path in [README, *PAGES] if python_examples(path)]


@pytest.mark.parametrize("path", PAGES_WITH_EXAMPLES, ids=relative)
def test_python_examples_run_as_written(path: Path, tmp_path: Path) -> None:
    """A page's examples run in order in one fresh interpreter, as a reader would paste them."""
    script = tmp_path / "examples.py"
    script.write_text("\n".join(python_examples(path)))
    finished = run_python([str(script)], tmp_path)
    assert finished.returncode == 0, f"{relative(path)}:\n{finished.stdout}{finished.stderr}"
