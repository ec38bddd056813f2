"""The round schedule of rebalancing.sac.schedulers.run_rounds, compiled with numba over arrays.

The reference model (rebalancing.sac.model, run_rounds) is the definition: every action goes
through the spec's guards there. This kernel computes the same runs, with the same counts, and
tests/sac/test_kernel_refinement.py holds it to that on thousands of seeded sessions. Queues and
apps are numbered by their sorted ids; the state is integer arrays:

- `active[q]`: the app active on queue q, or -1;
- the FIFO of queue q as a singly linked list: `fifo_head[q]`, `fifo_tail[q]`,
  `fifo_next[a, q]` (the app after a, or -1), and `waiting[a, q]` (app-major: an app releases
  and is promoted on runs of neighbouring queues, so its row is read in order);
- `start_id[a]` (0 while stopped), `activated[q]` (the promotion clock when q became active on
  its owner, for the `newest` policy), and `scalars` = [next start id, promotion clock];
- `random_state[0]`: the SplitMix64 state (the `random` policy).

Where the reference finds Position with a binary search over the sorted (count, start id)
pairs, the kernel uses that |Q| div |started| and |Q| mod |started| are fixed for the whole
run once every app has started: only apps exactly one over |Q| div |started| need a Position,
which is (apps two or more over) + (apps one over with a larger start id), the second a Fenwick
tree over start-id ranks. Each app's active queues are a Fenwick tree over queue numbers (the
k-th smallest for `highest`, `lowest` and `random`) or a stack in promotion order (`newest`).
Runtime complexity: O(|Q| x |A|) to subscribe and to build the per-app trees, then
O(log |Q| + log |A|) per release and per promotion, plus O(|A|) per round.
Memory: O(|Q| x |A|) (the FIFOs, as in the protocol itself).
Compiled on first use and cached on disk by numba (`cache=True`), so a process pays it once.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

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


@njit(cache=True)
def _highest_bit(word: Any) -> int:
    """The number of the highest set bit of a non-zero uint64."""
    number = 0
    for width in (32, 16, 8, 4, 2, 1):
        if word >> np.uint64(width):
            word >>= np.uint64(width)
            number += width
    return number


@njit(cache=True)
def _set_owned(bits: Any, low_word: Any, high_word: Any, app: int, queue: int) -> None:
    """Mark `queue` active on `app` in the app's bitset, widening its word bounds."""
    word = queue >> 6
    bits[app, word] |= _ONE << np.uint64(queue & 63)
    low_word[app] = min(low_word[app], word)
    high_word[app] = max(high_word[app], word)


@njit(cache=True)
def _take_extreme(bits: Any, low_word: Any, high_word: Any, app: int, highest: bool) -> int:
    """Clear and return the app's highest (or lowest) active queue; the app must have one."""
    if highest:
        while bits[app, high_word[app]] == _ZERO:
            high_word[app] -= 1
        word = high_word[app]
        bit = _highest_bit(bits[app, word])
    else:
        while bits[app, low_word[app]] == _ZERO:
            low_word[app] += 1
        word = low_word[app]
        value = bits[app, word]
        bit = _highest_bit(value & (~value + _ONE))
    bits[app, word] &= ~(_ONE << np.uint64(bit))
    return int(word * 64 + bit)


