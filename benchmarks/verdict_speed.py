"""How long `rebalancing compare` takes to a verdict on issue 40's two profiles, as a person runs
it: the whole command (Python start, imports, scoring, figures, report.html) in a subprocess,
median of REPEATS runs, with its CPU seconds, the scoring alone ("Scored in"), the rest of the
command (the whole less the scoring: start, imports, arguments, the report's files) and when the
verdict was on the screen (its "Scored in" line read from the command's output); optionally the
same commands on the package as it was at another commit (`--baseline`), run in turn with the
working tree's so that both sides see the same machine load.

    python benchmarks/verdict_speed.py [--repeats 3] [--scenarios 1000|auto] [--baseline REV]
        [--pause-others] [--out benchmarks/results/verdict_speed.md]

`--pause-others` stops every other Python and Java process of the machine while each run lasts
(paused_others.py): an idle machine, as the targets are set for, on a shared one.

The profiles: the tutorial's (Kafka eager, 64 queues, 4-12 consumers, rolling restarts and
crashes) and the zones-and-weights one of issue 40 (Kafka eager, 96 queues, 6-24 consumers, 3
zones, Zipf weights, the change mix of the Kafka guide's zones example). Issue 40's targets on
an idle 2-core machine: 3 s and 30 s for the whole command. The scenario count is given
explicitly (1,000, the count the targets were set at), so the figures do not depend on the
command's default; `--scenarios auto` times the command as the tutorial runs it.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import math
import os
import re
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from paused_others import others_paused
from shared import commit, description, source_at

ROOT = Path(__file__).resolve().parents[1]

PROFILES = {
    "tutorial": [
        "--system",
        "kafka-eager",
        "--queues",
        "64",
        "--consumers",
        "4:12",
        "--mix",
        "rolling_restart=3,crash=1",
    ],
    "zones and weights": [
        "--system",
        "kafka-eager",
        "--queues",
        "96",
        "--consumers",
        "6:24",
        "--zones",
        "3",
        "--weights",
        "zipf",
        "--mix",
        "rolling_restart=3,crash=1,zone_outage=1,zone_recovery=1,load_shift=1",
    ],
}
"""Issue 40's two profiles, by name: the options of `rebalancing compare`."""

TARGETS = {"tutorial": 3.0, "zones and weights": 30.0}
"""Issue 40's targets for the whole command, seconds, on an idle 2-core machine."""

SCORED = re.compile(r"Scored in ([\d.]+) s\.")


class Run(NamedTuple):
    """One run of the command, in seconds: the whole of it, its CPU time, the scoring it reports,
    and when its verdict was printed (from the start)."""

    whole: float
    cpu: float
    scoring: float
    verdict_shown: float

    @property
    def outside_scoring(self) -> float:
        """The command's time less its scoring: Python's start, the imports, the arguments and
        the registry, and writing summary.md, the figures and report.html."""
        return self.whole - self.scoring


COLUMNS = ("whole", "cpu", "scoring", "outside_scoring", "verdict_shown")
"""The figures of a Run in the table's order."""


def one_run(options: list[str], source: Path, pause_others: bool = False) -> Run:
    """One run of `rebalancing compare` with the package found in `source` (a src folder). The
    CPU seconds (user and system, the command's and its children's) are what an idle machine's
    wall time would be, nearly, for a command that uses one core: a loaded machine lengthens the
    wall time by the turns the process waits, not its CPU time (though two hardware threads of
    one core slow each other somewhat). With `pause_others`, the machine's other Python and Java
    processes are stopped while it runs."""
    environment = {**os.environ, "PYTHONPATH": str(source)}
    with tempfile.TemporaryDirectory() as out:
        command = [sys.executable, "-m", "rebalancing", "compare", *options, "--out", out]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        pausing = others_paused() if pause_others else contextlib.nullcontext()
        with pausing:
            whole, shown, lines, returncode = _timed_command(command, environment)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if returncode != 0:
        raise RuntimeError(f"{shlex.join(command)} exited {returncode}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    found = SCORED.search("".join(lines))
    if found is None:
        raise RuntimeError(f"no 'Scored in' line in:\n{''.join(lines)}")
    return Run(whole, cpu, float(found.group(1)), shown)


def _timed_command(
    command: list[str], environment: dict[str, str]
) -> tuple[float, float, list[str], int]:
    """Run `command`: its wall seconds, when its 'Scored in' line came, its output lines and
    its exit code."""
    started = time.perf_counter()
    shown, lines = math.nan, []
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=environment
    ) as process:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if math.isnan(shown) and SCORED.search(line):
                shown = time.perf_counter() - started
    return time.perf_counter() - started, shown, lines, process.returncode


