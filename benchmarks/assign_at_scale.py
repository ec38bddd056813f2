"""assign() at a million queues: each strategy fresh, after one consumer leaves and after ten
join, against the floor of merely building a result dict of that size; peak RSS per strategy.

Usage: python benchmarks/assign_at_scale.py [--queues 1000000] [--consumers 2000] [--repeats 5]
Each strategy runs in its own fresh process, so that its peak RSS is its own; each fresh call
and the floor are timed after one untimed call of it (see shared.timed). Prints a Markdown
table of medians (seconds), the ratio to the floor, and the peak RSS in MiB.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

_WORKER = r"""
import json, resource, sys
from functools import partial

from shared import floor, timed
from rebalancing.contract import prepare
from rebalancing.evaluation.scoring.scores import score
from rebalancing.strategies import STRATEGIES

name, queue_count, consumer_count, repeats = sys.argv[1], *map(int, sys.argv[2:5])
assign = STRATEGIES[name].assign
queues = list(range(queue_count))
# The queues as a set, as Kafka's metadata hands them: distinct by construction, so unchecked.
queue_set = set(queues)
consumers = [f"consumer-{index:05d}" for index in range(consumer_count)]
warm = partial(timed, repeats=repeats, warm_up=True)
floor_seconds, _, _ = warm(partial(floor, queues, consumers))
# What every strategy pays before its own work: the contract's checks and sort.
prepare_seconds, _, _ = warm(partial(prepare, queues, consumers, None))
fresh_seconds, _, balanced = warm(partial(assign, queues, consumers, None))
prepare_set_seconds, _, _ = warm(partial(prepare, queue_set, consumers, None))
fresh_set_seconds, _, _ = warm(partial(assign, queue_set, consumers, None))
remaining = consumers[: consumer_count // 2] + consumers[consumer_count // 2 + 1:]
leave_seconds, _, after_leave = warm(partial(assign, queues, remaining, balanced))
joined = consumers + [f"joiner-{index:02d}" for index in range(10)]
join_seconds, _, after_join = warm(partial(assign, queues, joined, balanced))
leave_scores = score(queues, remaining, balanced, after_leave)
join_scores = score(queues, joined, balanced, after_join)
print(json.dumps({
    "floor": floor_seconds, "prepare": prepare_seconds, "fresh": fresh_seconds,
    "prepare_set": prepare_set_seconds, "fresh_set": fresh_set_seconds,
    "leave": leave_seconds, "join": join_seconds,
    "leave_spread": leave_scores.spread, "leave_gap": leave_scores.stickiness_gap,
    "join_spread": join_scores.spread, "join_gap": join_scores.stickiness_gap,
    "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queues", type=int, default=1_000_000)
    parser.add_argument("--consumers", type=int, default=2_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--strategies", default="averagely,round_robin,sticky")
    options = parser.parse_args()
    print(
        f"{options.queues:,} queues x {options.consumers:,} consumers; medians of "
        f"{options.repeats}; {os.cpu_count()} cores; one process per strategy\n"
    )
    print(
        "| strategy | floor s | fresh s | fresh / floor | fresh, queues as a set s | set / floor "
        "| one leaves s | spread, gap | "
        "ten join s | spread, gap | peak RSS MiB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    results: dict[str, dict[str, float]] = {}
    for name in options.strategies.split(","):
        completed = subprocess.run(
            [
                sys.executable,
                "-c",
                _WORKER,
                name,
                str(options.queues),
                str(options.consumers),
                str(options.repeats),
            ],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).parent,  # the worker imports shared.py from here
        )
        result = results[name] = json.loads(completed.stdout)
        print(
            f"| {name} | {result['floor']:.3f} | {result['fresh']:.3f} "
            f"| {result['fresh'] / result['floor']:.2f}x | {result['fresh_set']:.3f} "
            f"| {result['fresh_set'] / result['floor']:.2f}x | {result['leave']:.3f} "
            f"| {result['leave_spread']}, {result['leave_gap']:.4f} | {result['join']:.3f} "
            f"| {result['join_spread']}, {result['join_gap']:.4f} "
            f"| {result['peak_rss_mib']:,.0f} |",
            flush=True,
        )
    print(
        "\nWhere the fresh time goes: the contract's checks and sort (`prepare`, its result freed "
        "outside the clock) against the whole call, each over the floor.\n"
    )
    print(
        "| strategy | floor s | prepare s | fresh s | prepare / floor | fresh / floor "
        "| prepare, queues as a set s | fresh, set s | prepare, set / floor | fresh, set / floor |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, result in results.items():
        floor = result["floor"]
        print(
            f"| {name} | {floor:.4f} | {result['prepare']:.4f} | {result['fresh']:.4f} "
            f"| {result['prepare'] / floor:.2f}x | {result['fresh'] / floor:.2f}x "
            f"| {result['prepare_set']:.4f} | {result['fresh_set']:.4f} "
            f"| {result['prepare_set'] / floor:.2f}x | {result['fresh_set'] / floor:.2f}x |"
        )


if __name__ == "__main__":
    main()
