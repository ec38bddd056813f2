"""The strategies (one module each) and their registry; what consumer code imports."""

from rebalancing.strategies import (
    averagely,
    bounded_consistent_hash,
    consistent_hash,
    cooperative_sticky,
    event_hubs,
    kcl,
    pulsar_failover,
    round_robin,
    sac,
    sticky,
    super_stream,
)
from rebalancing.strategies.registry import (
    DEFAULT_STRATEGIES,
    STRATEGIES,
    SYSTEMS,
    Strategy,
    UnknownStrategyError,
    resolve,
    select,
)

__all__ = [
    "DEFAULT_STRATEGIES",
    "STRATEGIES",
    "SYSTEMS",
    "Strategy",
    "UnknownStrategyError",
    "averagely",
    "bounded_consistent_hash",
    "consistent_hash",
    "cooperative_sticky",
    "event_hubs",
    "kcl",
    "pulsar_failover",
    "resolve",
    "round_robin",
    "sac",
    "select",
    "sticky",
    "super_stream",
]
