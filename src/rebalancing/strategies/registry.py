"""The registry: strategy name -> Strategy (name, `assign`, one line of origin, session hook).

Adding a strategy is one module in this package plus one line in STRATEGIES; the conformance
checks (rebalancing.testing), the scoring core and the command lines pick it up from there. A
protocol strategy, whose state outlives one rebalance, also gives `open_session`: the scoring
core runs it through one session per scenario and reports the protocol's cost.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from rebalancing.contract import AssignFunction, StrategySession
from rebalancing.strategies import averagely, round_robin, sac, sticky


@dataclass(frozen=True)
class Strategy:
    """A strategy as the registry and the scoring core see it.

    `assign` is the stateless contract function; `open_session`, for protocol strategies only,
    starts a new group's session (its `rebalance(queues, consumers)` returns a ProtocolRun).
    """

    name: str
    assign: AssignFunction
    origin: str
    open_session: Callable[[], StrategySession] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"a strategy needs a non-empty name, got {self.name!r}")
        if not callable(self.assign):
            raise TypeError(f"strategy {self.name!r}: assign must be callable")
        if self.open_session is not None and not callable(self.open_session):
            raise TypeError(f"strategy {self.name!r}: open_session must be callable or None")


def _by_name(*strategies: Strategy) -> Mapping[str, Strategy]:
    return MappingProxyType({strategy.name: strategy for strategy in strategies})


STRATEGIES: Mapping[str, Strategy] = _by_name(
    Strategy("averagely", averagely.assign, "RocketMQ AllocateMessageQueueAveragely"),
    Strategy(
        "round_robin",
        round_robin.assign,
        "RocketMQ AllocateMessageQueueAveragelyByCircle, Kafka RoundRobinAssignor",
    ),
    Strategy("sticky", sticky.assign, "RocketMQ sticky rebalancing report, Kafka StickyAssignor"),
    Strategy(
        "sac",
        sac.assign,
        "RabbitMQ single active consumer, leaderless release (ties by start id)",
        open_session=sac.Session,
    ),
    Strategy(
        "sac_spec",
        sac.assign_spec_position,
        "RabbitMQ single active consumer, leaderless release (Position as the spec writes it)",
        open_session=sac.spec_position_session,
    ),
)


def select(names: str) -> tuple[Strategy, ...]:
    """Registered strategies from a comma-separated list of names; ValueError names unknown ones."""
    chosen = tuple(name.strip() for name in names.split(",") if name.strip())
    unknown = [name for name in chosen if name not in STRATEGIES]
    if unknown or not chosen:
        raise ValueError(
            f"unknown strategy {', '.join(map(repr, unknown)) or '(none given)'}; "
            f"known: {', '.join(STRATEGIES)}"
        )
    return tuple(STRATEGIES[name] for name in chosen)
