"""Apache Pulsar's Failover subscription on a partitioned topic: partition i goes to consumer
i mod n, the consumers sorted by (priority level, name), n those at the highest priority level.

Read from Pulsar's broker, class org.apache.pulsar.broker.service.
AbstractDispatcherSingleActiveConsumer, method `pickAndScheduleActiveConsumer` (apache/pulsar
at commit 00921e0768fe19a7ff89c2692b4da9ff156ee487), and its test class
PersistentDispatcherFailoverConsumerTest (testAddRemoveConsumer). Each partition of a
partitioned topic has its own dispatcher, which knows its `partitionIndex`; whenever a consumer
of the subscription joins or leaves, it sorts the consumers by priority level (a lower number
first: 0, the default, is the highest priority; the client refuses a negative one), then by
consumer name, keeps the first k, those at the highest level present, and makes consumer
`partitionIndex mod k` the partition's active one; the others wait, and take over only when
every consumer above them has gone (broker setting activeConsumerFailoverConsistentHashing off,
its default; on, a hash ring picks, which is not modelled here). Pulsar's documentation
(Messaging concepts, "Failover | Partitioned topic") says the same: the broker "sorts consumers
by priority level and lexicographical order of consumer name", then "tries to evenly assign
partitions to consumers with the highest priority level"; its examples are figures.

Here a partition's index is its position among the sorted queue ids (a topic's partitions are
numbered 0..P-1, and Pulsar only ever adds partitions, at the end), and a consumer's name is its
id, ordered as ids sort. RabbitMQ's super stream (rebalancing.strategies.super_stream) deals the
partitions the same way over the consumers in the order they joined; Pulsar's order needs no
memory, so the plan is a function of the group alone and ignores `previous`, and with every
level equal it is round_robin's plan. What the two orders cost differs: a newcomer goes to the
end of the join order, the cheapest place for it, but to its name's place in name order, which
moves every partition of the consumers after it; a consumer that leaves and comes back under its
name gets its partitions back in name order, and none of them in join order.

- `assign(queues, consumers, previous)`: every consumer at the default level 0 (name order).
- `with_priorities(levels)`: an `assign` for consumers with priority levels (consumer -> level;
  a consumer not named is at 0), so that the three-argument contract holds.
- `Session(levels=..., timers=...)`: the registry's protocol hook, in seconds. It remembers the
  active consumers to count, per rebalance, the hand-overs the broker makes (rebalancing.
  strategies.super_stream's `activate`: a partition whose active consumer, still present,
  steps down is paused), and runs each change on the broker's clock (below).

Time, read from apache/pulsar. Defaults: ServiceConfiguration (commit
9bc15bfa375a2b6e24e893c9714e48e3ed62754c) `activeConsumerFailoverDelayTimeMillis` 1000 and
`keepAliveIntervalSeconds` 30; the client's ConsumerConfigurationData (commit
79864281725f7b85ff44524335e2e3ea18fef844) `autoUpdatePartitionsIntervalSeconds` 60 (set with
ConsumerBuilder.autoUpdatePartitionsInterval). What they do:
PersistentDispatcherSingleActiveConsumer.scheduleReadOnActiveConsumer (commit
ccc2372f36d971cbdd32c1eaa795da92d25097f4): when a Failover partition's active consumer changes,
the broker stops dispatching to the old one at once (its pending read is cancelled, its flow
permits ignored) and schedules one task, the failover delay later, that rewinds the cursor to
the first unacknowledged message and dispatches to whoever is active then; a change while that
task is pending schedules nothing more. The delay is there "to prevent message duplication": the
old consumer has that long to finish and acknowledge what it was sent. PulsarHandler (commit
0123b908f0b8fa223f90e87be76679ab2b3e08d1), which ServerCnx extends with the broker's
keep-alive interval: every interval from the connection's start, if the ping it sent last is
unanswered (no command at all came since) it closes the connection, else it sends a ping; and
ServerCnx.channelInactive (commit a6ca305f211e655623aec7537fbb1e8c63f0492c) closes the
connection's consumers, so each dispatcher removes them and picks again. MultiTopicsConsumerImpl
(commit d71a6d79d252b3c218a6bd9f0637739cc335cbc4) checks its topics' partition counts every
auto-update interval from its start and subscribes to the partitions added.

The model, per change at the session's t0 (the group settled before it):

- A graceful leave (a close, a rolling restart's too) removes the consumer at t0; a join
  subscribes the newcomer to every partition at t0 (the commands' round trips are not modelled).
- A crash (`apply_change` with kind "crash") silences the consumer at t0: its partitions are
  read by nobody from then, but it stays their active consumer until the broker closes its
  connection. The first keep-alive tick after the crash (anywhere in the interval: drawn from
  the seed) sends a ping that gets no answer and the next one closes: 1 to 2 intervals after the
  crash (30 to 60 s). A process that dies with its host up has its socket closed by the kernel,
  which the broker sees at once: that is a graceful leave here.
- Queues added: a consumer that joins in the change subscribes to them at once; every other one
  at its next partition check (anywhere in its interval: drawn), so the active consumer of a new
  partition can change as they come, each change another hand-over. Queues removed vanish
  (Pulsar never removes a partition; the scenarios do, and the partitions left are numbered
  again: one whose active consumer changes with its number is handed over at t0).
- A partition whose active consumer changes is read by nobody from then until the failover
  delay's task dispatches to the consumer active then.

Scores (ProtocolRun): `seconds_to_balance`, from t0 to the last change of who is dispatched
what; `queue_seconds_unowned`, the partition-seconds with no consumer being dispatched to (a
hand-over's delay, a crashed consumer's partitions until detection and delay, new partitions
until their first subscriber and delay); `queue_seconds_paused`, its part that followed a stop
of a consumer that stays; `queue_seconds_doubly_owned` 0: a dispatcher has one active consumer
and dispatches to it alone, and the delay lets the old one finish before the new one is sent
the rewound messages (a consumer slower than the delay sees its unacknowledged messages
delivered again to the new one: processing time, which is not modelled). The counts
(`releases`, `steps`, `rounds`, `queues_paused`) compare the active consumers before and after.
Runtime complexity: O(|Q| log |Q| + |C| log |C|) per rebalance, plus O(|Q| x E) for the E
instants at which a crashed consumer is removed or a consumer subscribes to new partitions.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import random
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import Any

from rebalancing.contract import (
    AssignFunction,
    ConsumerT,
    ProtocolRun,
    QueueT,
    empty_plan,
    prepare,
    shortened_repr,
)
from rebalancing.strategies.super_stream import activate

DEFAULT_PRIORITY_LEVEL = 0
"""Pulsar's default priority level, and its highest: every consumer's unless told otherwise."""

FAILOVER_DELAY_SECONDS = 1.0
"""The broker's `activeConsumerFailoverDelayTimeMillis` (1000 ms): how long a partition whose
active consumer changed waits before it is dispatched to the new one."""

KEEP_ALIVE_INTERVAL_SECONDS = 30.0
"""The broker's `keepAliveIntervalSeconds`: the period of a connection's keep-alive check (a
ping; the connection closed at the next check if it is unanswered)."""

AUTO_UPDATE_PARTITIONS_INTERVAL_SECONDS = 60.0
"""The client's `autoUpdatePartitionsIntervalSeconds`: how often a consumer looks for partitions
added to its topic and subscribes to them."""


def active_order(sorted_consumers: list[Any], levels: Mapping[Any, int]) -> list[Any]:
    """The consumers that get partitions, in the order partitions are dealt to them: those at
    the highest priority level present (the lowest number), by name. (Pulsar sorts everyone by
    level, then name, and keeps the first k at the highest level: the same list.)"""
    if not levels:
        return sorted_consumers
    level_of = [levels.get(consumer, DEFAULT_PRIORITY_LEVEL) for consumer in sorted_consumers]
    highest = min(level_of, default=DEFAULT_PRIORITY_LEVEL)
    return [
        consumer
        for consumer, level in zip(sorted_consumers, level_of, strict=True)
        if level == highest
    ]


def assign_with_priorities(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
    *,
    levels: Mapping[Any, int],
) -> dict[ConsumerT, list[QueueT]]:
    """Sorted partition i to consumer i mod k of `active_order`; the consumers below the highest
    level present wait with no partition. `levels` as `checked_levels` returns them."""
    group = prepare(queues, consumers, previous)
    return _deal(group.queues, group.consumers, levels)


def _deal(
    sorted_queues: list[QueueT], sorted_consumers: list[ConsumerT], levels: Mapping[Any, int]
) -> dict[ConsumerT, list[QueueT]]:
    """`assign_with_priorities` of ids already checked and sorted."""
    plan: dict[ConsumerT, list[QueueT]] = empty_plan(sorted_consumers)
    active = active_order(sorted_consumers, levels)
    for position, consumer in enumerate(active):
        plan[consumer].extend(sorted_queues[position :: len(active)])
    return plan


def assign(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
) -> dict[ConsumerT, list[QueueT]]:
    """Every consumer at the default level: sorted partition i to sorted consumer i mod n."""
    return assign_with_priorities(queues, consumers, previous, levels={})


def checked_levels(levels: Mapping[Any, int]) -> dict[Any, int]:
    """`levels` as a dict of its own, each level an integer of 0 or more (TypeError or ValueError
    naming the consumer otherwise, and TypeError for anything but a mapping)."""
    if not isinstance(levels, Mapping):
        raise TypeError(
            f"priority levels must be a mapping of consumer -> level, not {type(levels).__name__}"
        )
    checked: dict[Any, int] = {}
    for consumer, level in levels.items():
        if isinstance(level, bool) or not isinstance(level, int):
            raise TypeError(
                f"the priority level of consumer {shortened_repr(consumer)} must be an integer, "
                f"not {shortened_repr(level)}"
            )
        if level < 0:
            raise ValueError(
                f"the priority level of consumer {shortened_repr(consumer)} must be 0 or more "
                f"(0 is the highest), not {level}"
            )
        checked[consumer] = int(level)
    return checked


def with_priorities(levels: Mapping[Any, int]) -> AssignFunction:
    """An `assign(queues, consumers, previous)` for a group whose consumers have these Pulsar
    priority levels (consumer -> level, 0 the highest; a consumer not named is at 0): only the
    consumers at the highest level present get partitions. The levels are checked and copied
    now; the function pickles (a partial of a module function), as a strategy shipped to
    another process must."""
    return functools.partial(assign_with_priorities, levels=checked_levels(levels))


@dataclasses.dataclass(frozen=True, kw_only=True)
class FailoverTimers:
    """Pulsar's timers of a Failover subscription's hand-overs, in seconds (the module docstring
    cites each default): the broker's failover delay (0 or more: Pulsar dispatches at once
    when it is not positive) and keep-alive interval, the client's partition auto-update
    interval."""

    failover_delay_seconds: float = FAILOVER_DELAY_SECONDS
    keep_alive_interval_seconds: float = KEEP_ALIVE_INTERVAL_SECONDS
    auto_update_partitions_interval_seconds: float = AUTO_UPDATE_PARTITIONS_INTERVAL_SECONDS

    def __post_init__(self) -> None:
        for timer in dataclasses.fields(self):
            zero_allowed = timer.name == "failover_delay_seconds"
            _seconds(getattr(self, timer.name), timer.name, zero_allowed=zero_allowed)


def _seconds(value: Any, name: str, *, zero_allowed: bool = False) -> float:
    """`value` checked as a finite number of seconds, positive (or 0 when `zero_allowed`)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number of seconds, not {shortened_repr(value)}")
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero_allowed):
        least = "0 or more" if zero_allowed else "positive"
        raise ValueError(f"{name} must be finite and {least}, not {value!r}")
    return float(value)


