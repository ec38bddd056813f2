"""The round schedule of rebalancing.sac.schedulers.run_rounds, compiled with numba over arrays.

The reference model (rebalancing.sac.model, run_rounds) is the definition: every action goes
through the spec's guards there. This kernel computes the same runs, with the same counts, and
tests/sac/test_kernel_refinement.py holds it to that on thousands of seeded sessions.

Queues are numbered by their sorted ids (columns). Apps keep a *slot* (a row) from the
rebalance they join until the one they leave, so that a join or a leave touches only that app's
row instead of renumbering every FIFO entry; row 0 is the FIFOs' sentinel, and `members` lists
the present apps' slots in sorted id order. The state is integer arrays:

- `active[q]`: the slot of the app active on queue q, or NO_APP (-1);
- the FIFO of queue q as a circular doubly linked list through the sentinel, in two
  rows x |Q| int32 arrays, app-major (an app subscribes, releases and is promoted on runs of
  neighbouring queues, so its row is read in order): `fifo_next[a, q]` is the app after a in
  q's FIFO (the sentinel, 0, when a is the last), or ABSENT (-1) when a does not wait on q (the
  spec's `a \\in subscriber_queue[q]`, with no array of its own); `fifo_prev[a, q]` is the app
  before it (meaningful only while a waits on q); the sentinel's row holds each FIFO's first
  app (`fifo_next[0, q]`) and last app (`fifo_prev[0, q]`), both 0 for an empty FIFO. Appending,
  taking the head and unlinking a departed app are a few stores and no branch;
- `start_id[a]` (0 while stopped, and in free slots), `activated[q]` (the promotion clock when
  q became active on its owner, for the `newest` policy), `fresh[q]` (q was added since the last
  settle), and `scalars` = [next start id, promotion clock];
- `random_state[0]`: the SplitMix64 state (the `random` policy).

Where the reference finds Position with a binary search over the sorted (count, start id)
pairs, the kernel uses that |Q| div |started| and |Q| mod |started| are fixed for the whole
run once every app has started: only apps exactly one over |Q| div |started| need a Position,
which is (apps two or more over) + (apps one over with a larger start id), the second a Fenwick
tree over start-id ranks. Each app's active queues are a bitset over queue numbers (`highest`,
`lowest`), a Fenwick tree for the k-th smallest (`random`) or a stack in promotion order
(`newest`). The subscribe phase visits only what can subscribe: after every settle each
started app waits on or is active on every queue (a release re-subscribes at once, and a
change only removes apps and queues or adds fresh ones), so a started app is checked against
the fresh queues only, and a newly started app against all of them.
Runtime complexity: O(|Q| x new apps + |A| x fresh queues) to subscribe, O(|Q| + |A| log |A|) to
build the per-app structures, then O(log |Q| + log |A|) per release and per promotion, plus
O(|A| log |A|) per round. A change: O(|Q|) per departed app, O(1) per joining app (amortised:
the rows double when they run out), O(|Q| x rows) when the queues change (one copy of the
FIFO columns).
Memory: O(|Q| x |A|) (the FIFOs, as in the protocol itself).
Compiled on first use and cached on disk by numba (`cache=True`), so a process pays it once.

Speed notes (measured with benchmarks/sac_kernel.py and perf): a jitted helper that takes
arrays and branches inside can leave numba's reference counting of its array arguments (atomic
increments and decrements) in the caller's loop; the FIFO helpers here are branch-free, which
made the subscribe loop over 10x faster. LLVM inlines a helper only while it stays small
(`_take_highest` and `_take_lowest` are two functions for that reason). An app's releases above
|Q| div |started| + 1 are taken in one batch, as the guard cannot fail there; the promotions run
in passes so that their scattered FIFO reads overlap.
"""

from __future__ import annotations

from itertools import repeat
from typing import Any

import numpy as np
from numba import njit, types
from numba.core.cgutils import false_bit
from numba.extending import intrinsic

