"""Write docs/choosing-a-strategy.md: for each system, the verdict of `rebalancing compare` on
four typical groups (a small group with rolling restarts, a large group with autoscaling, a
group whose consumers crash often, a group across zones with skewed load), each with the
command that regenerates it.

    python benchmarks/choosing_a_strategy.py [--scenarios-scale 1.0] [--out PAGE]
                                             [--system SYSTEM]

Every figure on the page comes from the run this script makes (the date, commit and machine load
are written at the top); the timings in the tables are this machine's. `--system` makes that
system's section again in the page as it is and leaves the others alone (a change that moves
one system's figures only): the section then says when and at which commit it was made.
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


def _system_section(system: str, scale: float) -> list[str]:
    """The page's section of one system: its heading, then each group's verdict and command."""
    title = SYSTEM_VERDICTS[system].title
    section = [f"## {title} (`--system {system}`) {{#{system}}}\n"]
    for anchor, heading, options in GROUPS:
        arguments = _arguments(system, options, scale)
        with tempfile.TemporaryDirectory() as out:
            compare_parser = new_parser("rebalancing compare", "")
            add_profile_arguments(compare_parser, scenarios=1000, out=out)
            profile = profile_from(compare_parser.parse_args(arguments))
            comparison = compare(profile)
        command = "rebalancing compare " + shlex.join(arguments)
        section.append(
            f"### {heading} {{#{system}-{anchor}}}\n\n"
            + render_markdown(comparison.verdict, profile.describe())
            + f"\n\n`{command}` ({comparison.seconds:.1f} s here)\n"
        )
        print(f"{system} {anchor}: {comparison.verdict.recommended}", file=sys.stderr)
    return section


def _replace_section(page: str, system: str, section: list[str], note: str) -> str:
    """`page` with the section of `system` (from its `## ` heading to the next one) replaced by
    `section`, `note` after its heading."""
    marker = f"{{#{system}}}\n"
    lines = page.splitlines(keepends=True)
    starts = [index for index, line in enumerate(lines) if line.startswith("## ")]
    begin = next((index for index in starts if lines[index].endswith(marker)), None)
    if begin is None:
        raise SystemExit(f"the page has no section for {system}: make the whole page")
    end = next((index for index in starts if index > begin), len(lines))
    heading, *verdicts = section
    replaced = [heading, f"\n{note}\n\n", "\n".join(verdicts)]
    tail = "".join(lines[end:])
    return "".join(lines[:begin]) + "".join(replaced) + ("\n" + tail if tail else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=description(__doc__))
    parser.add_argument("--scenarios-scale", type=float, default=1.0)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "choosing-a-strategy.md")
    parser.add_argument("--system", choices=SYSTEM_ORDER, default=None)
    given = parser.parse_args()
    load = os.getloadavg()
    started = time.perf_counter()
    if given.system is not None:
        section = _system_section(given.system, given.scenarios_scale)
        note = (
            f"This section was made again by `python benchmarks/choosing_a_strategy.py "
            f"--system {given.system}` on {datetime.date.today().isoformat()} at commit "
            f"{commit()}, in {time.perf_counter() - started:.0f} s (load average "
            f"{load[0]:.1f} at the start); the rest of the page is as the header says."
        )
        page = given.out.read_text(encoding="utf-8")
        given.out.write_text(_replace_section(page, given.system, section, note), "utf-8")
        print(f"wrote the {given.system} section of {given.out}", file=sys.stderr)
        return 0
    sections: list[str] = []
    for system in SYSTEM_ORDER:
        sections.extend(_system_section(system, given.scenarios_scale))
    seconds = time.perf_counter() - started
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


if __name__ == "__main__":
    sys.exit(main())
