"""Our averagely / round_robin / sticky side by side with kafka-python's Range / RoundRobin /
Sticky assignors, on the same inputs, in one run.

Usage: python benchmarks/versus_kafka_python.py [--sizes 1000x100,10000x100,...]
       [--repeats 5] [--timeout 300]

Each size is Q partitions of one topic x C consumers, in two cases: a fresh assignment, and one
consumer (the middle one) leaving a balanced group (previous = contiguous blocks, as Range and
averagely deal them). kafka-python's assignors are called through their public `assign(cluster,
members)` with kafka-python's own JoinGroupResponseMember and ConsumerProtocolSubscription
objects; each Sticky member's previous assignment goes in the way a real consumer sends it, by
`on_assignment()` then `metadata()` on its own assignor. The cluster is a stand-in that answers
the two questions the assignors ask (`topics()`, `partitions_for_topic()`), with a fresh set
each time as kafka's ClusterMetadata does. The metadata is handed over already decoded, so
kafka-python's time excludes the wire decoding it does in a real group.

Every (assignor, size, case) runs in a fresh process; one that takes longer than --timeout
seconds is reported as such and the assignor is not tried at larger sizes. Times are medians of
up to --repeats calls (fewer once the calls add up to a minute). Balance and stickiness of both
sides are scored by rebalancing.evaluation.scoring.scores. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

PAIRS = (("range", "averagely"), ("roundrobin", "round_robin"), ("sticky", "sticky"))
"""(kafka-python assignor, our strategy) pairs that answer the same question."""

CASES = ("fresh", "one leaves")

_WORKER = r"""
import json, sys

from shared import timed

from rebalancing.evaluation.scoring.scores import score
from rebalancing.strategies import STRATEGIES

side, name, case = sys.argv[1], sys.argv[2], sys.argv[3]
queue_count, consumer_count, repeats = map(int, sys.argv[4:7])
TOPIC = "t"
queues = list(range(queue_count))
consumers = [f"consumer-{index:05d}" for index in range(consumer_count)]
balanced = STRATEGIES["averagely"].assign(queues, consumers)
if case == "fresh":
    group, previous = consumers, None
