"""How far the balanced, zone-matching strategies are from the fewest cross-zone queues any
balanced plan reads (rebalancing.evaluation.scoring.placement_scores.fewest_cross_zone).

Usage: python benchmarks/cross_zone_gap.py [--groups 200]
Group s (seed s): 1-60 queues, 1-8 consumers, 1-3 zones; each consumer in a random zone (one
in ten with none), each queue with 1-3 distinct random replica zones. Each strategy plans the
group fresh, then again after one consumer leaves (with the fresh plan as previous). Prints,
per strategy and case, the distribution of the gap (its cross-zone queues minus the fewest) and
the gap as a share of the queues; then the same over the groups whose consumers all have a
zone.
"""

from __future__ import annotations

import argparse
import random
from collections import Counter
from typing import Any

from rebalancing.evaluation.scoring.placement_scores import cross_zone_count, fewest_cross_zone
from rebalancing.strategies import STRATEGIES
from shared import description


def group(seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    zones = ["a", "b", "c"][: rng.randint(1, 3)]
    queues = [f"q{n}" for n in range(rng.randint(1, 60))]
    consumers = [f"c{n}" for n in range(rng.randint(1, 8))]
    return {
        "queues": queues,
        "consumers": consumers,
        "consumer_zones": {
            consumer: None if rng.random() < 0.1 else rng.choice(zones) for consumer in consumers
        },
        "queue_zones": {queue: rng.sample(zones, rng.randint(1, len(zones))) for queue in queues},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=description(__doc__))
    parser.add_argument("--groups", type=int, default=200)
    count = parser.parse_args().groups
    names = sorted(
        name
        for name, strategy in STRATEGIES.items()
        if {"balanced", "zone_matching"} <= strategy.promises
    )
    for name in names:
        strategy = STRATEGIES[name]
        cases = ("fresh", "one leaves", "fresh, all zoned", "one leaves, all zoned")
        gaps: dict[str, Counter[int]] = {case: Counter() for case in cases}
        shares: dict[str, list[float]] = {case: [] for case in gaps}
        for seed in range(count):
            facts = group(seed)
            zones = {key: facts[key] for key in ("consumer_zones", "queue_zones")}
            previous = None
            for case, consumers in (
                ("fresh", facts["consumers"]),
                ("one leaves", facts["consumers"][:-1]),
            ):
                if not consumers:
                    continue
                plan = strategy(facts["queues"], consumers, previous, **zones)
                gap = cross_zone_count(plan, **zones) - fewest_cross_zone(
                    facts["queues"], consumers, **zones
                )
                all_zoned = all(zones["consumer_zones"][consumer] for consumer in consumers)
                for counted in (case, f"{case}, all zoned") if all_zoned else (case,):
                    gaps[counted][gap] += 1
                    shares[counted].append(gap / len(facts["queues"]))
                previous = plan
        for case, counter in gaps.items():
            total = sum(counter.values())
            spread = ", ".join(f"{gap}: {number}" for gap, number in sorted(counter.items()))
            print(
                f"{name} {case}: {total} groups, gap 0 in {counter[0] / total:.0%}, "
                f"mean {sum(g * n for g, n in counter.items()) / total:.2f}, "
                f"max {max(counter)}, mean share {sum(shares[case]) / total:.1%}, "
                f"max share {max(shares[case]):.1%}; gap: groups = {spread}"
            )


if __name__ == "__main__":
    main()
