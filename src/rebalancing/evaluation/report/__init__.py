"""Stage 4, report: what a person reads, from a Summary and a Verdict: the verdict on the
terminal and in Markdown, the summary table and its glossary, the figures, report.html and the
run's files. Takes the earlier stages' values; hands nothing on (it writes). Imports only the
earlier stages."""

from rebalancing.evaluation.report.tables import markdown_table
from rebalancing.evaluation.report.verdict_text import render_markdown, render_text

__all__ = ["markdown_table", "render_markdown", "render_text"]
