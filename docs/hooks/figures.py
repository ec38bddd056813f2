"""MkDocs hook: publish the figures of benchmarks/results with the site, so that a page shows a
benchmark's PNG from where the benchmark writes it, without a copy under docs/.

A page links a figure by its path in the repository, relative to the page
(`![...](../../benchmarks/results/NAME.png)` from docs/explanation/), which resolves on GitHub
and in the link checks of tests/test_docs.py; the site holds the figure as
`benchmarks/results/NAME.png`, and the link is rewritten to reach it from the page.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
RESULTS = "benchmarks/results"
FIGURE_LINK = re.compile(r"(!\[[^\]]*\]\()([^)\s]+\.png)(\))")


def on_files(files: Files, config: Any) -> Files:
    for figure in sorted((ROOT / RESULTS).glob("*.png")):
        files.append(File.generated(config, f"{RESULTS}/{figure.name}", abs_src_path=str(figure)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    page_folder = Path(page.file.abs_src_path).parent
    site_folder = posixpath.dirname(page.file.src_uri)

    def rewritten(link: re.Match[str]) -> str:
        target = (page_folder / link.group(2)).resolve()
        if target.parent != ROOT / RESULTS:
            return link.group(0)
        relative = posixpath.relpath(f"{RESULTS}/{target.name}", site_folder or ".")
        return f"{link.group(1)}{relative}{link.group(3)}"

    return FIGURE_LINK.sub(rewritten, markdown)
