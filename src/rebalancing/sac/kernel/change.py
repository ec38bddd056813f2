"""A membership change on the arrays: mirrors sessions.ReferenceEngine.change.

Departed apps leave every FIFO and lose their active queues (`_leave`: model.remove_app), the
present apps' slots are merged in sorted id order (`_members_after`: model.add_app keeps the
apps sorted), and the per-queue state moves to the new queue numbers (`_columns_from`:
model.remove_queue and model.add_queue; removed queues vanish with their FIFO, new ones start
empty and fresh). engine.KernelEngine finds what changed and calls these.
Runtime complexity: O(|Q|) per departed app, O(rows) for the merge, O(|Q| x rows) when the
queues change (one copy of the FIFO columns).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from rebalancing.sac.kernel.state import ABSENT, NO_APP, SENTINEL, _unlink


@njit(cache=True)
def _leave(
    departed: Any, active: Any, fifo_next: Any, fifo_prev: Any, start_id: Any, activated: Any
) -> None:
    """The apps in slots `departed` leave: out of every FIFO, their active queues lose their
    consumer, and their slots are left clean (stopped, waiting on nothing) for a later app."""
    for app in departed:
        for queue in range(active.shape[0]):
            if fifo_next[app, queue] != ABSENT:
                _unlink(fifo_next, fifo_prev, queue, app)
            if active[queue] == app:
                active[queue] = NO_APP
                activated[queue] = -1
        start_id[app] = 0


@njit(cache=True)
def _members_after(
    members: Any, departed: Any, joined_at: Any, joined: Any, slot_count: int
) -> Any:
    """The present apps' slots in sorted id order after a change: `members` without the
    slots `departed`, with slot `joined[k]` at index `joined_at[k]` (ascending) of the result.
    A merge, so that a change pays O(|A|) here rather than a dictionary lookup per app."""
    gone = np.zeros(slot_count, dtype=np.bool_)
    for slot in departed:
        gone[slot] = True
    result = np.empty(members.shape[0] - departed.shape[0] + joined.shape[0], dtype=np.int64)
    kept = 0
    inserted = 0
    for index in range(result.shape[0]):
        if inserted < joined.shape[0] and joined_at[inserted] == index:
            result[index] = joined[inserted]
            inserted += 1
        else:
            while gone[members[kept]]:
                kept += 1
            result[index] = members[kept]
            kept += 1
    return result


_ENTRIES_PER_SLICE = 200
"""Entries a row's run should average before `_columns_from` copies the rows run by run (a
numba slice assignment's own cost is that of copying some 200 entries one by one)."""


@njit(cache=True)
def _columns_from(
    source: Any, active: Any, fifo_next: Any, fifo_prev: Any, activated: Any, fresh: Any
) -> tuple[Any, Any, Any, Any, Any]:
    """The per-queue state over new queues: new queue n was old queue `source[n]` (its FIFO,
    owner and promotion time move along; slots stay, so no entry changes), or is new (-1: an
    empty FIFO, no owner, fresh). Returns (active, fifo_next, fifo_prev, activated, fresh)."""
    queue_count = source.shape[0]
    slot_count = fifo_next.shape[0]
    new_active = np.full(queue_count, NO_APP, dtype=np.int64)
    new_activated = np.full(queue_count, -1, dtype=np.int64)
    new_fresh = np.ones(queue_count, dtype=np.bool_)
    for queue in range(queue_count):
        old_queue = source[queue]
        if old_queue >= 0:
            new_active[queue] = active[old_queue]
            new_activated[queue] = activated[old_queue]
            new_fresh[queue] = fresh[old_queue]
    # Each entry written once (the arrays are not filled first): at 4,096 queues x 256 apps
    # these are megabytes, and the copy is a good part of a queue change. The new columns come
    # in runs (old queues in a row, or new queues): when they are few and long (queues added
    # after the others, a few removed), each row is copied run by run, in contiguous slices
    # without a branch per entry; when they are many (queues removed here and there), a slice
    # costs more to set up than it copies, and each entry is taken from its old column instead
    # (9-257 slots x 16-4,096 queues: 4-5x faster at 40 runs, the same at 1-2).
    run_starts, run_sources = _runs_of(source)
    new_next = np.empty((slot_count, queue_count), dtype=np.int32)
    new_prev = np.empty((slot_count, queue_count), dtype=np.int32)
    run_count = run_sources.shape[0]
    if run_count > 2 and run_count * _ENTRIES_PER_SLICE > queue_count:
        _gather_columns(source, fifo_next, fifo_prev, new_next, new_prev)
        return new_active, new_next, new_prev, new_activated, new_fresh
    for slot in range(slot_count):
        empty = SENTINEL if slot == SENTINEL else ABSENT  # a new queue's FIFO is empty
        for run in range(run_sources.shape[0]):
            start, end, old_start = run_starts[run], run_starts[run + 1], run_sources[run]
            if old_start >= 0:
                old_end = old_start + end - start
                new_next[slot, start:end] = fifo_next[slot, old_start:old_end]
                new_prev[slot, start:end] = fifo_prev[slot, old_start:old_end]
            else:
                new_next[slot, start:end] = empty
                new_prev[slot, start:end] = empty
    return new_active, new_next, new_prev, new_activated, new_fresh


@njit(cache=True)
def _gather_columns(
    source: Any, fifo_next: Any, fifo_prev: Any, new_next: Any, new_prev: Any
) -> None:
    """`_columns_from`'s FIFO columns entry by entry: new column n is old column `source[n]`,
    or an empty FIFO's (-1: the sentinel's row SENTINEL, every other row ABSENT)."""
    for slot in range(new_next.shape[0]):
        empty = SENTINEL if slot == SENTINEL else ABSENT
        for queue in range(source.shape[0]):
            old_queue = source[queue]
            if old_queue >= 0:
                new_next[slot, queue] = fifo_next[slot, old_queue]
                new_prev[slot, queue] = fifo_prev[slot, old_queue]
            else:
                new_next[slot, queue] = empty
                new_prev[slot, queue] = empty


@njit(cache=True)
def _runs_of(source: Any) -> tuple[Any, Any]:
    """`source` (see `_columns_from`) as runs: (where each run starts, with the end as a last
    entry; the old queue each run starts from, or -1 for a run of new queues)."""
    starts = np.empty(source.shape[0] + 1, dtype=np.int64)
    sources = np.empty(source.shape[0], dtype=np.int64)
    runs = 0
    for queue in range(source.shape[0]):
        old_queue = source[queue]
        if runs > 0:
            old_start = sources[runs - 1]
            offset = queue - starts[runs - 1]
            if (old_start < 0 and old_queue < 0) or (
                old_start >= 0 and old_queue == old_start + offset
            ):
                continue  # the run goes on
        starts[runs] = queue
        sources[runs] = old_queue if old_queue >= 0 else -1
        runs += 1
    starts[runs] = source.shape[0]
    return starts[: runs + 1], sources[:runs]
