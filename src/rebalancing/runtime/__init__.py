"""The consumer side: ordered per-queue work on a bounded worker pool, and throttled reception."""

from rebalancing.runtime.channels import ChannelScheduler
from rebalancing.runtime.reception import ReceptionStats, ThrottledReception
from rebalancing.runtime.runner import (
    ChannelRevokedError,
    ChannelRunner,
    Failure,
    RunnerClosedError,
)

__all__ = [
    "ChannelRevokedError",
    "ChannelRunner",
    "ChannelScheduler",
    "Failure",
    "ReceptionStats",
    "RunnerClosedError",
    "ThrottledReception",
]
