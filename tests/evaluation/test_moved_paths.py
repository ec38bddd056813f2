"""The evaluation's module paths of 0.1.0 keep working for one version: each imports, with a
DeprecationWarning naming where it moved, as the module(s) now holding what it held."""

from __future__ import annotations

import importlib
import sys
import warnings

import pytest

from rebalancing.evaluation.decision import systems, verdict
from rebalancing.evaluation.moved import MOVED, REMOVED_IN
from rebalancing.evaluation.report import plots, tables, verdict_text
from rebalancing.evaluation.scoring import definitions

OLD_PUBLIC_NAMES: dict[str, tuple[str, ...]] = {
    "scenarios": (
        "CHANGE_KINDS",
        "HOT_WEIGHT",
        "INITIAL",
        "IdT",
        "REPLICATION_FACTOR",
        "Scenario",
        "ScenarioSettings",
        "Step",
        "WEIGHT_DISTRIBUTIONS",
        "WEIGHT_KINDS",
        "ZIPF_EXPONENT",
        "ZONE_KINDS",
        "ZONE_NAMES",
        "generate_scenarios",
        "scenario_seed",
    ),
    "views": (
        "VIEW_MODES",
        "ViewOutcome",
        "ViewSettings",
        "add_view_arguments",
        "client_side_rebalance",
        "draw_lags",
        "step_rng",
        "view_settings_from",
    ),
    "scores": (
        "CountSums",
        "IdSet",
        "PlanReading",
        "PreviousReading",
        "Scores",
        "balance_degree",
        "first_owners",
        "optimal_kept",
        "read_and_score",
        "read_plan",
        "read_previous",
        "score",
        "score_reading",
        "scores_from_counts",
    ),
    "placement_scores": (
        "Plan",
        "cross_zone_count",
        "fewest_cross_zone",
        "load_kept",
        "load_moved",
        "load_ratio",
        "load_ratio_bound",
        "topic_spread",
    ),
    "compiled_scores": (
        "ConsumerNumbers",
        "IntegerGroup",
        "NO_OWNER",
        "NO_PLAN",
        "Owners",
        "plain_ints",
        "score_exact",
        "score_positions",
    ),
    "compiled_strategies": (
        "TWINS",
        "Twin",
        "averagely_twin",
        "sticky_twin",
        "twin_of",
    ),
    "replay": (
        "PlacementScores",
        "ROW_FIELDS",
        "STABILITY_BOUND",
        "STABILITY_EVERY",
        "ScoreRow",
        "as_strategies",
        "score_scenario",
        "score_scenarios",
    ),
    "protocol_time": (
        "BASE_SEED",
        "CostSummary",
        "EVENTS",
        "EVENT_TITLES",
        "EventCost",
        "GROUP_SIZES",
        "LABELS",
        "ORDERINGS",
        "PROTOCOLS",
        "QUEUES_PER_CONSUMER",
        "SCORES",
        "TIMED",
        "event_steps",
        "figure",
        "markdown_table",
        "markdown_tables",
        "measure",
        "measure_all",
        "number",
        "orderings_figure",
        "protocol_strategy",
        "queue_seconds_figure",
        "summarise",
        "time_figure",
    ),
    "aggregates": (
        "ALL_CHANGES",
        "Aggregate",
        "METRICS",
        "PERCENTILES",
        "STATISTICS",
        "aggregate",
        "markdown_table",
        "percentile",
        "shown_columns",
        "summarise",
    ),
    "glossary": (
        "Better",
        "Column",
        "LIBRARY_SCORES",
        "PLACEMENT_COLUMNS",
        "SCORES",
        "STATISTIC_NAMES",
        "SUMMARY_COLUMNS",
        "Score",
        "TIMED_AS_TWINS",
        "VIEW_COLUMNS",
        "format_value",
        "glossary_lines",
        "scores_help",
    ),
    "verdict": (
        "ANY_SYSTEM",
        "CONFIDENCE_QUANTILE",
        "Difference",
        "GIVES_UP_SHOWN",
        "LEVEL_FRACTION",
        "OUT_ON_SHOWN",
        "SPEED_RATIO",
        "SYSTEM_VERDICTS",
        "Summary",
        "System",
        "TERMINAL_DOMINATED",
        "TERMINAL_ROWS",
        "TERMINAL_WIDTH",
        "Verdict",
        "compare",
        "conclusion",
        "decide",
        "how_line",
        "how_to_run",
        "ranking",
        "render_markdown",
        "render_text",
        "standing_lines",
        "table",
    ),
    "plots": (
        "BANDS",
        "FigureDrawing",
        "HARNESS_FIGURES",
        "SIZE_PROFILE_FIGURES",
        "SizeLines",
        "Summary",
        "assign_time",
        "assign_time_by_queue_count",
        "assign_time_by_queue_count_lines",
        "client_views",
        "deciding_score",
        "moves",
        "profile_lines",
        "quantile_bands",
        "queues_paused",
        "releases",
        "releases_by_group_size",
        "releases_by_group_size_lines",
        "rounds",
        "save_all",
        "save_figures",
        "save_size_profiles",
        "stickiness",
        "stickiness_gap",
    ),
    "report_page": (
        "DEFAULT_TITLE",
        "FigureFile",
        "REPORT_PAGE",
        "SUMMARY_NOTE",
        "answer_html",
        "figure_html",
        "glossary_html",
        "markdown_table_html",
        "parameters_html",
        "render_report_page",
        "write_report_page",
    ),
    "outputs": (
        "Summary",
        "deciding_figures",
        "run_description",
        "wide_rows",
        "write_outputs",
    ),
    "profile": (
        "MAX_SCENARIOS",
        "ParameterError",
        "Profile",
        "RUN_MARKERS",
        "add_profile_arguments",
        "change_mix",
        "count_or_range",
        "new_parser",
        "prepare_out",
        "profile_from",
        "strategy_specs",
    ),
    "compare": (
        "Comparison",
        "Summary",
        "closing_lines",
        "compare",
        "compare_parser",
        "main",
        "print_comparison",
        "score_profile",
    ),
}
"""Every public name of each evaluation module at 0.1.0 (git show
2bd5401:src/rebalancing/evaluation/NAME.py)."""

