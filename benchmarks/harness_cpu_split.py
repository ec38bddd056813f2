"""Where a harness run's CPU goes: the driver, the JVM (its tasks' own CPU by stage, apart), the
Python workers; and, with `--one-process`, the same scenarios scored and counted in one plain
process, so that Spark's path can be told from the work itself.

Usage: python benchmarks/harness_cpu_split.py [--scenarios 20000]
       [--strategies averagely,sticky,sac]
       [--mix join,join_burst,leave,crash,queues_added,queues_removed,mixed]
       [--master local[2]] [--one-process] [--keep DIR]

CPU seconds, not wall: on a machine shared with other work the wall time says how busy the
machine was, the CPU seconds what the run cost. The run's process tree is sampled from /proc
every quarter second (Linux only; a process that ends between two samples loses at most that
much): per process its user + system time, classed by its command line (a `java` command is
the JVM, a `pyspark.daemon` and the workers it forks are the Python workers, the root is the
driver). Spark's event log (written to a temporary directory, uncompressed) gives the CPU time
of the JVM's task threads per stage ("Executor CPU Time"): the rest of the JVM's CPU is its
start, its compilers, its collectors and its other threads. `--one-process` runs
rebalancing.harness.columns.score_and_count_partition over scenarios 0..N-1 in a fresh
process with the workers' settings (allocator, frozen collector), as one partition would.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from harness_memory import process_tree
from rebalancing.harness.job import WORKER_ALLOCATOR
from shared import description

TICKS = os.sysconf("SC_CLK_TCK")

ONE_PROCESS = """
import sys, time
import pyarrow
from rebalancing.harness import columns
from rebalancing.harness.options import parse_options
options = parse_options(sys.argv[2:])
parameters = dict(base_seed=options.seed, strategy_specs=options.strategies,
                  settings=options.settings, scenarios_per_batch=options.scenarios_per_batch)
def run(start, count):
    ids = pyarrow.array(range(start, start + count), pyarrow.int64())
    batches = iter([pyarrow.RecordBatch.from_pydict({"id": ids})])
    for _ in columns.in_worker(batches, columns.score_and_count_partition, **parameters):
        pass
