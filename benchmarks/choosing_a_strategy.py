"""Write docs/choosing-a-strategy.md: for each system, the verdict of `rebalancing compare` on
four typical groups (a small group with rolling restarts, a large group with autoscaling, a
group whose consumers crash often, a group across zones with skewed load), each with the
command that regenerates it.

    python benchmarks/choosing_a_strategy.py [--scenarios-scale 1.0] [--out PAGE]
        [--systems kafka,kafka-eager]

With --systems, only those systems' sections are made again, in the page as it is (the others
stay as they were, and the header says which were remade, when, and at which scale).

Every figure on the page comes from the run this script makes (the date, commit and machine load
are written at the top); the timings in the tables are this machine's.
"""

from __future__ import annotations

import argparse
import datetime
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path

from rebalancing.evaluation.command.compare import compare
from rebalancing.evaluation.command.profile import add_profile_arguments, new_parser, profile_from
from rebalancing.evaluation.decision.systems import SYSTEM_VERDICTS
from rebalancing.evaluation.report.verdict_text import render_markdown
from shared import commit, description

ROOT = Path(__file__).resolve().parents[1]

GROUPS: tuple[tuple[str, str, list[str]], ...] = (
    (
        "small-rolling",
        "A small group with rolling restarts",
        ["--queues", "64", "--consumers", "4:12", "--mix", "rolling_restart=3,crash=1"],
    ),
    (
        "large-autoscaling",
        "A large group that autoscales",
        [
            "--queues",
            "1024",
            "--consumers",
            "32:128",
            "--mix",
            "autoscaling=3,join=1,leave=1",
            "--scenarios",
            "300",
        ],
    ),
    (
        "frequent-crashes",
        "A group whose consumers crash often",
        ["--queues", "256", "--consumers", "8:32", "--mix", "crash=3,flapping=2,join=1"],
    ),
    (
        "zones-and-load",
        "A group across zones with skewed load",
        [
            "--queues",
            "128",
            "--consumers",
            "6:24",
            "--zones",
            "2:3",
            "--weights",
            "zipf",
            "--mix",
            "zone_outage=1,zone_recovery=1,load_shift=2,rolling_restart=1,crash=1",
            "--scenarios",
            "300",
        ],
    ),
)
"""Each group: an anchor, a title and its `rebalancing compare` options (1,000 scenarios unless
it says otherwise)."""

SYSTEM_ORDER = (
    "kafka",
    "kafka-eager",
    "kafka-cooperative",
    "kafka-consumer",
    "rocketmq-client",
    "rocketmq-broker",
    "rabbitmq-sac",
    "pulsar-failover",
    "azure-event-hubs",
    "aws-kcl",
)
"""Every system of the verdict but `any` (a test checks that none is missing)."""

INTRODUCTION = """\
`rebalancing compare` answers "which strategy for my group?" for the system the group runs on:
it scores that system's candidates on scenarios drawn from the group's description and prints a
verdict (see [Choose a strategy for your group](tutorials/compare.md) and
[Scores](reference/scores.md)). Below are its verdicts on four typical groups per system. Run
the command under a verdict to reproduce it, or change the options to describe your own group:
sizes and churn change the answer.

How a verdict is read: the first row is the recommendation; candidates are compared on the
system's deciding scores in order (load, where queues have weights, or else balance; zones,
where members have them; then what the system pays for), with 95%
intervals of the difference of means, and means within 10% of each other are level; "dominated"
means another candidate is better on one deciding score and worse on none. A tie is stated as a
tie.
"""


def _arguments(system: str, options: list[str], scale: float) -> list[str]:
    given = list(options)
    if "--scenarios" in given:
        index = given.index("--scenarios") + 1
        given[index] = str(max(10, round(int(given[index]) * scale)))
    else:
        given += ["--scenarios", str(max(10, round(1000 * scale)))]
    return ["--system", system, *given, "--seed", "1"]


def main() -> int:
    parser = argparse.ArgumentParser(description=description(__doc__))
    parser.add_argument("--scenarios-scale", type=float, default=1.0)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "choosing-a-strategy.md")
    parser.add_argument("--systems", default=None, help="remake only these systems' sections")
    given = parser.parse_args()
    load = os.getloadavg()
    started = time.perf_counter()
    chosen = SYSTEM_ORDER if given.systems is None else tuple(given.systems.split(","))
    unknown = sorted(set(chosen) - set(SYSTEM_ORDER))
    if unknown:
        parser.error(f"--systems: unknown {', '.join(unknown)}; known: {', '.join(SYSTEM_ORDER)}")
    made: dict[str, list[str]] = {}
    for system in chosen:
        title = SYSTEM_VERDICTS[system].title
        sections = made.setdefault(system, [])
        sections.append(f"## {title} (`--system {system}`) {{#{system}}}\n")
        for anchor, heading, options in GROUPS:
            arguments = _arguments(system, options, given.scenarios_scale)
            with tempfile.TemporaryDirectory() as out:
                compare_parser = new_parser("rebalancing compare", "")
                add_profile_arguments(compare_parser, scenarios=1000, out=out)
                profile = profile_from(compare_parser.parse_args(arguments))
                comparison = compare(profile)
            command = "rebalancing compare " + shlex.join(arguments)
            sections.append(
                f"### {heading} {{#{system}-{anchor}}}\n\n"
                + render_markdown(comparison.verdict, profile.describe())
                + f"\n\n`{command}` ({comparison.seconds:.1f} s here)\n"
            )
            print(f"{system} {anchor}: {comparison.verdict.recommended}", file=sys.stderr)
    seconds = time.perf_counter() - started
    if given.systems is not None:
        return _remade(given.out, made, given.scenarios_scale, seconds)
    sections = [section for system in SYSTEM_ORDER for section in made[system]]
    header = (
        "<!-- generated by benchmarks/choosing_a_strategy.py: edit the script, not this page -->\n"
        "# Choosing a strategy\n\n"
        + INTRODUCTION
        + f"\nGenerated by `python benchmarks/choosing_a_strategy.py` on "
        f"{datetime.date.today().isoformat()} at commit {commit()}, in {seconds:.0f} s on "
        f"{os.cpu_count()} cores (load average {load[0]:.1f} at the start; the time columns "
        "depend on it, the other scores do not).\n\n"
    )
    given.out.write_text(header + "\n".join(sections), encoding="utf-8")
    print(f"wrote {given.out}", file=sys.stderr)
    return 0


def _remade(page: Path, made: dict[str, list[str]], scale: float, seconds: float) -> int:
    """Put the sections `made` (system -> its section's parts) into `page` in SYSTEM_ORDER's
    place, the other sections as they are, and say so under the header."""
    text = page.read_text(encoding="utf-8")
    head, *parts = text.split("\n## ")
    old = {}
    for part in parts:
        system = part.split("{#", 1)[1].split("}", 1)[0]
        old[system] = "## " + part.rstrip("\n") + "\n"
    sections = [
        "\n".join(made[system]) if system in made else old[system]
        for system in SYSTEM_ORDER
        if system in made or system in old
    ]
    note = (
        f"\nSections {', '.join(made)} made again on {datetime.date.today().isoformat()} at "
        f"commit {commit()}, in {seconds:.0f} s, scenarios scaled by {scale:g} (each command "
        "says how many).\n"
    )
    page.write_text(head.rstrip("\n") + "\n" + note + "\n" + "\n".join(sections), encoding="utf-8")
    print(f"wrote {', '.join(made)} into {page}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
