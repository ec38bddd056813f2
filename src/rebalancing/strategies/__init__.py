"""The registry of strategies: name -> assign function.

Adding a strategy is one module in this package plus one line here; the conformance suite, the
scoring core and the command line pick it up from STRATEGIES.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from rebalancing.contract import AssignFunction
from rebalancing.strategies import averagely, round_robin, sticky

STRATEGIES: Mapping[str, AssignFunction] = MappingProxyType(
    {
        "averagely": averagely.assign,
        "round_robin": round_robin.assign,
        "sticky": sticky.assign,
    }
)

__all__ = ["STRATEGIES", "averagely", "round_robin", "sticky"]
