"""A member of a RabbitMQ single-active-consumer group that balances itself without a leader:
the protocol of Jack Vanlightly's TLA+ spec (specs/sac_leaderless.tla) on a real broker, over pika.
Kept in one module: the member's state (tokens held, consumers, work handed out) changes only on
pika's connection thread, through these methods together, and is read as one.

    member = GroupMember(amqp_url, "orders", [f"orders.q{i:03d}" for i in range(16)], "app-1",
                         handler=lambda queue, body: print(queue, body), release="newest",
                         queue_type="quorum")
    member.start(); ...; member.leave()

Every queue of the group is declared with `x-single-active-consumer` (and `x-queue-type` when
quorum); every member subscribes
to every queue; the broker keeps one active consumer per queue and a FIFO of waiting ones. A
member over its ideal number releases one queue (cancel, then subscribe again at the back of
the line), chosen by a release policy of rebalancing.sac.schedulers.ReleaseChoice ("highest",
"lowest", "newest", "random"); the broker makes the FIFO's head active.

Tokens. RabbitMQ 3.10 never tells an AMQP 0-9-1 consumer that it became active, so each queue
holds exactly one token message, consumed with manual acknowledgement and held unacknowledged
while its holder is active: a member is active on a queue (the spec's `active[q] = a`) from the
token's delivery until it gives it back. Releasing is: cancel the consumer (the broker makes the
next in line active at once), finish the work already handed to the runner and acknowledge it,
reject the token with requeue (it goes back to its original place, the head of the queue, and
so to the new active consumer), then consume again. In that order: a token rejected before the
cancel comes straight back to the releaser, and a token given back before the work is finished
lets the successor overtake it. A crashed member's connection closes (at once when its process
dies, after the AMQP heartbeat timeout when it hangs or its network fails), the broker requeues
its token and unacknowledged work, and the next in line gets them without anyone's help.

Work. A queue also carries work messages, handled beside the token: a member hands a work
message to its rebalancing.runtime.ChannelRunner (per queue in order, a few worker threads) only
while it holds that queue's token, and acknowledges it when handled (a handler that raises gets
the message rejected without requeue, for a dead-letter exchange, and is listed in `failures`).
A consumer that the broker made active receives work before the token when the previous holder
has not given it back yet. To keep the queue's order, every channel allows one unacknowledged
message while it has no token (basic.qos global prefetch 1; raised to 1 + work_window when the
token arrives): the early message is returned (nack with requeue) after a short back-off, and
as the token goes back to the head of the queue, it is the first delivery once it is back.
This relies on a classic queue's requeue putting a message back at its original place (RabbitMQ
documents it; the tests check the order it gives). Crashes give at-least-once delivery: work a
crashed member handled but had not acknowledged is handled again by the next holder, and a
member whose connection is closed under it finishes the item it is handling.

Queue types (`queue_type`). "classic" (the default) as above. "quorum", the replicated type
RabbitMQ recommends (classic mirrored queues are gone in 4.x), which supports single active
consumer too: a cancelled active consumer keeps its unacknowledged messages and the next in
line becomes active at once, as on a classic queue; a rejected or nacked message goes into the
queue's returns, which are delivered before every other message, in the order they came back
(rabbit_fifo in 3.10; in 4.x while a delivery limit is set, as it is by default). Two
differences matter here.
A quorum queue refuses a channel-wide prefetch, so each consumer gets its own of 1 +
work_window from the start, and a new holder may receive work before the returned token; that
work follows the token in the queue's order, so it is handed to the runner when the token
comes, before anything delivered later (the early work it gives back, when the token is late,
goes back in one go, in delivery order, and so comes back in that order). And a return counts:
on 3.x every return adds to the message's delivery count, on 4.x a crash does (a reject with
requeue does not), and a delivery limit (`x-delivery-limit`, a policy's `delivery-limit`, 20 by
default on 4.x) dead-letters or drops a token after that many; a 4.x queue whose limit is
switched off (-1) requeues at the back instead, which takes the token from its place at the
head. So: on 3.x set no delivery limit on a group's queues; on 4.x keep one (raise it where
members crash often). "stream" is refused: a stream is not consumed destructively. A member
whose queues exist as another type than its own raises from `start()`.

Seeding. The first member to find the group unseeded takes a lock (an exclusive queue
`<group>.seeding-lock`: one connection at a time may hold it), declares the queues, publishes a
token with publisher confirms to each queue that holds no message, and declares the marker
queue `<group>.seeded`; members wait for the marker before consuming. No one consumes before
the marker exists, so a seeder that finds a message in a queue is looking at a token of an
interrupted seeding: a second seeding (a later member, a restarted group, two members at once)
never duplicates a token. Publishers must therefore start after the group has seeded.

How members learn the group (no leader). The ideal number needs the number of started apps and
the member's Position (the other apps' active counts and start ids). Members announce on a
fanout exchange `<group>.members`, each through its own exclusive queue bound to it: their start
id (the wall-clock nanoseconds when they started, the member id breaking ties), their active
count (on every change), and a heartbeat every `heartbeat_interval`; a newcomer's first
announcement makes every member answer with its own state; a graceful leave is announced. A
member not heard from for `member_timeout` seconds is taken as gone. Each member decides from
its view with the spec's own definitions (rebalancing.sac.model.release_enabled over a SacState
built from the view: `release_due`), one release at a time, and only on a view fit to decide
on: every peer heard from within two heartbeats, and the counts adding up to no more than the
group's queues. Without that guard a crashed member's last count (or its mere presence) keeps
the ideal numbers too low until it expires, and the live members pass queues round in a circle:
measured, 1,477 releases in the 3 s of a 16 x 4 group's member_timeout; with it, they wait.

Where this departs from the spec:
- Views are eventually consistent, not the spec's global state: a member may release on a stale
  count of another (an extra release, which the protocol absorbs as another step of the
  cascade); the group settles when the views agree, as the spec's quiescence does.
- A member announces itself (the spec's Start) only after it has subscribed to every queue, so
  no member releases into a FIFO that its newest peer has not joined yet; a spec run may
  interleave Start and Subscribe differently.
- Start ids are wall-clock times (ties by member id), not a counter: a total order every member
  agrees on without asking anyone, near the join order (clock skew between machines may swap
  two members that start within the skew).
- A crash moves the tokens as soon as the broker closes the connection, but the other members
  see it only after `member_timeout` (their group size is one too many until then; RabbitMQ's
  event exchange plugin would tell them at once, but it is not enabled on every broker).
- "Active" is "holds the token": a member the broker has just made active is not active here
  until the token reaches it (a few milliseconds, or the previous holder's unfinished work).
Member ids must not contain "|" (consumer tags are "<member>|<queue>|<n>", so an operator's
`rabbitmqctl list_consumers` shows who is active where). A member opens one channel per queue
(its prefetch is per channel), so a group has at most RabbitMQ's channel_max (2047) queues.
Runtime complexity per decision: O(|A| log |A|) to rank the view; per release O(|Q|) to choose.
"""

