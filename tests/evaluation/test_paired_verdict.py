"""Paired comparisons and scenarios drawn until decided, on hand-made per-scenario data whose
right answer is known: a margin every scenario shows but the unpaired interval cannot see, two
identical candidates, a difference inside the level band; the stopping rule on synthetic
streams with a known difference (it stops, it picks right in at least 95% of seeded runs, it
reports the cap); and Student's quantile against the printed tables."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from rebalancing.evaluation.command.compare import compare as compare_profile
from rebalancing.evaluation.command.compare import compare_parser
from rebalancing.evaluation.command.compare import main as compare_main
from rebalancing.evaluation.command.profile import ParameterError, Profile, profile_from
from rebalancing.evaluation.decision.differences import (
    compare,
    compare_paired,
    student_quantile,
)
from rebalancing.evaluation.decision.reasons import drawn_until_decided
from rebalancing.evaluation.decision.stopping import (
    DEFAULT_MAX_SCENARIOS,
    ERROR_RATE,
    corrected_confidence,
    draw_until_settled,
    looks,
    unsettled,
)
from rebalancing.evaluation.decision.systems import SYSTEM_VERDICTS
from rebalancing.evaluation.decision.verdict import Verdict, decide
from rebalancing.evaluation.scenarios.changes import ScenarioSettings
from rebalancing.evaluation.scoring.aggregates import ALL_CHANGES, Aggregate, aggregate
from rebalancing.evaluation.scoring.definitions import SCORES
from tests.evaluation.test_verdict import metrics

SYSTEM = SYSTEM_VERDICTS["rocketmq-broker"]  # decides on balance, then moves, then stickiness
MOVES = SCORES["moves"]


Paired = tuple[dict[tuple[str, str], dict[str, Aggregate]], dict[str, dict[str, dict[int, float]]]]


def paired(moves: dict[str, list[float]]) -> Paired:
    """A summary with one rebalance per scenario (`moves[name][s]` in scenario s, balance 0.3
    everywhere) and its scenario means, for decide."""
    summary = {
        (name, ALL_CHANGES): metrics(moves=aggregate(values)) for name, values in moves.items()
    }
    means = {
        name: {
            "moves": dict(enumerate(values)),
            "balance_degree": dict.fromkeys(range(len(values)), 0.3),
        }
        for name, values in moves.items()
    }
    return summary, means


def spread_scenarios(count: int, seed: int = 7) -> list[float]:
    """Scenario means that differ widely (small groups move little, large ones a lot)."""
    rng = random.Random(seed)
    return [rng.uniform(1.0, 100.0) for _ in range(count)]


def test_a_margin_every_scenario_shows_is_seen_paired_and_not_unpaired() -> None:
    base = spread_scenarios(40)
    moves = {"sticky": base, "averagely": [value * 1.15 for value in base]}  # 15% more
    summary, means = paired(moves)
    unpaired = compare(
        summary[("sticky", ALL_CHANGES)]["moves"],
        summary[("averagely", ALL_CHANGES)]["moves"],
        MOVES,
    )
    assert unpaired.better == 0  # lost in how much the scenarios differ
    assert decide(summary, SYSTEM).is_tie
    pair = compare_paired(means["sticky"]["moves"], means["averagely"]["moves"], MOVES)
    assert (pair.better, pair.settled, pair.scenarios) == (-1, True, 40)
    verdict = decide(summary, SYSTEM, scenario_means=means)
    assert verdict.recommended == ("sticky",)
    assert verdict.dominated == {"averagely": ["sticky"]}
    assert "(the difference per scenario, averaged over 40: " in verdict.reason
    assert " at 95%; level on balance" in verdict.reason


def test_two_identical_candidates_are_level_and_settled_at_once() -> None:
    base = spread_scenarios(50)
    summary, means = paired({"sticky": base, "averagely": list(base)})
    pair = compare_paired(means["sticky"]["moves"], means["averagely"]["moves"], MOVES)
    assert (pair.difference, pair.half_width, pair.better, pair.settled) == (0.0, 0.0, 0, True)
    verdict = decide(summary, SYSTEM, scenario_means=means)
    assert set(verdict.recommended) == {"sticky", "averagely"}
    assert unsettled(verdict) == []
    stopped = draw_until_settled(3200, lambda count, confidence: verdict)
    assert (stopped.scenarios, stopped.capped) == (50, False)


def test_a_difference_inside_the_level_band_is_a_tie_however_sure() -> None:
    base = spread_scenarios(200)
    summary, means = paired({"sticky": base, "averagely": [value * 1.05 for value in base]})
    pair = compare_paired(means["sticky"]["moves"], means["averagely"]["moves"], MOVES)
    assert pair.better == 0
    assert pair.settled
    assert pair.half_width < abs(pair.difference)  # surely not zero, yet level
    verdict = decide(summary, SYSTEM, scenario_means=means)
    assert verdict.is_tie
    assert "No difference the scenarios can tell" in verdict.reason


def test_an_interval_across_the_bands_edge_is_not_settled_and_counts_as_level() -> None:
    rng = random.Random(3)
    first = [rng.gauss(10.0, 3.0) for _ in range(30)]
    second = [value * 1.12 + rng.gauss(0.0, 3.0) for value in first]
    pair = compare_paired(dict(enumerate(first)), dict(enumerate(second)), MOVES)
    assert pair.half_width > 0.5  # the band is about 1.1 moves: the interval crosses it
    assert (pair.better, pair.settled) == (0, False)


def test_a_paired_comparison_is_antisymmetric_and_skips_scenarios_one_side_lacks() -> None:
    first = {0: 1.0, 1: 2.0, 2: 3.0, 3: 9.0}
    second = {0: 2.0, 1: 3.5, 2: 4.0}
    forward, backward = compare_paired(first, second, MOVES), compare_paired(second, first, MOVES)
    assert forward.scenarios == backward.scenarios == 3
    assert forward.difference == -backward.difference
    assert forward.half_width == backward.half_width
    assert forward.better == -backward.better


def test_no_common_scenario_and_a_bad_confidence() -> None:
    assert compare_paired({0: 1.0}, {1: 2.0}, MOVES).settled is False
    with pytest.raises(ValueError, match="confidence"):
        compare_paired({0: 1.0}, {0: 2.0}, MOVES, confidence=1.0)


@pytest.mark.parametrize(
    ("confidence", "degrees", "printed"),
    [  # Student's t from the printed tables (two-sided)
        (0.95, 1, 12.706),
        (0.95, 2, 4.303),
        (0.95, 5, 2.571),
        (0.95, 10, 2.228),
        (0.95, 30, 2.042),
        (0.99, 5, 4.032),
        (0.999, 30, 3.646),
        (0.95, 120, 1.980),
        (0.99, 1000, 2.581),
    ],
)
def test_student_quantile_matches_the_tables(
    confidence: float, degrees: int, printed: float
) -> None:
    assert student_quantile(confidence, degrees) == pytest.approx(printed, abs=6e-4)


def test_the_looks_double_up_to_the_cap_and_share_the_error_rate() -> None:
    assert looks(3200) == (50, 100, 200, 400, 800, 1600, 3200)
    assert looks(1000) == (50, 100, 200, 400, 800, 1000)
    assert looks(30) == (30,)
    assert corrected_confidence(looks(3200)) == pytest.approx(1 - ERROR_RATE / 7)
    with pytest.raises(ValueError, match="cap"):
        looks(0)


def stream(
    difference: float, seed: int, noise: float = 4.0, length: int = 3200
) -> Callable[[int, float], Verdict]:
    """The verdict on the first n scenarios of a synthetic stream where averagely moves
    `difference` (a fraction) more than sticky in expectation, each scenario's size its own and
    each candidate's moves noisy on top (the known answer: sticky when `difference` is well
    beyond the 10% band, a tie well within it)."""
    rng = random.Random(seed)
    sizes = [rng.uniform(10.0, 40.0) for _ in range(length)]
    sticky = [size + rng.gauss(0.0, noise) for size in sizes]
    averagely = [size * (1 + difference) + rng.gauss(0.0, noise) for size in sizes]

    def verdict_at(count: int, confidence: float) -> Verdict:
        summary, means = paired({"sticky": sticky[:count], "averagely": averagely[:count]})
        return decide(summary, SYSTEM, scenario_means=means, confidence=confidence)

    return verdict_at


def test_a_clear_difference_stops_early_and_picks_right_in_95_percent_of_seeded_runs() -> None:
    runs = [draw_until_settled(3200, stream(0.25, seed, length=400)) for seed in range(100)]
    right = sum(run.verdict.recommended == ("sticky",) for run in runs)
    assert right >= 95
    assert all(not run.capped for run in runs)
    assert max(run.scenarios for run in runs) <= 400


def test_no_difference_settles_as_a_tie_in_95_percent_of_seeded_runs() -> None:
    runs = [draw_until_settled(3200, stream(0.0, seed, length=400)) for seed in range(100)]
    tied = sum(set(run.verdict.recommended) == {"sticky", "averagely"} for run in runs)
    assert tied >= 95
    assert all(not run.capped for run in runs)
    assert max(run.scenarios for run in runs) <= 400


def test_a_difference_at_the_bands_edge_stops_at_the_cap_and_says_so() -> None:
    stopped = draw_until_settled(400, stream(0.10, seed=1, noise=8.0))
    assert stopped.capped
    assert stopped.scenarios == 400
    still = unsettled(stopped.verdict)
    assert still
    assert {still[0][0], still[0][1]} == {"sticky", "averagely"}
    sentence = drawn_until_decided(stopped.scenarios, stopped.planned, stopped.confidence, still)
    assert sentence.startswith("Stopped at the cap of 400 scenarios (--max-scenarios;")
    assert "still level" in sentence
    assert "on moves" in sentence
    # no contradiction with the tie the verdict reports: not settled, either will do so far
    assert "as far as 400 scenarios tell, either will do" in sentence
    early = draw_until_settled(400, stream(0.5, seed=1))
    assert not early.capped
    assert drawn_until_decided(early.scenarios, early.planned, early.confidence, []) == (
        f"Decided on {early.scenarios} scenarios, drawn until settled (intervals at 98.8%, "
        "for 4 planned looks of at most 400 scenarios)."
    )


def test_at_the_bands_edge_few_runs_settle_though_every_one_looks_four_times() -> None:
    # averagely moves 1/9 more: the difference is exactly the band (10% of the larger mean),
    # where neither "better" nor "level" is true; a run that settles errs. Bonferroni over the
    # looks keeps that under 5% (uncorrected 95% intervals at each look settle about 13%).
    runs = [draw_until_settled(400, stream(1 / 9, seed, length=400)) for seed in range(100)]
    assert sum(not run.capped for run in runs) <= 5


def test_scenarios_auto_or_a_count_and_the_cap_are_checked_naming_the_option(
    tmp_path: Path,
) -> None:
    parser = compare_parser("rebalancing compare")
    out = str(tmp_path / "out")
    auto = profile_from(parser.parse_args(["--max-scenarios", "200", "--out", out]))
    assert (auto.scenarios, auto.max_scenarios) == (200, 200)
    assert "200 scenarios (drawn until decided, at most 200)" in auto.describe()
    fixed = profile_from(parser.parse_args(["--scenarios", "30", "--out", out]))
    assert (fixed.scenarios, fixed.max_scenarios) == (30, None)
    default = profile_from(parser.parse_args(["--out", out]))
    assert (default.scenarios, default.max_scenarios) == (DEFAULT_MAX_SCENARIOS,) * 2
    for arguments, message in [
        (["--scenarios", "many"], "--scenarios: expected a number of scenarios or auto"),
        (["--scenarios", "0"], "--scenarios must be between 1 and"),
        (["--max-scenarios", "0"], "--max-scenarios must be between 1 and"),
        (
            ["--scenarios", "500", "--max-scenarios", "2000"],
            "--max-scenarios: only with --scenarios auto; --scenarios 500 scores exactly 500",
        ),
    ]:
        with pytest.raises(ParameterError, match=message):
            profile_from(parser.parse_args([*arguments, "--out", out]))


def test_a_cap_beside_a_fixed_count_is_one_line_naming_both(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # it was ignored without a word: --scenarios N scores exactly N whatever the cap says
    arguments = ["--scenarios", "40", "--max-scenarios", "10", "--out", str(tmp_path / "out")]
    assert compare_main(arguments) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert error.startswith("error: --max-scenarios: only with --scenarios auto")
    assert not (tmp_path / "out" / "run.json").exists()


def test_a_run_drawn_until_decided_scores_what_a_fixed_run_of_as_many_scenarios_does() -> None:
    settings = ScenarioSettings(queue_range=(8, 40), consumer_range=(2, 8))
    drawn = Profile(
        system="rocketmq-broker",
        scenarios=100,
        max_scenarios=100,
        strategies=("sticky", "round_robin"),
        settings=settings,
    )
    comparison = compare_profile(drawn)
    assert comparison.profile is not None
    taken = comparison.profile.scenarios
    assert taken in (50, 100)
    assert f"Decided on {taken} scenarios" in comparison.verdict.reason or (
        "Stopped at the cap of 100 scenarios" in comparison.verdict.reason
    )
    fixed = compare_profile(replace(drawn, scenarios=taken, max_scenarios=None))
    for key, metrics_of in fixed.summary.items():
        assert metrics_of["moves"] == comparison.summary[key]["moves"], key
    assert "Decided on" not in fixed.verdict.reason
    assert f"averaged over {taken}: " in fixed.verdict.reason or fixed.verdict.is_tie
