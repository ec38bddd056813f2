"""How stable is the verdict? For each of at least 15 profiles across the systems (sizes, churn
mixes, zones and weights), `rebalancing compare` decides twice at its automatic stopping rule
(two seeds) and once on a large run (20,000 scenarios by default); the table says, per profile,
what each decided, whether each quick verdict agrees with the large run (it names the large
run's pick, or a tie that holds it, or one of the large run's tied candidates: the recommended
sets meet), whether the two seeds agree, and whether a quick verdict picked a strategy the large
run finds worse on its first deciding score (beyond the level band).

    PYTHONPATH=src python benchmarks/verdict_stability.py [--large 20000]
        [--profiles NAME,...] [--quick auto] [--runs benchmarks/results/verdict_stability.json]

The runs take hours at 20,000 scenarios on two cores, so each one is kept in a JSON file
(--runs) as soon as it ends, with the commit it ran at, and a run already there is read back
rather than run again: the script resumes where it stopped and the table says each run's
commit. Each comparison uses every core (rebalancing compare scores a batch in forked
processes), so the runs go one after another.

Targets (issue 40): at least 95% of quick verdicts agree with the large run, and none picks a
strategy the large run finds worse. The figures in docs/benchmarks.md come from this script
with the command printed at the top of its output.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from rebalancing.evaluation.command.compare import compare
from rebalancing.evaluation.command.profile import (
    AUTO,
    add_profile_arguments,
    new_parser,
    profile_from,
)
from rebalancing.evaluation.decision.verdict import Verdict
from shared import commit, description

PROFILES: dict[str, str] = {
    "eager-small-rolling": (
        "--system kafka-eager --queues 64 --consumers 4:12 --mix rolling_restart=3,crash=1"
    ),
    "eager-large-autoscaling": (
        "--system kafka-eager --queues 512 --consumers 16:64 --mix autoscaling=3,join=1,leave=1"
    ),
    "cooperative-small-rolling": (
        "--system kafka-cooperative --queues 64 --consumers 4:12 --mix rolling_restart=3,crash=1"
    ),
    "cooperative-crashes": (
        "--system kafka-cooperative --queues 256 --consumers 8:32 --mix crash=3,flapping=2,join=1"
    ),
    "cooperative-zones-weights": (
        "--system kafka-cooperative --queues 96 --consumers 6:24 --zones 3 --weights zipf "
        "--mix zone_outage=1,zone_recovery=1,load_shift=2,rolling_restart=1,crash=1"
    ),
    "consumer-small-rolling": (
        "--system kafka-consumer --queues 64 --consumers 4:12 --mix rolling_restart=3,crash=1"
    ),
    "consumer-queues-added": (
        "--system kafka-consumer --queues 128 --consumers 4:16 --mix queues_added=2,join=1,leave=1"
    ),
    "rocketmq-client-mixed": (
        "--system rocketmq-client --queues 64 --consumers 4:12 --mix mixed=2,join=1,crash=1"
    ),
    "rocketmq-broker-zones": (
        "--system rocketmq-broker --queues 128 --consumers 6:24 --zones 2:3 "
        "--mix zone_outage=1,zone_recovery=1,join=1,leave=1"
    ),
    "rabbitmq-sac-small": (
        "--system rabbitmq-sac --queues 32 --consumers 2:8 --mix rolling_restart=2,crash=1,join=1"
    ),
    "rabbitmq-sac-flapping": (
        "--system rabbitmq-sac --queues 64 --consumers 4:16 --mix flapping=2,join=1,leave=1"
    ),
    "kafka-pairs-rolling": (
        "--system kafka --queues 64 --consumers 4:12 --mix rolling_restart=3,crash=1"
    ),
    "event-hubs-small": (
        "--system azure-event-hubs --queues 32 --consumers 2:8 --mix join=1,crash=1,leave=1"
    ),
    "kafka-pairs-static-autoscaling": (
        "--system kafka --queues 256 --consumers 8:32 --static-membership "
        "--mix rolling_restart=2,autoscaling=1,crash=1"
    ),
    "any-small-rolling": (
        "--system any --queues 64 --consumers 4:12 --mix rolling_restart=3,crash=1"
    ),
    "any-zones-weights": (
        "--system any --queues 96 --consumers 6:24 --zones 3 --weights zipf "
        "--mix zone_outage=1,zone_recovery=1,load_shift=2,rolling_restart=1,crash=1"
    ),
}
"""Each profile: a name and its `rebalancing compare` options (no --scenarios, no --seed). Every
profile has two candidates or more (pulsar-failover and aws-kcl have one each: their verdicts
agree by construction, so they are not here)."""


@dataclass(frozen=True)
class Decision:
    """What one run decided: the recommended candidates, the scenarios it took, its seconds,
    and the means of its first deciding score (candidate -> mean), to judge another pick."""

    recommended: tuple[str, ...]
    scenarios: int
    seconds: float
    criterion: str
    means: dict[str, float | None]
    level_band: float
    commit: str


def decide(options: str, scenarios: str, seed: int) -> Decision:
    """`rebalancing compare OPTIONS --scenarios SCENARIOS --seed SEED`, in this process."""
    arguments = [*shlex.split(options), "--scenarios", scenarios, "--seed", str(seed)]
    parser = new_parser("rebalancing compare", "")
    add_profile_arguments(parser, scenarios=AUTO, out=None)
    profile = profile_from(parser.parse_args(arguments))
    started = time.perf_counter()
    comparison = compare(profile)
    verdict: Verdict = comparison.verdict
    criterion = verdict.system.criteria[0]
    scored = comparison.profile
    return Decision(
        recommended=verdict.recommended,
        scenarios=int(scored.scenarios) if scored is not None else int(scenarios),
        seconds=time.perf_counter() - started,
        criterion=criterion,
        means={name: verdict.means.get(name, {}).get(criterion) for name in verdict.candidates},
        level_band=0.10,
        commit=commit(),
    )


class Runs:
    """The runs made so far, in a JSON file keyed by options, scenarios and seed; a run is
    written as soon as it ends, so a stopped script resumes where it stopped."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.kept: dict[str, dict[str, object]] = (
            json.loads(path.read_text()) if path.exists() else {}
        )

    def has_all(self, name: str, quick: str, large: int) -> bool:
        """Whether profile `name`'s three runs (run_profile) are kept."""
        options = PROFILES[name]
        return all(
            self.key(options, scenarios, seed) in self.kept
            for scenarios, seed in ((quick, 1), (quick, 2), (str(large), 3))
        )

    @staticmethod
    def key(options: str, scenarios: str, seed: int) -> str:
        return f"{options} --scenarios {scenarios} --seed {seed}"

    def decide(self, options: str, scenarios: str, seed: int) -> Decision:
        key = self.key(options, scenarios, seed)
        if key not in self.kept:
            self.kept[key] = asdict(decide(options, scenarios, seed))
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps(self.kept, indent=1, sort_keys=True) + "\n")
        entry = dict(self.kept[key])
        entry["recommended"] = tuple(entry["recommended"])  # type: ignore[arg-type]
        return Decision(**entry)  # type: ignore[arg-type]