from __future__ import annotations

import contextlib
import functools
import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pika  # type: ignore[import-untyped]
import pika.exceptions  # type: ignore[import-untyped]

from rebalancing.runtime import ChannelRunner
from rebalancing.sac.model import POSITION_VARIANTS, PositionVariant, SacState, release_enabled
from rebalancing.sac.schedulers import RELEASE_POLICIES, ReleaseChoice, ReleasePolicy

__all__ = [
    "QUEUE_TYPES",
    "TOKEN_TYPE",
    "GroupMember",
    "MemberStartError",
    "MemberStatus",
    "WorkFailure",
    "ensure_tokens",
    "group_queue_arguments",
    "release_due",
]

TOKEN_TYPE = "rebalancing.sac-token"
"""The AMQP `type` property of a token message (work messages have any other type)."""

Handler = Callable[[str, bytes], None]
"""handler(queue, body): handles one work message; raising rejects it (no requeue)."""


QUEUE_TYPES = ("classic", "quorum")
"""The queue types a group can run on (see the module docstring for what each does)."""

_REFUSED_QUEUE_TYPES = {
    "stream": "a stream is not consumed destructively: its AMQP 0-9-1 consumers can neither "
    "hold a token unacknowledged nor give it back with a requeue",
}


def check_queue_type(queue_type: str) -> str:
    """`queue_type` if a group can run on it; ValueError naming it otherwise."""
    if queue_type in _REFUSED_QUEUE_TYPES:
        raise ValueError(
            f"queue_type {queue_type!r} cannot carry a group: {_REFUSED_QUEUE_TYPES[queue_type]}"
        )
    if queue_type not in QUEUE_TYPES:
        raise ValueError(f"unknown queue_type {queue_type!r}; known: {QUEUE_TYPES}")
    return queue_type