from rebalancing.contract import ProtocolRun
from rebalancing.sac.schedulers import RELEASE_POLICIES

POLICY_CODES = {policy: code for code, policy in enumerate(RELEASE_POLICIES)}
"""Release policy name -> the integer the kernel takes (highest 0, lowest 1, newest 2, random 3)."""

_HIGHEST, _LOWEST, _NEWEST, _RANDOM = 0, 1, 2, 3

# numba: uint64 arithmetic wraps; mixing with int64 would turn it into float64, so every
# constant of the random stream is a uint64.
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2 = np.uint64(0x94D049BB133111EB)
_SHIFT_30 = np.uint64(30)
_SHIFT_27 = np.uint64(27)
_SHIFT_31 = np.uint64(31)


@njit(cache=True)
def _random_below(random_state: Any, bound: int) -> int:
    """SplitMix64's next output modulo `bound`, as schedulers.SplitMix64.below computes it."""
    random_state[0] = random_state[0] + _GOLDEN
    mixed = random_state[0]
    mixed = (mixed ^ (mixed >> _SHIFT_30)) * _MIX_1
    mixed = (mixed ^ (mixed >> _SHIFT_27)) * _MIX_2
    mixed = mixed ^ (mixed >> _SHIFT_31)
    return int(mixed % np.uint64(bound))


@njit(cache=True)
def _tree_add(tree: Any, row: int, index: int, delta: int) -> None:
    """Fenwick tree `tree[row]` (1-based inside): add `delta` at `index` (0-based)."""
    size = tree.shape[1] - 1
    position = index + 1
    while position <= size:
        tree[row, position] += delta
        position += position & -position


@njit(cache=True)
def _tree_prefix(tree: Any, row: int, count: int) -> int:
    """Sum of the first `count` entries of Fenwick tree `tree[row]`."""
    total = 0
    position = count
    while position > 0:
        total += tree[row, position]
        position -= position & -position
    return total


@njit(cache=True)
def _tree_kth(tree: Any, row: int, rank: int, top_bit: int) -> int:
    """The 0-based index of the `rank`-th (1-based) present entry of Fenwick tree `tree[row]`."""
    size = tree.shape[1] - 1
    position = 0
    remaining = rank
    step = top_bit
    while step > 0:
        following = position + step
        if following <= size and tree[row, following] < remaining:
            position = following
            remaining -= tree[row, following]
        step >>= 1
    return position  # 1-based position + 1 - 1


_ZERO = np.uint64(0)
_ONE = np.uint64(1)


def _ctlz_typing(typing_context: Any, word: Any) -> Any:
    """The typing of `_leading_zeros`: a uint64 in, an int64 out, and LLVM's ctlz to compute
    it (`false_bit`: 0 in, 64 out, rather than undefined)."""
    if word != types.uint64:
        return None

    def generate(context: Any, builder: Any, signature: Any, arguments: Any) -> Any:
        return builder.ctlz(arguments[0], false_bit)

    return types.int64(types.uint64), generate


def _cttz_typing(typing_context: Any, word: Any) -> Any:
    """The typing of `_trailing_zeros`: as `_ctlz_typing`, with LLVM's cttz."""
    if word != types.uint64:
        return None

    def generate(context: Any, builder: Any, signature: Any, arguments: Any) -> Any:
        return builder.cttz(arguments[0], false_bit)

    return types.int64(types.uint64), generate


# Typed Any: numba's annotations describe the typing-time signature above, not the call that
# jitted code makes with the word alone.
_leading_zeros: Any = intrinsic(_ctlz_typing)
"""The number of leading zero bits of a uint64, in jitted code: one instruction on x86-64 and
ARM. Each release of `highest` and `lowest` takes a bit out of the word the previous one
changed, so the bit's number is on the releases' critical path: a loop of compares, or a de
Bruijn table lookup, made it several times longer (perf: a quarter of a cold start)."""

_trailing_zeros: Any = intrinsic(_cttz_typing)
"""The number of trailing zero bits of a uint64, in jitted code (see `_leading_zeros`)."""


