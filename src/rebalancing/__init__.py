"""Queue-assignment strategies for consumer groups, and the scores that compare them."""

from rebalancing.contract import AssignFunction
from rebalancing.scores import Scores, score
from rebalancing.strategies import STRATEGIES

__all__ = ["STRATEGIES", "AssignFunction", "Scores", "score"]
