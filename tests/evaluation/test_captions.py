"""The glossary and the figures' captions say what is true of the run's system: Pulsar's
intervals in its time, Kafka's and Pulsar's releases and rounds in their own terms, the
cooperative protocol's pauses in a kafka-cooperative report; the compute-time figures named as
the assign call's, not the protocol's seconds; a log axis with nothing above 0 not drawn."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from rebalancing.evaluation.command.compare import compare
from rebalancing.evaluation.command.profile import Profile
from rebalancing.evaluation.report import plots
from rebalancing.evaluation.report.captions import CAPTIONS, COMPUTE_TIME, caption
from rebalancing.evaluation.report.tables import SUMMARY_COLUMNS, glossary_lines
from rebalancing.evaluation.scenarios.changes import ScenarioSettings
from rebalancing.evaluation.scoring.definitions import SCORES, definition_on

TIME = SCORES["seconds_to_balance"]
PAUSED_SECONDS = SCORES["queue_seconds_paused"]


def test_pulsars_time_names_pulsars_intervals_only() -> None:
    on_pulsar = definition_on(TIME, "pulsar")
    assert "1 s failover delay" in on_pulsar
    assert "30 s keep-alive" in on_pulsar
    for other in ("Kafka", "RocketMQ", "Event Hubs", "KCL", "SAC"):
        assert other not in on_pulsar
    assert "Pulsar: the broker's 1 s failover delay" in definition_on(TIME, None)
    (line,) = [
        line for line in glossary_lines(SUMMARY_COLUMNS, "pulsar") if line.startswith("time mean")
    ]
    assert "failover delay" in line


def test_paused_seconds_read_as_the_systems_own() -> None:
    assert "Kafka" not in definition_on(PAUSED_SECONDS, "pulsar")
    assert "failover delay" in definition_on(PAUSED_SECONDS, "pulsar")
    assert "Pulsar" in PAUSED_SECONDS.definition  # every system's glossary names it too
    assert definition_on(PAUSED_SECONDS, "rabbitmq") == "not measured on this system: n/a"


def test_protocol_captions_use_the_systems_own_words() -> None:
    for vendor in ("kafka", "pulsar"):
        _, released = caption("releases.png", None, vendor)
        _, rounded = caption("rounds.png", None, vendor)
        assert "a cancel and a new subscription" not in released
        assert "waves of releases" not in rounded
    assert "revoked" in caption("releases.png", "kafka-eager", "kafka")[1]
    assert "waves of releases" in caption("rounds.png", "rabbitmq-sac", "rabbitmq")[1]


def test_a_cooperative_report_does_not_say_its_candidates_run_eagerly() -> None:
    _, reading = caption("queues_paused.png", "kafka-cooperative", "kafka")
    assert "eager" not in reading
    assert "cooperative protocol" in reading
    assert "eager protocol" in caption("queues_paused.png", "kafka-eager", "kafka")[1]


def test_the_compute_time_figures_are_named_for_the_assign_call() -> None:
    titles = [title for title, _ in CAPTIONS.values()]
    assert COMPUTE_TIME in titles
    assert f"{COMPUTE_TIME} against queue count" in titles
    assert not any("Rebalance time" in title for title in titles)
    assert dict((name, title) for name, _, title, _ in plots.HARNESS_FIGURES)[
        "assign_time.png"
    ] == ("Compute time of the assign call")


def test_a_log_axis_with_nothing_above_zero_is_no_figure_and_no_warning(tmp_path: Path) -> None:
    """A Kafka run in Spark with no release above 0 in a bucket's median (NaN: none measured)
    draws no protocol-cost figure, silently; the points that are above 0 still draw."""
    profiles = [
        {
            "strategy": "eager:range",
            "facet": "group_size",
            "bucket": 3,
            "metric": metric,
            "count": 2,
            "p50": value,
        }
        for metric, value in (("releases", math.nan), ("size", 6.0))
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert plots.save_size_profiles(profiles, tmp_path) == []
        assert plots.assign_time_by_queue_count_lines({"a": [(8.0, 0.0)]}) is None
        drawn = plots.assign_time_by_queue_count_lines({"a": [(8.0, 0.0), (16.0, 3.0)]})
    assert drawn is not None


def test_a_pulsar_report_says_pulsars_intervals(tmp_path: Path) -> None:
    profile = Profile(
        system="pulsar-failover",
        scenarios=2,
        seed=1,
        strategies=("pulsar_failover",),
        settings=ScenarioSettings(queue_range=(4, 8), consumer_range=(2, 3)),
        out=tmp_path,
    )
    compare(profile)
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    glossary = summary.split("# Glossary")[1]
    (time_line,) = [line for line in glossary.splitlines() if line.startswith("- time mean")]
    assert "failover delay" in time_line
    assert "Kafka" not in time_line
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "a cancel and a new subscription" not in page
    assert "failover delay" in page.split('<table class="glossary">')[1]