def agrees(quick: Decision, large: Decision) -> bool:
    """The quick verdict names the large run's pick, or a tie holding it, or one of its ties."""
    return bool(set(quick.recommended) & set(large.recommended))


def picks_worse(quick: Decision, large: Decision) -> bool:
    """The quick verdict picked one strategy that the large run finds worse than its own pick
    on the first deciding score, beyond the level band (lower is better for the scores the
    verdict decides on first, except where the large run's means say otherwise)."""
    if len(quick.recommended) != 1 or agrees(quick, large):
        return False
    picked = large.means.get(quick.recommended[0])
    best = [large.means.get(name) for name in large.recommended]
    known = [value for value in best if value is not None]
    if picked is None or not known:
        return False
    reference = min(known)
    return picked - reference > large.level_band * max(abs(picked), abs(reference))


def run_profile(
    runs: Runs, name: str, quick: str, large: int
) -> tuple[str, Decision, Decision, Decision]:
    """One profile's three runs: two seeds at `quick`, one with `large` scenarios."""
    options = PROFILES[name]
    return (
        name,
        runs.decide(options, quick, 1),
        runs.decide(options, quick, 2),
        runs.decide(options, str(large), 3),
    )


def shown(decision: Decision) -> str:
    picked = " = ".join(decision.recommended) or "none"
    return f"{picked} ({decision.scenarios:,} sc, {decision.seconds:.0f} s, {decision.commit})"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=description(__doc__))
    parser.add_argument("--large", type=int, default=20_000)
    parser.add_argument("--quick", default="auto", help="the quick runs' --scenarios")
    parser.add_argument(
        "--runs",
        type=Path,
        default=Path(__file__).parent / "results" / "verdict_stability.json",
        help="the JSON file that keeps each run (read back, not run again)",
    )
    parser.add_argument("--profiles", default=",".join(PROFILES))
    parser.add_argument(
        "--kept-only",
        action="store_true",
        help="run nothing: the table of the profiles whose three runs are kept, the rest named",
    )
    given = parser.parse_args(argv)
    names = [name for name in given.profiles.split(",") if name]
    unknown = [name for name in names if name not in PROFILES]
    if unknown:
        parser.error(f"unknown profiles {unknown}; known: {', '.join(PROFILES)}")
    load = os.getloadavg()
    print(
        "# Verdict stability\n\n"
        f"`PYTHONPATH=src python benchmarks/verdict_stability.py {shlex.join(sys.argv[1:])}`: "
        f"verdict stability at {commit()}, load {load[0]:.1f}, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.\n"
    )
    runs = Runs(given.runs)
    if given.kept_only:
        missing = [name for name in names if not runs.has_all(name, given.quick, given.large)]
        names = [name for name in names if name not in missing]
        if missing:
            print(f"Not yet run (the table leaves them out): {', '.join(missing)}.\n")
        if not names:
            return 1
    results = [run_profile(runs, name, given.quick, given.large) for name in names]
    print(
        "| profile | candidates | seed 1 | seed 2 | large run | agree with large | seeds agree "
        "| worse |"
    )
    print("|---|---|---|---|---|---|---|---|")
    agreeing = worse = seeds_agreeing = 0
    for name, first, second, large in results:
        quick_agree = agrees(first, large) + agrees(second, large)
        agreeing += quick_agree
        picked_worse = picks_worse(first, large) + picks_worse(second, large)
        worse += picked_worse
        seeds = agrees(first, second)
        seeds_agreeing += seeds
        print(
            f"| {name} | {len(large.means)} | {shown(first)} | {shown(second)} | {shown(large)} "
            f"| {quick_agree}/2 "
            f"| {'yes' if seeds else 'no'} | {picked_worse} |"
        )
    quick_runs = 2 * len(results)
    print(
        f"\nquick verdicts agreeing with the large run: {agreeing}/{quick_runs} "
        f"({100 * agreeing / quick_runs:.0f}%); seeds agreeing: {seeds_agreeing}/{len(results)}; "
        f"quick picks the large run finds worse: {worse}"
    )
    return 0 if agreeing >= 0.95 * quick_runs and worse == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
