"""--zones and --weights: the profile, its errors, and a comparison whose verdict weighs them."""

from __future__ import annotations

from pathlib import Path

import pytest

from rebalancing.evaluation.__main__ import main
from rebalancing.evaluation.command.compare import compare_parser
from rebalancing.evaluation.command.profile import profile_from

SMALL = ["--queues", "1:40", "--consumers", "1:8", "--changes", "1:4"]


def test_zones_and_weights_reach_the_scenarios_and_the_candidates() -> None:
    namespace = compare_parser("test").parse_args(
        ["--system", "kafka-cooperative", "--zones", "2:3", "--weights", "hot"]
    )
    namespace.out = None
    profile = profile_from(namespace)
    assert profile.settings.zone_range == (2, 3)
    assert profile.settings.weights == "hot"
    assert {"rack_aware_range", "rack_aware_sticky", "lag_greedy"} <= set(profile.strategies)
    assert "2-3 zones, hot weights" in profile.describe()
    namespace = compare_parser("test").parse_args(["--zones", "2"])
    namespace.out = None
    plain = profile_from(namespace)
    assert plain.settings.zone_range == (2, 2)
    assert plain.settings.weights is None
    assert "lag_greedy" not in plain.strategies
    assert "machine_room_nearby" in plain.strategies


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--zones", "two"], "--zones: expected a count N or a range LOW:HIGH"),
        (["--zones", "3:2"], "--zones: need 1 <= LOW <= HIGH"),
        (["--zones", "1:30"], "--zones: at most 26, got '1:30'"),
        (["--mix", "zone_outage=1,join"], "--mix: zone_outage needs --zones"),
        (["--mix", "load_shift", "--zones", "2"], "--mix: load_shift needs --weights"),
    ],
)
def test_bad_zone_and_weight_options_are_one_line_naming_them(
    arguments: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main([*arguments, "--out", str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert message in error
    assert len(error.strip().splitlines()) == 1


def test_an_unknown_weight_distribution_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with pytest.raises(SystemExit) as exit_code:
        main(["--weights", "pareto", "--out", str(tmp_path)])
    assert exit_code.value.code == 2
    error = capsys.readouterr().err
    assert "--weights" in error
    assert "pareto" in error
    assert len(error.strip().splitlines()) == 1


def test_the_placement_kinds_are_accepted_in_the_mix() -> None:
    namespace = compare_parser("test").parse_args(
        ["--zones", "2:3", "--weights", "zipf", "--mix", "zone_outage=2,zone_recovery,load_shift"]
    )
    namespace.out = None
    weights = profile_from(namespace).settings.change_weights
    assert weights == {"zone_outage": 2.0, "zone_recovery": 1.0, "load_shift": 1.0}


def test_help_shows_the_defaults_of_zones_and_weights() -> None:
    text = " ".join(compare_parser("rebalancing compare").format_help().split())
    assert "--zones" in text
    assert "--weights {uniform,zipf,hot}" in text
    assert "(default: off, no zones)" in text
    assert "(default: off, every queue alike)" in text


def test_a_comparison_with_zones_and_weights_ends_with_a_verdict_on_them(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    arguments = ["--system", "kafka-cooperative", "--zones", "2:3", "--weights", "zipf"]
    assert main([*arguments, "--scenarios", "12", *SMALL, "--out", str(tmp_path)]) == 0
    output = capsys.readouterr().out
    verdict = output.split("\nReport:")[0].splitlines()
    assert len(verdict) <= 34  # with what changing from today's setup gives (3 lines)
    (header,) = [line for line in verdict if line.startswith("strategy ")]
    assert "cross-zone" in header
    assert "load ratio" in header
    assert "rack_aware_range" in output
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert "cross-zone mean" in summary
    assert "load ratio mean" in summary


def test_a_strategy_named_without_the_facts_it_reads_is_noted_with_the_option_to_add(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    arguments = ["--strategies", "rack_aware_sticky,weighted_sticky,sticky", "--weights", "zipf"]
    assert main([*arguments, "--scenarios", "6", *SMALL, "--out", str(tmp_path)]) == 0
    output = " ".join(capsys.readouterr().out.split())  # the verdict wraps its lines
    assert "rack_aware_sticky reads what these scenarios do not carry" in output
    assert "add --zones to score it" in output
    assert "weighted_sticky reads" not in output  # --weights carries what it reads