@njit(cache=True)
def _highest_bit(word: Any) -> int:
    """The number of the highest set bit of a non-zero uint64."""
    return int(63 - _leading_zeros(word))


@njit(cache=True)
def _lowest_bit(word: Any) -> int:
    """The number of the lowest set bit of a non-zero uint64."""
    return int(_trailing_zeros(word))


@njit(cache=True)
def _set_owned(bits: Any, low_word: Any, high_word: Any, app: int, queue: int) -> None:
    """Mark `queue` active on `app` in the app's bitset, widening its word bounds."""
    word = queue >> 6
    bits[app, word] |= _ONE << np.uint64(queue & 63)
    low_word[app] = min(low_word[app], word)
    high_word[app] = max(high_word[app], word)


@njit(cache=True)
def _take_highest(bits: Any, high_word: Any, app: int) -> int:
    """Clear and return the app's highest active queue; the app must have one."""
    word = high_word[app]
    while bits[app, word] == _ZERO:
        word -= 1
    high_word[app] = word
    bit = _highest_bit(bits[app, word])
    bits[app, word] ^= _ONE << np.uint64(bit)
    return int(word * 64 + bit)


@njit(cache=True)
def _take_lowest(bits: Any, low_word: Any, app: int) -> int:
    """Clear and return the app's lowest active queue; the app must have one."""
    word = low_word[app]
    while bits[app, word] == _ZERO:
        word += 1
    low_word[app] = word
    bit = _lowest_bit(bits[app, word])
    bits[app, word] ^= _ONE << np.uint64(bit)
    return int(word * 64 + bit)


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
def _release_enabled(
    held: int,
    rank: int,
    lowest: int,
    remainder: int,
    above: int,
    boundary: Any,
    boundary_total: int,
    spec_variant: bool,
) -> bool:
    """The spec's Release guard for an app holding `held` queues with start-id rank `rank`, as
    model.release_enabled decides it: over |Q| div |started| + 1 always, at it only from a
    Position of at least |Q| mod |started|."""
    if held <= lowest:
        return False
    if held >= lowest + 2:
        return True
    if spec_variant:  # every app one over shares a Position: all of them count as ahead
        ahead = above + boundary_total - 1
    else:  # ahead: apps two or more over, and apps one over with a larger start id
        ahead = above + boundary_total - _tree_prefix(boundary, 0, rank + 1)
    return ahead >= remainder


@njit(cache=True)
def _support(held: int, rank: int, lowest: int, boundary: Any, sign: int) -> tuple[int, int]:
    """An app holding `held` queues enters (`sign` 1) or leaves (-1) the Position support: the
    change to (apps two or more over `lowest`, apps exactly one over), the tree kept in step."""
    if held >= lowest + 2:
        return sign, 0
    if held == lowest + 1:  # at least 1, so never an app without active queues
        _tree_add(boundary, 0, rank, sign)
        return 0, sign
    return 0, 0