Change = tuple[float, Any, bool]
"""One change of who a partition's dispatcher sends messages to: (seconds after the change's
t0, the consumer it dispatches to from then, None for nobody, whether that nobody followed the
stop of a consumer that stays in the group)."""


class Session:
    """One Failover subscription across rebalances, in seconds: the active consumer of each
    partition, the group, and the broker's clock for each change (the module docstring)."""

    def __init__(
        self,
        seed: int = 0,
        levels: Mapping[Any, int] | None = None,
        timers: FailoverTimers | None = None,
        crash_detection_seconds: float | None = None,
        partition_check_seconds: float | None = None,
    ) -> None:
        self.levels = checked_levels(levels or {})
        if timers is not None and not isinstance(timers, FailoverTimers):
            raise TypeError(f"timers must be FailoverTimers, not {shortened_repr(timers)}")
        self.timers = timers or FailoverTimers()
        self.crash_detection_seconds = (
            None
            if crash_detection_seconds is None
            else _seconds(crash_detection_seconds, "crash_detection_seconds")
        )
        self.partition_check_seconds = (
            None
            if partition_check_seconds is None
            else _seconds(partition_check_seconds, "partition_check_seconds")
        )
        self._draws = random.Random(seed)  # keep-alive and partition-check phases
        self.owner: dict[Any, Any] = {}  # partition -> its active consumer
        self.members: list[Any] = []  # the group's consumers, sorted
        # each partition whose dispatching changed in the last rebalance -> its changes in time
        # order (Change); a partition added starts with (0.0, None, False)
        self.timeline: dict[Any, tuple[Change, ...]] = {}

    def rebalance(self, queues: Iterable[Any], consumers: Iterable[Any]) -> ProtocolRun:
        """The group is now `queues` x `consumers`; the consumers gone closed their connections
        (the broker knew at once)."""
        return self._change(queues, consumers, crashed=False)

    def apply_change(
        self, queues: Iterable[Any], consumers: Iterable[Any], kind: str
    ) -> ProtocolRun:
        """The ChangeAwareSession hook: `rebalance`, but after a "crash" the consumers gone
        are removed only once the keep-alive closes their connections (`crash_detection`).
        Any other kind (a rolling restart's too) is a close, which the broker sees at once."""
        if not isinstance(kind, str):
            raise TypeError(f"kind must be a change kind's name, not {kind!r}")
        return self._change(queues, consumers, crashed=kind == "crash")

    def crash_detection(self) -> float:
        """Seconds from a consumer's crash until the broker closes its connection:
        `crash_detection_seconds` when given, else 1 to 2 keep-alive intervals, drawn (the
        unanswered ping goes out at the first check after the crash, anywhere in its
        interval; the next check closes)."""
        if self.crash_detection_seconds is not None:
            return self.crash_detection_seconds
        return self.timers.keep_alive_interval_seconds * (1.0 + self._draws.random())

    def partition_check(self) -> float:
        """Seconds from partitions being added until a consumer already subscribed checks the
        topic and subscribes to them: `partition_check_seconds` when given, else anywhere in
        (0, interval], drawn."""
        if self.partition_check_seconds is not None:
            return self.partition_check_seconds
        interval = self.timers.auto_update_partitions_interval_seconds
        return interval * (1.0 - self._draws.random())

    def _change(
        self, queues: Iterable[Any], consumers: Iterable[Any], crashed: bool
    ) -> ProtocolRun:
        """Apply the change: the plan and its counts (what every partition's dispatcher picks
        once the change is over), then the dispatchers' clock (`crashed`: the consumers gone
        crashed)."""
        group = prepare(queues, consumers, None)
        plan = _deal(group.queues, group.consumers, self.levels)
        run, owner = activate(plan, self.owner, plan.keys())  # every consumer is a key
        staying = set(group.consumers)
        known = set(self.members)
        # each crashed consumer -> when the broker removes it; each consumer that was there ->
        # when it subscribes to the partitions added (drawn in sorted order, crashes first)
        removed_at = {
            member: self.crash_detection()
            for member in self.members
            if crashed and member not in staying
        }
        added = any(queue not in self.owner for queue in group.queues)
        subscribed_at = {
            member: self.partition_check()
            for member in group.consumers
            if added and member in known
        }
        joined = [member for member in group.consumers if member not in known]
        kept_orders = self._orders(group.consumers, removed_at, leaving=True)
        added_orders = self._orders(joined, subscribed_at, leaving=False)
        timeline: dict[Any, tuple[Change, ...]] = {}
        delay = self.timers.failover_delay_seconds
        # one instant and a consumer at it (the usual change): a partition whose pick there is
        # its active consumer changes nothing, found with no call (and no garbage to collect)
        at_once = kept_orders[0][1] if len(kept_orders) == 1 else []
        for index, queue in enumerate(group.queues):
            active = self.owner.get(queue)
            if active is None:  # added (or unread: the group had no consumer)
                changes = _dispatch(index, None, added_orders, delay, staying, added=True)
            elif at_once and active not in removed_at:  # handed over at t0 or not at all
                chosen = at_once[index % len(at_once)]
                if chosen != active:
                    timeline[queue] = ((0.0, None, active in staying), (delay, chosen, False))
                continue
            else:
                changes = _dispatch(index, active, kept_orders, delay, staying, removed_at.keys())
            if changes:
                timeline[queue] = changes
        self.owner, self.members, self.timeline = owner, group.consumers, timeline
        seconds, unowned, paused = _time_scores(timeline)
        return dataclasses.replace(
            run,
            seconds_to_balance=seconds,
            queue_seconds_unowned=unowned,
            queue_seconds_doubly_owned=0.0,  # one active consumer per partition
            queue_seconds_paused=paused,
        )

    def _orders(
        self, always: list[Any], timed: Mapping[Any, float], *, leaving: bool
    ) -> list[tuple[float, list[Any]]]:
        """At t0 and at each instant of `timed`, the consumers a dispatcher deals to
        (`active_order`) when it lists `always` (sorted) and those of `timed` that have not left yet
        (`leaving`) or have subscribed already (not `leaving`)."""
        if not timed:  # `always` is sorted already
            return [(0.0, active_order(always, self.levels))]
        orders = []
        for instant in sorted({0.0, *timed.values()}):
            listed = [*always]
            listed += [
                member
                for member, at in timed.items()
                if (at > instant if leaving else at <= instant)
            ]
            orders.append((instant, active_order(sorted(listed), self.levels)))
        return orders


