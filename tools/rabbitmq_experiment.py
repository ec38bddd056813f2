"""A SAC group of rebalancing.adapters.rabbitmq members on a real broker, run through membership
changes and measured beside the simulation: `python -m tools.rabbitmq_experiment`, from the
repository's root.

    python -m tools.rabbitmq_experiment --queues 16 --apps 4 --json

starts a private broker (tools.rabbitmq_broker; or uses `--amqp-url`), runs the
group from a cold start, then one join and one graceful leave (and with `--crash`, on a private
broker, one member's connection closed by the broker), and prints per phase: the final
active counts, the releases, the seconds to settle, whether it settled, and the releases that
rebalancing.strategies.sac.Session predicts for the same phase (same release policy and
Position variant). Members are threads of this process, each with its own connection.

`LocalGroup` is the same machinery for tests: add members, make them leave, kill their
connections, and wait until the group has settled. Settled means: every queue's token is held by
exactly one running member, the active counts differ by at most one, no release is under way,
every member's view is the group, and all of that has held for `quiet` seconds; the seconds to
settle run from the change to the first moment of that final state. With a private broker the
final state is also read from the broker (`rabbitmqctl list_consumers`), not from the members.
Real and simulated releases differ where the real run is not the simulation's schedule: members
start one after another, each subscribing in its own order, and views lag (see the adapter).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import pika  # type: ignore[import-untyped]

from rebalancing.adapters.rabbitmq import GroupMember, Handler, MemberStatus
from rebalancing.strategies.sac import Session
from tools.rabbitmq_broker import PrivateBroker, private_broker


def queue_names(group: str, queue_count: int) -> list[str]:
    """The group's queues, zero-padded so that name order is number order."""
    width = max(3, len(str(queue_count - 1)))
    return [f"{group}.q{number:0{width}d}" for number in range(queue_count)]


@dataclass(frozen=True)
class GroupSnapshot:
    """The group as its running members see it at one moment."""

    members: tuple[str, ...]
    owners: dict[str, list[str]]
    active_counts: dict[str, int]
    releases: int
    releasing: bool
    views_agree: bool

    @property
    def settled(self) -> bool:
        counts = list(self.active_counts.values())
        return (
            bool(self.members)
            and all(len(holders) == 1 for holders in self.owners.values())
            and max(counts) - min(counts) <= 1
            and not self.releasing
            and self.views_agree
        )


@dataclass(frozen=True)
class Change:
    """When a membership change began, and the group's releases until then."""

    moment: float
    releases: int


@dataclass(frozen=True)
class Settling:
    """How one change ended: settled or not, when, and with how many releases."""

    settled: bool
    seconds: float
    releases: int
    snapshot: GroupSnapshot