@njit(cache=True)
def _recount(
    count: Any,
    app: int,
    held: int,
    rank: Any,
    lowest: int,
    boundary: Any,
    above: int,
    boundary_total: int,
) -> tuple[int, int]:
    """Set `app`'s active count to `held`, moving it in the Position support; the new
    (above, boundary_total)."""
    fewer_above, fewer_boundary = _support(count[app], rank[app], lowest, boundary, -1)
    count[app] = held
    more_above, more_boundary = _support(held, rank[app], lowest, boundary, 1)
    return above + fewer_above + more_above, boundary_total + fewer_boundary + more_boundary


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
    boundary = np.zeros((1, app_count + 1), dtype=np.int64)
    boundary_total = 0
    for app in members:
        more_above, more_boundary = _support(count[app], rank[app], lowest, boundary, 1)
        above += more_above
        boundary_total += more_boundary
    # Each app's active queues: a stack in promotion order (newest), a bitset (highest,
    # lowest) or a Fenwick tree for the k-th smallest (random); the others stay 1 x 1.
    use_stack = policy == _NEWEST
    use_bits = policy in (_HIGHEST, _LOWEST)
    use_tree = policy == _RANDOM
    stack = np.empty((slot_count if use_stack else 1, queue_count if use_stack else 1), np.int32)
    stack_top = np.zeros(slot_count, dtype=np.int64)
    word_count = (queue_count + 63) // 64 if use_bits else 1
    bits = np.zeros((slot_count if use_bits else 1, word_count), dtype=np.uint64)
    low_word = np.full(slot_count, word_count - 1, dtype=np.int64)
    high_word = np.zeros(slot_count, dtype=np.int64)
    owned_tree = np.zeros(
        (slot_count if use_tree else 1, queue_count + 1 if use_tree else 1), dtype=np.int32
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
        elif owner != NO_APP and use_tree:
            _tree_add(owned_tree, owner, queue, 1)
    top_bit = 1
    while top_bit * 2 <= queue_count:
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
                count, head, count[head] + 1, rank, lowest, boundary, above, boundary_total
            )
            if use_stack:
                stack[head, stack_top[head]] = queue
                stack_top[head] += 1
            elif use_bits:
                _set_owned(bits, low_word, high_word, head, queue)
            else:
                _tree_add(owned_tree, head, queue, 1)
            activated[queue] = clock
            clock += 1
            steps += 1
            in_release_run = False
        releasing_count = 0
        for position in range(app_count):
            app = by_start[position]
            if not _release_enabled(
                count[app],
                rank[app],
                lowest,
                remainder,
                above,
                boundary,
                boundary_total,
                spec_variant,
            ):
                continue
            releasing[releasing_count] = app
            releasing_count += 1
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
                    count, app, held - release_count, rank, lowest, boundary, above, boundary_total
                )
            if _release_enabled(
                count[app],
                rank[app],
                lowest,
                remainder,
                above,
                boundary,
                boundary_total,
                spec_variant,
            ):
                release_count += 1
                above, boundary_total = _recount(
                    count, app, held - release_count, rank, lowest, boundary, above, boundary_total
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
                    queue = _tree_kth(owned_tree, app, chosen_rank, top_bit)
                    _tree_add(owned_tree, app, queue, -1)
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
    # these are megabytes, and the copy is a good part of a queue change.
    new_next = np.empty((slot_count, queue_count), dtype=np.int32)
    new_prev = np.empty((slot_count, queue_count), dtype=np.int32)
    for slot in range(slot_count):
        empty = SENTINEL if slot == SENTINEL else ABSENT  # a new queue's FIFO is empty
        for queue in range(queue_count):
            old_queue = source[queue]
            if old_queue >= 0:
                new_next[slot, queue] = fifo_next[slot, old_queue]
                new_prev[slot, queue] = fifo_prev[slot, old_queue]
            else:
                new_next[slot, queue] = empty
                new_prev[slot, queue] = empty
    return new_active, new_next, new_prev, new_activated, new_fresh


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


def _numbering(ids: list[Any]) -> dict[Any, int]:
    """id -> its position in `ids` (built at C speed)."""
    return dict(zip(ids, range(len(ids)), strict=True))


def _numbers_or_minus_one(numbering: dict[Any, int], ids: list[Any]) -> Any:
    """Each id's number in `numbering`, -1 for an id it lacks, as an int64 array (looked up at
    C speed)."""
    return np.array(list(map(numbering.get, ids, repeat(-1))), dtype=np.int64)


def _object_array(ids: list[Any]) -> Any:
    """`ids` as a 1-d object array (ids that are tuples stay single elements), for taking the
    queues of a plan in one fancy-indexing step."""
    return np.fromiter(ids, dtype=object, count=len(ids))


class KernelEngine:
    """One group's protocol state as arrays, carried from one rebalance to the next.

    The same interface as rebalancing.sac.sessions.ReferenceEngine: `change` applies a
    membership change, `load_owners` rebuilds a state from active owners alone, `settle` runs
    the round schedule to quiescence. Between rebalances it keeps each app's slot, the queue
    id -> number map and the queues as an object array, so a change pays only for what changed:
    unchanged queues or apps cost one list comparison, an app that joins or leaves one row, and
    the plan is sliced out of one array.
    """

    def __init__(self, policy: str = "highest", seed: int = 0) -> None:
        if policy not in POLICY_CODES:
            raise ValueError(f"unknown release policy {policy!r}; known: {', '.join(POLICY_CODES)}")
        self.policy = POLICY_CODES[policy]
        self.queues: list[Any] = []
        self.apps: list[Any] = []
        self.queue_number: dict[Any, int] | None = {}  # None: not built since the last change
        self.queue_objects = _object_array([])
        self.slot_of: dict[Any, int] = {}  # present app -> its slot
        self.app_in_slot: list[Any] = [None]  # slot -> app (slot 0, the sentinel, and free: None)
        self.free_slots: list[int] = []
        self.members = np.zeros(0, dtype=np.int64)
        self.active = np.full(0, NO_APP, dtype=np.int64)
        self.fifo_next, self.fifo_prev = _empty_fifos(1, 0)
        self.start_id = np.zeros(1, dtype=np.int64)
        self.activated = np.full(0, -1, dtype=np.int64)
        self.fresh = np.zeros(0, dtype=np.bool_)
        self.scalars = np.array([1, 0], dtype=np.int64)  # next start id, promotion clock
        self.random_state = np.array([seed & ((1 << 64) - 1)], dtype=np.uint64)

    def change(self, queues: list[Any], apps: list[Any]) -> None:
        """The group is now `queues` x `apps` (both sorted and distinct)."""
        if apps != self.apps:
            self._change_apps(apps)
        if queues != self.queues:
            self._change_queues(queues)

    def _change_apps(self, apps: list[Any]) -> None:
        """Departed apps leave (their slots freed, clean); new apps get a free slot, stopped."""
        slot_of = self.slot_of
        departed = sorted(map(slot_of.pop, slot_of.keys() - set(apps)))  # set algebra at C speed
        if departed:
            _leave(
                np.array(departed, dtype=np.int64),
                self.active,
                self.fifo_next,
                self.fifo_prev,
                self.start_id,
                self.activated,
            )
            for slot in departed:
                self.app_in_slot[slot] = None
            self.free_slots.extend(departed)
        joined = [app for app in apps if app not in slot_of]  # in sorted order: reproducible
        self._reserve_slots(len(joined))
        for app in joined:
            slot = self.free_slots.pop()
            slot_of[app] = slot
            self.app_in_slot[slot] = app
        self.apps = list(apps)
        self.members = np.fromiter(map(slot_of.__getitem__, apps), dtype=np.int64, count=len(apps))

    def _reserve_slots(self, wanted: int) -> None:
        """At least `wanted` free slots: the rows double when they run out (clean new rows)."""
        missing = wanted - len(self.free_slots)
        if missing <= 0:
            return
        slot_count = self.fifo_next.shape[0]
        added = max(missing, slot_count)
        queue_count = len(self.queues)
        extra = np.full((added, queue_count), ABSENT, dtype=np.int32)
        self.fifo_next = np.concatenate([self.fifo_next, extra])
        self.fifo_prev = np.concatenate([self.fifo_prev, extra])
        self.start_id = np.concatenate([self.start_id, np.zeros(added, dtype=np.int64)])
        self.app_in_slot.extend([None] * added)
        # popped from the end: the lowest new slots are used first
        self.free_slots.extend(range(slot_count + added - 1, slot_count - 1, -1))

    def _change_queues(self, queues: list[Any]) -> None:
        """Removed queues vanish with their FIFO; new queues start empty, with no consumer, and
        fresh (every started app subscribes to them in the next settle)."""
        (
            self.active,
            self.fifo_next,
            self.fifo_prev,
            self.activated,
            self.fresh,
        ) = _columns_from(
            _numbers_or_minus_one(self._queue_numbering(), queues),
            self.active,
            self.fifo_next,
            self.fifo_prev,
            self.activated,
            self.fresh,
        )
        self.queues = list(queues)
        self.queue_number = None
        self.queue_objects = _object_array(self.queues)

    def _queue_numbering(self) -> dict[Any, int]:
        """Queue id -> number, built when a change first needs it (only a change of the queues
        does: most changes leave them alone)."""
        if self.queue_number is None:
            self.queue_number = _numbering(self.queues)
        return self.queue_number

    def load_owners(
        self, queues: list[Any], apps: list[Any], owner: dict[Any, Any], existing: list[Any]
    ) -> None:
        """Rebuild the state from active owners only: see ReferenceEngine.load_owners."""
        self.queues, self.apps = list(queues), list(apps)
        self.queue_number = None
        self.queue_objects = _object_array(self.queues)
        self.slot_of = {app: slot for slot, app in enumerate(apps, start=1)}
        self.app_in_slot = [None, *apps]
        self.free_slots = []
        self.members = np.arange(1, len(apps) + 1, dtype=np.int64)
        slot_of = self.slot_of
        self.active = np.array(
            [slot_of[owner[queue]] if queue in owner else NO_APP for queue in queues],
            dtype=np.int64,
        )
        existing_slots = np.array([slot_of[app] for app in existing], dtype=np.int64)
        self.fifo_next, self.fifo_prev = _fifos_of(self.active, existing_slots, len(apps) + 1)
        self.start_id = np.zeros(len(apps) + 1, dtype=np.int64)
        self.start_id[existing_slots] = np.arange(1, len(existing) + 1)
        self.activated = np.where(self.active != NO_APP, np.arange(len(queues)), -1)
        self.fresh = np.zeros(len(queues), dtype=np.bool_)
        self.scalars[:] = (len(existing) + 1, int(np.count_nonzero(self.active != NO_APP)))

    def snapshot(self) -> tuple[Any, ...]:
        """The spec's variables as ReferenceEngine.snapshot gives them (for the refinement test)."""
        app_in_slot = self.app_in_slot
        fifos = []
        for queue_number in range(len(self.queues)):
            line, app = [], int(self.fifo_next[SENTINEL, queue_number])
            while app != SENTINEL:
                line.append(app_in_slot[app])
                app = int(self.fifo_next[app, queue_number])
            fifos.append(tuple(line))
        active = tuple(app_in_slot[app] if app != NO_APP else None for app in self.active.tolist())
        start_ids = tuple(int(self.start_id[self.slot_of[app]]) for app in self.apps)
        return (
            tuple(self.queues),
            tuple(self.apps),
            tuple(fifos),
            active,
            start_ids,
            int(self.scalars[0]),
        )

    def owners(self) -> dict[Any, list[Any]]:
        """app -> the queues it is active on, ascending; every app a key, in sorted order. The
        queues come out of the object array in one step, grouped by app, and each app's list is
        a slice."""
        grouped, starts = _grouped_by_owner(self.active, self.members)
        queues = self.queue_objects[grouped].tolist()
        bounds = starts.tolist()
        return dict(
            zip(self.apps, map(queues.__getitem__, map(slice, bounds, bounds[1:])), strict=True)
        )

    def settle(self, variant: str, bound: int) -> ProtocolRun:
        """Run the round schedule to quiescence, or until `bound` steps."""
        counts = np.zeros(5, dtype=np.int64)
        run_rounds_kernel(
            self.members,
            self.active,
            self.fifo_next,
            self.fifo_prev,
            self.start_id,
            self.activated,
            self.fresh,
            self.scalars,
            self.random_state,
            variant == "spec",
            self.policy,
            bound,
            counts,
        )
        releases, steps, rounds, converged, paused = counts.tolist()
        return ProtocolRun(self.owners(), releases, steps, rounds, bool(converged), paused)
