"""`python -m rebalancing.harness`: check the parameters, then run the Spark job."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from rebalancing.harness.options import ParameterError, parse_options


def main(arguments: Sequence[str] | None = None) -> int:
    try:
        options = parse_options(arguments)
    except ParameterError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    from rebalancing.harness.job import run  # imports pyspark: only once the parameters are good

    print(run(options))
    print(f"\noutputs in {options.out.resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