def scenarios_text(scenarios: str) -> str:
    """The --scenarios given, as the table's sentence says it."""
    return f"{int(scenarios):,} scenarios" if scenarios.isdigit() else f"--scenarios {scenarios}"


def main() -> int:
    parser = argparse.ArgumentParser(description=description(__doc__))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--scenarios",
        default="1000",
        help="a count, or auto: drawn until the verdict is settled, the command's default",
    )
    parser.add_argument("--baseline", help="a git revision to time beside the working tree")
    parser.add_argument("--profiles", default=",".join(PROFILES), help="comma-separated names")
    parser.add_argument(
        "--pause-others",
        action="store_true",
        help="stop the machine's other Python and Java processes while each run lasts",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/verdict_speed.md")
    given = parser.parse_args()
    names = given.profiles.split(",")
    unknown = [name for name in names if name not in PROFILES]
    if unknown:
        parser.error(f"unknown profiles {unknown}; known: {', '.join(PROFILES)}")
    load, measured = os.getloadavg()[0], commit()
    with tempfile.TemporaryDirectory() as scratch:
        sources = {f"working tree ({measured})": ROOT / "src"}
        if given.baseline:
            sources[f"baseline ({given.baseline})"] = source_at(given.baseline, Path(scratch))
        results: dict[tuple[str, str], list[Run]] = {}
        for name in names:
            options = [*PROFILES[name], "--scenarios", str(given.scenarios), "--seed", "1"]
            for _ in range(given.repeats):  # the sides in turn: the same load for both
                for side, source in sources.items():
                    run = one_run(options, source, given.pause_others)
                    results.setdefault((name, side), []).append(run)
                    print(name, side, results[(name, side)][-1], file=sys.stderr)
    lines = [
        "# How long `rebalancing compare` takes to a verdict (issue 40's profiles)",
        "",
        f"`python benchmarks/verdict_speed.py {shlex.join(sys.argv[1:])}`"
        + f", commit {measured}, {datetime.date.today().isoformat()}, {os.cpu_count()} cores, "
        f"load average {load:.1f} at the start and LOAD_AT_END at the end"
        + (
            ", the machine's other Python and Java processes stopped while each run lasted "
            "(--pause-others: idle, as the targets are set for). "
            if given.pause_others
            else " (a loaded machine makes every column longer: the other work's processes "
            "take turns with this one). "
        )
        + f"{scenarios_text(given.scenarios)}, seed 1; medians of {given.repeats} runs; the sides "
        "ran in turn. Targets (issue 40, idle 2-core machine, whole command): "
        + ", ".join(f"{name} {seconds:.0f} s" for name, seconds in TARGETS.items())
        + ".",
        "",
        "Outside scoring: the whole command less the scoring it reports (Python's start, the "
        "imports, the arguments, summary.md, the figures, report.html); verdict shown: when its "
        "'Scored in' line was read from the command's output, from the start.",
        "",
        "| profile | options | package | whole command s | its CPU s | scoring s "
        "| outside scoring s | verdict shown s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (name, side), runs in results.items():
        figures = [statistics.median(getattr(run, column) for run in runs) for column in COLUMNS]
        lines.append(
            f"| {name} | `{' '.join(PROFILES[name])}` | {side} | "
            + " | ".join(f"{figure:.2f}" for figure in figures)
            + " |"
        )
    text = "\n".join(lines) + "\n"
    text = text.replace("LOAD_AT_END", f"{os.getloadavg()[0]:.1f}")
    given.out.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
