"""The round schedule to quiescence on the arrays: mirrors schedulers.run_rounds.

Start, subscribe, then rounds of promotions (model.make_active) and releases (model.release,
each app re-subscribing to what it released) until no Release is enabled, with the same
releases, steps, rounds, convergence and paused queues as the reference. The subscribe phase
visits only what can subscribe: after every settle each started app waits on or is active on
every queue (a release re-subscribes at once, and a change only removes apps and queues or adds
fresh ones), so a started app is checked against the fresh queues only, and a newly started app
against all of them.
Runtime complexity: O(|Q| x new apps + |A| x fresh queues) to subscribe, O(|Q| + |A| log |A|)
to build the per-app structures, then O(|A| / 64) per release and per promotion (O(log |Q|)
more for `random`), plus O(|A| / 64 + releasing apps) per round.

Speed notes (benchmarks/sac_kernel.py and perf): an app's releases above |Q| div |started| + 1
are taken in one batch, as the guard cannot fail there; the promotions run in passes so that
their scattered FIFO reads overlap.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from rebalancing.sac.kernel.bits import _ONE, _ZERO, _lowest_bit
from rebalancing.sac.kernel.position import (
    _below,
    _boundary_cut,
    _recount,
    _release_enabled,
    _support,
)
from rebalancing.sac.kernel.release_choice import (
    _HIGHEST,
    _LOWEST,
    _NEWEST,
    _RANDOM,
    _random_below,
    _set_owned,
    _take_highest,
    _take_kth,
    _take_lowest,
    _tree_add,
)
from rebalancing.sac.kernel.state import ABSENT, NO_APP, SENTINEL, _push_back


@njit(cache=True)
def run_rounds_kernel(
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
) -> None:
    """Run the round schedule on the arrays (mutated; `fresh` is cleared); counts_out =
    [releases, steps, rounds, converged, queues paused]. Mirrors schedulers.run_rounds
    statement for statement where it matters."""
    queue_count = active.shape[0]
    app_count = members.shape[0]
    slot_count = fifo_next.shape[0]
    steps = 0
    releases = 0
    rounds = 0
    in_release_run = False
    # Start: stopped apps in sorted id order (`members` is in that order).
    newly_started = np.zeros(slot_count, dtype=np.bool_)
    for app in members:
        if start_id[app] == 0:
            start_id[app] = scalars[0]
            scalars[0] += 1
            newly_started[app] = True
            steps += 1
    fresh_queues = np.flatnonzero(fresh)
    fresh[:] = False
    if app_count == 0:
        counts_out[0] = 0
        counts_out[1] = steps
        counts_out[2] = 0
        counts_out[3] = 1
        counts_out[4] = 0
        return
    by_start = members[np.argsort(start_id[members], kind="mergesort")]
    rank = np.zeros(slot_count, dtype=np.int64)
    for position in range(app_count):
        rank[by_start[position]] = position
    # Subscribe: every app, in start-id order, to every queue it neither waits on nor holds
    # (see the module docstring for why only these pairs can qualify).
    for position in range(app_count):
        app = by_start[position]
        if newly_started[app]:
            for queue in range(queue_count):
                if fifo_next[app, queue] == ABSENT and active[queue] != app:
                    _push_back(fifo_next, fifo_prev, queue, app)
                    steps += 1
        else:
            for fresh_queue in fresh_queues:
                queue = int(fresh_queue)
                if fifo_next[app, queue] == ABSENT and active[queue] != app:
                    _push_back(fifo_next, fifo_prev, queue, app)
                    steps += 1
    lowest = queue_count // app_count
    remainder = queue_count % app_count
    count = np.zeros(slot_count, dtype=np.int64)
    for queue in range(queue_count):
        if active[queue] != NO_APP:
            count[active[queue]] += 1
    # Position support: apps two or more over `lowest`, and a tree of those exactly one over.
    above = 0
    boundary_total = 0
    support_bits = np.zeros((2, (app_count + 63) // 64), dtype=np.uint64)
    for app in members:
        more_above, more_boundary = _support(count[app], rank[app], lowest, support_bits, 1)
        above += more_above
        boundary_total += more_boundary
    # Each app's active queues: a stack in promotion order (newest) or a bitset (the others),
    # with a Fenwick tree of its words' bit counts for the k-th smallest (random); the
    # structures a policy does not use stay 1 x 1.
    use_stack = policy == _NEWEST
    use_bits = not use_stack
    use_tree = policy == _RANDOM
    stack = np.empty((slot_count if use_stack else 1, queue_count if use_stack else 1), np.int32)
    stack_top = np.zeros(slot_count, dtype=np.int64)
    word_count = (queue_count + 63) // 64 if use_bits else 1
    bits = np.zeros((slot_count if use_bits else 1, word_count), dtype=np.uint64)
    low_word = np.full(slot_count, word_count - 1, dtype=np.int64)
    high_word = np.zeros(slot_count, dtype=np.int64)
    word_tree = np.zeros(
        (slot_count if use_tree else 1, word_count + 1 if use_tree else 1), dtype=np.int32
    )
    if use_stack:
        for queue in np.argsort(activated, kind="mergesort"):
            owner = active[queue]
            if owner != NO_APP:
                stack[owner, stack_top[owner]] = queue
                stack_top[owner] += 1
    for queue in range(queue_count):
        owner = active[queue]
        if owner != NO_APP and use_bits:
            _set_owned(bits, low_word, high_word, owner, queue)
            if use_tree:
                _tree_add(word_tree, owner, queue >> 6, 1)
    top_bit = 1
    while top_bit * 2 <= word_count:
        top_bit *= 2
    unpromoted = np.arange(queue_count)
    unpromoted_count = queue_count
    clock = scalars[1]
    paused = np.zeros(queue_count, dtype=np.bool_)  # released at least once
    released_apps = np.empty(queue_count, dtype=np.int64)
    released_queues = np.empty(queue_count, dtype=np.int64)
    releasing = np.empty(app_count, dtype=np.int64)
    promoting_queues = np.empty(queue_count, dtype=np.int64)
    promoting_heads = np.empty(queue_count, dtype=np.int64)
    promoting_following = np.empty(queue_count, dtype=np.int64)
    while True:
        # Promote in three passes over the queues that may lack a consumer: those with a head
        # and no consumer, then each head's successor, then the promotions. The queues are
        # distinct, so no promotion changes another's FIFO; split like this, the FIFO reads
        # (scattered over the head's rows) of many queues are in flight at once instead of
        # each waiting for the one before (measured: 8% off a 4,096 x 256 cold start).
        promoting_count = 0
        for index in range(unpromoted_count):
            queue = unpromoted[index]
            head = fifo_next[SENTINEL, queue]
            if head != SENTINEL and active[queue] == NO_APP:
                promoting_queues[promoting_count] = queue
                promoting_heads[promoting_count] = head
                promoting_count += 1
        for index in range(promoting_count):
            promoting_following[index] = fifo_next[promoting_heads[index], promoting_queues[index]]
        for index in range(promoting_count):
            queue = promoting_queues[index]
            head = promoting_heads[index]
            following = promoting_following[index]
            fifo_next[SENTINEL, queue] = following
            fifo_prev[following, queue] = SENTINEL
            fifo_next[head, queue] = ABSENT
            active[queue] = head
            above, boundary_total = _recount(
                count, head, count[head] + 1, rank, lowest, support_bits, above, boundary_total
            )
            if use_stack:
                stack[head, stack_top[head]] = queue
                stack_top[head] += 1
            else:
                _set_owned(bits, low_word, high_word, head, queue)
                if use_tree:
                    _tree_add(word_tree, head, queue >> 6, 1)
            activated[queue] = clock
            clock += 1
            steps += 1
            in_release_run = False
        # The apps whose guard holds, in start-id order: those two or more over, and those one
        # over with a rank below the cut, read off the rank bitsets (not a guard per app: a
        # cascade has many rounds of few releases among hundreds of apps).
        cut = _boundary_cut(above, boundary_total, remainder, support_bits, app_count, spec_variant)
        releasing_count = 0
        for word_index in range(support_bits.shape[1]):
            word = support_bits[0, word_index] | (
                support_bits[1, word_index] & _below(cut, word_index)
            )
            while word != _ZERO:
                releasing[releasing_count] = by_start[word_index * 64 + _lowest_bit(word)]
                releasing_count += 1
                word &= word - _ONE
        if releasing_count == 0 or steps >= bound:
            counts_out[0] = releases
            counts_out[1] = steps
            counts_out[2] = rounds
            counts_out[3] = 1 if releasing_count == 0 else 0
            counts_out[4] = np.count_nonzero(paused)
            scalars[1] = clock
            return
        released_count = 0
        for index in range(releasing_count):
            app = releasing[index]
            # The reference re-checks the guard before every release. Above lowest + 1 it holds
            # whatever the others hold, so those releases are counted at once; at lowest + 1
            # it depends on the Position, checked after the app's own count has dropped.
            held = count[app]
            release_count = max(held - lowest - 1, 0)
            if release_count > 0:
                above, boundary_total = _recount(
                    count,
                    app,
                    held - release_count,
                    rank,
                    lowest,
                    support_bits,
                    above,
                    boundary_total,
                )
            if _release_enabled(
                count[app],
                rank[app],
                lowest,
                remainder,
                above,
                support_bits,
                boundary_total,
                spec_variant,
            ):
                release_count += 1
                above, boundary_total = _recount(
                    count,
                    app,
                    held - release_count,
                    rank,
                    lowest,
                    support_bits,
                    above,
                    boundary_total,
                )
            for taken in range(release_count):
                if use_stack:
                    stack_top[app] -= 1
                    queue = stack[app, stack_top[app]]
                elif policy == _HIGHEST:
                    queue = _take_highest(bits, high_word, app)
                elif policy == _LOWEST:
                    queue = _take_lowest(bits, low_word, app)
                else:
                    chosen_rank = _random_below(random_state, held - taken) + 1
                    queue = _take_kth(bits, word_tree, app, chosen_rank, top_bit)
                active[queue] = NO_APP
                paused[queue] = True
                released_apps[released_count] = app
                released_queues[released_count] = queue
                released_count += 1
            if release_count > 0 and not in_release_run:
                rounds += 1
                in_release_run = True
            steps += release_count
            releases += release_count
        for index in range(released_count):
            _push_back(fifo_next, fifo_prev, released_queues[index], released_apps[index])
            steps += 1
        unpromoted[:released_count] = released_queues[:released_count]
        unpromoted_count = released_count
