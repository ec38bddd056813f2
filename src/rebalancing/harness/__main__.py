"""`python -m rebalancing.harness`: check the parameters, run the Spark job, print the verdict."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from rebalancing.evaluation.command.pipes import quiet_when_the_reader_leaves
from rebalancing.harness.options import ParameterError, parse_options


def main(arguments: Sequence[str] | None = None) -> int:
    """0 on success, 2 with one line naming the culprit on a bad parameter; quiet when the
    reader of its output (`head`) leaves early."""
    return quiet_when_the_reader_leaves(lambda: _run(arguments))


def _run(arguments: Sequence[str] | None) -> int:
    try:
        options = parse_options(arguments)
    except ParameterError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    from rebalancing.evaluation.command.compare import closing_lines
    from rebalancing.harness.job import run  # imports pyspark: only once the parameters are good
    from rebalancing.harness.reports import scored_seconds

    verdict = run(options)
    print(closing_lines(verdict, options.profile, scored_seconds(options.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
