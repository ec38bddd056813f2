"""The strategies (one module each) and their registry; what consumer code imports."""

from rebalancing.strategies import averagely, round_robin, sac, sticky
from rebalancing.strategies.registry import STRATEGIES, Strategy, select

__all__ = ["STRATEGIES", "Strategy", "averagely", "round_robin", "sac", "select", "sticky"]
