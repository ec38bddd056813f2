"""The command lines of a comparison: `rebalancing compare` (and `python -m rebalancing`),
`python -m rebalancing.evaluation`, their shared profile options, outputs and verdict."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
import tomllib
from pathlib import Path
from typing import Any

import pytest

from rebalancing import __version__
from rebalancing.cli import main as rebalancing_main
from rebalancing.evaluation.__main__ import main
from rebalancing.evaluation.command import compare as comparing
from rebalancing.evaluation.command.compare import compare_parser
from rebalancing.evaluation.command.pipes import READER_LEFT
from rebalancing.evaluation.command.profile import Profile, profile_from
from rebalancing.evaluation.decision.systems import ANY_SYSTEM, SYSTEM_VERDICTS, how_to_run
from rebalancing.evaluation.moved import MOVED, REMOVED_IN

SMALL = ["--queues", "1:60", "--consumers", "1:12"]


def test_the_verdict_closes_the_output_and_the_files_hold_the_rest(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    arguments = ["--scenarios", "25", "--seed", "3", "--strategies", "sticky,averagely", *SMALL]
    assert main([*arguments, "--out", str(tmp_path)]) == 0
    output = capsys.readouterr().out
    lines = output.splitlines()
    assert lines[0] == "Which strategy for this group on any system (every default strategy)?"
    assert "1-60 queues, 1-12 consumers" in output
    assert any(line.startswith("sticky ") for line in lines)
    assert any(line.startswith("averagely ") for line in lines)
    assert "round_robin" not in output
    assert "Use sticky." in output or "Tie." in output
    assert len(lines) <= 35
    assert f"Report: {tmp_path / 'report.html'}" in output
    # under `any` the last word is the command that gives a verdict for one's own system
    command = lines.index("  rebalancing compare --system SYSTEM")
    assert lines[command + 1].startswith("SYSTEM one of kafka-eager, kafka-cooperative,")
    named = " ".join(lines[command + 1 :])
    assert named.endswith("(rebalancing systems describes them).")
    assert "rocketmq-broker" in named  # no name broken at its hyphen
    assert all(len(line) <= 100 for line in lines[command - 2 :])  # wrapped as the verdict is
    for name in ("summary.md", "summary.csv", "run.json", "report.html", "stickiness.png"):
        assert (tmp_path / name).is_file(), name
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert summary.startswith("# Which strategy for this group?")
    assert "| sticky | all |" in summary
    assert "# Glossary" in summary
    run = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    assert run["system"] == "any"
    assert run["verdict"]["recommended"]


def test_the_verdict_is_printed_before_the_report_is_written(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    printed_first = []
    writing = comparing.write_outputs

    def write_outputs(*arguments: Any, **options: Any) -> None:
        printed_first.append(capsys.readouterr().out)
        writing(*arguments, **options)

    monkeypatch.setattr(comparing, "write_outputs", write_outputs)
    arguments = ["--scenarios", "5", "--strategies", "sticky,averagely", *SMALL]
    assert main([*arguments, "--out", str(tmp_path)]) == 0
    assert len(printed_first) == 1
    assert "Scored in" in printed_first[0]
    assert capsys.readouterr().out == ""  # the verdict was all
    assert (tmp_path / "report.html").is_file()


def test_the_full_table_is_printed_on_request(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    arguments = ["--scenarios", "10", "--strategies", "sticky", "--table", *SMALL]
    assert main([*arguments, "--out", str(tmp_path)]) == 0
    assert "| sticky | all |" in capsys.readouterr().out


def test_the_system_chooses_the_candidates(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    arguments = ["compare", "--system", "rabbitmq-sac", "--scenarios", "15", *SMALL]
    assert rebalancing_main([*arguments, "--out", str(tmp_path)]) == 0
    rows = [line.split()[0] for line in capsys.readouterr().out.splitlines() if line]
    assert {"sac", "sac_newest", "sac_random", "super_stream"} <= set(rows)
    assert "sticky" not in rows
    assert "SYSTEM" not in rows  # the verdict is for this system: no pointer to another
    assert "averagely" not in rows


def test_rebalancing_systems_lists_every_system_with_its_candidates(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert rebalancing_main(["systems"]) == 0
    output = capsys.readouterr().out
    for system in ("kafka-eager", "kafka-cooperative", "rocketmq-client", "rabbitmq-sac", "any"):
        assert f"{system}:" in output
    cooperative = output.split("kafka-cooperative:")[1].split("\nkafka")[0]
    assert "cooperative_sticky" in cooperative
    assert "sticky," not in cooperative.replace("cooperative_sticky", "")


def test_systems_say_what_each_candidate_needs_and_what_runs_without_the_library(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert rebalancing_main(["systems"]) == 0
    output = capsys.readouterr().out
    sac = output.split("rabbitmq-sac:")[1].split("pulsar-failover:")[0]
    assert "super_stream needs streams: RabbitMQ 3.11 or later" in sac
    assert "sac, sac_newest, sac_random need the group member in each app" in sac
    assert "without this library: every consumer subscribes to every queue" in sac
    blocks: dict[str, list[str]] = {}
    for line in output.splitlines():
        if not line.startswith(" "):
            blocks[line.split(":")[0]] = []
        else:
            blocks[list(blocks)[-1]].append(line)
    assert set(blocks) == set(SYSTEM_VERDICTS)
    for system, lines in blocks.items():
        today = [line for line in lines if line.startswith("  without this library: ")]
        assert len(today) == (system != ANY_SYSTEM), system
    assert "(the plan of averagely)" in output.split("kafka-eager:")[1].split("kafka-coop")[0]
    assert "It needs streams: RabbitMQ 3.11" in (how_to_run("rabbitmq-sac", "super_stream") or "")
    assert "GroupMember" in (how_to_run("rabbitmq-sac", "sac_newest") or "")
    assert "It needs" not in (how_to_run("kafka-eager", "sticky") or "")


def test_the_verdict_says_what_changing_from_todays_setup_gives(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    arguments = ["compare", "--system", "kafka-eager", "--scenarios", "10", *SMALL]
    arguments += ["--strategies", "averagely,sticky", "--out", str(tmp_path)]
    assert rebalancing_main(arguments) == 0
    output = " ".join(capsys.readouterr().out.split())
    assert (
        "Without this library: the Kafka clients' default assignor, RangeAssignor (averagely in "
        "the table). Changing to sticky gives, in means: " in output
    )
    assert "stickiness " in output.split("Changing to sticky gives")[1].split("Use sticky")[0]


SOURCE = Path(__file__).parents[2] / "src"


def _without_the_spark_extra(arguments: list[str]) -> subprocess.CompletedProcess[str]:
    """`rebalancing ARGUMENTS` in a fresh interpreter without site-packages (`-S`): the package
    from its source and the standard library, as `pip install -e .` leaves a library user."""
    code = (
        f"import sys; sys.path.insert(0, {str(SOURCE)!r}); "
        f"from rebalancing.cli import main; sys.exit(main({arguments!r}))"
    )
    return subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=120, check=False
    )


def test_systems_and_help_work_with_the_library_alone() -> None:
    systems = _without_the_spark_extra(["systems"])
    assert systems.returncode == 0, systems.stderr
    assert "kafka-eager:" in systems.stdout
    helped = _without_the_spark_extra(["--help"])
    assert helped.returncode == 0, helped.stderr
    assert "compare" in helped.stdout


def test_compare_and_harness_without_the_spark_extra_name_what_to_install() -> None:
    for command in ("compare", "harness"):
        completed = _without_the_spark_extra([command, "--scenarios", "10"])
        assert completed.returncode == 2
        assert "Traceback" not in completed.stderr
        assert f"rebalancing {command} needs" in completed.stderr
        assert "matplotlib" in completed.stderr
        assert "pip install -e '.[spark]'" in completed.stderr


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--scenarios", "0"], "--scenarios must be between 1 and"),
        (["--scenarios", "10000000000000000000"], "--scenarios must be between 1 and"),
        (["--strategies", "sticky,bogus"], "--strategies: unknown strategy 'bogus'"),
        (["--seed", "x"], "--seed"),
        (["--views", "peer"], "--views"),
        (["--views", "client", "--stale-probability", "2"], "stale_probability"),
        (["--views", "client", "--max-delay", "0"], "max_delay"),
        (["--queues", "0"], "--queues: need 1 <= LOW <= HIGH"),
        (["--queues", "9:3"], "--queues: need 1 <= LOW <= HIGH"),
        (["--consumers", "a:b"], "--consumers: expected a count N or a range LOW:HIGH"),
        (["--mix", "join=nan"], "--mix: weight of 'join' must be a finite number >= 0"),
        (["--mix", "join=inf"], "--mix: weight of 'join' must be a finite number >= 0"),
        (["--mix", "join=1e999"], "--mix: weight of 'join' must be a finite number >= 0"),
        (["--mix", "join=-1"], "--mix: weight of 'join' must be a finite number >= 0"),
        (["--mix", "nothing=1"], "--mix: unknown change kind 'nothing'"),
        (["--system", "kafka-classic"], "argument --system: invalid choice: 'kafka-classic'"),
        (["--system", "kafka", "--from", "eager"], "--from: expected PROTOCOL:ASSIGNOR"),
        (["--from", "eager:range"], "--from: only with --system kafka"),
        (["--system", "kafka-eagr"], "(did you mean 'kafka-eager'?)"),
        (["--queues", "9223372036854775808"], "--queues: at most 100,000, got"),
        (["--queues", "1000000000"], "--queues: at most 100,000, got"),
        (["--consumers", "1000000000"], "--consumers: at most 10,000, got"),
        (["--consumers", str(10**23)], "--consumers: at most 10,000, got"),
        (["--changes", f"1:{10**23}"], "--changes: at most 1,000, got"),
        (["--zones", "27"], "--zones: at most 26, got"),
        (["--mix", ""], "--mix: empty; give kind=weight pairs"),
        (["--mix", "join=1,join=2"], "--mix: 'join' is given twice"),
        (["--sytem", "kafka-eager"], "(did you mean --system?)"),
        (
            ["--system", "rocketmq-client", "--strategies", "sticky"],
            "--strategies: none of sticky runs on --system rocketmq-client",
        ),
    ],
)
def test_bad_parameters_exit_2_naming_the_parameter(
    arguments: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both entry points, called as their commands call them (the commands' own processes:
    test_a_bad_parameter_ends_the_process_with_2_and_one_line)."""
    for command in (main, lambda given: rebalancing_main(["compare", *given])):
        try:
            code = command([*arguments, "--out", str(tmp_path / "out")])
        except SystemExit as stop:  # argparse's own errors
            code = stop.code
        stderr = capsys.readouterr().err
        assert code == 2, (command, stderr)
        assert message in stderr
        assert len(stderr.strip().splitlines()) == 1, stderr
        assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--queues", "9:3"], "--queues: need 1 <= LOW <= HIGH"),
        (["--system", "kafka-classic"], "argument --system: invalid choice: 'kafka-classic'"),
    ],
)
def test_a_bad_parameter_ends_the_process_with_2_and_one_line(
    arguments: list[str], message: str, tmp_path: Path
) -> None:
    for command in (
        [sys.executable, "-m", "rebalancing.evaluation"],
        [sys.executable, "-m", "rebalancing", "compare"],
    ):
        completed = subprocess.run(
            [*command, *arguments, "--out", str(tmp_path / "out")],
            capture_output=True,
            text=True,
        )
        assert completed.returncode == 2, (command, completed.stderr)
        assert message in completed.stderr
        assert len(completed.stderr.strip().splitlines()) == 1, completed.stderr


