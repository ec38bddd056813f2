"""Entry file for spark-submit: `spark-submit jobs/score_strategies.py --scenarios N ...`.

The same flags as `python -m rebalancing.harness`. The job ships what the executors need to
import by itself (a zip of the rebalancing package, and the module of every
`package.module:function` strategy, added with addPyFile), so the executors need only the
compiled dependencies (pyarrow, numpy, pandas, numba), installed or in a packed environment.
"""

import sys

from rebalancing.harness.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
