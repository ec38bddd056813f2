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
which is (apps two or more over) + (apps one over with a larger start id). Two bitsets over
start-id ranks hold those two sets: the second count is a popcount, and the apps whose guard
holds are read off them in start-id order (the apps two or more over, and those one over below
a rank cut), not found by a guard per app in every round. Each app's active queues are a bitset
over queue numbers (`highest`, `lowest`, and `random`, with a Fenwick tree of each word's bit
count per app to find the k-th smallest: the word from the tree, the bit by popcounts) or a
stack in promotion order (`newest`). The subscribe phase visits only what can subscribe:
after every settle each started app waits on or is active on every queue (a release
re-subscribes at once, and a change only removes apps and queues or adds fresh ones), so a
started app is checked against the fresh queues only, and a newly started app against all of
them.
Runtime complexity: O(|Q| x new apps + |A| x fresh queues) to subscribe, O(|Q| + |A| log |A|) to
build the per-app structures, then O(|A| / 64) per release and per promotion (O(log |Q|) more
for `random`), plus O(|A| / 64 + releasing apps) per round. A change: O(|A|) to find who joined
and left, O(|A|) more when apps join (their places among the present ones: no id is ever
compared, as the contract compares only distinct ids, and None < None raises), O(|Q|) per
departed app, O(1) per joining app (amortised: the rows double when they run out), O(|Q| x
rows) when the queues change (one copy of the FIFO columns).
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
def _tree_kth(tree: Any, row: int, rank: int, top_bit: int) -> tuple[int, int]:
    """Fenwick tree `tree[row]` of counts: the 0-based index of the entry that holds the
    `rank`-th (1-based) unit, and that unit's rank within the entry."""
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
    return position, remaining  # 1-based position + 1 - 1


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


def _ctpop_typing(typing_context: Any, word: Any) -> Any:
    """The typing of `_set_bits`: as `_ctlz_typing`, with LLVM's ctpop."""
    if word != types.uint64:
        return None

    def generate(context: Any, builder: Any, signature: Any, arguments: Any) -> Any:
        return builder.ctpop(arguments[0])

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

_set_bits: Any = intrinsic(_ctpop_typing)
"""The number of set bits of a uint64, in jitted code (one instruction where the CPU has it)."""


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
def _take_kth(bits: Any, word_tree: Any, app: int, rank: int, top_bit: int) -> int:
    """Clear and return the app's `rank`-th (1-based) lowest active queue: the word from the
    Fenwick tree of the words' bit counts, then the bit by halving the word (popcounts)."""
    word_index, remaining = _tree_kth(word_tree, app, rank, top_bit)
    word = bits[app, word_index]
    bit = 0
    width = 32
    while width > 0:
        low_half = word & ((_ONE << np.uint64(width)) - _ONE)
        in_low_half = _set_bits(low_half)
        if in_low_half < remaining:
            remaining -= in_low_half
            word >>= np.uint64(width)
            bit += width
        else:
            word = low_half
        width >>= 1
    bits[app, word_index] ^= _ONE << np.uint64(bit)
    _tree_add(word_tree, app, word_index, -1)
    return int(word_index * 64 + bit)


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
    support_bits: Any,
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
        ahead = above + boundary_total - _ranks_up_to(support_bits, rank)
    return ahead >= remainder


@njit(cache=True)
def _support(held: int, rank: int, lowest: int, support_bits: Any, sign: int) -> tuple[int, int]:
    """An app holding `held` queues enters (`sign` 1) or leaves (-1) the Position support: the
    change to (apps two or more over `lowest`, apps exactly one over), the start-rank bitsets
    kept in step (row 0: two or more over, row 1: one over; toggled, as entering and leaving
    pair up)."""
    rank_bit = _ONE << np.uint64(rank & 63)
    if held >= lowest + 2:
        support_bits[0, rank >> 6] ^= rank_bit
        return sign, 0
    if held == lowest + 1:  # at least 1, so never an app without active queues
        support_bits[1, rank >> 6] ^= rank_bit
        return 0, sign
    return 0, 0


@njit(cache=True)
def _recount(
    count: Any,
    app: int,
    held: int,
    rank: Any,
    lowest: int,
    support_bits: Any,
    above: int,
    boundary_total: int,
) -> tuple[int, int]:
    """Set `app`'s active count to `held`, moving it in the Position support; the new
    (above, boundary_total)."""
    fewer_above, fewer_boundary = _support(count[app], rank[app], lowest, support_bits, -1)
    count[app] = held
    more_above, more_boundary = _support(held, rank[app], lowest, support_bits, 1)
    return above + fewer_above + more_above, boundary_total + fewer_boundary + more_boundary


@njit(cache=True)
def _boundary_cut(
    above: int,
    boundary_total: int,
    remainder: int,
    support_bits: Any,
    app_count: int,
    spec_variant: bool,
) -> int:
    """The start-id rank below which an app exactly one over may release (the guard of
    `_release_enabled` for all of them at once): ahead counts the apps one over with a larger
    rank, so it falls as the rank grows, and all but the `remainder - above` highest-ranked
    of them are ahead far enough (the `spec` reading: all of them or none)."""
    if spec_variant:
        return app_count if above + boundary_total - 1 >= remainder else 0
    short = remainder - above
    if short <= 0:
        return app_count
    if short > boundary_total:
        return 0
    return _kth_rank(support_bits, boundary_total - short + 1)