@dataclass
class LocalGroup:
    """Members of one group as threads of this process (see the module docstring)."""

    amqp_url: str
    group: str
    queue_count: int
    handler_for: Callable[[str], Handler] | None = None
    """Makes each member's work handler from its id (None: work is acknowledged unhandled)."""
    release: str = "highest"
    variant: str = "id"
    seed: int = 0
    heartbeat_interval: float = 0.5
    member_timeout: float = 3.0
    work_window: int = 16
    workers: int = 2
    queue_type: str = "classic"
    members: dict[str, GroupMember] = field(default_factory=dict)
    departed: dict[str, GroupMember] = field(default_factory=dict)
    _numbers: Iterator[int] = field(default_factory=itertools.count, init=False, repr=False)

    @property
    def queues(self) -> list[str]:
        return queue_names(self.group, self.queue_count)

    def new_member(self) -> GroupMember:
        number = next(self._numbers)
        member_id = f"member-{number:02d}"
        member = GroupMember(
            self.amqp_url,
            self.group,
            self.queues,
            member_id,
            None if self.handler_for is None else self.handler_for(member_id),
            release=self.release,
            variant=self.variant,
            seed=self.seed + number,
            workers=self.workers,
            work_window=self.work_window,
            heartbeat_interval=self.heartbeat_interval,
            member_timeout=self.member_timeout,
            queue_type=self.queue_type,
        )
        self.members[member.member_id] = member
        return member

    def add(self, count: int = 1, timeout: float = 120.0) -> list[GroupMember]:
        """Start `count` new members at once; return when each has started (or failed)."""
        added = [self.new_member() for _ in range(count)]
        for member in added:
            member.start(timeout=None)
        deadline = time.monotonic() + timeout
        for member in added:
            status = member.wait_started(max(0.0, deadline - time.monotonic()))
            if status.error is not None or not status.started:
                raise RuntimeError(f"{member.member_id} did not start: {status.error!r}")
        return added

    def leave(self, member_id: str, timeout: float = 60.0) -> None:
        """Member `member_id` leaves gracefully."""
        member = self.members.pop(member_id)
        member.leave(timeout)
        self.departed[member_id] = member

    def kill(self, member_id: str, broker: PrivateBroker, timeout: float = 60.0) -> Change:
        """Close the member's connection from the broker (an operator's close_connection): the
        member gets no chance to clean up and stops; the broker moves its tokens. The change
        runs from the moment the connection closed (rabbitmqctl itself takes seconds)."""
        member = self.members[member_id]
        releases = self.total_releases()
        if broker.close_connection(member.connection_name, "killed by rebalancing test") != 1:
            raise RuntimeError(f"no connection named {member.connection_name!r} to kill")
        change = Change(time.monotonic(), releases)
        del self.members[member_id]
        if not member.join(timeout):
            raise RuntimeError(f"{member_id} still runs {timeout} s after its connection closed")
        self.departed[member_id] = member
        return change

    def statuses(self) -> dict[str, MemberStatus]:
        return {member_id: member.status() for member_id, member in self.members.items()}

    def total_releases(self) -> int:
        everyone = [*self.members.values(), *self.departed.values()]
        return sum(member.status().releases for member in everyone)

    def snapshot(self) -> GroupSnapshot:
        statuses = self.statuses()
        running = tuple(sorted(m for m, status in statuses.items() if status.running))
        owners: dict[str, list[str]] = {queue: [] for queue in self.queues}
        for member_id, status in statuses.items():
            for queue in status.active:
                owners[queue].append(member_id)
        return GroupSnapshot(
            members=running,
            owners=owners,
            active_counts={m: len(statuses[m].active) for m in running},
            releases=self.total_releases(),
            releasing=any(status.releasing for status in statuses.values()),
            views_agree=all(statuses[m].view == frozenset(running) for m in running)
            and len(running) == len(statuses),
        )

    def mark(self) -> Change:
        """A membership change starts now (for `wait_settled`)."""
        return Change(time.monotonic(), self.total_releases())

    def wait_settled(self, change: Change, timeout: float = 120.0, quiet: float = 1.5) -> Settling:
        """Poll until the group has been settled for `quiet` seconds, or `timeout` seconds have
        passed since the change."""
        stable_since: float | None = None
        signature: Any = None
        while True:
            now = time.monotonic()
            snapshot = self.snapshot()
            releases = snapshot.releases - change.releases
            current = (snapshot.owners, snapshot.releases)
            if snapshot.settled:
                if stable_since is None or current != signature:
                    stable_since, signature = now, current
                elif now - stable_since >= quiet:
                    return Settling(True, stable_since - change.moment, releases, snapshot)
            else:
                stable_since = None
            if now - change.moment > timeout:
                return Settling(False, now - change.moment, releases, snapshot)
            time.sleep(0.05)

    def close(self, timeout: float = 60.0) -> None:
        """Every running member leaves (in parallel)."""
        leaving = list(self.members)
        threads = [
            threading.Thread(target=self.leave, args=(member_id, timeout)) for member_id in leaving
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout + 5.0)


def broker_owners(broker: PrivateBroker, queues: Sequence[str]) -> dict[str, list[str]]:
    """queue -> the members the broker says are active on it (from the consumer tags)."""
    wanted = set(queues)
    owners: dict[str, list[str]] = {queue: [] for queue in queues}
    for row in broker.list_consumers():
        if row["queue_name"] in wanted and row["active"] in (True, "true"):
            owners[row["queue_name"]].append(str(row["consumer_tag"]).split("|")[0])
    return owners


def delete_group(amqp_url: str, group: str, queues: Sequence[str]) -> None:
    """Delete what a group declares on the broker: its queues, marker and exchange."""
    connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
    try:
        channel = connection.channel()
        for queue in [*queues, f"{group}.seeded"]:
            channel.queue_delete(queue)
        channel.exchange_delete(f"{group}.members")
    finally:
        connection.close()


@dataclass(frozen=True)
class PhaseResult:
    """One membership change of the experiment, real beside simulated."""

    phase: str
    members: int
    active_counts: dict[str, int]
    releases: int
    simulated_releases: int
    settle_seconds: float
    settled: bool
    broker_one_active_per_queue: bool | None
    """From `rabbitmqctl list_consumers` (None without a private broker, as with --amqp-url)."""
    broker_active_counts: dict[str, int] | None


