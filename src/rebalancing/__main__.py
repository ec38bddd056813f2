"""`python -m rebalancing`: the `rebalancing` command (rebalancing.cli)."""

import sys

from rebalancing.cli import main

if __name__ == "__main__":
    sys.exit(main())
