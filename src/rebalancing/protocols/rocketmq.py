"""RocketMQ's consumer-group rebalancing as a session in seconds: client-side (every client
computes its own queues from the membership it sees when it runs) and broker-side (each client
asks the broker for its queues when it runs), over any assign function of the contract.

Read from apache/rocketmq at commit 8fc57f1468d182eea11c01e089c0250d647dc5f3 (develop of
2025-09-19, 5.3.x): the client's RebalanceService (`rocketmq.client.rebalance.waitInterval`,
20000 ms, and `rocketmq.client.rebalance.minInterval`, 1000 ms), ClientRemotingProcessor
(`notifyConsumerIdsChanged` wakes the RebalanceService at once), RebalanceImpl
(`updateProcessQueueTableInRebalance`: a dropped queue stops at once, a new one gets its first
pull request 500 ms later), DefaultMQPushConsumerImpl (`start`: heartbeat to every broker,
then `rebalanceImmediately`; `shutdown`: unregister, then drop every queue) and ClientConfig
(`heartbeatBrokerInterval` and `pollNameServerInterval`, 30000 ms each); the broker's
ConsumerManager (`registerConsumer` and `unregisterConsumer` fire a CHANGE event,
DefaultConsumerIdsChangeListener sends NOTIFY_CONSUMER_IDS_CHANGED to every channel of the
group at once with `realTimeNotifyConsumerChange`, its default; `scanNotActiveChannel` removes
a channel whose last heartbeat is older than BrokerConfig `channelExpiredTimeout`, 120000 ms,
and fires no CHANGE event), ClientHousekeepingService (that scan every 10 s; a closed or idle
channel goes through `doChannelCloseEvent`, which does notify), NettyServerConfig
(`serverChannelMaxIdleTimeSeconds` 120: an all-idle channel is closed) and
QueryAssignmentProcessor (the broker-side plan, computed on the query's request path).

The model, per change at the session's clock t0 (the end of the previous rebalance):

- A client's RebalanceService runs every `waitInterval` after its last run, and at once when
  woken (a broker's notification, or its own start), but never within `minInterval` of its last
  run (a client constructed at t0 counts that as its last run, so its first rebalance is at
  t0 + 1 s). Each run reads the consumer ids the broker lists at that moment and the queues the
  client knows, runs the assign function on them and keeps its own part: queues it drops stop
  being read at once, queues it takes are read from their first pull, 500 ms later.
- A join registers at t0 and a graceful leave (a rolling restart's too: a shutdown
  unregisters) unregisters at t0; either way the broker notifies every listed client, which
  runs `notify_delay` later (the one-way notification and the client's thread waking: an
  assumption of this model, 10 ms by default, not a measured figure). The leaver's queues
  stop at t0.
- A crash stops the client's reading at t0 and its heartbeats with it. The broker removes it
  at the first channel scan (every 10 s) that finds its last heartbeat older than the
  channel-expiry timeout, or when the channel has been idle `serverChannelMaxIdleTimeSeconds`
  (counted from the crash: a consumer's pulls keep the channel busy until then), whichever
  comes first. Removed by the idle close, the broker notifies the group; removed by the scan,
  it does not (at the commit read), so the others see the crash at their next periodic run.
  One broker is modelled: with several, each client asks one of them for the consumer ids, and
  brokers that notice a crash at different scans give different lists meanwhile (what
  rebalancing.evaluation.scenarios.views draws as stale views).
- Queues added or removed: a client learns the topic's queues at its next name-server poll
  (every `pollNameServerInterval`) and uses them from its next run; the broker-side session's
  broker refreshes its view every 30 s (BrokerConfig `loadBalancePollNameServerInterval`).
- Broker-side (`broker_session`): the same runs, but a run queries the broker, which computes
  the plan from its own consumer list and queue view (RocketMQ's QueryAssignmentProcessor).
  RocketMQ computes it anew for each query with no previous plan; here the broker keeps the
  last plan it made and passes it as `previous` (what makes sticky strategies possible there:
  this project's broker-side mode, not RocketMQ's own, which offers only its averagely and
  by-circle strategies). Each query waits `plan_seconds` for the plan, computed on the request
  path (0 by default; pass an assignor's measured time): every client's run applies that
  much later, and RocketMQ pays it once per client per run, |C| plans per round.

`phases` says where a change falls in each client's cycles: "random" (the default): each
client's next periodic run, next heartbeat and next name-server poll fall anywhere in their
periods after the change, the broker's channel scan too, and each notification arrives up to
`notify_delay` late, all drawn from the seed per client and change in sorted client order;
"kept": each client keeps the grid of its own timers (periodic runs every `waitInterval` from
its last run, heartbeats and polls every 30 s from its start, the scan every 10 s from the
session's 0) and every notification takes exactly `notify_delay` (the worked timelines).

Scores (ProtocolRun, ownership_ledger): seconds to balance (to the last change of who reads
what: the first pull after the last run that changed something), queue-seconds unowned (a
queue dropped by one client and not yet read by its new owner, a crashed client's queues until
taken, new queues), doubly owned (a queue taken before its old owner drops it), paused (the
unowned time after a drop by a client that stays); `releases` the queues dropped by clients
that stay, `steps` the queues taken, `rounds` the most runs of one client that changed its
queues. The group is quiet once every live client has run on the final view (the final
consumer list and every queue): no run can change anything after that.
Runtime complexity: per run, the assign function's cost (cached per view) plus O(|Q|).
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import Any, Literal

from rebalancing.contract import AssignFunction, ProtocolRun, sorted_distinct_ids
from rebalancing.protocols.kafka_common import Departures, checked_seconds, planned
from rebalancing.protocols.ownership_ledger import QUIET, OwnershipLedger

RebalancePhases = Literal["random", "kept"]
Mode = Literal["client", "broker"]

REBALANCE_WAIT_INTERVAL_MS = 20_000
"""RebalanceService `rocketmq.client.rebalance.waitInterval`: the period of a client's runs."""

