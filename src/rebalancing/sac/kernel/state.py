"""The protocol's state as integer arrays, and its FIFOs: mirrors model.SacState.

Queues are numbered by their sorted ids (columns). Apps keep a *slot* (a row) from the
rebalance they join until the one they leave, so that a join or a leave touches only that app's
row instead of renumbering every FIFO entry; row 0 is the FIFOs' sentinel, and `members` lists
the present apps' slots in sorted id order. The state (held by engine.KernelEngine between
rebalances) is integer arrays:

- `active[q]`: the slot of the app active on queue q, or NO_APP (-1) (SacState.active);
- the FIFO of queue q (SacState.waiting[q]) as a circular doubly linked list through the
  sentinel, in two rows x |Q| int32 arrays, app-major (an app subscribes, releases and is
  promoted on runs of neighbouring queues, so its row is read in order): `fifo_next[a, q]` is
  the app after a in q's FIFO (the sentinel, 0, when a is the last), or ABSENT (-1) when a does
  not wait on q (the spec's `a \\in subscriber_queue[q]`, with no array of its own);
  `fifo_prev[a, q]` is the app before it (meaningful only while a waits on q); the sentinel's
  row holds each FIFO's first app (`fifo_next[0, q]`) and last app (`fifo_prev[0, q]`), both 0
  for an empty FIFO. Appending (model.subscribe), taking the head (model.make_active, inlined in
  rounds.run_rounds_kernel) and unlinking a departed app (model.remove_app) are a few stores
  and no branch;
- `start_id[a]` (0 while stopped, and in free slots; SacState.start_id), `activated[q]` (the
  promotion clock when q became active on its owner, for the `newest` policy:
  schedulers.ReleaseChoice.activated), `fresh[q]` (q was added since the last settle), and
  `scalars` = [next start id (SacState.next_id), promotion clock];
- `random_state[0]`: the SplitMix64 state (the `random` policy).

Runtime complexity: O(1) per append or unlink; O(|Q| x slots) to build every FIFO
(`_empty_fifos`, `_fifos_of`). Memory: O(|Q| x |A|), as in the protocol itself.

Speed notes: a jitted helper that takes arrays and branches inside can leave numba's reference
counting of its array arguments (atomic increments and decrements) in the caller's loop; the
FIFO helpers here are branch-free, which made the subscribe loop over 10x faster.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

NO_APP = -1
"""In `active`: the queue has no active consumer."""

ABSENT = -1
"""In `fifo_next`: the app does not wait on this queue."""

SENTINEL = 0
"""The slot (row) of every FIFO's sentinel: its `fifo_next` is the first app, its `fifo_prev`
the last; an app's `fifo_next` equal to it means the app is the last."""


@njit(cache=True)
def _push_back(fifo_next: Any, fifo_prev: Any, queue: int, app: int) -> None:
    """Append `app` to `queue`'s FIFO (it must not be in it)."""
    last = fifo_prev[SENTINEL, queue]
    fifo_next[last, queue] = app
    fifo_prev[app, queue] = last
    fifo_next[app, queue] = SENTINEL
    fifo_prev[SENTINEL, queue] = app


@njit(cache=True)
def _unlink(fifo_next: Any, fifo_prev: Any, queue: int, app: int) -> None:
    """Take `app` out of `queue`'s FIFO (it must be in it), wherever it stands."""
    before = fifo_prev[app, queue]
    after = fifo_next[app, queue]
    fifo_next[before, queue] = after
    fifo_prev[after, queue] = before
    fifo_next[app, queue] = ABSENT


@njit(cache=True)
def _fifos_of(active: Any, existing: Any, slot_count: int) -> tuple[Any, Any]:
    """(fifo_next, fifo_prev): every FIFO holds `existing` (slots in start-id order) minus the
    queue's active app."""
    queue_count = active.shape[0]
    fifo_next, fifo_prev = _empty_fifos(slot_count, queue_count)
    for app in existing:
        for queue in range(queue_count):
            if active[queue] != app:
                _push_back(fifo_next, fifo_prev, queue, app)
    return fifo_next, fifo_prev


@njit(cache=True)
def _empty_fifos(slot_count: int, queue_count: int) -> tuple[Any, Any]:
    """(fifo_next, fifo_prev) with every FIFO empty and every slot waiting on nothing."""
    fifo_next = np.full((slot_count, queue_count), ABSENT, dtype=np.int32)
    fifo_prev = np.full((slot_count, queue_count), ABSENT, dtype=np.int32)
    fifo_next[SENTINEL, :] = SENTINEL
    fifo_prev[SENTINEL, :] = SENTINEL
    return fifo_next, fifo_prev
