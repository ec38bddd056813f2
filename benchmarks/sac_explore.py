"""The SAC explorer on its largest routine model, 4 queues x 3 apps from Init, per Position reading.

Usage: python benchmarks/sac_explore.py [--queues 4] [--apps 3] [--from init] [--runs 1]
                                        [--output benchmarks/results/sac_explore_4x3.md]

Each run is the command a user types, `python -m rebalancing.sac.explore --queues 4 --apps 3
--position {spec,id}`, in its own process, one at a time; the wall seconds, CPU seconds and peak
resident memory are that process's own (os.wait4), numba cache loading and interpreter start
included. It writes the medians per reading, `uptime` before and after (the machine may be
shared: CPU seconds are the steadier figure), the explorer's JSON per reading (every run must
print the same figures) and the fields where the two readings differ.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

READINGS = ("spec", "id")
HEADLINE = (
    "distinct_states",
    "terminal_states",
    "transitions",
    "release_transitions",
    "states_on_cycles",
)


@dataclass
class Run:
    """One explorer process: what it printed and what it cost."""

    figures: dict[str, Any]
    wall_seconds: float
    cpu_seconds: float
    peak_rss_bytes: int


def _explore_once(queues: int, apps: int, reading: str, starting_point: str) -> Run:
    command = [
        sys.executable,
        "-m",
        "rebalancing.sac.explore",
        f"--queues={queues}",
        f"--apps={apps}",
        f"--position={reading}",
        f"--from={starting_point}",
    ]
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    printed = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited with {process.returncode}")
    return Run(
        figures=json.loads(printed),
        wall_seconds=wall,
        cpu_seconds=usage.ru_utime + usage.ru_stime,
        peak_rss_bytes=usage.ru_maxrss * 1024,  # Linux reports kilobytes
    )


def _uptime() -> str:
    """What `uptime` prints (the load averages over 1, 5 and 15 minutes), and the core count."""
    printed = subprocess.run(["uptime"], capture_output=True, text=True, check=True).stdout
    return f"`{printed.strip()}` ({os.cpu_count()} cores)"


def _without_seconds(figures: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in figures.items() if name != "seconds"}


def _report(
    queues: int,
    apps: int,
    starting_point: str,
    runs: dict[str, list[Run]],
    load_before: str,
    load_after: str,
) -> str:
    command = (
        f"python -m rebalancing.sac.explore --queues {queues} --apps {apps} "
        f"--position {{spec,id}} --from {starting_point}"
    )
    lines = [
        f"# SAC explorer, {queues} queues x {apps} apps from `{starting_point}`",
        "",
        f"`python benchmarks/sac_explore.py --queues {queues} --apps {apps} --from "
        f"{starting_point} --runs {len(runs[READINGS[0]])}`, {datetime.now(UTC):%Y-%m-%d %H:%M} "
        f"UTC; Python {platform.python_version()} on {platform.machine()}. Each run is "
        f"`{command}` in a process of its own; medians over the runs. `uptime` before: "
        f"{load_before}; after: {load_after}.",
        "",
        "| reading | "
        + " | ".join(name.replace("_", " ") for name in HEADLINE)
        + " | wall s | CPU s | peak RSS |",
        "|---" * (len(HEADLINE) + 4) + "|",
    ]
    for reading in READINGS:
        figures = runs[reading][-1].figures
        wall = statistics.median(run.wall_seconds for run in runs[reading])
        cpu = statistics.median(run.cpu_seconds for run in runs[reading])
        rss = statistics.median(run.peak_rss_bytes for run in runs[reading])
        lines.append(
            f"| `{reading}` | "
            + " | ".join(f"{figures[name]:,}" for name in HEADLINE)
            + f" | {wall:.1f} | {cpu:.1f} | {rss / 2**20:,.0f} MiB |"
        )
    spec, by_id = (_without_seconds(runs[reading][-1].figures) for reading in READINGS)
    differing = [name for name in spec if name != "position" and spec[name] != by_id[name]]
    lines += [
        "",
        "Fields where the readings differ (spec against id): "
        + (
            ", ".join(f"`{name}` ({spec[name]:,} against {by_id[name]:,})" for name in differing)
            or "none"
        )
        + "; every other field is the same.",
        "",
        "Per run (wall s / CPU s / peak RSS MiB): "
        + "; ".join(
            f"`{reading}` "
            + ", ".join(
                f"{run.wall_seconds:.1f} / {run.cpu_seconds:.1f} / "
                f"{run.peak_rss_bytes / 2**20:,.0f}"
                for run in runs[reading]
            )
            for reading in READINGS
        )
        + ".",
    ]
    for reading in READINGS:
        lines += ["", f"`--position {reading}`:", "", "```json"]
        lines += json.dumps(runs[reading][-1].figures, indent=2).splitlines()
        lines.append("```")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queues", type=int, default=4)
    parser.add_argument("--apps", type=int, default=3)
    parser.add_argument("--from", dest="starting_point", default="init")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument(
        "--output", type=Path, default=Path("benchmarks/results/sac_explore_4x3.md")
    )
    options = parser.parse_args()
    load_before = _uptime()
    runs: dict[str, list[Run]] = {reading: [] for reading in READINGS}
    for _ in range(options.runs):
        for reading in READINGS:
            run = _explore_once(options.queues, options.apps, reading, options.starting_point)
            print(
                f"{reading}: {run.wall_seconds:.1f} s wall, {run.cpu_seconds:.1f} s CPU, "
                f"{run.peak_rss_bytes / 2**20:,.0f} MiB peak RSS",
                flush=True,
            )
            if runs[reading] and _without_seconds(run.figures) != _without_seconds(
                runs[reading][0].figures
            ):
                raise AssertionError(f"{reading}: two runs printed different figures")
            runs[reading].append(run)
    report = _report(
        options.queues,
        options.apps,
        options.starting_point,
        runs,
        load_before,
        _uptime(),
    )
    options.output.write_text(report)
    print(report)


if __name__ == "__main__":
    main()
