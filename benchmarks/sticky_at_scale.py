"""sticky at scale with realistic ids, before and after a change, in one process: a million
queues with int, string and (topic, partition) ids, and the shape of Kafka's broker-side
UniformAssignor benchmark (10,000 members x 100,000 partitions over 1,000 topics).

Usage: python benchmarks/sticky_at_scale.py --before REV [--rounds 5] [--parts million,kafka]
       [--queues 1000000] [--consumers 2000]

The package at REV is imported as `rebalancing_before` beside the working tree's `rebalancing`
(shared.before_tree), and each round times every variant once, in turn, so that both sides of
each ratio saw the same minute of this shared machine; medians over the rounds. Each call is
timed alone (the last result freed and the collector run before the clock starts).

- million: --queues queues x --consumers consumers, one consumer leaves a balanced plan; ids as
  ints (queues and consumers), strings ("q0000001", "c0001") and (topic, partition) tuples over
  1,000 topics (one string object per topic, as a client's metadata holds them) with string
  consumer ids. Variants: sticky.assign at REV, sticky.assign now (a cold call with plain
  lists) and StickyGroup.assign now (a group that made the balanced plan itself). Prints each
  median and, per variant, the string and tuple times over the int time of the same round;
  then the fastest round of each and their ratios, and every round's time.
- kafka: 1,000 topics x 100 partitions, 10,000 members ("member-00001"), from scratch, one
  member leaves, one joins; the queues and members given sorted, or shuffled (as a broker's
  metadata may list them). The published figure to compare with: 4.3 ms (apache/kafka PR
  17133, JMH, UniformAssignor on the same shape). The group's "from scratch" is a group that
  knows the partitions and whose members all left.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from shared import BEFORE, before_tree, description

Measured = Callable[[], float]
"""A variant: runs once and returns the seconds of the part it times."""


def timed_call(call: Callable[[], object]) -> Measured:
    """The variant that times the whole of `call`, alone: the collector runs first."""

    def measured() -> float:
        gc.collect()
        started = time.perf_counter()
        call()
        return time.perf_counter() - started

    return measured


def _rounds(variants: dict[str, Measured], rounds: int) -> dict[str, list[float]]:
    """Seconds of each variant per round, the variants in turn (reversed every other round),
    after one untimed warm-up call each (imports, caches, the allocator's pools)."""
    for measured in variants.values():
        measured()
    seconds: dict[str, list[float]] = {name: [] for name in variants}
    for number in range(rounds):
        order = list(variants) if number % 2 == 0 else list(reversed(variants))
        for name in order:
            seconds[name].append(variants[name]())
    return seconds


def _million_ids(kind: str, queue_count: int, consumer_count: int) -> tuple[list[Any], list[Any]]:
    if kind == "int":
        return list(range(queue_count)), list(range(consumer_count))
    consumers = [f"c{number:04d}" for number in range(consumer_count)]
    if kind == "string":
        return [f"q{number:07d}" for number in range(queue_count)], consumers
    topics = [f"topic-{number:04d}" for number in range(1000)]
    per_topic = -(-queue_count // len(topics))
    tuples = [(topic, partition) for topic in topics for partition in range(per_topic)]
    return tuples[:queue_count], consumers


def _leave_variants(
    old: Any, new: Any, queues: list[Any], consumers: list[Any]
) -> dict[str, Measured]:
    """sticky after one consumer (the middle one) leaves a balanced plan: before, now, group."""
    balanced = new.sticky.assign(queues, consumers)
    remaining = consumers[: len(consumers) // 2] + consumers[len(consumers) // 2 + 1 :]

    def group_leave() -> float:
        group = new.StickyGroup(balanced)
        group.assign(queues, consumers)  # the balanced plan again, untimed: the group's own
        return timed_call(lambda: group.assign(queues, remaining))()

    return {
        "before": timed_call(lambda: old.sticky.assign(queues, remaining, balanced)),
        "now": timed_call(lambda: new.sticky.assign(queues, remaining, balanced)),
        "group": group_leave,
    }


def _median_ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:,.0f}"


def million(old: Any, new: Any, options: argparse.Namespace) -> None:
    """The million-queue part: see the module docstring."""
    print(
        f"\n## {options.queues:,} queues x {options.consumers:,} consumers, one leaves "
        f"(medians of {options.rounds} rounds, ms)\n"
    )
    variants: dict[str, Measured] = {}
    for kind in ("int", "string", "tuple"):
        queues, consumers = _million_ids(kind, options.queues, options.consumers)
        for name, measured in _leave_variants(old, new, queues, consumers).items():
            variants[f"{kind} {name}"] = measured
    timed = _rounds(variants, options.rounds)
    seconds = {tuple(key.split()): values for key, values in timed.items()}
    print("| variant | int | string | tuple | string / int | tuple / int |")
    print("|---|---|---|---|---|---|")
    for name in ("before", "now", "group"):
        ratios = {
            kind: [
                other / integer
                for other, integer in zip(seconds[kind, name], seconds["int", name], strict=True)
            ]
            for kind in ("string", "tuple")
        }
        print(
            f"| {name} | {_median_ms(seconds['int', name])} "
            f"| {_median_ms(seconds['string', name])} | {_median_ms(seconds['tuple', name])} "
            f"| {statistics.median(ratios['string']):.2f}x "
            f"| {statistics.median(ratios['tuple']):.2f}x |",
            flush=True,
        )
    _fastest_rounds(seconds)


def _fastest_rounds(seconds: dict[tuple[str, ...], list[float]]) -> None:
    """The fastest round of each variant and their ratios (timeit's advice: the least
    disturbed by other processes), then every round's time: on this shared machine a round
    can run at twice the time of the next, when another session's suite starts, and a median
    of ratios mixes such rounds."""
    print("\nFastest rounds (ms) and their ratios:\n")
    print("| variant | int | string | tuple | string / int | tuple / int |")
    print("|---|---|---|---|---|---|")
    for name in ("before", "now", "group"):
        fastest = {kind: min(seconds[kind, name]) for kind in ("int", "string", "tuple")}
        print(
            f"| {name} | {fastest['int'] * 1000:,.0f} | {fastest['string'] * 1000:,.0f} "
            f"| {fastest['tuple'] * 1000:,.0f} | {fastest['string'] / fastest['int']:.2f}x "
            f"| {fastest['tuple'] / fastest['int']:.2f}x |"
        )
    print("\nEvery round (ms):\n")
    for (kind, name), values in seconds.items():
        print(f"- {kind} {name}: {', '.join(f'{value * 1000:,.0f}' for value in values)}")


def kafka(old: Any, new: Any, options: argparse.Namespace) -> None:
    """The Kafka broker-side part: see the module docstring."""
    topics = [f"topic-{number:04d}" for number in range(1000)]
    sorted_queues = [(topic, partition) for topic in topics for partition in range(100)]
    sorted_members = [f"member-{number:05d}" for number in range(10_000)]
    print(
        f"\n## Kafka's shape: 10,000 members x 100,000 partitions over 1,000 topics "
        f"(medians of {options.rounds * 3} rounds, ms; published UniformAssignor: 4.3 ms)\n"
    )
    print("| input order | variant | from scratch | one leaves | one joins |")
    print("|---|---|---|---|---|")
    for order in ("sorted", "shuffled"):
        queues, members = list(sorted_queues), list(sorted_members)
        if order == "shuffled":
            random.Random(1).shuffle(queues)
            random.Random(2).shuffle(members)
        balanced = new.sticky.assign(queues, members)
        left = [member for member in members if member != "member-05000"]
        joined = [*members, "member-10000"]
        cases = {"scratch": (members, None), "leave": (left, balanced), "join": (joined, balanced)}
        variants: dict[str, Measured] = {}
        for name, module in (("before", old), ("now", new)):
            for case, (changed, previous) in cases.items():
                assign = partial(module.sticky.assign, queues, changed, previous)
                variants[f"{name} {case}"] = timed_call(assign)
        group = new.StickyGroup()
        group.assign(queues, members)
        for case, (changed, _) in cases.items():
            variants[f"group {case}"] = _group_change(group, queues, members, changed)
        timed = _rounds(variants, options.rounds * 3)
        for name in ("before", "now", "group"):
            medians = [statistics.median(timed[f"{name} {case}"]) * 1000 for case in cases]
            print(
                f"| {order} | {name} | {' | '.join(f'{median:.1f}' for median in medians)} |",
                flush=True,
            )


def _group_change(
    group: Any, queues: list[Any], members: list[str], changed: list[str]
) -> Measured:
    """A rebalance of a StickyGroup whose last plan is over `members`: to `changed`, timed,
    then back to `members`, untimed. With `changed` the members themselves, every member
    leaves first (untimed), so that all of them come back: from scratch, the partitions known."""

    def measured() -> float:
        if changed is members:
            group.assign(queues, [])
        seconds = timed_call(lambda: group.assign(queues, changed))()
        group.assign(queues, members)
        return seconds

    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=description(__doc__))
    parser.add_argument("--before", required=True, help="the commit to compare with")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--parts", default="million,kafka")
    parser.add_argument("--queues", type=int, default=1_000_000)
    parser.add_argument("--consumers", type=int, default=2_000)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sticky-before-") as directory:
        before_tree(options.before, Path(directory))
        sys.path.insert(0, directory)
        old = argparse.Namespace(sticky=__import__(f"{BEFORE}.strategies.sticky", fromlist=["_"]))
        from rebalancing.strategies import sticky
        from rebalancing.strategies.sticky_group import StickyGroup

        new = argparse.Namespace(sticky=sticky, StickyGroup=StickyGroup)
        print(
            f"before {options.before}, now: the working tree; {os.cpu_count()} cores; "
            f"load average at start {os.getloadavg()[0]:.2f}"
        )
        parts = options.parts.split(",")
        if "million" in parts:
            million(old, new, options)
        if "kafka" in parts:
            kafka(old, new, options)
        print(f"\nload average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
