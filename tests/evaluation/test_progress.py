"""The progress of a comparison on a terminal: a line rewritten in place with the scenarios
scored and the time left, an estimate line before a batch that will take minutes, nothing at
all when standard error is a pipe or a file; and the line that says a large run goes to
Spark."""

from __future__ import annotations

import io
import sys
import types
from pathlib import Path

import pytest

from rebalancing.cli import main as rebalancing_main
from rebalancing.evaluation.command.compare import compare
from rebalancing.evaluation.command.profile import Profile
from rebalancing.evaluation.command.progress import Progress, duration
from rebalancing.evaluation.scenarios.changes import ScenarioSettings


class Terminal(io.StringIO):
    """What a terminal receives: a stream that says it is one."""

    def isatty(self) -> bool:
        return True


class Clock:
    """A clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def run_batch(progress: Progress, clock: Clock, start: int, end: int, seconds: float) -> None:
    progress.batch(start, end, "batch 1 of at most 3")
    for _ in progress.scenarios(range(start, end)):
        clock.now += seconds


def test_a_terminal_sees_the_scenarios_scored_and_the_line_is_erased_at_the_end() -> None:
    terminal, clock = Terminal(), Clock()
    progress = Progress(terminal, clock)
    run_batch(progress, clock, 0, 10, 1.0)
    shown = terminal.getvalue()
    assert "\rscored 1/10 scenarios (batch 1 of at most 3), 1 s, about 9 s left" in shown
    assert "scored 10/10 scenarios (batch 1 of at most 3), 10 s" in shown
    assert "About" not in shown  # ten seconds: no estimate
    progress.finish()
    erased = terminal.getvalue().split("\r")[-2]  # blanks over the widest line drawn
    assert erased.strip() == ""
    assert len(erased) >= max(len(drawn) for drawn in shown.split("\r"))


def test_a_batch_that_will_take_minutes_says_so_once_its_pace_is_known() -> None:
    terminal, clock = Terminal(), Clock()
    progress = Progress(terminal, clock)
    run_batch(progress, clock, 0, 100, 2.0)
    lines = [line for line in terminal.getvalue().split("\n")[:-1]]
    assert len(lines) == 1
    assert lines[0].endswith("About 3 min 14 s for 97 more scenarios (2.00 s each so far).")
    # the next batch is estimated before its first scenario, from this one's pace
    progress.batch(100, 400, "batch 2 of at most 3", ", then the verdict is looked at again")
    assert terminal.getvalue().endswith(
        "About 10 min for 300 more scenarios (2.00 s each so far), then the verdict is looked "
        "at again.\n"
    )


def test_the_pace_is_trusted_after_three_scenarios_and_two_seconds_both() -> None:
    # 0.25 s a scenario: after 3 scenarios only 0.75 s have passed; the pace is read at the
    # 8th, when 2 s have, and 992 scenarios are left
    terminal, clock = Terminal(), Clock()
    progress = Progress(terminal, clock)
    run_batch(progress, clock, 0, 1000, 0.25)
    lines = terminal.getvalue().split("\n")[:-1]
    assert len(lines) == 1
    assert lines[0].endswith("About 4 min 8 s for 992 more scenarios (0.25 s each so far).")


def test_a_pipe_or_a_file_gets_nothing() -> None:
    piped, clock = io.StringIO(), Clock()
    progress = Progress(piped, clock)
    run_batch(progress, clock, 0, 100, 2.0)
    progress.finish()
    assert piped.getvalue() == ""


def test_durations_read_as_a_person_says_them() -> None:
    assert [duration(s) for s in (4.4, 59, 61, 250, 605, 3600, 3900)] == [
        "4 s",
        "59 s",
        "1 min 1 s",
        "4 min 10 s",
        "10 min",
        "1 h",
        "1 h 5 min",
    ]


def test_a_comparison_drawn_until_decided_shows_its_batches_on_a_terminal_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    profile = Profile(
        system="rocketmq-broker",
        scenarios=60,
        max_scenarios=60,
        strategies=("sticky", "round_robin"),
        settings=ScenarioSettings(
            queue_range=(4, 12), consumer_range=(1, 4), change_count_range=(1, 2)
        ),
    )
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    compare(profile, progress=True)
    assert "scored 50/50 scenarios (batch 1 of at most 2)" in terminal.getvalue()
    piped = io.StringIO()
    monkeypatch.setattr(sys, "stderr", piped)
    compare(profile, progress=True)
    assert piped.getvalue() == ""


class HandedToSparkError(Exception):
    """Raised by the stand-in for the harness: the command got as far as running it."""


def test_a_run_too_large_for_one_process_says_it_goes_to_spark(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    def run(options: object) -> None:
        raise HandedToSparkError

    monkeypatch.setitem(sys.modules, "rebalancing.harness.job", types.SimpleNamespace(run=run))
    out = str(tmp_path / "out")
    with pytest.raises(HandedToSparkError):
        rebalancing_main(["compare", "--scenarios", "20001", "--out", out])
    assert capsys.readouterr().err.startswith(
        "20,001 scenarios, more than 20,000: scoring them with the Spark harness"
    )
    with pytest.raises(HandedToSparkError):  # asked for by name: no line
        rebalancing_main(["compare", "--engine", "spark", "--scenarios", "30", "--out", out])
    assert capsys.readouterr().err == ""
    assert rebalancing_main(["compare", "--engine", "spark", "--out", out]) == 2
    assert "--engine spark scores a fixed number of scenarios" in capsys.readouterr().err
