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
is ever doubly owned. A departed app's queues go to their FIFO's head at once when it cancels
or closes its connection; a crash (`Session.apply_change` with kind "crash") is noticed only
when the broker declares the connection dead, by the AMQP heartbeat: RabbitMQ's default
negotiated heartbeat is 60 s (`heartbeat` in deps/rabbit/Makefile's application environment),
and the broker checks the socket's received bytes once per heartbeat interval and closes the
connection after two checks in a row saw nothing new, so 2 to 3 intervals (120 to 180 s) after
the last data received (rabbit_common's rabbit_heartbeat.erl, `start_heartbeat_receiver`;
rabbit_reader.erl starts it with the negotiated value; rabbitmq/rabbitmq-server at commit
5b09e556da53b8473f26843a2493d8460ced8c8e). The crashed app's active queues are unread until
then, and the release rounds follow the last such detection.
Runtime complexity: O(|Q| x |A|) for the subscriptions, then per release O(|A|) (reference) or
O(log |Q| + log |A|) (kernel); a cold start costs about |Q| x |A| / 2 releases.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import math
import random
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
    "CHECKS_BEFORE_DEAD",
    "ENGINES",
    "HANDOVER_SECONDS",
    "HEARTBEAT_SECONDS",
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

HEARTBEAT_SECONDS = 60.0
"""RabbitMQ's default heartbeat timeout, the value a client that asks for none negotiates."""

CHECKS_BEFORE_DEAD = 2
"""Checks of the received bytes in a row, one per heartbeat interval, that must see nothing
new before the broker closes the connection (rabbit_heartbeat's receiver): the first check
that can count comes up to one interval after the last data, so a crash is noticed 2 to 3
intervals after it."""


def with_time(run: ProtocolRun) -> ProtocolRun:
    """`run` with its time scores (see the module docstring)."""
    return dataclasses.replace(
        run,
        seconds_to_balance=run.rounds * HANDOVER_SECONDS,
        queue_seconds_unowned=run.releases * HANDOVER_SECONDS,
        queue_seconds_doubly_owned=0.0,
    )


def _positive_seconds(value: float, name: str) -> float:
    """`value` checked as a finite, positive number of seconds (errors name it)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be seconds, not {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be finite and positive, not {value!r}")
    return float(value)


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
    way; they differ only in when, which `apply_change` adds for a crash (the heartbeat
    timeout: the module docstring says how long). An app that leaves and comes back is a new
    app: it gets a new start id and waits at the back of every FIFO.

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
        heartbeat_seconds: float = HEARTBEAT_SECONDS,
        crash_detection_seconds: float | None = None,
    ) -> None:
        self.variant, self._engine = _open_engine(variant, release, engine, seed)
        self.max_steps = max_steps
        self.heartbeat_seconds = _positive_seconds(heartbeat_seconds, "heartbeat_seconds")
        self.crash_detection_seconds = (
            None
            if crash_detection_seconds is None
            else _positive_seconds(crash_detection_seconds, "crash_detection_seconds")
        )
        self._detections = random.Random(
            seed
        )  # apart from the engine's: releases stay as they were
        self._queues = _CheckedIds("queue")
        self._consumers = _CheckedIds("consumer")
        self._owners: dict[Any, list[Any]] = {}  # the active owners after the last rebalance

    def rebalance(self, queues: Iterable[Any], consumers: Iterable[Any]) -> ProtocolRun:
        """The group is now `queues` x `consumers`: apply the change and settle (the apps gone
        cancelled or closed their connections: the broker knew at once)."""
        sorted_queues = self._queues(queues)
        sorted_consumers = self._consumers(consumers)
        self._engine.change(sorted_queues, sorted_consumers)
        bound = self.max_steps
        if bound is None:
            bound = default_step_bound(len(sorted_queues), len(sorted_consumers))
        run = with_time(self._engine.settle(self.variant, bound))
        self._owners = run.owners
        return run

    def apply_change(
        self, queues: Iterable[Any], consumers: Iterable[Any], kind: str
    ) -> ProtocolRun:
        """The ChangeAwareSession hook: `rebalance`, and for a "crash" the time the broker
        takes to declare each crashed app's connection dead (`crash_detection`), during
        which that app's active queues are read by nobody; the release rounds start after
        the last detection. Any other kind (a rolling restart's too) is a cancel or a close,
        which the broker acts on at once."""
        if not isinstance(kind, str):
            raise TypeError(f"kind must be a change kind's name, not {kind!r}")
        before = self._owners
        run = self.rebalance(queues, consumers)
        if kind != "crash":
            return run
        present = set(self._consumers.checked)
        queue_set = set(self._queues.checked)
        held_by_crashed = {
            app: sum(1 for queue in owned if queue in queue_set)
            for app, owned in sorted(before.items())
            if app not in present
        }
        if not held_by_crashed:
            return run
        noticed = {app: self.crash_detection() for app in held_by_crashed}
        last_detection = max(noticed.values())
        unread = sum(held_by_crashed[app] * seconds for app, seconds in noticed.items())
        last_hand_over = max(
            (seconds for app, seconds in noticed.items() if held_by_crashed[app]), default=0.0
        )
        releases_after = run.seconds_to_balance or 0.0
        return dataclasses.replace(
            run,
            seconds_to_balance=last_detection + releases_after if run.rounds else last_hand_over,
            queue_seconds_unowned=(run.queue_seconds_unowned or 0.0) + unread,
        )

    def crash_detection(self) -> float:
        """Seconds from an app's crash until the broker declares its connection dead:
        `crash_detection_seconds` when given, else drawn from the seed between 2 and 3
        heartbeat intervals (the app's last data at the crash, the broker's check anywhere in
        its interval after it)."""
        if self.crash_detection_seconds is not None:
            return self.crash_detection_seconds
        return self.heartbeat_seconds * (CHECKS_BEFORE_DEAD + self._detections.random())

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
