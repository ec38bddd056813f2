"""One settle and its plan in one compiled call: mirrors sessions.ReferenceEngine.settle.

That is schedulers.run_rounds (rounds.run_rounds_kernel), then model.SacState.owners: the plan
as the queue numbers grouped by active app in sorted id order, each group ascending, with where
each group starts (a counting sort), so that engine.KernelEngine slices it into the plan and
the scoring core takes it as positions (ProtocolRun.positions).
Runtime complexity: that of rounds.run_rounds_kernel, plus O(|Q| + |A|) for the grouping.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from rebalancing.sac.kernel.rounds import run_rounds_kernel
from rebalancing.sac.kernel.state import NO_APP


@njit(cache=True)
def _grouped_by_owner(active: Any, members: Any) -> tuple[Any, Any]:
    """(queue numbers grouped by active app in `members` order, each group ascending; where
    each member's group starts, |A| + 1 entries): a counting sort, so that the plan is built by
    slicing."""
    position_of = np.zeros(members.max() + 1 if members.shape[0] else 1, dtype=np.int64)
    for position in range(members.shape[0]):
        position_of[members[position]] = position
    starts = np.zeros(members.shape[0] + 1, dtype=np.int64)
    for owner in active:
        if owner != NO_APP:
            starts[position_of[owner] + 1] += 1
    for position in range(members.shape[0]):
        starts[position + 1] += starts[position]
    grouped = np.empty(starts[members.shape[0]], dtype=np.int64)
    filled = starts[: members.shape[0]].copy()
    for queue in range(active.shape[0]):
        owner = active[queue]
        if owner != NO_APP:
            position = position_of[owner]
            grouped[filled[position]] = queue
            filled[position] += 1
    return grouped, starts


@njit(cache=True)
def _settle_and_group(
    members: Any,
    active: Any,
    fifo_next: Any,
    fifo_prev: Any,
    start_id: Any,
    activated: Any,
    fresh: Any,
    scalars: Any,
    random_state: Any,
    spec_variant: bool,
    policy: int,
    bound: int,
    counts_out: Any,
) -> tuple[Any, Any]:
    """`run_rounds_kernel`, then the plan's queues grouped by app (`_grouped_by_owner`): one
    call from Python for both, as a rebalance pays the call's overhead for each."""
    run_rounds_kernel(
        members,
        active,
        fifo_next,
        fifo_prev,
        start_id,
        activated,
        fresh,
        scalars,
        random_state,
        spec_variant,
        policy,
        bound,
        counts_out,
    )
    return _grouped_by_owner(active, members)
