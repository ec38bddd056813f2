"""RabbitMQ single active consumer with leaderless release (Jack
Vanlightly's TLA+ spec, restated in specs/sac_leaderless.tla): a protocol, simulated.

Every app subscribes to every queue; per queue the broker keeps one active consumer and a FIFO
of waiting subscribers; an app holding more active queues than its ideal number releases one
(cancel, then subscribe again at the back of that queue's FIFO) and the broker makes the FIFO's
head active. The round schedule of rebalancing.sac.schedulers runs it to quiescence.

- `Session` carries one group's whole protocol state across rebalances: the FIFOs in the order
  the protocol built them, the active owners, the start ids in the order apps joined and the id
  counter (what the scoring core uses, one session per scenario).
- `assign(queues, consumers, previous)` has only the owners of `previous`, so it reconstructs:
  the apps of `previous` still present get start ids in sorted id order and wait on every queue
  they are not active on, in that order; they keep their active queues; newcomers start after
  them in sorted id order. `run` is the same with the protocol's cost.

Parameters: `variant` ("id": ties of Position go by start id, as the spec's comment intends;
"spec": Position exactly as written, a tied app counts as ahead); `release`, which active queue
an over-ideal app releases (the spec allows any): "highest" (the default), "lowest", "newest"
(the one it became active on last) or "random" (a SplitMix64 stream from `seed`); `engine`:
"kernel" (rebalancing.sac.kernel, compiled with numba; the default when numba is installed) or
"reference" (rebalancing.sac.model, every action through the spec's guards; the definition).
Time (ProtocolRun's time scores): a release hands its queue over in HANDOVER_SECONDS (2 ms, within
the 1.3-2.8 ms measured on RabbitMQ), during which no app reads it; the apps release at once
within a round, so the group is balanced after `rounds` hand-overs, and the queue-seconds
unowned are `releases` hand-overs. The broker makes one consumer active at a time, so no queue
is ever doubly owned. A departed app's queues go to their FIFO's head at once (a crash's
heartbeat timeout is outside a rebalance, as `Session` says).
Runtime complexity: O(|Q| x |A|) for the subscriptions, then per release O(|A|) (reference) or
O(log |Q| + log |A|) (kernel); a cold start costs about |Q| x |A| / 2 releases.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
from collections.abc import Iterable, Mapping
from typing import Any, Literal, Protocol

from rebalancing.contract import (
    ConsumerT,
    ProtocolRun,
    QueueT,
    SortedIds,
    prepare,
    sorted_distinct_ids,
)
from rebalancing.sac.model import POSITION_VARIANTS, PositionVariant, SacState
from rebalancing.sac.schedulers import RELEASE_POLICIES, ReleasePolicy, default_step_bound

__all__ = [
    "ENGINES",
    "HANDOVER_SECONDS",
    "RELEASE_POLICIES",
    "Engine",
    "Session",
    "assign",
    "assign_newest",
    "assign_random",
    "assign_spec_position",
    "default_engine",
    "protocol_state",
    "run",
    "with_time",
]
from rebalancing.sac.sessions import ReferenceEngine

HANDOVER_SECONDS = 0.002
"""Seconds a released queue has no active consumer: RabbitMQ's hand-over, measured at 1.3-2.8
ms on a RabbitMQ broker (the figure issue 34 quotes)."""


def with_time(run: ProtocolRun) -> ProtocolRun:
    """`run` with its time scores (see the module docstring)."""
    return dataclasses.replace(
        run,
        seconds_to_balance=run.rounds * HANDOVER_SECONDS,
        queue_seconds_unowned=run.releases * HANDOVER_SECONDS,
        queue_seconds_doubly_owned=0.0,
    )


Engine = Literal["kernel", "reference"]
ENGINES: tuple[Engine, ...] = ("kernel", "reference")


class _Engine(Protocol):
    def change(self, queues: list[Any], apps: list[Any]) -> None: ...

    def load_owners(
        self, queues: list[Any], apps: list[Any], owner: dict[Any, Any], existing: list[Any]
    ) -> None: ...

    def settle(self, variant: PositionVariant, bound: int) -> ProtocolRun: ...

    def snapshot(self) -> tuple[Any, ...]: ...


@functools.cache
def default_engine() -> Engine:
    """ "kernel" when numba can be imported, else "reference" (found without importing it;
    asked once per process: every session and every scored scenario asks)."""
    return "kernel" if importlib.util.find_spec("numba") is not None else "reference"


def _open_engine(
    variant: str, release: str, engine: Engine | None, seed: int
) -> tuple[PositionVariant, _Engine]:
    if variant not in POSITION_VARIANTS:
        raise ValueError(f"unknown Position variant {variant!r}; known: {POSITION_VARIANTS}")
    if release not in RELEASE_POLICIES:
        raise ValueError(f"unknown release policy {release!r}; known: {RELEASE_POLICIES}")
    chosen = default_engine() if engine is None else engine
    if chosen not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; known: {ENGINES}")
    checked_variant: PositionVariant = variant  # checked above
    policy: ReleasePolicy = release
    if chosen == "kernel":
        from rebalancing.sac.kernel import KernelEngine  # numba: only when asked for

        return checked_variant, KernelEngine(policy, seed)
    return checked_variant, ReferenceEngine(policy, seed)


class _CheckedIds:
    """The ids of one kind a session was last given, and their sorted, checked list.

    A session sees the whole group at every rebalance, and most changes leave the queues (or
    the consumers) as they were: ids equal element by element, in the same order, to the last
    ones given are not checked and sorted again (`==` on tuples skips identical objects at C
    speed; the list returned then holds the objects first given). Anything else goes through
    `contract.sorted_distinct_ids`, which raises for unusable ids; ids that raised are not
    remembered.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.given: tuple[Any, ...] = ()
        self.checked: list[Any] = []

    def __call__(self, ids: Iterable[Any]) -> list[Any]:
        if type(ids) is SortedIds:  # the scoring core's: a tuple, checked already
            given: tuple[Any, ...] = ids
        elif isinstance(ids, str | bytes) or not isinstance(ids, Iterable):
            return sorted_distinct_ids(ids, self.kind)  # raises the contract's TypeError
        else:  # a tuple kept as it is: its type may tell `sorted_distinct_ids` it is checked
            given = ids if isinstance(ids, tuple) else tuple(ids)
        try:
            unchanged = given is self.given or given == self.given
        except (TypeError, ValueError):  # an id whose `==` is no bool (an array): checked below
            unchanged = False
        if not unchanged:
            self.checked = sorted_distinct_ids(given, self.kind)
            self.given = given
        return self.checked