def group_queue_arguments(queue_type: str = "classic") -> dict[str, Any]:
    """The arguments every queue of a group is declared with: single active consumer, and the
    queue type unless classic (a classic queue declared before it was an option has none)."""
    arguments: dict[str, Any] = {"x-single-active-consumer": True}
    if check_queue_type(queue_type) != "classic":
        arguments["x-queue-type"] = queue_type
    return arguments


class MemberStartError(RuntimeError):
    """A member could not subscribe (the broker refused a declaration or a consumer, the
    connection failed); raised by `GroupMember.start`, chained to the cause."""


def release_due(
    member: str,
    active_counts: dict[str, int],
    start_order: dict[str, tuple[int, str]],
    queue_count: int,
    variant: PositionVariant = "id",
) -> bool:
    """The spec's Release guard for `member` over a view: the started apps are the keys of
    `start_order` (each app's start key; smaller started earlier), `active_counts` their active
    counts. Evaluated by rebalancing.sac.model itself, on a state built from the view."""
    apps = sorted(start_order)
    ranked = sorted(apps, key=lambda app: start_order[app])
    start_id = {app: number for number, app in enumerate(ranked, start=1)}
    counts = {app: active_counts.get(app, 0) for app in apps}
    state = SacState(
        queues=list(range(queue_count)),
        apps=apps,
        start_id=start_id,
        next_id=len(apps) + 1,
        active_count=counts,
        started_count=len(apps),
        ranking=sorted((count, start_id[app]) for app, count in counts.items() if count),
    )
    return release_enabled(state, member, variant)


@dataclass(frozen=True)
class WorkFailure:
    """A work message whose handler raised (it was rejected without requeue)."""

    queue: str
    body: bytes
    error: Exception


@dataclass(frozen=True)
class MemberStatus:
    """What a member holds and knows, read from another thread."""

    member_id: str
    active: frozenset[str]
    releases: int
    releasing: bool
    early_returns: int
    """Work messages given back because they came before the token (see the module)."""
    waited_releases: int
    """Releases that waited for work in flight before giving the token back."""
    view: frozenset[str]
    started: bool
    running: bool
    error: BaseException | None


@dataclass
class _QueueState:
    """One queue as this member sees it (touched by the connection's thread only)."""

    channel: Any
    consumer_tag: str | None = None
    token_tag: int | None = None
    releasing: bool = False
    in_flight: int = 0
    early: list[tuple[int, bytes]] = field(default_factory=list)
    """(delivery tag, body) of work delivered before the token, in delivery order (one at most
    on a classic queue, up to 1 + work_window on a quorum queue)."""
    early_return_due: bool = False
    early_backoff: float = 0.0


@dataclass
class _Peer:
    started: tuple[int, str]
    active: int
    heard: float


def _queue_exists(connection: Any, name: str) -> bool:
    """Whether queue `name` exists (a passive declare; a 404 closes only a throwaway channel)."""
    channel = connection.channel()
    try:
        channel.queue_declare(name, passive=True)
    except pika.exceptions.ChannelClosedByBroker as error:
        if error.reply_code == 404:
            return False
        raise
    channel.close()
    return True


