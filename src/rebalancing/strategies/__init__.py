"""The strategies (one module each) and their registry; what consumer code imports."""

from rebalancing.strategies import averagely, round_robin, sac, sticky
from rebalancing.strategies.registry import STRATEGIES, Strategy, resolve, select

__all__ = [
    "STRATEGIES",
    "Strategy",
    "averagely",
    "resolve",
    "round_robin",
    "sac",
    "select",
    "sticky",
]
