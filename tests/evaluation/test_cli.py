"""`python -m rebalancing.evaluation`: the scoring core in one process, with the summary table."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios

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
        (["--views", "peer"], "--views"),
        (["--views", "client", "--stale-probability", "2"], "stale_probability"),
        (["--views", "client", "--max-delay", "0"], "max_delay"),
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


def test_client_views_add_their_columns(capsys: pytest.CaptureFixture[str]) -> None:
    arguments = ["--scenarios", "20", "--strategies", "averagely,sticky", "--views", "client"]
    assert main([*arguments, "--stale-probability", "1", "--seed", "2"]) == 0
    output = capsys.readouterr().out
    assert "queue-periods read twice mean" in output


def test_a_terminal_gets_a_progress_bar_and_a_pipe_does_not() -> None:
    command = [sys.executable, "-m", "rebalancing.evaluation", "--scenarios", "30"]
    command += ["--strategies", "averagely"]
    piped = subprocess.run(command, capture_output=True, text=True, check=True)
    assert "30/30" not in piped.stderr
    parent, child = pty.openpty()
    rows_columns = struct.pack("HHHH", 24, 100, 0, 0)  # a terminal's size, as a real one has
    fcntl.ioctl(child, termios.TIOCSWINSZ, rows_columns)
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=child, check=True)
    os.close(child)
    shown = b""
    while True:
        try:
            chunk = os.read(parent, 65536)
        except OSError:  # the other end is closed and everything was read
            break
        if not chunk:
            break
        shown += chunk
    os.close(parent)
    assert b"30/30" in shown, shown
