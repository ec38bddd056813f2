"""The round schedule of rebalancing.sac.schedulers.run_rounds, compiled with numba over arrays.

The reference model (rebalancing.sac.model, run_rounds) is the definition: every action goes
through the spec's guards there. This kernel computes the same runs, with the same counts, and
tests/sac/test_kernel_refinement.py holds it to that on thousands of seeded sessions. Each
module sits beside the reference function it must equal, and says which:

- `state`: the spec's variables as integer arrays and the FIFOs (model.SacState);
- `position`: the Release guard over the Position support (model.release_enabled,
  model.release_enabled_start_ids);
- `release_choice`: which active queue an app releases (schedulers.ReleaseChoice.take);
- `rounds`: start, subscribe, then rounds to quiescence (schedulers.run_rounds);
- `change`: a membership change (sessions.ReferenceEngine.change);
- `settle`: one settle and its plan in one call (sessions.ReferenceEngine.settle);
- `engine`: `KernelEngine`, one group's state across rebalances (sessions.ReferenceEngine);
- `bits`: the machine-word primitives under the bitsets (no reference counterpart).

Compiled on first use and cached on disk by numba (`cache=True`), so a process pays it once.
numba checks a cached function against its own module's source only, not against the modules
it calls: after editing one of these modules, delete the kernel's `__pycache__` (or point
NUMBA_CACHE_DIR at an empty directory), or a caller in another module may run its old callees.
This package only re-exports: KernelEngine, run_rounds_kernel, POLICY_CODES and the array
markers NO_APP, ABSENT and SENTINEL.
"""

from rebalancing.sac.kernel.change import _columns_from as _columns_from  # the refinement test
from rebalancing.sac.kernel.engine import KernelEngine
from rebalancing.sac.kernel.release_choice import POLICY_CODES
from rebalancing.sac.kernel.rounds import run_rounds_kernel
from rebalancing.sac.kernel.state import ABSENT, NO_APP, SENTINEL

__all__ = [
    "ABSENT",
    "NO_APP",
    "POLICY_CODES",
    "SENTINEL",
    "KernelEngine",
    "run_rounds_kernel",
]