def test_an_out_holding_an_earlier_run_is_refused_unless_replaced(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "rows.parquet").mkdir()
    (tmp_path / "client_views.png").write_bytes(b"old")
    (tmp_path / "run.json").write_text("{}")
    arguments = ["--scenarios", "5", "--strategies", "sticky", *SMALL, "--out", str(tmp_path)]
    assert main(arguments) == 2
    assert "--replace" in capsys.readouterr().err
    assert (tmp_path / "client_views.png").exists()
    assert main([*arguments, "--replace"]) == 0
    assert not (tmp_path / "rows.parquet").exists()
    assert not (tmp_path / "client_views.png").exists()
    assert (tmp_path / "report.html").exists()


def test_every_default_is_shown_in_help_with_the_glossary() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "rebalancing", "compare", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "(default: 1:4096)" in completed.stdout
    assert "(default: any)" in completed.stdout
    assert "(default: auto)" in completed.stdout
    assert "(default: 3200)" in completed.stdout
    assert "stickiness (%, higher is better)" in completed.stdout


def test_client_views_add_their_columns(tmp_path: Path) -> None:
    arguments = ["--scenarios", "20", "--strategies", "averagely,sticky", "--views", "client"]
    assert (
        main([*arguments, "--stale-probability", "1", "--seed", "2", "--out", str(tmp_path)]) == 0
    )
    assert "read twice mean" in (tmp_path / "summary.md").read_text(encoding="utf-8")


