"""RabbitMQ single active consumer with leaderless release (../shared/seeds/sac-leaderless-
rebalancing.tla.txt, specs/sac_leaderless.tla): a protocol, simulated.

Every app subscribes to every queue; per queue the broker keeps one active consumer and a FIFO
of waiting subscribers; an app holding more active queues than its ideal number releases one
(cancel, then subscribe again at the back of that queue's FIFO) and the broker makes the FIFO's
head active. `assign` rebuilds the protocol state from `previous` (the active owners: apps still
present keep their active queues and their place in line, waiting in start-id order; newcomers
start after them in sorted id order), runs it to quiescence with the deterministic round
schedule of rebalancing.sac.schedulers and returns the final active owners.
`assign` uses the `id` Position variant (ties broken by start id, as the spec's comment intends);
`assign_spec_position` keeps the spec's Position exactly as written (a tied app counts as ahead).
`run` returns the owners with the protocol cost (releases, steps, rounds, convergence); a
`Session` runs one group through successive rebalances (what the scoring core uses).
Runtime complexity: O(|Q| x |A|) for the subscriptions, plus O(|A|) per release near balance;
a cold start costs about |Q| x |A| / 2 releases (the cascade the spec warns of).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

from rebalancing.contract import ConsumerT, ProtocolRun, QueueT, prepare
from rebalancing.sac.model import PositionVariant, SacState
from rebalancing.sac.schedulers import run_rounds


def protocol_state(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None,
) -> SacState:
    """The protocol's state when the group changes: see the module docstring."""
    group = prepare(queues, consumers, previous)
    state = SacState.initial(group.queues, group.consumers)
    existing = [app for app in group.consumers if previous is not None and app in previous]
    for start_id, app in enumerate(existing, start=1):
        state.start_id[app] = start_id
    state.next_id = len(existing) + 1
    for queue in group.queues:
        fifo = OrderedDict.fromkeys(existing)  # waiting in start-id order
        if queue in group.kept_owner:
            owner = group.kept_owner[queue]
            state.active[queue] = owner
            fifo.pop(owner, None)
        state.waiting[queue] = fifo
    state.recompute_derived()
    return state


def run(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
    variant: PositionVariant = "id",
    max_steps: int | None = None,
) -> ProtocolRun:
    """Run the protocol from `previous` to quiescence; the owners and what it cost."""
    return run_rounds(protocol_state(queues, consumers, previous), variant, max_steps)


def assign(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
) -> dict[ConsumerT, list[QueueT]]:
    """The active owners after the protocol settles (`id` Position variant)."""
    return run(queues, consumers, previous, "id").owners


def assign_spec_position(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
) -> dict[ConsumerT, list[QueueT]]:
    """The active owners after the protocol settles (Position exactly as the spec writes it)."""
    return run(queues, consumers, previous, "spec").owners


class Session:
    """One group's SAC protocol across successive rebalances (the registry's session hook).

    What it carries from one rebalance to the next is the active owners of the last one; each
    `rebalance` rebuilds the FIFOs and start ids from them exactly as `protocol_state` does, so a
    session step equals `run(queues, consumers, previous_owners, variant)`.
    """

    def __init__(self, variant: PositionVariant = "id") -> None:
        self.variant: PositionVariant = variant
        self.owners: dict[Any, list[Any]] | None = None

    def rebalance(self, queues: Iterable[Any], consumers: Iterable[Any]) -> ProtocolRun:
        """Apply a membership change and run the protocol to quiescence."""
        result = run(queues, consumers, self.owners, self.variant)
        self.owners = result.owners
        return result


def spec_position_session() -> Session:
    """A session with the spec's Position exactly as written."""
    return Session("spec")