def run_experiment(
    amqp_url: str,
    queue_count: int,
    app_count: int,
    *,
    broker: PrivateBroker | None = None,
    group: str = "sac",
    release: str = "highest",
    variant: str = "id",
    seed: int = 0,
    settle_timeout: float = 180.0,
    crash: bool = False,
    queue_type: str = "classic",
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Cold start of `app_count` members, one join, one graceful leave, and with `crash` one
    member's connection closed by the broker (after `member_timeout`, the others drop it)."""
    local = LocalGroup(
        amqp_url,
        group,
        queue_count,
        release=release,
        variant=variant,
        seed=seed,
        queue_type=queue_type,
    )
    simulation = Session(variant=variant, release=release, engine="reference", seed=seed)
    phases: list[PhaseResult] = []

    def finish(phase: str, change: Change) -> None:
        settling = local.wait_settled(change, settle_timeout)
        members = sorted(local.members)
        predicted = simulation.rebalance(local.queues, members)
        one_active: bool | None = None
        broker_counts: dict[str, int] | None = None
        if broker is not None:
            owners = broker_owners(broker, local.queues)
            one_active = all(len(holders) == 1 for holders in owners.values())
            broker_counts = dict.fromkeys(members, 0)
            for holders in owners.values():
                for holder in holders:
                    broker_counts[holder] = broker_counts.get(holder, 0) + 1
        phases.append(
            PhaseResult(
                phase=phase,
                members=len(members),
                active_counts=dict(sorted(settling.snapshot.active_counts.items())),
                releases=settling.releases,
                simulated_releases=predicted.releases,
                settle_seconds=round(settling.seconds, 3),
                settled=settling.settled,
                broker_one_active_per_queue=one_active,
                broker_active_counts=broker_counts,
            )
        )
        if progress is not None:
            progress(f"{phase}: {phases[-1]}")

    try:
        change = local.mark()
        local.add(app_count)
        finish("cold_start", change)
        change = local.mark()
        local.add(1)
        finish("join", change)
        change = local.mark()
        local.leave(sorted(local.members)[0])
        finish("leave", change)
        if crash:
            if broker is None:
                raise ValueError("the crash phase needs a private broker (rabbitmqctl)")
            finish("crash", local.kill(sorted(local.members)[0], broker))
    finally:
        local.close()
        with contextlib.suppress(pika.exceptions.AMQPError, OSError):
            delete_group(amqp_url, group, local.queues)
    return {
        "queues": queue_count,
        "apps": app_count,
        "release": release,
        "variant": variant,
        "queue_type": queue_type,
        "broker": "private" if broker is not None else "amqp-url",
        "phases": [asdict(phase) for phase in phases],
    }


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m tools.rabbitmq_experiment",
        description="Run a leaderless SAC group on a real RabbitMQ: cold start, join, leave.",
    )
    parser.add_argument("--queues", type=int, default=16)
    parser.add_argument("--apps", type=int, default=4)
    parser.add_argument("--amqp-url", help="an existing broker (default: a private one)")
    parser.add_argument("--release", default="highest", help="highest, lowest, newest, random")
    parser.add_argument("--variant", default="id", help="Position variant: id or spec")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--queue-type", default="classic", help="classic or quorum")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds to settle")
    parser.add_argument(
        "--crash",
        action="store_true",
        help="a fourth phase: the broker closes a member's connection (private broker only)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = _arguments(argv)
    if arguments.queues < 1 or arguments.apps < 1:
        raise SystemExit("--queues and --apps must be at least 1")
    if arguments.crash and arguments.amqp_url:
        raise SystemExit("--crash closes a connection with rabbitmqctl: not with --amqp-url")

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    options: dict[str, Any] = {
        "release": arguments.release,
        "variant": arguments.variant,
        "seed": arguments.seed,
        "settle_timeout": arguments.timeout,
        "crash": arguments.crash,
        "queue_type": arguments.queue_type,
        "progress": None if arguments.json else progress,
    }
    if arguments.amqp_url:
        group = f"sac-{os.getpid()}-{time.time_ns()}"
        result = run_experiment(
            arguments.amqp_url, arguments.queues, arguments.apps, group=group, **options
        )
    else:
        with private_broker() as broker:
            result = run_experiment(
                broker.amqp_url, arguments.queues, arguments.apps, broker=broker, **options
            )
    if arguments.json:
        print(json.dumps(result))
    else:
        for phase in result["phases"]:
            print(
                f"{phase['phase']:>10}: {phase['members']} members, releases "
                f"{phase['releases']} (simulated {phase['simulated_releases']}), settled "
                f"{phase['settled']} in {phase['settle_seconds']} s, counts "
                f"{sorted(phase['active_counts'].values())}"
            )
    settled = all(phase["settled"] for phase in result["phases"])
    return 0 if settled else 1


if __name__ == "__main__":
    raise SystemExit(main())
