"""What client-side rebalancing costs against broker-side, per strategy, as views grow staler.

Usage: python benchmarks/views_cost.py [--scenarios 200] [--stale 0.1,0.3,0.6] [--max-delay 3]

For each probability that a consumer's consumer list is stale after a change (its queue list:
a third of that), scores the same scenarios client-side and prints, per client-side strategy,
the mean queue-periods read twice and unread per rebalance, their share of all queue-periods of
the rebalances that disagreed, and the longest time to agree. Broker-side, both are 0 by
construction (rebalancing.evaluation.scenarios.views).
"""

from __future__ import annotations

import argparse
from collections import defaultdict

from rebalancing.evaluation.scenarios.changes import generate_scenarios
from rebalancing.evaluation.scenarios.views import ViewSettings
from rebalancing.evaluation.scoring.replay import score_scenarios
from rebalancing.strategies import STRATEGIES


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scenarios", type=int, default=200)
    parser.add_argument("--stale", default="0.1,0.3,0.6")
    parser.add_argument("--max-delay", type=int, default=3)
    options = parser.parse_args()
    chosen = {name: strategy for name, strategy in STRATEGIES.items() if strategy.client_side}
    print(f"{options.scenarios} scenarios (seed 1), client-side; max delay {options.max_delay}\n")
    print(
        "| stale probability | strategy | read twice per rebalance | unread per rebalance "
        "| read twice, share | unread, share | periods to agree max |"
    )
    print("|---|---|---|---|---|---|---|")
    for probability in (float(value) for value in options.stale.split(",")):
        settings = ViewSettings(probability, probability / 3, options.max_delay)
        totals: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
        scenarios = generate_scenarios(1, range(options.scenarios))
        for row in score_scenarios(scenarios, chosen, "client", settings):
            total = totals[row.strategy]
            total[0] += 1
            total[1] += row.queue_periods_read_twice
            total[2] += row.queue_periods_unread
            total[3] += row.queue_count * row.periods_to_agree
            total[4] = max(total[4], row.periods_to_agree)
        for name, (rows, twice, unread, queue_periods, longest) in sorted(totals.items()):
            print(
                f"| {probability:g} | {name} | {twice / rows:,.1f} | {unread / rows:,.1f} "
                f"| {twice / max(queue_periods, 1):.1%} | {unread / max(queue_periods, 1):.1%} "
                f"| {longest} |"
            )


if __name__ == "__main__":
    main()
