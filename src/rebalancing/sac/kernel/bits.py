"""Machine-word primitives under the kernel's bitsets: mirrors no reference function.

The number of a uint64's highest or lowest set bit and its count of set bits, as one LLVM
instruction each (ctlz, cttz, ctpop) in jitted code. Used by release_choice (an app's active
queues as a bitset) and position (the start-rank bitsets of the Position support). Each is O(1).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit, types
from numba.core.cgutils import false_bit
from numba.extending import intrinsic

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