def test_a_terminal_gets_a_progress_bar_and_a_pipe_does_not(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "rebalancing.evaluation", "--scenarios", "30"]
    command += ["--strategies", "averagely", "--out", str(tmp_path / "piped")]
    piped = subprocess.run(command, capture_output=True, text=True, check=True)
    assert "30/30" not in piped.stderr
    parent, child = pty.openpty()
    rows_columns = struct.pack("HHHH", 24, 100, 0, 0)  # a terminal's size, as a real one has
    fcntl.ioctl(child, termios.TIOCSWINSZ, rows_columns)
    command[-1] = str(tmp_path / "terminal")
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


def test_a_user_strategy_named_like_a_registered_one_is_refused_beside_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "impostor.py").write_text(
        "from rebalancing.strategies import Strategy, round_robin\n"
        "sticky = Strategy('sticky', round_robin.assign, 'not the registered sticky')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    arguments = ["--scenarios", "5", "--strategies", "sticky,impostor:sticky", *SMALL]
    assert main([*arguments, "--out", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err
    assert "'sticky' and 'impostor:sticky' are both named 'sticky'" in error
    assert not (tmp_path / "out" / "summary.md").exists()


def test_replace_deletes_only_an_earlier_runs_directory(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "thesis.txt").write_text("not a run's output")
    arguments = ["--scenarios", "3", "--strategies", "sticky", *SMALL, "--out", str(tmp_path)]
    for replace in ([], ["--replace"]):
        assert main([*arguments, *replace]) == 2
        error = capsys.readouterr().err
        # what is there, and no suggestion of a --replace that would refuse it
        assert "holds files of no run (thesis.txt; no run.json or report.html)" in error
        assert "earlier run" not in error
        assert "--replace" not in error
    assert (tmp_path / "thesis.txt").read_text() == "not a run's output"


def test_the_default_out_is_the_commands_own_and_each_run_replaces_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    arguments = ["--scenarios", "3", *SMALL]
    assert rebalancing_main(["compare", *arguments, "--strategies", "sticky"]) == 0
    assert rebalancing_main(["compare", *arguments, "--strategies", "averagely"]) == 0
    capsys.readouterr()
    summary = (tmp_path / "out" / "compare" / "summary.md").read_text(encoding="utf-8")
    assert "| averagely | all |" in summary
    assert "| sticky |" not in summary
    # a folder the user names keeps its refusal
    named = ["compare", *arguments, "--strategies", "sticky", "--out", "out/compare"]
    assert rebalancing_main(named) == 2
    assert "holds an earlier run's files" in capsys.readouterr().err


def test_more_zones_than_consumers_in_every_scenario_is_said(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    parser = compare_parser("rebalancing compare")
    options = ["--consumers", "2:4", "--out", str(tmp_path / "a")]
    profile_from(parser.parse_args([*options, "--zones", "8"]))
    warning = capsys.readouterr().err
    assert warning.startswith("warning: --zones: at least 8 zones for at most 4 consumers")
    assert len(warning.splitlines()) == 1
    options[-1] = str(tmp_path / "b")
    profile_from(parser.parse_args([*options, "--zones", "4"]))  # a zone each is possible
    assert capsys.readouterr().err == ""


def test_systems_takes_help_and_refuses_other_options(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as helped:
        rebalancing_main(["systems", "--help"])
    assert helped.value.code == 0
    output = capsys.readouterr().out
    assert output.startswith("usage: rebalancing systems")
    assert "kafka-eager:" not in output
    with pytest.raises(SystemExit) as refused:
        rebalancing_main(["systems", "--bogus-option"])
    assert refused.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("error: unrecognized arguments: --bogus-option")


def test_version_is_printed_from_its_one_place(capsys: pytest.CaptureFixture[str]) -> None:
    assert rebalancing_main(["--version"]) == 0
    assert capsys.readouterr().out == f"rebalancing {__version__}\n"
    root = Path(__file__).parents[2]
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "version" not in project
    assert "version" in project["dynamic"]
    tools = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]
    assert tools["setuptools"]["dynamic"]["version"] == {"attr": "rebalancing.version.__version__"}
    assert f"\n## {__version__} " in (root / "CHANGELOG.md").read_text(encoding="utf-8")


def test_the_changelog_says_where_every_old_module_path_moved() -> None:
    changelog = (Path(__file__).parents[2] / "CHANGELOG.md").read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip(): line for line in changelog.splitlines() if "| `" in line}
    assert f"removed in {REMOVED_IN}" in changelog
    for old, news in MOVED.items():
        assert f"`{old}`" in rows, old
        assert [new for new in news if f"`{new}`" not in rows[f"`{old}`"].split("|")[2]] == []


@pytest.mark.parametrize(
    "command",
    [
        ["-m", "rebalancing", "compare"],
        ["-m", "rebalancing.evaluation"],
    ],
)
def test_a_reader_that_leaves_early_stops_the_command_quietly(
    command: list[str], tmp_path: Path
) -> None:
    reader, writer = os.pipe()
    os.close(reader)  # `head` that has read its lines and gone
    options = ["--scenarios", "3", "--strategies", "sticky", "--table"]
    completed = subprocess.run(
        [sys.executable, *command, *options, *SMALL, "--out", str(tmp_path / "out")],
        stdout=writer,
        stderr=subprocess.PIPE,
        text=True,
        timeout=300,
        check=False,
    )
    os.close(writer)
    assert completed.stderr == ""
    assert completed.returncode == READER_LEFT


def test_a_user_strategy_under_a_registered_name_is_judged_by_its_own_systems(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "mine.py").write_text(
        "from rebalancing.strategies import Strategy, averagely\n"
        "sticky = Strategy('sticky', averagely.assign, 'mine, named sticky')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    arguments = ["--system", "kafka-cooperative", "--scenarios", "5", *SMALL]
    arguments += ["--strategies", "mine:sticky,averagely", "--out", str(tmp_path / "out")]
    assert main(arguments) == 0
    output = capsys.readouterr().out
    assert "Not candidates" not in output
    assert any(line.startswith("sticky ") for line in output.splitlines())


def test_systems_name_the_deciding_scores_as_the_verdict_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The labels of the verdict's table, the ids (summary.csv's) in brackets where they
    differ."""
    assert rebalancing_main(["systems"]) == 0
    output = capsys.readouterr().out
    kafka = output.split("\nkafka:")[1].split("\nrocketmq-client:")[0]
    assert (
        "decides on, in order: unowned (queue_seconds_unowned), time (seconds_to_balance), "
        "paused s (queue_seconds_paused)" in kafka
    )
    assert "balance (balance_degree), moves, stickiness," in kafka


def test_compare_help_says_the_local_engine_uses_every_core(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        rebalancing_main(["compare", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "one process, no Spark" not in help_text
    assert "forks up to one scoring process per usable core" in help_text


def test_a_spark_runs_closing_lines_say_how_long_it_scored(tmp_path: Path) -> None:
    """The harness's run.json holds its wall seconds: the closing lines print them as the local
    engine does; without a run.json, no line (and no error)."""
    from rebalancing.harness.reports import scored_seconds

    (tmp_path / "run.json").write_text(json.dumps({"wall_seconds": 12.345}), "utf-8")
    assert scored_seconds(tmp_path) == 12.345
    assert scored_seconds(tmp_path / "nowhere") is None
    profile = Profile(system="kafka-eager", scenarios=2, seed=1)
    verdict = comparing.compare(profile).verdict
    closing = comparing.closing_lines(verdict, profile, scored_seconds(tmp_path))
    assert closing.endswith("Scored in 12.3 s.")
