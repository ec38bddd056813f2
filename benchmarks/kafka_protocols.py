"""Kafka's group protocols in seconds: a join (and one with a member that polls late), a crash,
a rolling restart (dynamic and static members) and partitions added on settled groups, eager
range against cooperative sticky against the consumer protocol (KIP-848) with its server-side
assignors, with Kafka 4.x's default timers.

    python benchmarks/kafka_protocols.py [--full] [--seeds N] [--sizes 2x10,10x100,...]
                                         [--setups eager_range,...] [--out benchmarks/results]

Quick by default (3 group sizes up to 50 members x 1,250 partitions, 5 seeds); `--full` runs
2 to 200 members and 10 to 10,000 partitions (7 sizes) with 5 seeds. Writes kafka_protocols.md
(the tables, with the command, commit and machine load at the top) and kafka_protocols_seconds
.png, kafka_protocols_unowned.png, kafka_protocols_paused.png, and prints the tables. The
measuring is rebalancing.evaluation.scoring.kafka_time's (the comparison notebook calls the same
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

from rebalancing.evaluation.scoring import kafka_time
from shared import commit, description

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=description(__doc__))
    parser.add_argument("--full", action="store_true", help="2 to 200 members (7 sizes)")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--sizes", help="MEMBERSxPARTITIONS,... (overrides --full's sizes)")
    parser.add_argument("--setups", default=",".join(kafka_time.PROTOCOLS))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    given = parser.parse_args()
    if given.sizes:
        sizes = kafka_time.parse_sizes(given.sizes)
    else:
        sizes = kafka_time.FULL_GROUP_SIZES if given.full else kafka_time.GROUP_SIZES
    setups = tuple(given.setups.split(","))
    load = os.getloadavg()[0]
    started = time.perf_counter()
    costs = kafka_time.measure_all(setups=setups, sizes=sizes, seeds=given.seeds)
    summaries = kafka_time.summarise(costs)
    elapsed = time.perf_counter() - started
    command = " ".join(
        ["python benchmarks/kafka_protocols.py", *(["--full"] if given.full else [])]
        + [f"--seeds {given.seeds}"]
        + ([f"--sizes {given.sizes}"] if given.sizes else [])
        + ([f"--setups {given.setups}"] if given.setups != ",".join(kafka_time.PROTOCOLS) else [])
    )
    tables = kafka_time.markdown_tables(summaries)
    lines = [
        "# Kafka's protocols in seconds",
        "",
        f"`{command}`, {datetime.date.today().isoformat()}, commit {commit()}, "
        f"{os.cpu_count()} cores, load average {load:.1f} at the start and "
        f"{os.getloadavg()[0]:.1f} at the end; {len(costs):,} runs in {elapsed:.0f} s. Every "
        "figure is simulated time with Kafka 4.x's default timers (classic: heartbeats every "
        "3 s, session timeout 45 s, metadata refreshed every 300 s; consumer protocol: "
        "heartbeats every 5 s, session timeout 45 s), heartbeat phases drawn from the seed, so "
        "it depends on the seeds, not on the machine. Each event happens to a settled group of "
        "members x partitions; a slow join has one member's poll loop busy for "
        f"{kafka_time.SLOW_SECONDS:g} s from the join on; a rolling restart takes a quarter of "
        "the group down at a time "
        f"for {kafka_time.RESTART_DOWN_SECONDS:g} s, the next quarter once the group is quiet; "
        "partitions added: a quarter more. Figures: `kafka_protocols_seconds.png`, "
        "`kafka_protocols_unowned.png`, `kafka_protocols_paused.png` beside this file.",
        "",
        tables,
    ]
    given.out.mkdir(parents=True, exist_ok=True)
    (given.out / "kafka_protocols.md").write_text("\n".join(lines), encoding="utf-8")
    for name, score in kafka_time.FIGURES:
        kafka_time.figure(summaries, score).savefig(given.out / name, dpi=100)
    print(tables)
    print(f"{len(costs):,} runs in {elapsed:.0f} s; wrote {given.out / 'kafka_protocols.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