def ensure_tokens(
    connection: Any,
    group: str,
    queues: Sequence[str],
    timeout: float = 60.0,
    queue_type: str = "classic",
) -> bool:
    """Declare the group's queues and seed one token per queue unless the group is seeded.

    True when this call seeded, False when the group already was (see the module docstring:
    an exclusive lock queue, a marker queue, a token only into a queue with no message).
    TimeoutError when another connection holds the lock for longer than `timeout`; the queues
    are declared as `queue_type` ("classic" or "quorum"; a queue that exists as another type
    makes the broker close the channel: pika's ChannelClosedByBroker, PRECONDITION_FAILED)."""
    arguments = group_queue_arguments(queue_type)
    marker, lock = f"{group}.seeded", f"{group}.seeding-lock"
    deadline = time.monotonic() + timeout
    while not _queue_exists(connection, marker):
        channel = connection.channel()
        try:
            channel.queue_declare(lock, exclusive=True, auto_delete=True)
        except pika.exceptions.ChannelClosedByBroker as error:
            if error.reply_code != 405:  # RESOURCE_LOCKED: another member is seeding
                raise
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"group {group!r}: the seeding lock was held for {timeout} s"
                ) from error
            connection.sleep(0.05)
            continue
        try:
            if _queue_exists(connection, marker):  # seeded while we waited for the lock
                return False
            channel.confirm_delivery()
            for queue in queues:
                declared = channel.queue_declare(queue, durable=True, arguments=arguments)
                if declared.method.message_count == 0:
                    channel.basic_publish(
                        "",
                        queue,
                        b"token",
                        pika.BasicProperties(type=TOKEN_TYPE, delivery_mode=2),
                        mandatory=True,
                    )
            channel.queue_declare(marker, durable=True)
            return True
        finally:
            if channel.is_open:  # else the lock goes when the connection closes
                channel.queue_delete(lock)
                channel.close()
    return False


def _check_queue_type(connection: Any, queues: Sequence[str], queue_type: str) -> None:
    """Declare each queue of a seeded group again with the member's arguments: the broker
    closes the channel (PRECONDITION_FAILED) when a queue exists with another type. A passive
    declare first, so that a deleted queue is reported (NOT_FOUND), not made again tokenless."""
    arguments = group_queue_arguments(queue_type)
    channel = connection.channel()
    for queue in queues:
        channel.queue_declare(queue, passive=True)
        channel.queue_declare(queue, durable=True, arguments=arguments)
    channel.close()


def _start_hint(error: BaseException, queue_type: str) -> str:
    """What to change when `error` says the queues are not of the member's type."""
    text = str(error)
    if "x-queue-type" in text or "global_qos" in text:
        return (
            f" (the member's queue_type is {queue_type!r}: give it the type the group's queues "
            "were declared with)"
        )
    return ""


