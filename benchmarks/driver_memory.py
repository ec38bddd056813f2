"""Does the driver's memory grow with the number of scenarios? Peak resident memory of the
harness's driver (its Python process and its JVM) on a standalone cluster, at several counts.

Usage: python -m benchmarks.driver_memory [--scenarios 10000,1000000]   (from the repository's
       root: it imports tools/)
       [--strategies averagely,sticky] [--queues LOW:HIGH] [--consumers LOW:HIGH]
       [--workers 2] [--keep DIR]

Starts a standalone cluster on 127.0.0.1 from pyspark's distribution (tools.local_cluster:
a master and `--workers` one-core workers), then runs
`python -m rebalancing.harness --master spark://...` once per count. On a cluster the driver is
apart from the executors: the driver's process tree is the Python driver and the JVM it starts,
while the executors are children of the workers. Both are sampled from /proc every half second
(Linux only): the peak resident set of the driver's Python process, of its JVM, of the two
together, and of all executors together (JVMs and their Python workers), for comparison.
Prints a Markdown table; throughput is the job's own figure from run.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tools.local_cluster import (
    LOOPBACK,
    StandaloneCluster,
    process_tree,
    stop_process_tree,
)

PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


def resident_mib(pid: int) -> tuple[float, str]:
    """(resident set in MiB, command name) of one process; (0, '') once it has gone."""
    try:
        pages = int((Path("/proc") / str(pid) / "statm").read_text().split()[1])
        name = (Path("/proc") / str(pid) / "comm").read_text().strip()
    except (OSError, IndexError, ValueError):
        return 0.0, ""
    return pages * PAGE_KIB / 1024, name


@dataclass
class Peaks:
    """Peak resident sets in MiB over one run."""

    driver_python: float = 0.0
    driver_jvm: float = 0.0
    driver_total: float = 0.0
    executors: float = 0.0

    def sample(self, driver: int, cluster: StandaloneCluster) -> None:
        """One sample of the driver's tree and of every worker's descendants (the executors)."""
        sizes = [resident_mib(pid) for pid in process_tree(driver)]
        self.driver_total = max(self.driver_total, sum(size for size, _ in sizes))
        self.driver_jvm = max([self.driver_jvm] + [size for size, name in sizes if name == "java"])
        self.driver_python = max(self.driver_python, resident_mib(driver)[0])
        executor_pids = [
            pid for worker in cluster.workers for pid in process_tree(worker.process.pid)[1:]
        ]
        self.executors = max(self.executors, sum(resident_mib(pid)[0] for pid in executor_pids))


def measure(
    cluster: StandaloneCluster, count: int, job_flags: list[str], out: Path
) -> tuple[Peaks, dict[str, object]]:
    """Run the harness on `count` scenarios against `cluster`; its memory peaks and run.json."""
    command = [sys.executable, "-m", "rebalancing.harness", "--scenarios", str(count)]
    command += ["--master", cluster.master_url, "--out", str(out), *job_flags]
    environment = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": LOOPBACK}
    job = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=environment,
        start_new_session=True,
    )
    peaks = Peaks()
    try:
        while job.poll() is None:
            peaks.sample(job.pid, cluster)
            time.sleep(0.5)
    finally:
        if job.poll() is None:
            stop_process_tree(job)
    if job.returncode != 0:
        raise RuntimeError(f"the harness exited with {job.returncode} on {count} scenarios")
    report: dict[str, object] = json.loads((out / "run.json").read_text())
    return peaks, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scenarios", default="10000,1000000")
    parser.add_argument("--strategies", default="averagely,sticky")
    parser.add_argument("--queues", help="queue count range LOW:HIGH, handed to the harness")
    parser.add_argument("--consumers", help="consumer count range LOW:HIGH, handed to the harness")
    parser.add_argument("--workers", type=int, default=2, help="one-core workers to start")
    parser.add_argument("--keep", help="keep each run's outputs in KEEP/<scenarios>")
    options = parser.parse_args()
    job_flags = ["--strategies", options.strategies]
    for flag in ("queues", "consumers"):
        if getattr(options, flag):
            job_flags += [f"--{flag}", getattr(options, flag)]
    print(
        f"{' '.join(job_flags)}; standalone cluster of {options.workers} one-core workers on "
        f"{LOOPBACK}; {os.cpu_count()} cores\n"
    )
    print(
        "| scenarios | partitions | job s | scenarios/s | driver Python peak RSS MiB | "
        "driver JVM MiB | driver total MiB | executors total MiB |"
    )
    print("|---|---|---|---|---|---|---|---|")
    with (
        tempfile.TemporaryDirectory(prefix="driver-memory-") as scratch,
        StandaloneCluster(Path(scratch) / "cluster", workers=options.workers) as cluster,
    ):
        for count in map(int, options.scenarios.split(",")):
            out = Path(options.keep) / str(count) if options.keep else Path(scratch) / str(count)
            peaks, report = measure(cluster, count, job_flags, out)
            print(
                f"| {count:,} | {report['partitions']} | {report['wall_seconds']:.0f} | "
                f"{report['scenarios_per_second']:.0f} | {peaks.driver_python:.0f} | "
                f"{peaks.driver_jvm:.0f} | {peaks.driver_total:.0f} | {peaks.executors:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
