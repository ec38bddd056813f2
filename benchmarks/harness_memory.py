"""Does the harness's memory stay flat as the number of scenarios grows? Wall time and peak
resident memory of `python -m rebalancing.harness` at several scenario counts.

Usage: python benchmarks/harness_memory.py [--scenarios 2000,20000,100000]
       [--strategies averagely,round_robin,sticky] [--master local[2]] [--keep DIR]
       [--queues LOW:HIGH] [--consumers LOW:HIGH]

Each count is one run of the harness in a fresh process tree (driver, its JVM, the Python
workers). The tree is sampled every half second from /proc (Linux only): the peak of the sum of
every process's resident set, the peak of the JVM alone, and the peak of the largest Python
process (the driver or a worker). Prints a Markdown table; throughput is the job's own figure
from run.json.
`--queues` and `--consumers` are handed to the harness (its defaults when left out).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


def process_tree(root: int) -> list[int]:
    """`root` and every process descended from it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            # the parent id is the 2nd field after the parenthesised command name
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry.name))
    tree, pending = [], [root]
    while pending:
        pid = pending.pop()
        tree.append(pid)
        pending.extend(children.get(pid, []))
    return tree


def resident_mib(pid: int) -> tuple[float, str]:
    """(resident set in MiB, command name) of one process; (0, '') once it has gone."""
    try:
        pages = int((Path("/proc") / str(pid) / "statm").read_text().split()[1])
        name = (Path("/proc") / str(pid) / "comm").read_text().strip()
    except (OSError, IndexError, ValueError):
        return 0.0, ""
    return pages * PAGE_KIB / 1024, name


def measure(
    count: int, strategies: str, master: str, keep: str | None, group_sizes: list[str]
) -> dict[str, float]:
    """Run the harness on `count` scenarios; its wall time, throughput and memory peaks.

    The job's outputs go to `keep`/<count> when `keep` is given, else to a temporary folder;
    `group_sizes` are extra harness flags (--queues, --consumers).
    """
    with tempfile.TemporaryDirectory() as scratch:
        out = str(Path(keep) / str(count)) if keep else scratch
        command = [sys.executable, "-m", "rebalancing.harness", "--scenarios", str(count)]
        command += ["--strategies", strategies, "--master", master, "--out", out, *group_sizes]
        started = time.perf_counter()
        job = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        peak_tree = peak_jvm = peak_python = 0.0
        while job.poll() is None:
            sizes = [resident_mib(pid) for pid in process_tree(job.pid)]
            peak_tree = max(peak_tree, sum(size for size, _ in sizes))
            peak_jvm = max([peak_jvm] + [size for size, name in sizes if name == "java"])
            peak_python = max(
                [peak_python] + [size for size, name in sizes if name.startswith("python")]
            )
            time.sleep(0.5)
        wall = time.perf_counter() - started
        if job.returncode != 0:
            raise RuntimeError(f"the harness exited with {job.returncode} on {count} scenarios")
        report = json.loads((Path(out) / "run.json").read_text())
    return {
        "wall": wall,
        "job_seconds": report["wall_seconds"],
        "per_second": report["scenarios_per_second"],
        "tree": peak_tree,
        "jvm": peak_jvm,
        "python": peak_python,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scenarios", default="2000,20000,100000")
    parser.add_argument("--strategies", default="averagely,round_robin,sticky")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--keep", help="keep each run's outputs in KEEP/<scenarios>")
    parser.add_argument("--queues", help="queue count range LOW:HIGH, handed to the harness")
    parser.add_argument("--consumers", help="consumer count range LOW:HIGH, handed to the harness")
    options = parser.parse_args()
    group_sizes = []
    for flag in ("queues", "consumers"):
        if getattr(options, flag):
            group_sizes += [f"--{flag}", getattr(options, flag)]
    described = " ".join(group_sizes) or "default group sizes"
    print(f"{options.strategies} on {options.master}, {described}; {os.cpu_count()} cores\n")
    print(
        "| scenarios | process wall s | job s | scenarios/s | peak RSS, whole tree MiB | "
        "JVM MiB | largest Python process MiB |"
    )
    print("|---|---|---|---|---|---|---|")
    for count in map(int, options.scenarios.split(",")):
        result = measure(count, options.strategies, options.master, options.keep, group_sizes)
        print(
            f"| {count:,} | {result['wall']:.0f} | {result['job_seconds']:.0f} | "
            f"{result['per_second']:.0f} | {result['tree']:.0f} | {result['jvm']:.0f} | "
            f"{result['python']:.0f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
