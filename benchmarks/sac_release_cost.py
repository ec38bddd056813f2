"""What one membership change costs a SAC group, with the protocol state carried (a session).

Usage: python benchmarks/sac_release_cost.py [--queues 64,256,1024,4096] [--apps 8,32,128,256]
                                             [--release highest] [--seconds-per-release 0.002]

For each group of Q queues x A apps: a session settles a cold start, then one change is applied
from that settled state: one app joins, one app leaves (a crash is the same change), one queue
is added; and the join once more as `sac.assign` sees it, rebuilt from the owners alone
(start ids and lines in sorted id order). Prints the releases and rounds of each change, the
releases over Q x A / 2, and the time to settle if each release is a handover of
`--seconds-per-release` (RabbitMQ 3.10 measures 1.3-2.8 ms from cancel to the new active
consumer): serial (every release in turn, an upper bound) and one handover per round (the
releases of a round all at once, a lower bound).
"""

from __future__ import annotations

import argparse

from rebalancing.strategies import sac

CHANGES = ("cold start", "join", "join, reconstructed", "leave", "queue added")


def _change_runs(queue_count: int, app_count: int, release: str) -> dict[str, tuple[int, int]]:
    """(releases, rounds) of each change, each from the settled cold start."""
    queues = list(range(queue_count))
    apps = [f"app-{number:04d}" for number in range(app_count)]
    results = {}
    for change in CHANGES:
        session = sac.Session(release=release, seed=1)
        run = session.rebalance(queues, apps)
        if change == "join":
            run = session.rebalance(queues, [*apps, "app-new"])
        elif change == "join, reconstructed":  # what sac.assign does: only the owners are known
            run = sac.run(queues, [*apps, "app-new"], run.owners, release=release, seed=1)
        elif change == "leave":
            run = session.rebalance(queues, apps[: app_count // 2] + apps[app_count // 2 + 1 :])
        elif change == "queue added":
            run = session.rebalance([*queues, queue_count], apps)
        if not run.converged:
            raise AssertionError(f"{queue_count} x {app_count} {change}: did not converge")
        results[change] = (run.releases, run.rounds)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queues", default="64,256,1024,4096")
    parser.add_argument("--apps", default="8,32,128,256")
    parser.add_argument("--release", default="highest", choices=sac.RELEASE_POLICIES)
    parser.add_argument("--seconds-per-release", type=float, default=0.002)
    options = parser.parse_args()
    handover = options.seconds_per_release
    print(f"release policy {options.release}; {handover * 1000:g} ms per release\n")
    print(
        "| queues x apps | change | releases | releases / (Q x A / 2) | rounds "
        "| settle, serial (s) | settle, one handover per round (s) |"
    )
    print("|---|---|---|---|---|---|---|")
    for queue_count in (int(value) for value in options.queues.split(",")):
        for app_count in (int(value) for value in options.apps.split(",")):
            runs = _change_runs(queue_count, app_count, options.release)
            half_product = queue_count * app_count / 2
            for change, (releases, rounds) in runs.items():
                print(
                    f"| {queue_count:,} x {app_count} | {change} | {releases:,} "
                    f"| {releases / half_product:.2f} | {rounds:,} "
                    f"| {releases * handover:,.1f} | {rounds * handover:,.2f} |"
                )


if __name__ == "__main__":
    main()
