"""`python -m rebalancing.evaluation`: the scoring core in one process, with the summary table."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rebalancing.evaluation.__main__ import main


def test_prints_a_table_line_per_strategy_and_change(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--scenarios", "25", "--seed", "3", "--strategies", "sticky,averagely"]) == 0
    output = capsys.readouterr().out
    assert "| sticky | all |" in output
    assert "| averagely | all |" in output
    assert "round_robin" not in output
    assert "25 scenarios (seed 3) x 2 strategies" in output


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--scenarios", "0"], "--scenarios must be positive"),
        (["--strategies", "sticky,bogus"], "--strategies: unknown strategy 'bogus'"),
        (["--seed", "x"], "--seed"),
    ],
)
def test_bad_parameters_exit_non_zero_naming_the_parameter(
    arguments: list[str], message: str
) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "rebalancing.evaluation", *arguments], capture_output=True, text=True
    )
    assert completed.returncode == 2
    assert message in completed.stderr