else:
    group = consumers[: consumer_count // 2] + consumers[consumer_count // 2 + 1 :]
    previous = balanced


if side == "ours":
    assign = STRATEGIES[name].assign
    seconds, calls, plan = timed(lambda: assign(queues, group, previous), repeats, 60.0)
else:
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
    from kafka.protocol.consumer.group import JoinGroupResponse
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment

    assignor_class = {
        "range": RangePartitionAssignor,
        "roundrobin": RoundRobinPartitionAssignor,
        "sticky": StickyPartitionAssignor,
    }[name]

    class Cluster:
        def topics(self):
            return {TOPIC}

        def partitions_for_topic(self, topic):
            return set(queues) if topic == TOPIC else None

    def member(consumer):
        assignor = assignor_class()
        if previous is not None:
            owned = [(TOPIC, previous[consumer])]
            assignor.on_assignment(ConsumerProtocolAssignment(0, owned, b""), 1)
        return JoinGroupResponse.JoinGroupResponseMember(
            member_id=consumer, group_instance_id=None, metadata=assignor.metadata({TOPIC})
        )

    members = [member(consumer) for consumer in group]
    leader = assignor_class()
    seconds, calls, answer = timed(lambda: leader.assign(Cluster(), members), repeats, 60.0)
    plan = {
        consumer: [
            partition
            for topic, partitions in assignment.assigned_partitions
            for partition in partitions
        ]
        for consumer, assignment in answer.items()
    }

scores = score(queues, group, previous, plan)
print(json.dumps({
    "seconds": seconds, "calls": calls, "balance_degree": scores.balance_degree,
    "spread": scores.spread, "stickiness": scores.stickiness, "gap": scores.stickiness_gap,
    "valid": scores.orphans == scores.duplicates == scores.unknown_queues == 0,
    "plan": sorted((consumer, sorted(owned)) for consumer, owned in plan.items() if owned),
}))
"""


def measure(
    side: str, name: str, case: str, size: tuple[int, int], repeats: int, timeout: float
) -> dict[str, Any] | None:
    """One (assignor, size, case) in a fresh process; None when it exceeds `timeout` seconds."""
    queue_count, consumer_count = size
    command = [sys.executable, "-c", _WORKER, side, name, case]
    command += [str(queue_count), str(consumer_count), str(repeats)]
    try:
        completed = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=True,
            cwd=Path(__file__).parent,  # the worker imports shared.py from here
        )
    except subprocess.TimeoutExpired:
        return None
    except subprocess.CalledProcessError as error:
        raise RuntimeError(f"{side} {name} {case} {size} failed:\n{error.stderr}") from None
    result: dict[str, Any] = json.loads(completed.stdout)
    return result


def parse_sizes(text: str) -> list[tuple[int, int]]:
    """'1000x100,10000x100' -> [(1000, 100), (10000, 100)]."""
    sizes = []
    for item in text.split(","):
        queues, _, consumers = item.partition("x")
        if not (queues.isdigit() and consumers.isdigit()):
            raise argparse.ArgumentTypeError(f"--sizes: {item!r} is not QUEUESxCONSUMERS")
        sizes.append((int(queues), int(consumers)))
    return sizes


def describe(result: dict[str, Any]) -> str:
    """'balance, spread, stickiness, gap' of one side."""
    stickiness = "-" if result["stickiness"] is None else f"{result['stickiness']:.3f}"
    gap = "-" if result["gap"] is None else f"{result['gap']:.3f}"
    balance = f"{result['balance_degree']:.3f}"
    validity = "" if result["valid"] else " INVALID"
    return f"{balance} / {result['spread']} / {stickiness} / {gap}{validity}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--sizes",
        type=parse_sizes,
        default="1000x100,10000x100,30000x300,100000x1000,1000000x2000",
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=300.0)
    options = parser.parse_args()

    print(
        "| Q x C | case | kafka-python | ours | kafka s | ours s | kafka / ours | "
        "kafka: balance / spread / stickiness / gap | ours: same | same plan |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    gave_up: set[str] = set()
    for size in options.sizes:
        for kafka_name, our_name in PAIRS:
            for case in CASES:
                ours = measure("ours", our_name, case, size, options.repeats, options.timeout)
                kafka = None
                missing = "not tried (over the timeout before)"
                if kafka_name not in gave_up:
                    kafka = measure(
                        "kafka", kafka_name, case, size, options.repeats, options.timeout
                    )
                    if kafka is None:
                        gave_up.add(kafka_name)
                        missing = f"> {options.timeout:.0f} (not finished)"
                assert ours is not None, f"ours {our_name} exceeded {options.timeout} s"
                label = f"{size[0]:,} x {size[1]:,}"
                ours_cell = f"{ours['seconds']:.4f} ({ours['calls']})"
                if kafka is None:
                    print(
                        f"| {label} | {case} | {kafka_name} | {our_name} | "
                        f"{missing} | {ours_cell} | - | - | "
                        f"{describe(ours)} | - |",
                        flush=True,
                    )
                    continue
                print(
                    f"| {label} | {case} | {kafka_name} | {our_name} | "
                    f"{kafka['seconds']:.4f} ({kafka['calls']}) | {ours_cell} | "
                    f"{kafka['seconds'] / ours['seconds']:.1f} | {describe(kafka)} | "
                    f"{describe(ours)} | {'yes' if kafka['plan'] == ours['plan'] else 'no'} |",
                    flush=True,
                )
    print(f"\nTimes: medians in seconds (calls in brackets); machine: {cpu_summary()}.")


def cpu_summary() -> str:
    """Core count and the versions compared, for the table's caption."""
    from importlib.metadata import version

    return (
        f"{os.cpu_count()} cores, Python {platform.python_version()}, "
        f"kafka-python {version('kafka-python')}, rebalancing {version('rebalancing')}"
    )


if __name__ == "__main__":
    main()