class GroupMember:
    """One app of the group: a pika connection on its own thread, plus a ChannelRunner.

    `start()` connects, seeds if needed, subscribes to every queue and announces itself;
    `leave()` leaves gracefully (announce, cancel, finish work, give the tokens back). A lost
    connection ends the member (`status().error` says why): the broker moves its tokens.

    Pass release="newest": it dominates the default "highest" on every typical group measured
    (rebalancing.strategies.sac.Session says by how much).
    """

    def __init__(
        self,
        amqp_url: str,
        group: str,
        queues: Sequence[str],
        member_id: str,
        handler: Handler | None = None,
        *,
        release: str = "highest",
        variant: str = "id",
        seed: int = 0,
        workers: int = 2,
        work_window: int = 16,
        heartbeat_interval: float = 0.5,
        member_timeout: float = 3.0,
        early_backoff: tuple[float, float] = (0.01, 0.2),
        queue_type: str = "classic",
    ) -> None:
        if "|" in member_id:
            raise ValueError(f"member id {member_id!r} contains '|'")
        if len(set(queues)) != len(queues) or not queues:
            raise ValueError(f"the group needs distinct queues, got {list(queues)!r}")
        if variant not in POSITION_VARIANTS:
            raise ValueError(f"unknown Position variant {variant!r}; known: {POSITION_VARIANTS}")
        if release not in RELEASE_POLICIES:
            raise ValueError(f"unknown release policy {release!r}; known: {RELEASE_POLICIES}")
        self.queue_type = check_queue_type(queue_type)
        self.amqp_url = amqp_url
        self.group = group
        self.queues = sorted(queues)
        self.member_id = member_id
        self.connection_name = f"{group}/{member_id}"
        self.variant: PositionVariant = "spec" if variant == "spec" else "id"
        policy: ReleasePolicy = release  # checked above
        self._choice = ReleaseChoice(policy, seed)
        self._handler = handler
        self._workers = workers
        self.work_window = work_window
        self.heartbeat_interval = heartbeat_interval
        self.member_timeout = member_timeout
        self._early_backoff = early_backoff
        self.failures: list[WorkFailure] = []
        self.seeded = False
        self._lock = threading.Lock()
        self._held: set[str] = set()
        self._releases = 0
        self._early_returns = 0
        self._waited_releases = 0
        self._peers: dict[str, _Peer] = {}
        self._error: BaseException | None = None
        self._started = threading.Event()
        self._start_done = threading.Event()  # started, or failed before it could
        self._leaving = threading.Event()
        self._finished = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"sac-{member_id}", daemon=True)
        self._start_key = (0, member_id)
        self._queue_states: dict[str, _QueueState] = {}
        self._connection: Any = None
        self._runner: ChannelRunner | None = None
        self._announce_channel: Any = None
        self._consumer_number = 0
        self._last_announced = 0.0

    # --- the public face ----------------------------------------------------------------

    def start(self, timeout: float | None = 60.0) -> MemberStatus:
        """Start the member's thread and wait until it is subscribed and announced.

        MemberStartError, chained to the cause, when it cannot subscribe (a queue of another
        type than `queue_type`, a refused connection...); TimeoutError when it has not
        subscribed within `timeout` seconds (the member then gives up and leaves).
        `timeout=None` returns at once: `wait_started` and `status().error` tell the rest."""
        self._thread.start()
        if timeout is None:
            return self.status()
        status = self.wait_started(timeout)
        if status.error is not None:
            raise MemberStartError(
                f"member {self.member_id!r} of group {self.group!r} could not subscribe: "
                f"{status.error!r}{_start_hint(status.error, self.queue_type)}"
            ) from status.error
        if not status.started:
            self._leaving.set()
            raise TimeoutError(
                f"member {self.member_id!r} of group {self.group!r} did not subscribe within "
                f"{timeout} s"
            )
        return status

    def wait_started(self, timeout: float) -> MemberStatus:
        """Wait until the member has subscribed and announced itself, or failed (without
        raising: `status().error` says why)."""
        self._start_done.wait(timeout)
        return self.status()

    def leave(self, timeout: float = 60.0) -> None:
        """Leave gracefully and wait for the thread to end."""
        self._leaving.set()
        self._thread.join(timeout)

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the member's thread to end (after `leave`, or a lost connection)."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def status(self) -> MemberStatus:
        with self._lock:
            return MemberStatus(
                member_id=self.member_id,
                active=frozenset(self._held),
                releases=self._releases,
                releasing=any(state.releasing for state in self._queue_states.values()),
                early_returns=self._early_returns,
                waited_releases=self._waited_releases,
                view=frozenset([self.member_id, *self._peers]),
                started=self._started.is_set(),
                running=self._thread.is_alive() and not self._finished.is_set(),
                error=self._error,
            )

    # --- the connection's thread --------------------------------------------------------

    def _run(self) -> None:
        try:
            parameters = pika.URLParameters(self.amqp_url)
            parameters.client_properties = {"connection_name": self.connection_name}
            self._connection = pika.BlockingConnection(parameters)
            self.seeded = ensure_tokens(
                self._connection, self.group, self.queues, queue_type=self.queue_type
            )
            if not self.seeded:
                _check_queue_type(self._connection, self.queues, self.queue_type)
            self._runner = ChannelRunner(self._handle, self._workers, self.queues)
            self._open_group_channel()
            self._queue_states = {
                queue: _QueueState(self._connection.channel()) for queue in self.queues
            }
            for queue in self.queues:
                self._subscribe(queue)
            self._start_key = (time.time_ns(), self.member_id)
            self._started.set()  # the spec's Start, announced after every Subscribe
            self._announce()
            self._start_done.set()
            while not self._leaving.is_set():
                self._connection.process_data_events(time_limit=0.1)
                self._tick()
            self._leave_gracefully()
        except Exception as error:  # a lost connection, mostly: reported in status().error
            with self._lock:
                self._error = error
        finally:
            self._finished.set()
            self._start_done.set()  # never leave start() waiting
            if self._runner is not None:
                self._runner.close(drain=False, timeout=10.0)
            if self._connection is not None and self._connection.is_open:
                with contextlib.suppress(pika.exceptions.AMQPError):
                    self._connection.close()

    def _open_group_channel(self) -> None:
        channel = self._connection.channel()
        exchange = f"{self.group}.members"
        channel.exchange_declare(exchange, exchange_type="fanout", durable=True)
        declared = channel.queue_declare("", exclusive=True, auto_delete=True)
        channel.queue_bind(declared.method.queue, exchange)
        channel.basic_consume(declared.method.queue, self._on_announcement, auto_ack=True)
        self._announce_channel = channel

    def _subscribe(self, queue: str) -> None:
        """Join the back of `queue`'s line, allowing one unacknowledged message until the token."""
        state = self._queue_states[queue]
        if self.queue_type == "classic":
            state.channel.basic_qos(prefetch_count=1, global_qos=True)
        else:  # a quorum queue refuses a channel-wide prefetch, and keeps a consumer's own
            state.channel.basic_qos(prefetch_count=1 + self.work_window, global_qos=False)
        self._consumer_number += 1
        tag = f"{self.member_id}|{queue}|{self._consumer_number}"
        callback = functools.partial(self._on_delivery, queue)
        state.consumer_tag = state.channel.basic_consume(queue, callback, consumer_tag=tag)

    def _tick(self) -> None:
        now = time.monotonic()
        if now - self._last_announced >= self.heartbeat_interval:
            self._announce()
        expired = [
            member for member, peer in self._peers.items() if now - peer.heard > self.member_timeout
        ]
        if expired:
            with self._lock:
                for member in expired:
                    del self._peers[member]
        while self._maybe_release():
            pass  # as the spec's rounds do: release while it stays enabled, one at a time

    # --- announcements ------------------------------------------------------------------

    def _announce(self) -> None:
        """Tell the group this member's start key and active count (or that it is leaving)."""
        if not self._started.is_set():
            return  # not a started app yet: tokens may come while it subscribes
        message = {
            "member": self.member_id,
            "started": list(self._start_key),
            "active": len(self._held),
            "leaving": self._leaving.is_set(),
        }
        self._announce_channel.basic_publish(
            f"{self.group}.members", "", json.dumps(message).encode()
        )
        self._last_announced = time.monotonic()

    def _on_announcement(self, channel: Any, method: Any, properties: Any, body: bytes) -> None:
        message = json.loads(body)
        member = message["member"]
        if member == self.member_id:
            return
        with self._lock:
            if message["leaving"]:
                self._peers.pop(member, None)
                return
            newcomer = member not in self._peers
            started = (int(message["started"][0]), str(message["started"][1]))
            self._peers[member] = _Peer(started, int(message["active"]), time.monotonic())
        if newcomer:
            self._announce()  # so that the newcomer learns about this member at once

    # --- tokens and work ----------------------------------------------------------------

    def _on_delivery(
        self, queue: str, channel: Any, method: Any, properties: Any, body: bytes
    ) -> None:
        state = self._queue_states[queue]
        if properties.type == TOKEN_TYPE:
            if state.token_tag is not None:
                raise RuntimeError(f"{self.member_id}: a second token for {queue!r}")
            state.token_tag = method.delivery_tag
            state.early_backoff = 0.0
            self._choice.became_active(queue)
            if self.queue_type == "classic":
                channel.basic_qos(prefetch_count=1 + self.work_window, global_qos=True)
            with self._lock:
                self._held.add(queue)
            # Work delivered before the token (a quorum queue's returned token can come after
            # it) follows the token in the queue's order and precedes all later deliveries.
            early, state.early = state.early, []
            for delivery_tag, early_body in early:
                assert self._runner is not None
                state.in_flight += 1
                self._runner.submit(queue, (delivery_tag, early_body))
            self._announce()
        elif state.token_tag is not None and not state.releasing:
            assert self._runner is not None
            state.in_flight += 1
            self._runner.submit(queue, (method.delivery_tag, body))
        elif state.consumer_tag is None:
            channel.basic_nack(method.delivery_tag, requeue=True)  # cancelled meanwhile
        else:
            # Active on the broker, but the token is still with the previous holder: give the
            # work back after a back-off, so that the token (at the head) can come in.
            state.early.append((method.delivery_tag, body))
            if not state.early_return_due:
                low, high = self._early_backoff
                state.early_backoff = min(high, max(low, 2 * state.early_backoff))
                state.early_return_due = True
                self._connection.call_later(
                    state.early_backoff, functools.partial(self._return_early, queue)
                )

    def _return_early(self, queue: str) -> None:
        """Give back the work that came before the token, all of it in one callback and in
        delivery order, so that it comes back in that order (after the token once it is back)."""
        state = self._queue_states[queue]
        state.early_return_due = False
        early, state.early = state.early, []  # empty when the token came meanwhile
        with self._lock:
            self._early_returns += len(early)
        for delivery_tag, _ in early:
            state.channel.basic_nack(delivery_tag, requeue=True)

    def _handle(self, queue: Any, work: Any) -> None:
        """On a runner's worker thread: handle one work message, then settle it on the
        connection's thread (pika's only thread-safe call is add_callback_threadsafe)."""
        delivery_tag, body = work
        handled = True
        if self._handler is not None:
            try:
                self._handler(queue, body)
            except Exception as error:  # rejected and reported, never lost silently
                handled = False
                with self._lock:
                    self.failures.append(WorkFailure(queue, body, error))
        settle = functools.partial(self._settle_work, queue, delivery_tag, handled)
        # When the connection is gone, the broker has requeued the message already.
        with contextlib.suppress(pika.exceptions.AMQPError, RuntimeError):
            self._connection.add_callback_threadsafe(settle)

    def _settle_work(self, queue: str, delivery_tag: int, handled: bool) -> None:
        state = self._queue_states[queue]
        if handled:
            state.channel.basic_ack(delivery_tag)
        else:
            state.channel.basic_reject(delivery_tag, requeue=False)
        state.in_flight -= 1
        self._finish_release(queue)

    # --- releasing ----------------------------------------------------------------------

    def _view(self) -> tuple[dict[str, int], dict[str, tuple[int, str]], bool]:
        """Active counts and start keys of the group as this member knows it, and whether the
        view is fit to decide on: every peer heard from within two heartbeats, and no more
        active queues in all than the group has (else some count is stale: a peer that died
        holding queues, whose queues others hold and announce already)."""
        now = time.monotonic()
        with self._lock:
            counts = {member: peer.active for member, peer in self._peers.items()}
            order = {member: peer.started for member, peer in self._peers.items()}
            counts[self.member_id] = len(self._held)
            fresh = all(
                now - peer.heard <= 2 * self.heartbeat_interval for peer in self._peers.values()
            )
        order[self.member_id] = self._start_key
        return counts, order, fresh and sum(counts.values()) <= len(self.queues)

    def _maybe_release(self) -> bool:
        """Release one queue if the view says this member is over its ideal number. True when
        the release is complete (its work was finished), so that the next may be decided."""
        if not self._started.is_set():
            return False
        if any(state.releasing for state in self._queue_states.values()):
            return False  # one release at a time, each decided on the view after the last
        counts, order, decidable = self._view()
        if not decidable:
            return False  # wait for the next announcements (or the expiry of a silent peer)
        if not release_due(self.member_id, counts, order, len(self.queues), self.variant):
            return False
        queue = self._choice.take(sorted(self._held))
        state = self._queue_states[queue]
        with self._lock:
            state.releasing = True
        state.channel.basic_cancel(state.consumer_tag)
        state.consumer_tag = None
        if state.in_flight:
            with self._lock:
                self._waited_releases += 1
        self._finish_release(queue)
        return not state.releasing

    def _finish_release(self, queue: str) -> None:
        """Once the released queue's work is finished: the token back, then the line's back."""
        state = self._queue_states[queue]
        if not state.releasing or state.in_flight:
            return
        state.channel.basic_reject(state.token_tag, requeue=True)
        state.token_tag = None
        with self._lock:
            state.releasing = False
            self._held.discard(queue)
            self._releases += 1
        if not self._leaving.is_set():
            self._subscribe(queue)
        self._announce()

    def _leave_gracefully(self, timeout: float = 60.0) -> None:
        """Announce the leave, cancel every consumer, finish the work, give the tokens back."""
        self._announce()  # leaving: the others drop this member from their views now
        for state in self._queue_states.values():
            if state.consumer_tag is not None:
                state.channel.basic_cancel(state.consumer_tag)
                state.consumer_tag = None
            for delivery_tag, _ in state.early:
                state.channel.basic_nack(delivery_tag, requeue=True)
            state.early = []
        deadline = time.monotonic() + timeout
        while any(state.in_flight for state in self._queue_states.values()):
            if time.monotonic() > deadline:
                break  # closing the connection requeues what is left
            self._connection.process_data_events(time_limit=0.05)
        for queue, state in self._queue_states.items():
            if state.token_tag is not None:
                state.channel.basic_reject(state.token_tag, requeue=True)
                state.token_tag = None
            with self._lock:
                self._held.discard(queue)
        self._connection.close()