@njit(cache=True)
def _push_back(
    fifo_head: Any, fifo_tail: Any, fifo_next: Any, waiting: Any, q: int, a: int
) -> None:
    fifo_next[a, q] = -1
    if fifo_tail[q] == -1:
        fifo_head[q] = a
    else:
        fifo_next[fifo_tail[q], q] = a
    fifo_tail[q] = a
    waiting[a, q] = True


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
    active: Any,
    fifo_head: Any,
    fifo_tail: Any,
    fifo_next: Any,
    waiting: Any,
    start_id: Any,
    activated: Any,
    scalars: Any,
    random_state: Any,
    spec_variant: bool,
    policy: int,
    bound: int,
    counts_out: Any,
) -> None:
    """Run the round schedule on the arrays (mutated); counts_out = [releases, steps, rounds,
    converged, queues paused]. Mirrors schedulers.run_rounds statement for statement where it
    matters."""
    queue_count = active.shape[0]
    app_count = start_id.shape[0]
    steps = 0
    releases = 0
    rounds = 0
    in_release_run = False
    # Start: stopped apps in sorted id order (their numbers).
    for app in range(app_count):
        if start_id[app] == 0:
            start_id[app] = scalars[0]
            scalars[0] += 1
            steps += 1
    if app_count == 0:
        counts_out[0] = 0
        counts_out[1] = steps
        counts_out[2] = 0
        counts_out[3] = 1
        counts_out[4] = 0
        return
    by_start = np.argsort(start_id, kind="mergesort")
    rank = np.empty(app_count, dtype=np.int64)
    for position in range(app_count):
        rank[by_start[position]] = position
    # Subscribe: every app, in start-id order, to every queue it neither waits on nor holds.
    for position in range(app_count):
        app = by_start[position]
        for queue in range(queue_count):
            if not waiting[app, queue] and active[queue] != app:
                _push_back(fifo_head, fifo_tail, fifo_next, waiting, queue, app)
                steps += 1
    lowest = queue_count // app_count
    remainder = queue_count % app_count
    count = np.zeros(app_count, dtype=np.int64)
    for queue in range(queue_count):
        if active[queue] >= 0:
            count[active[queue]] += 1
    # Position support: apps two or more over `lowest`, and a tree of those exactly one over.
    above = 0
    boundary = np.zeros((1, app_count + 1), dtype=np.int64)
    boundary_total = 0
    for app in range(app_count):
        more_above, more_boundary = _support(count[app], rank[app], lowest, boundary, 1)
        above += more_above
        boundary_total += more_boundary
    # Each app's active queues: a stack in promotion order (newest), a bitset (highest,
    # lowest) or a Fenwick tree for the k-th smallest (random); the others stay 1 x 1.
    use_stack = policy == _NEWEST
    use_bits = policy in (_HIGHEST, _LOWEST)
    use_tree = policy == _RANDOM
    stack = np.empty((app_count if use_stack else 1, queue_count if use_stack else 1), np.int32)
    stack_top = np.zeros(app_count, dtype=np.int64)
    word_count = (queue_count + 63) // 64 if use_bits else 1
    bits = np.zeros((app_count if use_bits else 1, word_count), dtype=np.uint64)
    low_word = np.full(app_count, word_count - 1, dtype=np.int64)
    high_word = np.zeros(app_count, dtype=np.int64)
    owned_tree = np.zeros(
        (app_count if use_tree else 1, queue_count + 1 if use_tree else 1), dtype=np.int32
    )
    if use_stack:
        for queue in np.argsort(activated, kind="mergesort"):
            owner = active[queue]
            if owner >= 0:
                stack[owner, stack_top[owner]] = queue
                stack_top[owner] += 1
    for queue in range(queue_count):
        owner = active[queue]
        if owner >= 0 and use_bits:
            _set_owned(bits, low_word, high_word, owner, queue)
        elif owner >= 0 and use_tree:
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
    while True:
        for index in range(unpromoted_count):
            queue = unpromoted[index]
            head = fifo_head[queue]
            if head != -1 and active[queue] == -1:
                fifo_head[queue] = fifo_next[head, queue]
                if fifo_head[queue] == -1:
                    fifo_tail[queue] = -1
                waiting[head, queue] = False
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
            while _release_enabled(
                count[app],
                rank[app],
                lowest,
                remainder,
                above,
                boundary,
                boundary_total,
                spec_variant,
            ):
                held = count[app]
                if use_stack:
                    stack_top[app] -= 1
                    queue = stack[app, stack_top[app]]
                elif use_bits:
                    queue = _take_extreme(bits, low_word, high_word, app, policy == _HIGHEST)
                else:
                    chosen_rank = _random_below(random_state, held) + 1
                    queue = _tree_kth(owned_tree, app, chosen_rank, top_bit)
                    _tree_add(owned_tree, app, queue, -1)
                active[queue] = -1
                paused[queue] = True
                above, boundary_total = _recount(
                    count, app, held - 1, rank, lowest, boundary, above, boundary_total
                )
                steps += 1
                releases += 1
                if not in_release_run:
                    rounds += 1
                    in_release_run = True
                released_apps[released_count] = app
                released_queues[released_count] = queue
                released_count += 1
        for index in range(released_count):
            _push_back(
                fifo_head,
                fifo_tail,
                fifo_next,
                waiting,
                released_queues[index],
                released_apps[index],
            )
            steps += 1
        unpromoted[:released_count] = released_queues[:released_count]
        unpromoted_count = released_count


