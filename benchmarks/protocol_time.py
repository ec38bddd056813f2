"""The leaderless protocols in seconds: a join, a crash and a rolling restart on settled groups of
2 to 64 consumers (4 queues each), per protocol, with each system's default intervals; and the
queues i mod n moves in name order (Pulsar) against join order (RabbitMQ's super stream).

    python benchmarks/protocol_time.py [--seeds 40] [--sizes 2,4,8,16,32,64]
                                       [--out benchmarks/results]

Writes protocol_time.md (the tables, with the command, commit and machine load at the top) and
protocol_time_seconds.png, protocol_time_queue_seconds.png, protocol_time_moves.png. The
measuring is rebalancing.evaluation.scoring.protocol_time's (the comparison notebook calls the same
functions); every figure is simulated time, so it depends on the seeds only, not on the machine.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from rebalancing.evaluation.scoring import protocol_time
from rebalancing.strategies import event_hubs, pulsar_failover, sac
from shared import commit, description

ROOT = Path(__file__).resolve().parents[1]

FIGURES = (
    ("protocol_time_seconds.png", protocol_time.time_figure),
    ("protocol_time_queue_seconds.png", protocol_time.queue_seconds_figure),
    ("protocol_time_moves.png", protocol_time.orderings_figure),
)


def main() -> int:
    parser = argparse.ArgumentParser(description=description(__doc__))
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument(
        "--sizes", default=",".join(str(size) for size in protocol_time.GROUP_SIZES)
    )
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    given = parser.parse_args()
    sizes = tuple(int(size) for size in given.sizes.split(","))
    load = os.getloadavg()[0]
    started = time.perf_counter()
    costs = protocol_time.measure_all(sizes=sizes, seeds=given.seeds)
    summaries = protocol_time.summarise(costs)
    elapsed = time.perf_counter() - started
    command = f"python benchmarks/protocol_time.py --seeds {given.seeds} --sizes {given.sizes}"
    lines = [
        "# The leaderless protocols in seconds",
        "",
        f"`{command}`, {datetime.date.today().isoformat()}, commit {commit()}, "
        f"{os.cpu_count()} cores, load average {load:.1f} at the start and "
        f"{os.getloadavg()[0]:.1f} at the end; {len(costs):,} runs in {elapsed:.0f} s. Every "
        "figure is simulated time with each system's default intervals (SAC: a 2 ms hand-over "
        "per round of releases, a crash noticed when the broker's heartbeat check declares the "
        f"connection dead, {sac.CHECKS_BEFORE_DEAD} to {sac.CHECKS_BEFORE_DEAD + 1} intervals "
        f"of RabbitMQ's default {sac.HEARTBEAT_SECONDS:g} s heartbeat after it; Event Hubs: the "
        "Python SDK's "
        f"{event_hubs.LOAD_BALANCING_INTERVAL:g} s load-balancing cycles plus up to 20% jitter, "
        f"ownership expiring after {event_hubs.PARTITION_OWNERSHIP_EXPIRATION_INTERVAL:g} s; "
        "KCL: a lease taker every 20.05 s, failover time 10 s; Pulsar: each partition whose "
        "active consumer changes unread for the broker's "
        f"{pulsar_failover.FAILOVER_DELAY_SECONDS:g} s failover delay, a crashed consumer "
        "removed when the keep-alive closes its connection, "
        f"1 to 2 intervals of {pulsar_failover.KEEP_ALIVE_INTERVAL_SECONDS:g} s after the crash), "
        "so it depends on the seeds, not on the machine. Each event happens to a settled group "
        f"of n consumers and {protocol_time.QUEUES_PER_CONSUMER} n queues; a rolling restart "
        "sums its rebalances (a quarter of the group leaves, then rejoins under its ids, the "
        "next quarter once the group is quiet). `super_stream` switches partitions inside the "
        "broker and models no time (n/a): what it costs is the queues moved. Figures: "
        "`protocol_time_seconds.png`, `protocol_time_queue_seconds.png`, "
        "`protocol_time_moves.png` beside this file.",
        "",
        protocol_time.markdown_tables(summaries),
    ]
    given.out.mkdir(parents=True, exist_ok=True)
    (given.out / "protocol_time.md").write_text("\n".join(lines), encoding="utf-8")
    for name, drawing in FIGURES:
        drawn = drawing(summaries)
        drawn.savefig(given.out / name, dpi=100)
    print(f"{len(costs):,} runs in {elapsed:.0f} s; wrote {given.out / 'protocol_time.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