REBALANCE_MIN_INTERVAL_MS = 1_000
"""RebalanceService `rocketmq.client.rebalance.minInterval`: the least time between two runs."""

FIRST_PULL_DELAY_MS = 500
"""RebalanceImpl: a queue a run takes gets its first pull request this much later."""

HEARTBEAT_BROKER_INTERVAL_MS = 30_000
"""ClientConfig `heartbeatBrokerInterval`."""

POLL_NAME_SERVER_INTERVAL_MS = 30_000
"""ClientConfig `pollNameServerInterval`: how often a client reads the topic's queues."""

CHANNEL_EXPIRED_TIMEOUT_MS = 120_000
"""BrokerConfig `channelExpiredTimeout`: a channel whose last heartbeat is older is removed."""

CHANNEL_SCAN_INTERVAL_MS = 10_000
"""ClientHousekeepingService: the period of the broker's scan for expired channels."""

SERVER_CHANNEL_MAX_IDLE_MS = 120_000
"""NettyServerConfig `serverChannelMaxIdleTimeSeconds`: an all-idle channel is closed."""

BROKER_ROUTE_POLL_INTERVAL_MS = 30_000
"""BrokerConfig `loadBalancePollNameServerInterval`: the broker's own refresh of the queues."""

NOTIFY_DELAY_MS = 10
"""This model's assumption for a notification's way to a client and its thread waking."""


