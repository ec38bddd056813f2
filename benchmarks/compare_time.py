"""How long `rebalancing compare` takes to answer, as a person runs it: the whole command (Python
start, imports, scoring, the figures and report.html) and the scoring alone, median of REPEATS
runs, for the issue's example profile and for every system on it.

    python benchmarks/compare_time.py [--repeats 3] [--out benchmarks/results/compare_time.md]
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from shared import description

ROOT = Path(__file__).resolve().parents[1]
PROFILE = ["--queues", "64", "--consumers", "4:12", "--mix", "rolling_restart=3,crash=1"]
SYSTEMS = ("kafka-eager", "kafka-cooperative", "rocketmq-broker", "rabbitmq-sac", "any")
SCORED = re.compile(r"Scored in ([\d.]+) s\.")


def one_run(system: str) -> tuple[float, float]:
    """(seconds of the whole command, seconds of the scoring it reports) of one run."""
    with tempfile.TemporaryDirectory() as out:
        command = [sys.executable, "-m", "rebalancing", "compare", "--system", system, *PROFILE]
        started = time.perf_counter()
        completed = subprocess.run(
            [*command, "--out", out], capture_output=True, text=True, check=True
        )
        whole = time.perf_counter() - started
    found = SCORED.search(completed.stdout)
    if found is None:
        raise RuntimeError(f"no 'Scored in' line in:\n{completed.stdout}")
    return whole, float(found.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=description(__doc__))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/compare_time.md")
    given = parser.parse_args()
    load = os.getloadavg()[0]
    lines = [
        "# How long `rebalancing compare` takes",
        "",
        f"`python benchmarks/compare_time.py --repeats {given.repeats}`, "
        f"{datetime.date.today().isoformat()}, {os.cpu_count()} cores, load average "
        f"{load:.1f} at the start and LOAD_AT_END at the end (a loaded machine makes both "
        "columns longer: the other work's processes take turns with this one). Profile: "
        f"`{' '.join(PROFILE)}`, 1,000 scenarios (the default), seed 1; medians of "
        f"{given.repeats} runs.",
        "",
        "| --system | candidates scored | whole command s | scoring s |",
        "|---|---|---|---|",
    ]
    from rebalancing.evaluation.decision.systems import SYSTEM_VERDICTS

    for system in SYSTEMS:
        runs = [one_run(system) for _ in range(given.repeats)]
        whole = statistics.median(run[0] for run in runs)
        scoring = statistics.median(run[1] for run in runs)
        candidates = len(SYSTEM_VERDICTS[system].candidates())
        lines.append(f"| {system} | {candidates} | {whole:.1f} | {scoring:.1f} |")
        print(lines[-1], file=sys.stderr)
    text = "\n".join(lines) + "\n"
    text = text.replace("LOAD_AT_END", f"{os.getloadavg()[0]:.1f}")
    given.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
