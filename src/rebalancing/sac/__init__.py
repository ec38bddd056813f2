"""The RabbitMQ single-active-consumer protocol with leaderless release: model and schedulers."""

from rebalancing.contract import ProtocolRun
from rebalancing.sac.model import POSITION_VARIANTS, PositionVariant, ProtocolError, SacState
from rebalancing.sac.schedulers import (
    RELEASE_POLICIES,
    ReleaseChoice,
    ReleasePolicy,
    run_random,
    run_rounds,
)

__all__ = [
    "POSITION_VARIANTS",
    "RELEASE_POLICIES",
    "PositionVariant",
    "ProtocolError",
    "ProtocolRun",
    "ReleaseChoice",
    "ReleasePolicy",
    "SacState",
    "run_random",
    "run_rounds",
]
