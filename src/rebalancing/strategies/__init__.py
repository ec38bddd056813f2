"""The registry of strategies: name -> assign function.

Adding a strategy is one module in this package plus one line in STRATEGIES; the conformance
suite, the scoring core and the command line pick it up from there. A protocol strategy (one
that runs a simulated protocol and can report its cost) adds a second line in PROTOCOLS.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, Protocol

from rebalancing.contract import AssignFunction
from rebalancing.sac.schedulers import ProtocolRun
from rebalancing.strategies import averagely, round_robin, sac, sticky


class ProtocolRunFunction(Protocol):
    """Runs a protocol strategy and returns its final owners with the protocol cost."""

    def __call__(
        self,
        queues: Iterable[Any],
        consumers: Iterable[Any],
        previous: Mapping[Any, Iterable[Any]] | None = None,
    ) -> ProtocolRun: ...


def _sac_spec_position_run(
    queues: Iterable[Any],
    consumers: Iterable[Any],
    previous: Mapping[Any, Iterable[Any]] | None = None,
) -> ProtocolRun:
    return sac.run(queues, consumers, previous, "spec")


STRATEGIES: Mapping[str, AssignFunction] = MappingProxyType(
    {
        "averagely": averagely.assign,
        "round_robin": round_robin.assign,
        "sticky": sticky.assign,
        "sac": sac.assign,
        "sac_spec": sac.assign_spec_position,
    }
)

PROTOCOLS: Mapping[str, ProtocolRunFunction] = MappingProxyType(
    {
        "sac": sac.run,
        "sac_spec": _sac_spec_position_run,
    }
)
"""For the protocol strategies of STRATEGIES: the same strategy, with its protocol cost."""


def select(names: str) -> tuple[str, ...]:
    """Registered strategy names from a comma-separated list; ValueError names unknown ones."""
    chosen = tuple(name.strip() for name in names.split(",") if name.strip())
    unknown = [name for name in chosen if name not in STRATEGIES]
    if unknown or not chosen:
        raise ValueError(
            f"unknown strategy {', '.join(map(repr, unknown)) or '(none given)'}; "
            f"known: {', '.join(STRATEGIES)}"
        )
    return chosen


__all__ = [
    "PROTOCOLS",
    "STRATEGIES",
    "ProtocolRunFunction",
    "averagely",
    "round_robin",
    "sac",
    "select",
    "sticky",
]