class Session:
    """One group's SAC protocol across successive rebalances (the registry's session hook).

    `rebalance(queues, consumers)` applies a membership change as the protocol sees it: departed
    apps leave every FIFO and lose their active queues; new apps Start (in sorted id order among
    themselves) and Subscribe to every queue; new queues get every started app subscribed in
    start-id order; removed queues vanish with their FIFO; then the round schedule runs to
    quiescence. A graceful leave and a crash are the same change here: RabbitMQ removes a
    consumer that cancels, closes its channel or loses its connection from every queue the same
    way; they differ only in when (a crash waits for the heartbeat timeout), which a rebalance
    does not model. An app that leaves and comes back is a new app: it gets a new start id and
    waits at the back of every FIFO.

    The release policy defaults to "highest", the reading the spec's explorer and the earlier
    figures use; measured on three typical groups (docs/choosing-a-strategy.md, made by
    benchmarks/choosing_a_strategy.py on 2026-11-26), "newest" dominates it: it pauses 16.6
    queues per rebalance against 31.1 (64 queues, rolling restarts), 212 against 653 (1,024
    queues, autoscaling) and 34.5 against 57.4 (256 queues, crashes), with fewer releases and
    rounds. Pass release="newest" for a real group.
    """

    def __init__(
        self,
        variant: str = "id",
        release: str = "highest",
        engine: Engine | None = None,
        seed: int = 0,
        max_steps: int | None = None,
    ) -> None:
        self.variant, self._engine = _open_engine(variant, release, engine, seed)
        self.max_steps = max_steps
        self._queues = _CheckedIds("queue")
        self._consumers = _CheckedIds("consumer")

    def rebalance(self, queues: Iterable[Any], consumers: Iterable[Any]) -> ProtocolRun:
        """The group is now `queues` x `consumers`: apply the change and settle."""
        sorted_queues = self._queues(queues)
        sorted_consumers = self._consumers(consumers)
        self._engine.change(sorted_queues, sorted_consumers)
        bound = self.max_steps
        if bound is None:
            bound = default_step_bound(len(sorted_queues), len(sorted_consumers))
        return with_time(self._engine.settle(self.variant, bound))

    def snapshot(self) -> tuple[Any, ...]:
        """(queues, apps, each queue's FIFO, its active app or None, start ids, next id): the
        protocol state after the last rebalance, the same from either engine."""
        return self._engine.snapshot()


def run(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
    variant: str = "id",
    max_steps: int | None = None,
    release: str = "highest",
    engine: Engine | None = None,
    seed: int = 0,
) -> ProtocolRun:
    """Reconstruct the protocol state from `previous` (see the module docstring), run it to
    quiescence; the owners and what it cost."""
    checked_variant, opened = _open_engine(variant, release, engine, seed)
    group = prepare(queues, consumers, previous)
    existing = [app for app in group.consumers if previous is not None and app in previous]
    opened.load_owners(group.queues, group.consumers, group.kept_owner, existing)
    bound = default_step_bound(len(group.queues), len(group.consumers))
    return with_time(opened.settle(checked_variant, bound if max_steps is None else max_steps))


def protocol_state(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None,
) -> SacState:
    """The reference model's state that `run` reconstructs from `previous`, before it runs."""
    group = prepare(queues, consumers, previous)
    existing = [app for app in group.consumers if previous is not None and app in previous]
    engine = ReferenceEngine()
    engine.load_owners(group.queues, group.consumers, group.kept_owner, existing)
    return engine.state


def assign(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
) -> dict[ConsumerT, list[QueueT]]:
    """The active owners after the protocol settles (`id` Position variant, `highest`)."""
    return run(queues, consumers, previous).owners


def assign_newest(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
) -> dict[ConsumerT, list[QueueT]]:
    """The active owners after the protocol settles, each release giving up the queue the app
    became active on last (in a reconstruction: its highest kept queue, then promotion order)."""
    return run(queues, consumers, previous, release="newest").owners


def assign_random(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
) -> dict[ConsumerT, list[QueueT]]:
    """The active owners after the protocol settles, each release giving up a random active
    queue (seed 0: a plain call has no scenario to draw a seed from, and must be deterministic)."""
    return run(queues, consumers, previous, release="random").owners


def assign_spec_position(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
) -> dict[ConsumerT, list[QueueT]]:
    """The active owners after the protocol settles (Position exactly as the spec writes it)."""
    return run(queues, consumers, previous, "spec").owners
