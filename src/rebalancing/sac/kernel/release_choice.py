"""Which active queue a releasing app gives up: mirrors schedulers.ReleaseChoice.take.

`POLICY_CODES` numbers the release policies; the kernel takes each app's active queues from a
bitset over queue numbers (`highest`, `lowest`, and `random`) or from a stack in promotion order
(`newest`, kept by rounds.run_rounds_kernel itself). `random` draws from the same SplitMix64
stream as schedulers.SplitMix64.below and finds the k-th smallest active queue with a Fenwick
tree of each word's bit count per app: the word from the tree, the bit by popcounts.
Runtime complexity: per release, O(1) plus the empty words skipped (at most |Q| / 64) for
`highest` and `lowest`, O(log |Q|) for `random`; O(1) to mark a promotion (O(log |Q|) more for
`random`'s tree).

Speed notes (benchmarks/sac_kernel.py and perf): LLVM inlines a helper only while it stays
small, so `_take_highest` and `_take_lowest` are two functions rather than one with a branch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from rebalancing.sac.kernel.bits import _ONE, _ZERO, _highest_bit, _lowest_bit, _set_bits
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
