"""SAC cold starts on the compiled kernel against the reference model, and the kernel's compile
time, paid once per process.

Usage: python benchmarks/sac_kernel.py [--sizes 600x200,1000x200,2048x256,4096x256]
                                       [--repeats 7] [--reference-repeats 3] [--sessions 0]

A cold start is every app joining an empty group at once (`sac.run(queues, apps)`), the largest
cascade the protocol has. For each size it prints the median wall and CPU seconds of each engine
(`highest` release policy, the `id` reading) with the release and round counts, which must be
equal, and the kernel's medians for every release policy. Then the compile time: the first call
in a fresh process with an empty numba cache (what a new machine or executor pays once), and with
the cache the first process left (what every later process pays).

`--sessions N` (default 0: skipped) then times what the scoring core asks of SAC: one
`sac.Session` per default scenario (1..4,096 queues x 1..256 consumers, base seed 1, scenarios
0..N-1), every step rebalanced, on the kernel; the median of --repeats passes, as scenarios per
second (wall and CPU), with the releases they took. Scoring the plans is not included.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial

from rebalancing.contract import ProtocolRun
from rebalancing.evaluation.scenarios.changes import generate_scenarios
from rebalancing.sac.schedulers import RELEASE_POLICIES
from rebalancing.strategies import sac

FIRST_CALL = (
    "import time; started = time.perf_counter(); "
    "from rebalancing.strategies import sac; "
    "sac.run(['q1', 'q2'], ['a1', 'a2'], engine='kernel'); "
    "print(time.perf_counter() - started)"
)


def _medians(call: Callable[[], ProtocolRun], repeats: int) -> tuple[float, float, ProtocolRun]:
    """Median wall and CPU seconds of `repeats` calls, and the last run."""
    walls, cpus = [], []
    run = call()  # warm: compiled and cached before the clock starts
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        run = call()
        cpus.append(time.process_time() - cpu)
        walls.append(time.perf_counter() - wall)
    return statistics.median(walls), statistics.median(cpus), run


def _first_call_seconds(cache_dir: str) -> float:
    environment = {**os.environ, "NUMBA_CACHE_DIR": cache_dir}
    completed = subprocess.run(
        [sys.executable, "-c", FIRST_CALL], env=environment, capture_output=True, text=True
    )
    if completed.returncode != 0:
        raise RuntimeError(f"the first-call probe failed:\n{completed.stderr}")
    return float(completed.stdout.strip().splitlines()[-1])


def _session_seconds(groups: list[list[tuple[list[int], list[str]]]]) -> tuple[float, float, int]:
    """Wall and CPU seconds to run every scenario's steps through a fresh `sac` session (the
    registry's: `id` reading, `highest`, the kernel), and the releases they took."""
    wall, cpu = time.perf_counter(), time.process_time()
    releases = 0
    for steps in groups:
        session = sac.Session(engine="kernel", seed=1)
        for queues, consumers in steps:
            releases += session.rebalance(queues, consumers).releases
    return time.perf_counter() - wall, time.process_time() - cpu, releases


def _sessions(scenario_count: int, repeats: int) -> None:
    groups = [
        [(list(step.queues), list(step.consumers)) for step in scenario.steps()]
        for scenario in generate_scenarios(1, range(scenario_count))
    ]
    _session_seconds(groups[:2])  # warm
    runs = [_session_seconds(groups) for _ in range(repeats)]
    wall = statistics.median(run[0] for run in runs)
    cpu = statistics.median(run[1] for run in runs)
    steps = sum(len(steps) for steps in groups)
    print(
        f"\nsac sessions (kernel) on default scenarios 0..{scenario_count - 1} of seed 1 "
        f"({steps:,} rebalances, {runs[0][2]:,} releases), median of {repeats}: "
        f"{scenario_count / wall:,.0f} scenarios/s wall, {scenario_count / cpu:,.0f} per CPU second"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="600x200,1000x200,2048x256,4096x256")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--reference-repeats", type=int, default=3)
    parser.add_argument("--sessions", type=int, default=0)
    options = parser.parse_args()
    sizes = [tuple(int(part) for part in size.split("x")) for size in options.sizes.split(",")]
    print(
        f"cold starts; medians of {options.repeats} (kernel), {options.reference_repeats} "
        "(reference); seconds\n"
    )
    print(
        "| queues x apps | releases | rounds | reference wall | reference CPU | kernel wall "
        "| kernel CPU | CPU ratio | "
        + " | ".join(f"kernel `{policy}` CPU" for policy in RELEASE_POLICIES)
        + " |"
    )
    print("|---" * (8 + len(RELEASE_POLICIES)) + "|")
    for queue_count, app_count in sizes:
        queues = list(range(queue_count))
        apps = [f"app-{number:04d}" for number in range(app_count)]
        reference_wall, reference_cpu, reference = _medians(
            partial(sac.run, queues, apps, engine="reference"), options.reference_repeats
        )
        kernel_wall, kernel_cpu, kernel = _medians(
            partial(sac.run, queues, apps, engine="kernel"), options.repeats
        )
        if kernel != reference:
            raise AssertionError(f"{queue_count} x {app_count}: the engines disagree")
        per_policy = [
            _medians(partial(sac.run, queues, apps, release=policy), options.repeats)[1]
            for policy in RELEASE_POLICIES
        ]
        print(
            f"| {queue_count:,} x {app_count} | {kernel.releases:,} | {kernel.rounds:,} "
            f"| {reference_wall:.3f} | {reference_cpu:.3f} | {kernel_wall:.4f} "
            f"| {kernel_cpu:.4f} | {reference_cpu / kernel_cpu:.0f}x | "
            + " | ".join(f"{seconds:.4f}" for seconds in per_policy)
            + " |"
        )
    with tempfile.TemporaryDirectory() as cache_dir:
        cold = _first_call_seconds(cache_dir)
        warm = _first_call_seconds(cache_dir)
    print(
        f"\nfirst call in a fresh process (import + compile or load + a 2 x 2 run): "
        f"empty numba cache {cold:.1f} s, warm cache {warm:.2f} s"
    )
    if options.sessions:
        _sessions(options.sessions, options.repeats)


if __name__ == "__main__":
    main()
