"""The RabbitMQ single-active-consumer protocol with leaderless release: model and schedulers."""

from rebalancing.contract import ProtocolRun
from rebalancing.sac.model import POSITION_VARIANTS, PositionVariant, ProtocolError, SacState
from rebalancing.sac.schedulers import run_random, run_rounds

__all__ = [
    "POSITION_VARIANTS",
    "PositionVariant",
    "ProtocolError",
    "ProtocolRun",
    "SacState",
    "run_random",
    "run_rounds",
]
