"""`python -m rebalancing.evaluation`: `rebalancing compare` in one process (no Spark): score
the strategies on a group's scenarios with the pure-Python core, write the outputs and print the
verdict (with `--table`, the full per-strategy, per-change-kind table too)."""

import sys

from rebalancing.evaluation.command.compare import main

if __name__ == "__main__":
    sys.exit(main())