@njit(cache=True)
def remap_kernel(
    active: Any,
    fifo_head: Any,
    fifo_next: Any,
    start_id: Any,
    activated: Any,
    queue_source: Any,
    app_source: Any,
    app_target: Any,
) -> tuple[Any, Any, Any, Any, Any, Any, Any]:
    """The state over a new membership: new queue n was old queue `queue_source[n]` (-1: new),
    new app m was old app `app_source[m]` (-1: new), old app a is now `app_target[a]` (-1: left).

    A departed app leaves every FIFO and its active queues lose their consumer; a removed queue
    vanishes with its FIFO; a new queue starts with an empty FIFO; a new app is stopped.
    """
    queue_count = queue_source.shape[0]
    app_count = app_source.shape[0]
    new_active = np.full(queue_count, -1, dtype=np.int64)
    new_head = np.full(queue_count, -1, dtype=np.int64)
    new_tail = np.full(queue_count, -1, dtype=np.int64)
    new_next = np.full((app_count, queue_count), -1, dtype=np.int32)
    new_waiting = np.zeros((app_count, queue_count), dtype=np.bool_)
    new_activated = np.full(queue_count, -1, dtype=np.int64)
    new_start_id = np.zeros(app_count, dtype=np.int64)
    for app in range(app_count):
        if app_source[app] >= 0:
            new_start_id[app] = start_id[app_source[app]]
    for queue in range(queue_count):
        old_queue = queue_source[queue]
        if old_queue < 0:
            continue
        owner = active[old_queue]
        if owner >= 0 and app_target[owner] >= 0:
            new_active[queue] = app_target[owner]
            new_activated[queue] = activated[old_queue]
        old_app = fifo_head[old_queue]
        while old_app != -1:
            app = app_target[old_app]
            if app >= 0:
                _push_back(new_head, new_tail, new_next, new_waiting, queue, app)
            old_app = fifo_next[old_app, old_queue]
    return new_active, new_head, new_tail, new_next, new_waiting, new_start_id, new_activated


