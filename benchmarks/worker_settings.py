"""What the harness's Python workers gain from their settings: glibc's allocator settings
(`rebalancing.harness.job.WORKER_ALLOCATOR`) and the collector frozen at each task's start
(`rebalancing.harness.columns.in_worker`), and what numba's compiling costs a worker with an
empty cache against a warm one (why local workers import the driver's copy, not a zip).

Usage: python benchmarks/worker_settings.py [--scenarios 600] [--start 5000] [--repeats 3]
       [--mix join,join_burst,leave,crash,queues_added,queues_removed,mixed]
Each run is a fresh process that scores and counts scenarios start..start+N of seed 1 as one
partition of the job does (`score_and_count_partition`), after a one-scenario warm-up; the four
variants run interleaved, `--repeats` times each, and the table gives medians: CPU seconds,
minor page faults and seconds in the garbage collector (gc.callbacks). Then a fresh process
with an empty numba cache directory, and one more with the cache it left, score one scenario:
their CPU seconds are the compile cost and what is left of it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from rebalancing.harness.job import WORKER_ALLOCATOR

CHILD = """
import gc, json, resource, sys, time
import pyarrow as pa
from rebalancing.harness.columns import in_worker, score_and_count_partition
from rebalancing.harness.options import parse_options

start, count, mix, frozen = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4] == "1"
import tempfile
options = parse_options(["--scenarios", "1", "--strategies", "averagely,sticky,sac", "--mix", mix,
                         "--out", tempfile.mkdtemp()])  # out/harness may hold a run's files
parameters = dict(base_seed=options.seed, strategy_specs=options.strategies,
                  settings=options.settings, scenarios_per_batch=options.scenarios_per_batch)

def batches(first, number):
    yield pa.RecordBatch.from_pydict({"id": pa.array(range(first, first + number), pa.int64())})

def partition(first, number):
    if frozen:
        return in_worker(batches(first, number), function=score_and_count_partition, **parameters)
    return score_and_count_partition(batches(first, number), **parameters)

cpu = time.process_time()
for _ in partition(10**7, 1):  # imports and the compiled kernels, loaded or compiled
    pass
first_call = time.process_time() - cpu
collecting = [0.0, 0.0]
gc.callbacks.append(
    lambda phase, info: collecting.__setitem__(0, time.perf_counter()) if phase == "start"
    else collecting.__setitem__(1, collecting[1] + time.perf_counter() - collecting[0])
)
faults, cpu = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, time.process_time()
for _ in partition(start, count):
    pass
print(json.dumps({
    "first_call": first_call,
    "cpu": time.process_time() - cpu,
    "faults": resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults,
    "gc": collecting[1],
}))
"""

VARIANTS = {
    "as before (no settings)": ({}, False),
    "allocator settings": (WORKER_ALLOCATOR, False),
    "collector frozen": ({}, True),
    "both (the job's workers)": (WORKER_ALLOCATOR, True),
}
DEFAULT_MIX = "join,join_burst,leave,crash,queues_added,queues_removed,mixed"


def child(
    start: int, count: int, mix: str, frozen: bool, environment: dict[str, str]
) -> dict[str, float]:
    """One fresh process's figures."""
    arguments = [sys.executable, "-c", CHILD, str(start), str(count), mix, "1" if frozen else "0"]
    completed = subprocess.run(
        arguments, env={**os.environ, **environment}, capture_output=True, text=True, check=False
    )
    if completed.returncode != 0:
        raise RuntimeError(f"the child failed:\n{completed.stderr}")
    figures: dict[str, float] = json.loads(completed.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scenarios", type=int, default=600)
    parser.add_argument("--start", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--mix", default=DEFAULT_MIX)
    options = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in VARIANTS}
    for _ in range(options.repeats):
        for name, (environment, frozen) in VARIANTS.items():
            figures = child(options.start, options.scenarios, options.mix, frozen, environment)
            runs[name].append(figures)
    print(
        f"scenarios {options.start}..{options.start + options.scenarios - 1} of seed 1, "
        f"averagely,sticky,sac, medians of {options.repeats} interleaved runs\n"
    )
    print("| worker | CPU s | minor page faults | garbage collector s |")
    print("|---|---|---|---|")
    for name, figures in runs.items():
        cpu = statistics.median(run["cpu"] for run in figures)
        faults = statistics.median(run["faults"] for run in figures)
        collector = statistics.median(run["gc"] for run in figures)
        print(f"| {name} | {cpu:.2f} | {faults:,.0f} | {collector:.3f} |")
    with tempfile.TemporaryDirectory() as cache:
        empty = child(0, 1, options.mix, False, {"NUMBA_CACHE_DIR": cache})
        warm = child(0, 1, options.mix, False, {"NUMBA_CACHE_DIR": cache})
    print(
        f"\nfirst scenario in a fresh process: {empty['first_call']:.1f} CPU s with an empty "
        f"numba cache, {warm['first_call']:.1f} s with the cache it left"
    )


if __name__ == "__main__":
    main()
