"""The Release guard over the Position support: mirrors model.release_enabled.

`_release_enabled` is model.release_enabled for one app (model.position and model.ideal_number
folded in), `_boundary_cut` over the support's bitsets is model.release_enabled_start_ids for
all of them at once, and `_recount` keeps the support as model.SacState.set_active_count keeps
the ranking.

Where the reference finds Position with a binary search over the sorted (count, start id)
pairs, the kernel uses that |Q| div |started| and |Q| mod |started| are fixed for the whole
run once every app has started: only apps exactly one over |Q| div |started| need a Position,
which is (apps two or more over) + (apps one over with a larger start id). Two bitsets over
start-id ranks hold those two sets (the support): the second count is a popcount, and the apps
whose guard holds are read off them in start-id order (the apps two or more over, and those one
over below a rank cut: `_boundary_cut`), not found by a guard per app in every round.
Runtime complexity: O(1) to move an app in the support (`_recount`), O(|A| / 64) for a guard
or a cut (a popcount or a select over the rank words).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from rebalancing.sac.kernel.bits import _ONE, _ZERO, _lowest_bit, _set_bits


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
