"""The `rebalancing` command: `compare` answers "which strategy for my group?" for a profile
(in one process up to LOCAL_LIMIT scenarios, with the Spark harness above), `harness` runs the
Spark harness as `python -m rebalancing.harness` does, `systems` lists where strategies run.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence

from rebalancing.evaluation.command.pipes import quiet_when_the_reader_leaves
from rebalancing.evaluation.command.profile import OneLineErrorParser
from rebalancing.evaluation.decision.systems import (
    SYSTEM_VERDICTS,
    baseline_strategy,
    candidates_needs,
)
from rebalancing.evaluation.scoring.definitions import SCORES
from rebalancing.version import __version__

LOCAL_LIMIT = 20_000
"""`--engine auto` scores up to this many scenarios in one process, more with Spark."""

COMMANDS = {
    "compare": "which strategy for my group: score the candidates and print the verdict",
    "harness": "the Spark harness (python -m rebalancing.harness), for millions of scenarios",
    "systems": "the systems --system knows, with their candidates and deciding scores",
}


LOCAL_NEEDS = ("matplotlib",)
"""What a comparison in one process imports beyond the library: the report's figures."""

SPARK_NEEDS = ("pyspark", "pyarrow", "pandas", "matplotlib")
"""What the Spark harness imports beyond the library (all of them in the spark extra)."""


def _missing_packages(command: str, packages: Sequence[str]) -> bool:
    """Whether any of `packages` is not installed (found without importing them); if so, one
    line names them and the extra that brings them, so that `systems` and `--help` work with
    the library alone while `compare` and `harness` say what to install instead of a
    traceback."""
    missing = [name for name in packages if importlib.util.find_spec(name) is None]
    if missing:
        print(
            f"error: rebalancing {command} needs {', '.join(missing)}, which the spark extra "
            "installs: pip install -e '.[spark]'",
            file=sys.stderr,
        )
    return bool(missing)


def compare_main(arguments: Sequence[str]) -> int:
    """`rebalancing compare`; 2 with one line naming the culprit on a bad parameter, or the
    packages to install when they are missing."""
    if _missing_packages("compare", LOCAL_NEEDS):
        return 2
    from rebalancing.evaluation.command.compare import (
        closing_lines,
        compare_parser,
        print_comparison,
    )
    from rebalancing.evaluation.command.profile import ParameterError, profile_from

    parser = compare_parser("rebalancing compare")
    parser.add_argument(
        "--engine",
        choices=("auto", "local", "spark"),
        default="auto",
        help="local: no Spark, scored on this machine (this process forks up to one "
        "scoring process per usable core); spark: the Spark harness on embedded local[*], "
        f"for --scenarios N; auto: local up to {LOCAL_LIMIT:,} scenarios and for --scenarios "
        "auto (its batches run in this process)",
    )
    namespace = parser.parse_args(arguments)
    try:
        profile = profile_from(namespace)
    except ParameterError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    drawn = profile.max_scenarios is not None  # --scenarios auto: batches in this process
    if namespace.engine == "spark" and drawn:
        print(
            "error: --engine spark scores a fixed number of scenarios: give --scenarios N "
            "(--scenarios auto draws its batches in this process)",
            file=sys.stderr,
        )
        return 2
    local = drawn or profile.scenarios <= LOCAL_LIMIT
    if namespace.engine == "local" or (namespace.engine == "auto" and local):
        print_comparison(profile, namespace.table)
        return 0
    if _missing_packages("compare on Spark (--engine spark, or auto above 20,000)", SPARK_NEEDS):
        return 2
    if namespace.engine == "auto":
        print(
            f"{profile.scenarios:,} scenarios, more than {LOCAL_LIMIT:,}: scoring them with the "
            "Spark harness on embedded local[*] (it takes a few seconds to start; --engine local "
            "keeps them in this process).",
            file=sys.stderr,
        )
    from rebalancing.harness.job import run  # imports pyspark
    from rebalancing.harness.options import HarnessOptions
    from rebalancing.harness.reports import scored_seconds

    options = HarnessOptions.from_profile(profile)  # --out has a default
    verdict = run(options)
    print(closing_lines(verdict, profile, scored_seconds(options.out)))
    return 0


def systems_text() -> str:
    """Every system with its candidates and deciding scores, for `rebalancing systems`: each
    score by the label the verdict's table prints, its id (summary.csv's columns) in
    brackets where they differ."""
    lines = []
    for name, system in SYSTEM_VERDICTS.items():
        candidates = system.candidates()
        lines.append(f"{name}: {system.title}")
        lines.append(f"  candidates: {', '.join(candidates)}")
        criteria = (
            SCORES[metric].label
            if SCORES[metric].label == metric
            else f"{SCORES[metric].label} ({metric})"
            for metric in system.criteria
        )
        lines.append(f"  decides on, in order: {', '.join(criteria)}")
        lines += [
            f"  {', '.join(names)} {'needs' if len(names) == 1 else 'need'} {what}"
            for what, names in candidates_needs(system).items()
        ]
        if system.baseline:
            baseline = baseline_strategy(name)
            plan = f" (the plan of {baseline})" if baseline else ""
            lines.append(f"  without this library: {system.baseline}{plan}")
    return "\n".join(lines)


def systems_main(arguments: Sequence[str]) -> int:
    """`rebalancing systems`: the list; --help gives the usage, any other option is an error
    (one line, exit 2)."""
    parser = OneLineErrorParser(
        prog="rebalancing systems",
        description="List the systems --system knows: each one's candidate strategies and the "
        "scores its verdict decides on, in order.",
    )
    parser.parse_args(arguments)
    print(systems_text())
    return 0


def usage() -> str:
    lines = [
        "usage: rebalancing {compare,harness,systems} [options]   (COMMAND --help)",
        "       rebalancing --version",
        "",
    ]
    return "\n".join(lines + [f"  {name:8} {text}" for name, text in COMMANDS.items()])


def main(arguments: Sequence[str] | None = None) -> int:
    """`rebalancing COMMAND ...`: 0 on success, 2 on a bad command or parameter; quiet when the
    reader of its output (`head`) leaves early."""
    given = list(sys.argv[1:] if arguments is None else arguments)
    return quiet_when_the_reader_leaves(lambda: _run(given))


def _run(given: list[str]) -> int:
    if not given:
        print(usage(), file=sys.stderr)
        return 2
    command, rest = given[0], given[1:]
    if command in ("-h", "--help"):
        print(usage())
        return 0
    if command in ("-V", "--version"):
        print(f"rebalancing {__version__}")
        return 0
    if command == "compare":
        return compare_main(rest)
    if command == "systems":
        return systems_main(rest)
    if command == "harness":
        if _missing_packages("harness", SPARK_NEEDS):
            return 2
        from rebalancing.harness.__main__ import main as harness_main

        return harness_main(rest)
    print(f"error: unknown command {command!r}\n\n{usage()}", file=sys.stderr)
    return 2
