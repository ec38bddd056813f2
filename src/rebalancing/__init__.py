"""Queue-assignment strategies for consumer groups: the library layer that consumer code imports.

The evaluation (rebalancing.evaluation), the Spark harness (rebalancing.harness), the SAC protocol
model (rebalancing.sac) and the consumer runtime (rebalancing.runtime) are imported on their own.
"""

from rebalancing.contract import (
    AssignFunction,
    PreviousMismatchWarning,
    ProtocolRun,
    StrategySession,
)
from rebalancing.strategies import STRATEGIES, Strategy
from rebalancing.version import __version__

__all__ = [
    "STRATEGIES",
    "AssignFunction",
    "PreviousMismatchWarning",
    "ProtocolRun",
    "Strategy",
    "StrategySession",
    "__version__",
]