@njit(cache=True)
def _ranks_up_to(support_bits: Any, rank: int) -> int:
    """The number of apps exactly one over with a rank up to `rank` (row 1's set bits)."""
    word_index = rank >> 6
    total = 0
    for before in range(word_index):
        total += _set_bits(support_bits[1, before])
    last = support_bits[1, word_index] & (((_ONE << np.uint64(rank & 63)) << _ONE) - _ONE)
    return int(total + _set_bits(last))


@njit(cache=True)
def _kth_rank(support_bits: Any, wanted: int) -> int:
    """The rank of the `wanted`-th (1-based) app exactly one over, by rank (there is one)."""
    remaining = wanted
    for word_index in range(support_bits.shape[1]):
        word = support_bits[1, word_index]
        in_word = _set_bits(word)
        if in_word >= remaining:
            for _ in range(remaining - 1):
                word &= word - _ONE
            return int(word_index * 64 + _lowest_bit(word))
        remaining -= in_word
    return -1  # unreachable: `wanted` is at most the number of such apps


@njit(cache=True)
def _below(cut: int, word_index: int) -> Any:
    """The bits of word `word_index` of a rank bitset whose ranks are below `cut`."""
    first = word_index * 64
    if cut >= first + 64:
        return ~_ZERO
    if cut <= first:
        return _ZERO
    return (_ONE << np.uint64(cut - first)) - _ONE


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


_NO_SLOTS = np.zeros(0, dtype=np.int64)

_FEWEST_SLOTS_ADDED = 8
"""Slot rows added at least when they run out: each growth copies every row, and most groups
are small (a few slots cost |Q| int32 entries each in two arrays)."""


def _slot_array(numbers: list[int]) -> Any:
    """`numbers` as an int64 array (most changes have no departed or no joined apps: the
    empty one is shared, never written)."""
    return np.array(numbers, dtype=np.int64) if numbers else _NO_SLOTS


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
        self.app_set: set[Any] = set()  # the present apps
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
        self.counts = np.zeros(5, dtype=np.int64)  # what `settle` reads back from the kernel

    def change(self, queues: list[Any], apps: list[Any]) -> None:
        """The group is now `queues` x `apps` (both sorted and distinct)."""
        if apps != self.apps:
            self._change_apps(apps)
        if queues != self.queues:
            self._change_queues(queues)

    def _change_apps(self, apps: list[Any]) -> None:
        """Departed apps leave (their slots freed, clean); new apps get a free slot, stopped."""
        slot_of = self.slot_of
        present, before = set(apps), self.app_set
        gone = before - present  # set algebra at C speed, one pass over each set
        departed = sorted(map(slot_of.pop, gone))
        departed_slots = _slot_array(departed)
        if departed:
            _leave(
                departed_slots,
                self.active,
                self.fifo_next,
                self.fifo_prev,
                self.start_id,
                self.activated,
            )
            for slot in departed:
                self.app_in_slot[slot] = None
            self.free_slots.extend(departed)
        # in sorted order (reproducible), each with its place among the present apps: taken
        # from `apps`, which is sorted, so that no id is compared (None < None raises)
        joined_places: list[int] = []
        if len(apps) > len(before) - len(gone):
            place_of = _numbering(apps)
            joined_places = sorted(map(place_of.__getitem__, present - before))
        self._reserve_slots(len(joined_places))
        joined_slots = []
        for place in joined_places:
            app = apps[place]
            slot = self.free_slots.pop()
            slot_of[app] = slot
            self.app_in_slot[slot] = app
            joined_slots.append(slot)
        self.members = _members_after(
            self.members,
            departed_slots,
            _slot_array(joined_places),
            _slot_array(joined_slots),
            self.fifo_next.shape[0],
        )
        self.apps, self.app_set = list(apps), present

    def _reserve_slots(self, wanted: int) -> None:
        """At least `wanted` free slots: the rows double when they run out (clean new rows),
        by at least _FEWEST_SLOTS_ADDED, so that a small group does not grow row by row."""
        missing = wanted - len(self.free_slots)
        if missing <= 0:
            return
        slot_count = self.fifo_next.shape[0]
        added = max(missing, slot_count, _FEWEST_SLOTS_ADDED)
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
        kept = len(self.queues)
        if len(queues) > kept and queues[:kept] == self.queues:  # queues added after the others
            source = np.arange(len(queues), dtype=np.int64)
            source[kept:] = -1
        else:
            source = _numbers_or_minus_one(self._queue_numbering(), queues)
        (
            self.active,
            self.fifo_next,
            self.fifo_prev,
            self.activated,
            self.fresh,
        ) = _columns_from(
            source,
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
        self.app_set = set(apps)
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
        """app -> the queues it is active on, ascending; every app a key, in sorted order."""
        return self._plan(*_grouped_by_owner(self.active, self.members))

    def _plan(self, grouped: Any, starts: Any) -> dict[Any, list[Any]]:
        """The plan from the queue numbers grouped by app and where each app's group starts:
        the queues come out of the object array in one step, and each app's list is a slice."""
        queues = self.queue_objects[grouped].tolist()
        bounds = starts.tolist()
        return {
            app: queues[start:end]
            for app, start, end in zip(self.apps, bounds, bounds[1:], strict=False)
        }

    def settle(self, variant: str, bound: int) -> ProtocolRun:
        """Run the round schedule to quiescence, or until `bound` steps."""
        counts = self.counts
        grouped, starts = _settle_and_group(
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
        plan = self._plan(grouped, starts)
        return ProtocolRun(
            owners=plan,
            releases=releases,
            steps=steps,
            rounds=rounds,
            converged=bool(converged),
            queues_paused=paused,
            positions=(grouped, starts),
        )