def _dispatch(
    index: int,
    active: Any,
    orders: list[tuple[float, list[Any]]],
    delay: float,
    staying: AbstractSet[Any],
    silenced: AbstractSet[Any] = frozenset(),
    *,
    added: bool = False,
) -> tuple[Change, ...] | None:
    """The changes of dispatching of the partition at `index`, whose active consumer at t0 is
    `active` (None for one `added`, unread from t0), as the dispatcher picks at each instant of
    `orders`: a new active consumer is dispatched to `delay` after the first change of a quiet
    partition. A consumer in `silenced` (crashed) reads nothing from t0. None: no change."""
    changes: list[Change] | None = [(0.0, None, False)] if added else None
    reader = active
    if active is not None and active in silenced:
        reader = None
        changes = [(0.0, None, False)]
    pending: float | None = None  # when the delay's task dispatches
    for instant, order in orders:
        if pending is not None and pending < instant:  # the task ran before this instant
            if active is not None:
                reader = active
                changes = changes or []
                changes.append((pending, reader, False))
            pending = None
        chosen = order[index % len(order)] if order else None
        if chosen == active:
            continue
        active = chosen
        if reader is not None:
            changes = changes or []
            changes.append((instant, None, reader in staying))
            reader = None
        if chosen is not None and pending is None:
            pending = instant + delay
    if pending is not None and active is not None:
        changes = changes or []
        changes.append((pending, active, False))
    return None if changes is None else tuple(changes)


def _time_scores(timeline: Mapping[Any, tuple[Change, ...]]) -> tuple[float, float, float]:
    """The seconds to balance, the partition-seconds unowned and paused of a rebalance whose
    partitions changed as `timeline` says: it is over at the last change; a partition with
    nobody dispatched to counts from its stop (or t0, for one added) to its next change, or to
    the end."""
    end = max((changes[-1][0] for changes in timeline.values()), default=0.0)
    unowned = paused = 0.0
    for changes in timeline.values():
        last = len(changes) - 1
        for position, (start, reader, stopped_by_stayer) in enumerate(changes):
            if reader is None:
                unread = (changes[position + 1][0] if position < last else end) - start
                unowned += unread
                if stopped_by_stayer:
                    paused += unread
    return end, unowned, paused
