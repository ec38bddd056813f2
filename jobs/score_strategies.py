"""Entry file for spark-submit: `spark-submit jobs/score_strategies.py --scenarios N ...`.

The same flags as `python -m rebalancing.harness`; the package is shipped to the executors by
the job itself (a zip added with addPyFile).
"""

import sys

from rebalancing.harness.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