REMOVED = {("glossary", "TIMED_AS_TWINS")}
"""Names no longer anywhere: the registry's Strategy.compiled_twin says what TIMED_AS_TWINS said."""


@pytest.mark.parametrize("name", sorted(OLD_PUBLIC_NAMES))
def test_every_public_name_of_a_0_1_0_module_is_still_there(name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        module = importlib.import_module(f"rebalancing.evaluation.{name}")
    missing = [
        public
        for public in OLD_PUBLIC_NAMES[name]
        if (name, public) not in REMOVED and not hasattr(module, public)
    ]
    assert not missing


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_imports_with_a_warning_naming_where_it_moved(old: str) -> None:
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=rf"{old} moved to .*goes in {REMOVED_IN}"):
        module = importlib.import_module(old)
    for new in MOVED[old]:
        target = importlib.import_module(new)
        public = [name for name in vars(target) if not name.startswith("_")]
        assert public
        for name in public:
            assert getattr(module, name) is getattr(target, name), (old, name)


def test_the_old_verdict_path_still_gives_every_name_it_had() -> None:
    sys.modules.pop("rebalancing.evaluation.verdict", None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from rebalancing.evaluation import verdict as old_verdict  # type: ignore[attr-defined]
    assert old_verdict.decide is verdict.decide
    assert old_verdict.render_text is verdict_text.render_text
    assert old_verdict.SYSTEM_VERDICTS is systems.SYSTEM_VERDICTS
    assert old_verdict.how_to_run is systems.how_to_run


def test_a_single_target_is_the_very_module_and_the_glossary_is_both_halves() -> None:
    sys.modules.pop("rebalancing.evaluation.plots", None)
    sys.modules.pop("rebalancing.evaluation.glossary", None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        old_plots = importlib.import_module("rebalancing.evaluation.plots")
        old_glossary = importlib.import_module("rebalancing.evaluation.glossary")
    assert old_plots is plots
    assert old_glossary.SCORES is definitions.SCORES
    assert old_glossary.SUMMARY_COLUMNS is tables.SUMMARY_COLUMNS


def test_a_path_that_never_existed_is_still_an_import_error() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("rebalancing.evaluation.no_such_module")