class KernelEngine:
    """One group's protocol state as arrays, carried from one rebalance to the next.

    The same interface as rebalancing.sac.sessions.ReferenceEngine: `change` applies a
    membership change, `load_owners` rebuilds a state from active owners alone, `settle` runs
    the round schedule to quiescence.
    """

    def __init__(self, policy: str = "highest", seed: int = 0) -> None:
        if policy not in POLICY_CODES:
            raise ValueError(f"unknown release policy {policy!r}; known: {', '.join(POLICY_CODES)}")
        self.policy = POLICY_CODES[policy]
        self.queues: list[Any] = []
        self.apps: list[Any] = []
        self.active = np.full(0, -1, dtype=np.int64)
        self.fifo_head = np.full(0, -1, dtype=np.int64)
        self.fifo_tail = np.full(0, -1, dtype=np.int64)
        self.fifo_next = np.full((0, 0), -1, dtype=np.int32)
        self.waiting = np.zeros((0, 0), dtype=np.bool_)
        self.start_id = np.zeros(0, dtype=np.int64)
        self.activated = np.full(0, -1, dtype=np.int64)
        self.scalars = np.array([1, 0], dtype=np.int64)  # next start id, promotion clock
        self.random_state = np.array([seed & ((1 << 64) - 1)], dtype=np.uint64)

    def change(self, queues: list[Any], apps: list[Any]) -> None:
        """The group is now `queues` x `apps` (both sorted and distinct)."""
        if queues == self.queues and apps == self.apps:
            return
        old_queue_number = {queue: number for number, queue in enumerate(self.queues)}
        old_app_number = {app: number for number, app in enumerate(self.apps)}
        queue_source = np.array([old_queue_number.get(q, -1) for q in queues], dtype=np.int64)
        app_source = np.array([old_app_number.get(app, -1) for app in apps], dtype=np.int64)
        app_target = np.full(len(self.apps), -1, dtype=np.int64)
        for number, source in enumerate(app_source):
            if source >= 0:
                app_target[source] = number
        (
            self.active,
            self.fifo_head,
            self.fifo_tail,
            self.fifo_next,
            self.waiting,
            self.start_id,
            self.activated,
        ) = remap_kernel(
            self.active,
            self.fifo_head,
            self.fifo_next,
            self.start_id,
            self.activated,
            queue_source,
            app_source,
            app_target,
        )
        self.queues, self.apps = list(queues), list(apps)

    def load_owners(
        self, queues: list[Any], apps: list[Any], owner: dict[Any, Any], existing: list[Any]
    ) -> None:
        """Rebuild the state from active owners only: see ReferenceEngine.load_owners."""
        self.queues, self.apps = list(queues), list(apps)
        app_number = {app: number for number, app in enumerate(apps)}
        self.active = np.array(
            [app_number[owner[queue]] if queue in owner else -1 for queue in queues],
            dtype=np.int64,
        )
        existing_numbers = np.array([app_number[app] for app in existing], dtype=np.int64)
        self.fifo_head, self.fifo_tail, self.fifo_next, self.waiting = _fifos_of(
            self.active, existing_numbers, len(apps)
        )
        self.start_id = np.zeros(len(apps), dtype=np.int64)
        self.start_id[existing_numbers] = np.arange(1, len(existing) + 1)
        self.activated = np.where(self.active >= 0, np.arange(len(queues)), -1).astype(np.int64)
        self.scalars[:] = (len(existing) + 1, int(np.count_nonzero(self.active >= 0)))

    def snapshot(self) -> tuple[Any, ...]:
        """The spec's variables as ReferenceEngine.snapshot gives them (for the refinement test)."""
        fifos = []
        for queue_number in range(len(self.queues)):
            line, app = [], int(self.fifo_head[queue_number])
            while app != -1:
                line.append(self.apps[app])
                app = int(self.fifo_next[app, queue_number])
            fifos.append(tuple(line))
        active = tuple(self.apps[app] if app >= 0 else None for app in self.active.tolist())
        start_ids = tuple(int(start_id) for start_id in self.start_id)
        return (
            tuple(self.queues),
            tuple(self.apps),
            tuple(fifos),
            active,
            start_ids,
            int(self.scalars[0]),
        )

    def settle(self, variant: str, bound: int) -> ProtocolRun:
        """Run the round schedule to quiescence, or until `bound` steps."""
        counts = np.zeros(5, dtype=np.int64)
        run_rounds_kernel(
            self.active,
            self.fifo_head,
            self.fifo_tail,
            self.fifo_next,
            self.waiting,
            self.start_id,
            self.activated,
            self.scalars,
            self.random_state,
            variant == "spec",
            self.policy,
            bound,
            counts,
        )
        owners: dict[Any, list[Any]] = {app: [] for app in self.apps}
        apps = self.apps
        for queue, app in zip(self.queues, self.active.tolist(), strict=True):
            if app >= 0:
                owners[apps[app]].append(queue)
        releases, steps, rounds, converged, paused = (int(value) for value in counts)
        return ProtocolRun(owners, releases, steps, rounds, bool(converged), paused)


@njit(cache=True)
def _fifos_of(active: Any, existing: Any, app_count: int) -> tuple[Any, Any, Any, Any]:
    """FIFOs holding `existing` (app numbers in start-id order) minus each queue's owner."""
    queue_count = active.shape[0]
    head = np.full(queue_count, -1, dtype=np.int64)
    tail = np.full(queue_count, -1, dtype=np.int64)
    following = np.full((app_count, queue_count), -1, dtype=np.int32)
    waiting = np.zeros((app_count, queue_count), dtype=np.bool_)
    for queue in range(queue_count):
        for app in existing:
            if active[queue] != app:
                _push_back(head, tail, following, waiting, queue, app)
    return head, tail, following, waiting