@dataclass(frozen=True, kw_only=True)
class RocketMQTimers:
    """RocketMQ's timers (the module docstring cites each), in milliseconds as RocketMQ names
    them; `notify_delay_ms` is the model's own."""

    rebalance_wait_interval_ms: int = REBALANCE_WAIT_INTERVAL_MS
    rebalance_min_interval_ms: int = REBALANCE_MIN_INTERVAL_MS
    first_pull_delay_ms: int = FIRST_PULL_DELAY_MS
    heartbeat_broker_interval_ms: int = HEARTBEAT_BROKER_INTERVAL_MS
    poll_name_server_interval_ms: int = POLL_NAME_SERVER_INTERVAL_MS
    channel_expired_timeout_ms: int = CHANNEL_EXPIRED_TIMEOUT_MS
    channel_scan_interval_ms: int = CHANNEL_SCAN_INTERVAL_MS
    server_channel_max_idle_ms: int = SERVER_CHANNEL_MAX_IDLE_MS
    broker_route_poll_interval_ms: int = BROKER_ROUTE_POLL_INTERVAL_MS
    notify_delay_ms: int = NOTIFY_DELAY_MS

    def __post_init__(self) -> None:
        for timer in fields(self):
            value = getattr(self, timer.name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{timer.name} must be an int of milliseconds, not {value!r}")
            if value < 0 or (value == 0 and timer.name != "notify_delay_ms"):
                raise ValueError(f"{timer.name} must be positive, not {value!r}")
        if self.first_pull_delay_ms >= self.rebalance_min_interval_ms:
            raise ValueError(
                f"first_pull_delay_ms ({self.first_pull_delay_ms}) must be below "
                f"rebalance_min_interval_ms ({self.rebalance_min_interval_ms}): a queue taken "
                "is read before the client's next run can drop it"
            )
        if self.rebalance_min_interval_ms > self.rebalance_wait_interval_ms:
            raise ValueError(
                f"rebalance_min_interval_ms ({self.rebalance_min_interval_ms}) must not exceed "
                f"rebalance_wait_interval_ms ({self.rebalance_wait_interval_ms})"
            )

    def seconds(self, name: str) -> float:
        """The timer `name` (a field's name without `_ms`) in seconds."""
        milliseconds: int = getattr(self, f"{name}_ms")
        return milliseconds / 1000


_REMOVAL, _ROUTE, _RUN = 0, 1, 2
"""Event priorities at one instant: the broker's list changes first, then what a client (or
the broker) learns of the queues, then the clients' runs, which read both."""


class _Client:
    """One consumer client: the queues in its process-queue table, its timers and its view of
    the topic's queues."""

    __slots__ = ("changing_runs", "heartbeat_grid", "known_queues", "last_run", "next_run", "owned")

    def __init__(self, started: float, queues: tuple[Any, ...]) -> None:
        self.owned: set[Any] = set()
        self.last_run = started  # RebalanceService's lastRebalanceTimestamp: its construction
        self.next_run = math.inf
        self.heartbeat_grid = started  # heartbeats and name-server polls every 30 s from here
        self.known_queues = queues
        self.changing_runs = 0  # runs of this rebalance that changed its queues


class RocketMQSession:
    """One RocketMQ consumer group across rebalances (the module docstring says how).

    `rebalance(queues, consumers)`: the StrategySession hook, departures as `departures` says;
    `apply_change(queues, consumers, kind)`: the ChangeAwareSession hook ("crash": the clients
    gone crashed; any other kind, a rolling restart's too, shut down cleanly);
    `change(queues, consumers, crashed=...)`: the same with the crashed clients named.
    """

    def __init__(
        self,
        assignor: AssignFunction,
        *,
        mode: Mode = "client",
        timers: RocketMQTimers | None = None,
        seed: int = 0,
        departures: Departures = "graceful",
        phases: RebalancePhases = "random",
        plan_seconds: float = 0.0,
        max_runs_per_client: int = 64,
    ) -> None:
        if not callable(assignor):
            raise TypeError(f"assignor must be an assign function, not {assignor!r}")
        if mode not in ("client", "broker"):
            raise ValueError(f"unknown mode {mode!r}; known: client, broker")
        if departures not in ("graceful", "crash"):
            raise ValueError(f"unknown departures {departures!r}; known: graceful, crash")
        if phases not in ("random", "kept"):
            raise ValueError(f"unknown phases {phases!r}; known: random, kept")
        plan_seconds = checked_seconds("plan_seconds", plan_seconds)
        if plan_seconds > 0 and mode == "client":
            raise ValueError("plan_seconds is the broker's time on the request path: mode broker")
        if (
            isinstance(max_runs_per_client, bool)
            or not isinstance(max_runs_per_client, int)
            or max_runs_per_client < 1
        ):
            raise ValueError(
                f"max_runs_per_client must be an int >= 1, not {max_runs_per_client!r}"
            )
        self.timers = timers if timers is not None else RocketMQTimers()
        if not isinstance(self.timers, RocketMQTimers):
            raise TypeError(f"timers must be RocketMQTimers, not {timers!r}")
        self.assignor = assignor
        self.mode: Mode = mode
        self.rng = random.Random(seed)
        self.departures: Departures = departures
        self.phases: RebalancePhases = phases
        self.plan_seconds = plan_seconds
        self.max_runs_per_client = max_runs_per_client
        self.now = 0.0
        self.queues: list[Any] = []
        self.clients: dict[Any, _Client] = {}
        self.listed: list[Any] = []  # the consumer ids the broker lists, sorted
        self.broker_queues: tuple[Any, ...] = ()  # the broker's view, sorted (broker mode)
        self._broker_plan: dict[Any, list[Any]] = {}  # the last plan the broker made
        self._plans: dict[tuple[tuple[Any, ...], tuple[Any, ...]], dict[Any, set[Any]]] = {}
        self._quiet = False
        self._events: list[tuple[float, int, int, Any]] = []
        self._sequence = itertools.count()
        self._ledger = OwnershipLedger(0.0, {})

    # --- the hooks -------------------------------------------------------------------------

    def rebalance(self, queues: Iterable[Any], consumers: Iterable[Any]) -> ProtocolRun:
        """The group is now `queues` x `consumers`; the clients gone left as `departures`."""
        return self.change(queues, consumers)

    def apply_change(
        self, queues: Iterable[Any], consumers: Iterable[Any], kind: str
    ) -> ProtocolRun:
        """The group is now `queues` x `consumers` after a change of `kind`: "crash" crashes
        the clients gone; any other kind shuts them down cleanly."""
        if not isinstance(kind, str):
            raise TypeError(f"kind must be a change kind's name, not {kind!r}")
        consumer_list = sorted_distinct_ids(consumers, "consumer")
        if kind != "crash":
            return self.change(queues, consumer_list, crashed=(), graceful=True)
        remaining = set(consumer_list)
        gone = [name for name in self.clients if name not in remaining]
        return self.change(queues, consumer_list, crashed=gone)

    def most_consumers(self) -> int:
        """The most clients that read one queue at once in the last rebalance."""
        return self._ledger.finish(self.now).most_consumers

    # --- the session -----------------------------------------------------------------------

    def change(
        self,
        queues: Iterable[Any],
        consumers: Iterable[Any],
        *,
        crashed: Iterable[Any] = (),
        graceful: bool = False,
    ) -> ProtocolRun:
        """The group is now `queues` x `consumers` as of the session's clock; the clients of
        `crashed` (gone from `consumers`) crashed, the others gone left as `departures` says
        (`graceful`: they all shut down cleanly whatever it says). Runs until quiet."""
        sorted_queues = sorted_distinct_ids(queues, "queue")
        sorted_consumers = sorted_distinct_ids(consumers, "consumer")
        present = set(sorted_consumers)
        crashed_clients = set(crashed)
        for name in crashed_clients:
            if name not in self.clients or name in present:
                raise ValueError(f"crashed client {name!r} is not a client that left")
        if (
            self._quiet
            and sorted_queues == self.queues
            and sorted_consumers == sorted(self.clients)
        ):
            return QUIET.run(self._owners(), releases=0, steps=0, rounds=0, converged=True)
        start = self.now
        final_queues = frozenset(sorted_queues)
        queues_changed = final_queues != frozenset(self.queues)
        self.queues = sorted_queues
        for client in self.clients.values():
            client.owned &= final_queues
        self._ledger = ledger = OwnershipLedger(start, self._reading(sorted_queues))
        self._events = []
        staying = [name for name in sorted(self.clients) if name in present]
        self._schedule_timers(start, staying, queues_changed)
        self._depart(start, sorted_consumers, crashed_clients, graceful)
        joined = [name for name in sorted_consumers if name not in self.clients]
        least = self.timers.seconds("rebalance_min_interval")
        for name in joined:  # its own start wakes it: it runs once the least interval is over
            self.clients[name] = client = _Client(start, tuple(sorted_queues))
            client.next_run = start + least
            self._push(client.next_run, _RUN, name)
        if joined:
            self.listed = sorted([*self.listed, *joined])
            self._notify(start, self.listed)
        if not staying:  # a new group (or one all new): the broker reads the route now
            self.broker_queues = tuple(sorted_queues)
        elif self.mode == "broker" and queues_changed:
            self._push(self._next_tick(start, "broker_route_poll_interval"), _ROUTE, None)
        if not sorted_consumers:
            self.listed = []  # nobody left to notify: the broker's list empties in time
        return self._settle(start, ledger, (tuple(sorted_queues), tuple(sorted_consumers)))

    def _reading(self, queues: list[Any]) -> dict[Any, set[Any]]:
        """Each queue of the group -> the clients reading it now."""
        reading: dict[Any, set[Any]] = {queue: set() for queue in queues}
        for name, client in self.clients.items():
            for queue in client.owned:
                reading[queue].add(name)
        return reading

    def _draw(self, period: float) -> float:
        """A time within `period`, drawn from the seed (random phases)."""
        return self.rng.random() * period

    def _next_tick(self, start: float, timer: str, grid: float = 0.0) -> float:
        """The next tick after `start` of a timer of period `timer`: on its grid from `grid`
        (kept phases), or anywhere in the period (random phases)."""
        period = self.timers.seconds(timer)
        if self.phases == "random":
            return start + self._draw(period)
        return _first_after(grid, period, start)

    def _schedule_timers(self, start: float, staying: list[Any], queues_changed: bool) -> None:
        """The staying clients' next periodic runs and, when the queues changed, their next
        name-server polls (client mode)."""
        wait = self.timers.seconds("rebalance_wait_interval")
        for name in staying:
            client = self.clients[name]
            client.changing_runs = 0
            if self.phases == "random":
                client.next_run = start + self._draw(wait)
            else:
                client.next_run = _first_at_or_after(client.last_run + wait, wait, start)
            self._push(client.next_run, _RUN, name)
            if queues_changed and self.mode == "client":
                poll = self._next_tick(start, "poll_name_server_interval", client.heartbeat_grid)
                self._push(poll, _ROUTE, name)

    def _depart(
        self, start: float, consumers: list[Any], crashed: set[Any], graceful: bool
    ) -> None:
        """The clients gone from `consumers` stop reading at `start`; a clean shutdown leaves
        the broker's list at once and the broker notifies the group, a crash leaves it when
        the broker notices (the module docstring says when, and whether it notifies)."""
        present = set(consumers)
        left_cleanly = False
        for name in [name for name in sorted(self.clients) if name not in present]:
            client = self.clients.pop(name)
            for queue in sorted(client.owned):
                self._ledger.stop(start, name, queue, revoked=False)
            if name in crashed or (self.departures == "crash" and not graceful):
                removed_at, notifies = self._crash_noticed(start, client)
                self._push(removed_at, _REMOVAL, (name, notifies))
            else:
                self.listed.remove(name)
                left_cleanly = True
        if left_cleanly:
            self._notify(start, self.listed)

    def _crash_noticed(self, start: float, client: _Client) -> tuple[float, bool]:
        """When the broker removes a client that crashed at `start`, and whether it notifies
        the group then (the idle close does, the expiry scan does not)."""
        heartbeat = self.timers.seconds("heartbeat_broker_interval")
        if self.phases == "random":
            last_heartbeat = start - self._draw(heartbeat)
            scan_phase = self._draw(self.timers.seconds("channel_scan_interval"))
        else:
            last_heartbeat = client.heartbeat_grid + heartbeat * math.floor(
                (start - client.heartbeat_grid) / heartbeat
            )
            scan_phase = 0.0
        expired = last_heartbeat + self.timers.seconds("channel_expired_timeout")
        scan = _first_after(scan_phase, self.timers.seconds("channel_scan_interval"), expired)
        idle = start + self.timers.seconds("server_channel_max_idle")
        return (idle, True) if idle < scan else (scan, False)

    def _notify(self, at: float, names: Iterable[Any]) -> None:
        """The broker notifies `names` at `at`: each client's RebalanceService runs once the
        notification arrives, and not within the least interval of its last run."""
        delay = self.timers.seconds("notify_delay")
        least = self.timers.seconds("rebalance_min_interval")
        for name in names:
            client = self.clients.get(name)
            if client is None:
                continue  # a crashed client the broker still lists
            arrival = at + (self._draw(delay) if self.phases == "random" else delay)
            when = max(arrival, client.last_run + least)
            if when < client.next_run:
                client.next_run = when
                self._push(when, _RUN, name)

    def _push(self, time: float, priority: int, subject: Any) -> None:
        heapq.heappush(self._events, (time, priority, next(self._sequence), subject))

    # --- the runs --------------------------------------------------------------------------

    def _view(self, client: _Client) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        """(queues, consumer ids) a run of `client` computes from now, both sorted."""
        queues = self.broker_queues if self.mode == "broker" else client.known_queues
        return queues, tuple(self.listed)

    def _plan(self, view: tuple[tuple[Any, ...], tuple[Any, ...]]) -> dict[Any, set[Any]]:
        """The plan of `view` (computed once per view): the assign function on it, with the
        broker's last plan as `previous` in broker mode."""
        plan = self._plans.get(view)
        if plan is None:
            queues, consumers = view
            previous = self._broker_plan if self.mode == "broker" else {}
            plan = planned(self.assignor, list(queues), list(consumers), previous)
            self._plans[view] = plan
            if self.mode == "broker":
                self._broker_plan = {name: sorted(owned) for name, owned in plan.items()}
        return plan

    def _settle(
        self,
        start: float,
        ledger: OwnershipLedger,
        final_view: tuple[tuple[Any, ...], tuple[Any, ...]],
    ) -> ProtocolRun:
        """Run the events until every live client has run on `final_view`, and score it."""
        self._plans = {}
        present_queues = frozenset(self.queues)
        wait = self.timers.seconds("rebalance_wait_interval")
        pull = self.timers.seconds("first_pull_delay")
        done: set[Any] = set()
        releases = steps = runs = 0
        bound = self.max_runs_per_client * max(len(self.clients), 1)
        end = start
        converged = True
        while len(done) < len(self.clients):
            if not self._events:
                converged = False
                break
            time, priority, _, subject = heapq.heappop(self._events)
            if priority == _REMOVAL:
                name, notifies = subject
                self.listed.remove(name)
                if notifies:
                    self._notify(time, self.listed)
                continue
            if priority == _ROUTE:
                if subject is None:
                    self.broker_queues = tuple(self.queues)
                else:
                    self.clients[subject].known_queues = tuple(self.queues)
                continue
            client = self.clients[subject]
            if time != client.next_run:
                continue  # superseded: the client ran earlier on a notification
            if runs >= bound:
                converged = False
                break
            view = self._view(client)
            applied = time + self.plan_seconds
            target = self._plan(view)[subject] & present_queues
            dropped, taken = client.owned - target, target - client.owned
            for queue in sorted(dropped):
                ledger.stop(applied, subject, queue, revoked=True)
            for queue in sorted(taken):
                ledger.begin(applied + pull, subject, queue)
            client.owned = set(target)
            releases += len(dropped)
            steps += len(taken)
            runs += 1
            client.changing_runs += bool(dropped or taken)
            client.last_run = time
            client.next_run = time + wait
            self._push(client.next_run, _RUN, subject)
            end = max(end, applied + (pull if taken else 0.0))
            if view == final_view:
                done.add(subject)
            elif subject in done:
                done.discard(subject)
        self.now = max(end, start)
        self._quiet = converged
        rounds = max((client.changing_runs for client in self.clients.values()), default=0)
        return ledger.finish(self.now).run(
            self._owners(), releases=releases, steps=steps, rounds=rounds, converged=converged
        )

    def _owners(self) -> dict[Any, list[Any]]:
        """Each live client -> the queues in its process-queue table, sorted."""
        return {name: sorted(self.clients[name].owned) for name in sorted(self.clients)}


def _first_after(grid: float, period: float, time: float) -> float:
    """The first of `grid + k * period` (any integer k) strictly after `time`."""
    return grid + (math.floor((time - grid) / period) + 1) * period


def _first_at_or_after(grid: float, period: float, time: float) -> float:
    """The first of `grid + k * period` (k >= 0) at or after `time`."""
    if time <= grid:
        return grid
    return grid + math.ceil((time - grid) / period) * period


def client_session(assignor: AssignFunction, *, seed: int, **options: Any) -> RocketMQSession:
    """Client-side rebalancing: every client runs `assignor` on its own view."""
    return RocketMQSession(assignor, mode="client", seed=seed, **options)


def broker_session(assignor: AssignFunction, *, seed: int, **options: Any) -> RocketMQSession:
    """Broker-side rebalancing: every client's run asks the broker, which runs `assignor`."""
    return RocketMQSession(assignor, mode="broker", seed=seed, **options)


__all__ = [
    "RebalancePhases",
    "RocketMQSession",
    "RocketMQTimers",
    "broker_session",
    "client_session",
]
