"""A change to the scoring core, measured against the commit before it in one process: what one
harness worker spends on the same scenarios with each tree, interleaved.

Usage: python benchmarks/core_before_after.py --before REV [--scenarios 1000] [--start 20000]
       [--rounds 10] [--strategies averagely,sticky,sac]
       [--mix join,join_burst,leave,crash,queues_added,queues_removed,mixed]

Why one process: this machine's speed moves by 10-20% from minute to minute (other machines'
work on the same cores), so two fresh processes run one after the other differ by more than
the changes worth measuring. Here the package at `REV` (`git archive`) is imported under
another name, `rebalancing_before`, beside the working tree's `rebalancing`; each round scores
and counts scenarios start..start+N of seed 1 with both, as one partition of the job does
(`score_and_count_partition`, default group sizes), in alternating order, and the ratio of each
round's CPU times is taken: both sides of a ratio saw the same minute of the machine. The
process runs with the job's worker settings (glibc's allocator settings, the collector frozen
after the warm-up). Prints each round's CPU seconds, their medians and the median ratio.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rebalancing.harness.job import WORKER_ALLOCATOR
from shared import BEFORE, before_tree, description


def _partition_runner(package: str, strategies: str, mix: str) -> Callable[[int, int], None]:
    """A function that scores and counts scenarios start..start+count with `package`."""
    pyarrow = __import__("pyarrow")
    options_module = __import__(f"{package}.harness.options", fromlist=["parse_options"])
    columns = __import__(f"{package}.harness.columns", fromlist=["score_and_count_partition"])
    options = options_module.parse_options(
        # an --out of its own: the default, out/harness, may hold a run's files already
        ["--scenarios", "1", "--strategies", strategies, "--mix", mix, "--out", tempfile.mkdtemp()]
    )
    parameters: dict[str, Any] = dict(
        base_seed=options.seed,
        strategy_specs=options.strategies,
        settings=options.settings,
        scenarios_per_batch=options.scenarios_per_batch,
    )

    def run(start: int, count: int) -> None:
        ids = pyarrow.array(range(start, start + count), pyarrow.int64())
        batches = iter([pyarrow.RecordBatch.from_pydict({"id": ids})])
        for _ in columns.score_and_count_partition(batches, **parameters):
            pass

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=description(__doc__))
    parser.add_argument("--before", required=True, help="the commit to compare with")
    parser.add_argument("--scenarios", type=int, default=1000)
    parser.add_argument("--start", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--strategies", default="averagely,sticky,sac")
    parser.add_argument(
        "--mix", default="join,join_burst,leave,crash,queues_added,queues_removed,mixed"
    )
    arguments = parser.parse_args()
    missing = {name: value for name, value in WORKER_ALLOCATOR.items() if name not in os.environ}
    if missing:  # glibc reads them at start: run again with them
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **missing})
    with tempfile.TemporaryDirectory(prefix="core-before-") as directory:
        before_tree(arguments.before, Path(directory))
        sys.path.insert(0, directory)
        runners = {
            "before": _partition_runner(BEFORE, arguments.strategies, arguments.mix),
            "after": _partition_runner("rebalancing", arguments.strategies, arguments.mix),
        }
        for run in runners.values():  # imports, and numba's kernels compiled or loaded
            run(10**7, 30)
        imported_elsewhere = [
            name
            for name, module in sys.modules.items()
            if name.startswith(BEFORE)
            and not (getattr(module, "__file__", None) or directory).startswith(directory)
        ]
        if imported_elsewhere:
            raise RuntimeError(f"not from the old tree: {imported_elsewhere}")
        gc.collect()
        gc.freeze()
        seconds: dict[str, list[float]] = {"before": [], "after": []}
        for number in range(arguments.rounds):
            order = ("before", "after") if number % 2 == 0 else ("after", "before")
            for name in order:
                cpu = time.process_time()
                runners[name](arguments.start, arguments.scenarios)
                seconds[name].append(time.process_time() - cpu)
    pairs = zip(seconds["before"], seconds["after"], strict=True)
    ratios = [after / before for before, after in pairs]
    print(f"before {arguments.before}, after: the working tree; {arguments.scenarios} scenarios")
    for name, values in seconds.items():
        rounded = ", ".join(f"{value:.2f}" for value in values)
        print(f"{name:6s} CPU s per round: {rounded}; median {statistics.median(values):.2f}")
    print(f"after / before, median of the rounds' ratios: {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