run(10**7, 20)  # imports and numba's kernels, as a worker's first task
started = time.process_time()
run(0, int(sys.argv[1]))
print(time.process_time() - started)
"""


def cpu_and_kind(pid: int, root: int) -> tuple[float, str] | None:
    """(user + system seconds, kind) of one process; None once it has gone."""
    try:
        stat = (Path("/proc") / str(pid) / "stat").read_text()
        command = (Path("/proc") / str(pid) / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    seconds = (int(fields[11]) + int(fields[12])) / TICKS
    if pid == root:
        return seconds, "driver"
    if command and command[0].decode(errors="replace").endswith("java"):
        return seconds, "JVM"
    if b"pyspark.daemon" in command or b"pyspark.worker" in command:
        return seconds, "Python workers"
    return seconds, "other"


def task_cpu_by_stage(event_directory: Path) -> dict[str, float]:
    """Stage name -> CPU seconds of its tasks' JVM threads, from Spark's event log."""
    seconds: dict[int, float] = defaultdict(float)
    names: dict[int, str] = {}
    for path in event_directory.rglob("*"):
        is_log = "events" in path.name or path.name.startswith("local")
        if not path.is_file() or not is_log:
            continue
        for line in path.read_text().splitlines():
            event = json.loads(line)
            if event["Event"] == "SparkListenerTaskEnd":
                metrics = event.get("Task Metrics") or {}
                seconds[event["Stage ID"]] += metrics.get("Executor CPU Time", 0) / 1e9
            elif event["Event"] == "SparkListenerStageCompleted":
                info = event["Stage Info"]
                names[info["Stage ID"]] = (
                    f"stage {info['Stage ID']} ({info['Number of Tasks']} tasks)"
                )
    return {names.get(stage, f"stage {stage}"): value for stage, value in sorted(seconds.items())}


def harness_run(arguments: list[str], out: Path, events: Path) -> tuple[float, dict[str, float]]:
    """(wall seconds, CPU seconds per kind) of one harness run."""
    environment = dict(os.environ)
    if "PYSPARK_SUBMIT_ARGS" in environment:
        raise SystemExit("PYSPARK_SUBMIT_ARGS is set: this script sets it itself")
    environment["PYSPARK_SUBMIT_ARGS"] = (
        f"--conf spark.eventLog.enabled=true --conf spark.eventLog.dir=file://{events} "
        "--conf spark.eventLog.compress=false pyspark-shell"
    )
    command = [sys.executable, "-m", "rebalancing.harness", *arguments, "--out", str(out)]
    started = time.perf_counter()
    process = subprocess.Popen(command, env=environment, stdout=subprocess.DEVNULL)
    last: dict[int, tuple[float, str]] = {}
    while process.poll() is None:
        for pid in process_tree(process.pid):
            if (sample := cpu_and_kind(pid, process.pid)) is not None:
                last[pid] = sample
        time.sleep(0.25)
    wall = time.perf_counter() - started
    if process.returncode:
        raise SystemExit(f"the harness failed ({process.returncode})")
    by_kind: dict[str, float] = defaultdict(float)
    for seconds, kind in last.values():
        by_kind[kind] += seconds
    return wall, by_kind


def main() -> None:
    parser = argparse.ArgumentParser(description=description(__doc__))
    parser.add_argument("--scenarios", type=int, default=20000)
    parser.add_argument("--strategies", default="averagely,sticky,sac")
    parser.add_argument(
        "--mix", default="join,join_burst,leave,crash,queues_added,queues_removed,mixed"
    )
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--one-process", action="store_true")
    parser.add_argument("--keep", type=Path, help="keep the harness's output here")
    options = parser.parse_args()
    common = ["--strategies", options.strategies, "--mix", options.mix]
    scenarios = options.scenarios
    with tempfile.TemporaryDirectory(prefix="cpu-split-") as directory:
        events = Path(directory) / "events"
        events.mkdir()
        out = options.keep or Path(directory) / "out"
        arguments = ["--scenarios", str(scenarios), *common, "--master", options.master]
        wall, by_kind = harness_run(arguments, out, events)
        stages = task_cpu_by_stage(events)
    total = sum(by_kind.values())
    print(
        f"{scenarios} scenarios, {options.master}, {options.strategies}; wall {wall:.1f} s "
        f"({scenarios / wall:.0f} scenarios/s); load average {os.getloadavg()[0]:.2f} at the end\n"
    )
    print("| part | CPU s | ms per scenario | share |")
    print("|---|---|---|---|")
    rows = dict(by_kind)
    jvm_tasks = sum(stages.values())
    for name, seconds in sorted(rows.items(), key=lambda item: -item[1]):
        print(
            f"| {name} | {seconds:.1f} | {1000 * seconds / scenarios:.2f} "
            f"| {100 * seconds / total:.1f}% |"
        )
        if name == "JVM":
            for stage, stage_seconds in stages.items():
                print(
                    f"| - JVM task threads, {stage} | {stage_seconds:.1f} | "
                    f"{1000 * stage_seconds / scenarios:.2f} | |"
                )
            print(f"| - JVM, the rest | {seconds - jvm_tasks:.1f} | | |")
    print(f"| all | {total:.1f} | {1000 * total / scenarios:.2f} | |")
    if options.one_process:
        environment = {**WORKER_ALLOCATOR, **os.environ}
        out = tempfile.mkdtemp(prefix="cpu-split-one-")  # out/harness may hold a run's files
        command = [sys.executable, "-c", ONE_PROCESS, str(scenarios), "--scenarios", "1", *common]
        command += ["--out", out]
        result = subprocess.run(
            command, env=environment, capture_output=True, text=True, check=True
        )
        alone = float(result.stdout.split()[-1])
        workers = rows.get("Python workers", 0.0)
        print(
            f"\nOne process, the same scenarios: {alone:.1f} CPU s ({1000 * alone / scenarios:.2f} "
            f"ms per scenario); the Python workers / one process: {workers / alone:.3f}; "
            f"the whole run / one process: {total / alone:.3f}"
        )


if __name__ == "__main__":
    main()
