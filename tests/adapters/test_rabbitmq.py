"""The leaderless SAC group on a real RabbitMQ (rebalancing.adapters.rabbitmq): it settles
balanced from a cold start, after a join, after a graceful leave and after a member's connection
is killed, as the broker itself reports (`rabbitmqctl list_consumers`, not the members' view);
every queue keeps exactly one token however often it is seeded; work is never lost, never
handled twice, and handled in each queue's order (a killed member's unacknowledged work aside:
it is handled again, after it, by the next holder). The same on quorum queues; a member whose
queues are of another type raises from start(); the private broker runs as a command too.
Also, without a broker: the release rule is the spec's, a stream is refused by name, the
broker's processes die with their group, a failed install is an error that says why, and
importing the library does not import pika."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pika
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rebalancing.adapters.rabbitmq import (
    GroupMember,
    Handler,
    MemberStartError,
    ensure_tokens,
    release_due,
)
from rebalancing.strategies.sac import Session
from tools import rabbitmq_broker
from tools.machine import stop_process_group
from tools.rabbitmq_broker import BrokerUnavailableError, PrivateBroker
from tools.rabbitmq_experiment import (
    Change,
    LocalGroup,
    Settling,
    broker_owners,
    queue_names,
)

QUEUES = 16
SETTLE_TIMEOUT = 120.0
REPOSITORY = Path(__file__).parents[2]


class Work:
    """Numbered work messages published to every queue of a group, and who handled which."""

    def __init__(self, amqp_url: str, queues: list[str]) -> None:
        self.amqp_url = amqp_url
        self.queues = queues
        self.handled: dict[str, list[tuple[str, int]]] = {queue: [] for queue in queues}
        self.published = dict.fromkeys(queues, 0)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._publish, name="work-publisher", daemon=True)
        self.error: BaseException | None = None

    def handler_for(self, member_id: str) -> Handler:
        def handle(queue: str, body: bytes) -> None:
            with self._lock:
                self.handled[queue].append((member_id, int(body)))
            time.sleep(0.001)  # a little work, so that releases find some in flight

        return handle

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30.0)
        assert self.error is None, f"the publisher failed: {self.error!r}"

    def _publish(self) -> None:
        try:
            connection = pika.BlockingConnection(pika.URLParameters(self.amqp_url))
            channel = connection.channel()
            channel.confirm_delivery()
            while not self._stop.is_set():
                for queue in self.queues:
                    channel.basic_publish("", queue, str(self.published[queue]).encode())
                    self.published[queue] += 1
                connection.sleep(0.01)
            connection.close()
        except BaseException as error:
            self.error = error

    def wait_all_handled(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                done = all(
                    {seq for _, seq in self.handled[queue]} >= set(range(self.published[queue]))
                    for queue in self.queues
                )
            if done:
                return
            time.sleep(0.05)
        missing = {
            queue: sorted(set(range(self.published[queue])) - {s for _, s in self.handled[queue]})
            for queue in self.queues
        }
        raise AssertionError(f"work not handled within {timeout} s: {missing}")


def assert_settles_on_the_broker(
    group: LocalGroup, change: Change, broker: PrivateBroker
) -> Settling:
    """The group settles after `change`, and the broker agrees: one active consumer per queue,
    the token holder's, and the running members' active counts differ by at most one.

    rabbitmqctl takes a second or so: should the members have moved meanwhile (a late view
    can still cost a release), the group is waited for again and the broker asked again."""
    for _ in range(5):
        settling = group.wait_settled(change, SETTLE_TIMEOUT)
        assert settling.settled, f"not settled after {settling.seconds:.0f} s: {settling.snapshot}"
        active = broker_owners(broker, group.queues)
        if group.snapshot().owners == settling.snapshot.owners:
            break
    assert all(len(members) == 1 for members in active.values()), active
    holders = {queue: members[0] for queue, members in settling.snapshot.owners.items()}
    assert {queue: members[0] for queue, members in active.items()} == holders
    running = settling.snapshot.members
    per_member = Counter(members[0] for members in active.values())
    assert set(per_member) <= set(running)
    counts = [per_member.get(member, 0) for member in running]
    assert max(counts) - min(counts) <= 1, dict(per_member)
    return settling


def assert_one_token_per_queue(broker: PrivateBroker, queues: list[str]) -> None:
    """Each queue holds exactly one message (ready or unacknowledged): its token. Asked again
    for up to 10 s: the last acknowledgements may still be on their way (handled is not yet
    acknowledged), and a quorum queue's counts follow its log a moment later."""
    deadline = time.monotonic() + 10.0
    while True:
        messages = {row["name"]: row["messages"] for row in broker.list_queues()}
        counts = {queue: messages.get(queue) for queue in queues}
        if counts == dict.fromkeys(queues, 1) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert counts == dict.fromkeys(queues, 1)


def test_the_group_settles_balanced_after_a_cold_start_a_join_and_a_graceful_leave(
    rabbitmq: PrivateBroker,
) -> None:
    queues = queue_names("orders", QUEUES)
    work = Work(rabbitmq.amqp_url, queues)
    group = LocalGroup(rabbitmq.amqp_url, "orders", QUEUES, handler_for=work.handler_for)
    try:
        change = group.mark()
        group.add(4)
        work.start()  # after the group has seeded: the contract for publishers
        assert_settles_on_the_broker(group, change, rabbitmq)
        change = group.mark()
        group.add(1)
        assert_settles_on_the_broker(group, change, rabbitmq)
        assert len(group.snapshot().members) == 5
        change = group.mark()
        group.leave("member-00")
        assert_settles_on_the_broker(group, change, rabbitmq)
        work.stop()
        work.wait_all_handled()
        for queue in queues:
            handled = [seq for _, seq in work.handled[queue]]
            assert handled == list(range(work.published[queue])), queue
        assert sum(work.published.values()) > 0
        assert_one_token_per_queue(rabbitmq, queues)
        assert all(not member.failures for member in group.members.values())
    finally:
        work.stop()
        group.close()


def test_the_group_settles_balanced_after_a_members_connection_is_killed(
    rabbitmq: PrivateBroker,
) -> None:
    queues = queue_names("payments", QUEUES)
    work = Work(rabbitmq.amqp_url, queues)
    group = LocalGroup(rabbitmq.amqp_url, "payments", QUEUES, handler_for=work.handler_for)
    try:
        change = group.mark()
        group.add(4)
        work.start()
        assert_settles_on_the_broker(group, change, rabbitmq)
        change = group.kill("member-01", rabbitmq)
        assert group.departed["member-01"].status().error is not None
        settling = assert_settles_on_the_broker(group, change, rabbitmq)
        # Until the others drop the silent member, they wait instead of passing queues round
        # (without that guard: over a thousand releases here). The simulation needs 4.
        assert settling.releases <= 3 * QUEUES
        assert group.snapshot().members == ("member-00", "member-02", "member-03")
        work.stop()
        work.wait_all_handled()
        assert_handled_in_order_but_for_the_killed(work, "member-01")
        assert_one_token_per_queue(rabbitmq, queues)
    finally:
        work.stop()
        group.close()


def test_seeding_twice_or_at_once_never_duplicates_a_token(rabbitmq: PrivateBroker) -> None:
    queues = queue_names("invoices", 8)
    # An interrupted seeding: tokens in some queues, no marker yet.
    connection = pika.BlockingConnection(pika.URLParameters(rabbitmq.amqp_url))
    channel = connection.channel()
    for queue in queues[:3]:
        channel.queue_declare(queue, durable=True, arguments={"x-single-active-consumer": True})
        channel.basic_publish(
            "", queue, b"token", pika.BasicProperties(type="rebalancing.sac-token")
        )
    connection.close()

    outcomes: list[bool] = []
    failures: list[BaseException] = []
    barrier = threading.Barrier(4)

    def seed() -> None:
        try:
            seeder = pika.BlockingConnection(pika.URLParameters(rabbitmq.amqp_url))
            barrier.wait(30.0)
            outcomes.append(ensure_tokens(seeder, "invoices", queues))
            seeder.close()
        except BaseException as error:
            failures.append(error)

    seeders = [threading.Thread(target=seed) for _ in range(4)]
    for thread in seeders:
        thread.start()
    for thread in seeders:
        thread.join(60.0)
    assert failures == []
    assert sorted(outcomes) == [False, False, False, True]
    assert_one_token_per_queue(rabbitmq, queues)

    group = LocalGroup(rabbitmq.amqp_url, "invoices", 8)
    try:
        group.add(2)  # they hold the tokens now: no queue has a ready message
        later = pika.BlockingConnection(pika.URLParameters(rabbitmq.amqp_url))
        assert ensure_tokens(later, "invoices", queues) is False
        later.close()
        assert all(not member.seeded for member in group.members.values())
        assert_one_token_per_queue(rabbitmq, queues)
    finally:
        group.close()


def test_the_command_prints_one_json_object_with_real_and_simulated_releases(
    rabbitmq: PrivateBroker,
) -> None:
    command = [
        sys.executable,
        "-m",
        "tools.rabbitmq_experiment",
        "--queues",
        "8",
        "--apps",
        "2",
        "--json",
        "--amqp-url",
        rabbitmq.amqp_url,
    ]
    completed = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
        cwd=REPOSITORY,  # tools/ is run from the repository's root
    )
    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout)
    assert [phase["phase"] for phase in result["phases"]] == ["cold_start", "join", "leave"]
    assert [phase["members"] for phase in result["phases"]] == [2, 3, 2]
    for phase in result["phases"]:
        assert phase["settled"] is True
        assert sum(phase["active_counts"].values()) == 8
        counts = phase["active_counts"].values()
        assert max(counts) - min(counts) <= 1
        assert phase["releases"] >= 0
        assert phase["settle_seconds"] >= 0
    queues = queue_names("any", 8)
    simulation = Session(engine="reference")
    cold_start, join, leave = ["m-00", "m-01"], ["m-00", "m-01", "m-02"], ["m-01", "m-02"]
    predicted = [simulation.rebalance(queues, apps).releases for apps in (cold_start, join, leave)]
    assert [phase["simulated_releases"] for phase in result["phases"]] == predicted
    # The command deletes what it declared on a broker it was given.
    leftovers = [row["name"] for row in rabbitmq.list_queues() if row["name"].startswith("sac-")]
    assert leftovers == []


def assert_handled_in_order_but_for_the_killed(work: Work, killed: str) -> None:
    """Each queue's work handled once and in order, but for what `killed` handled without
    getting it acknowledged: that is handled again, after it, by the next holder."""
    for queue in work.queues:
        survivors = {seq for member, seq in work.handled[queue] if member != killed}
        kept = [
            seq
            for member, seq in work.handled[queue]
            if not (member == killed and seq in survivors)
        ]
        assert kept == list(range(work.published[queue])), queue


def test_a_group_on_quorum_queues_settles_and_keeps_each_queues_order(
    rabbitmq: PrivateBroker,
) -> None:
    """Quorum queues refuse a channel-wide prefetch, and give a returned message back at the
    head of the queue, but may hand the token to its next holder after work it had received
    early: cold start, join, graceful leave and a killed member, as on classic queues."""
    queues = queue_names("ledger", QUEUES)
    work = Work(rabbitmq.amqp_url, queues)
    group = LocalGroup(
        rabbitmq.amqp_url,
        "ledger",
        QUEUES,
        handler_for=work.handler_for,
        release="newest",
        queue_type="quorum",
    )
    try:
        change = group.mark()
        group.add(3)
        work.start()
        assert_settles_on_the_broker(group, change, rabbitmq)
        rows = rabbitmq.ctl_json("list_queues", "name", "type")
        assert {row["type"] for row in rows if row["name"] in queues} == {"quorum"}
        change = group.mark()
        group.add(1)
        assert_settles_on_the_broker(group, change, rabbitmq)
        change = group.mark()
        group.leave("member-00")
        assert_settles_on_the_broker(group, change, rabbitmq)
        change = group.kill("member-02", rabbitmq)
        assert_settles_on_the_broker(group, change, rabbitmq)
        assert group.snapshot().members == ("member-01", "member-03")
        work.stop()
        work.wait_all_handled()
        assert_handled_in_order_but_for_the_killed(work, "member-02")
        assert sum(work.published.values()) > 0
        assert_one_token_per_queue(rabbitmq, queues)
        assert all(not member.failures for member in group.members.values())
    finally:
        work.stop()
        group.close()


def test_a_member_whose_queues_are_of_another_type_raises_from_start(
    rabbitmq: PrivateBroker,
) -> None:
    queues = queue_names("refunds", 4)
    connection = pika.BlockingConnection(pika.URLParameters(rabbitmq.amqp_url))
    channel = connection.channel()
    for queue in queues:  # declared by someone else, as quorum queues
        arguments = {"x-queue-type": "quorum", "x-single-active-consumer": True}
        channel.queue_declare(queue, durable=True, arguments=arguments)
    connection.close()
    classic = GroupMember(rabbitmq.amqp_url, "refunds", queues, "classic-seeder")
    with pytest.raises(MemberStartError, match=r"x-queue-type.*queue_type is 'classic'"):
        classic.start(timeout=20)  # the seeding declaration is refused
    assert classic.join(10.0)
    quorum = GroupMember(rabbitmq.amqp_url, "refunds", queues, "q", queue_type="quorum")
    try:
        assert quorum.start(timeout=20).error is None
        deadline = time.monotonic() + 30.0  # the tokens reach their only member
        while quorum.status().active != frozenset(queues) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert quorum.status().active == frozenset(queues)
        late = GroupMember(rabbitmq.amqp_url, "refunds", queues, "classic-late")
        with pytest.raises(MemberStartError, match="x-queue-type"):
            late.start(timeout=20)  # the group is seeded: its queues are checked
        assert late.join(10.0)
    finally:
        quorum.leave()
    assert_one_token_per_queue(rabbitmq, queues)


@pytest.mark.xdist_group("rabbitmq")
def test_the_broker_command_prints_its_url_and_stops_at_sigterm(tmp_path: Path) -> None:
    """`python -m tools.rabbitmq_broker`: members in other processes connect to the URL it
    prints; SIGTERM stops the node, and its directory (given here) keeps the logs."""
    directory = tmp_path / "broker"
    command = [sys.executable, "-m", "tools.rabbitmq_broker", "--directory", str(directory)]
    process = subprocess.Popen(
        command,
        cwd=REPOSITORY,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("amqp://guest:guest@127.0.0.1:"), process.stderr
        connection = pika.BlockingConnection(pika.URLParameters(url))
        connection.channel().queue_declare("from-another-process")
        connection.close()
        process.send_signal(signal.SIGTERM)
        assert process.wait(90) == 0
        with pytest.raises(pika.exceptions.AMQPConnectionError):
            pika.BlockingConnection(pika.URLParameters(url))
        assert (directory / "server.out").exists()
    finally:
        stop_process_group(process)


# --- without a broker ------------------------------------------------------------------------


def test_start_raises_when_the_member_cannot_connect_or_does_not_subscribe_in_time() -> None:
    with socket.socket() as closed:  # a port of 127.0.0.1 that nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    refused = GroupMember(f"amqp://guest:guest@127.0.0.1:{port}/%2F", "g", ["g.q0"], "m")
    with pytest.raises(MemberStartError, match="could not subscribe") as raised:
        refused.start(timeout=30)
    assert isinstance(raised.value.__cause__, pika.exceptions.AMQPConnectionError)
    with socket.socket() as silent:  # accepts connections and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        url = f"amqp://guest:guest@{address}/%2F?socket_timeout=2&stack_timeout=3"
        hanging = GroupMember(url, "g", ["g.q0"], "m")
        started = time.monotonic()
        with pytest.raises(TimeoutError, match=r"did not subscribe within 0\.5 s"):
            hanging.start(timeout=0.5)
        assert time.monotonic() - started < 2.0
        assert hanging.join(30.0)  # it gave up: its thread ends once the handshake fails


@pytest.mark.parametrize(
    ("queue_type", "message"),
    [("stream", "'stream' cannot carry a group"), ("lazy", "unknown queue_type 'lazy'")],
)
def test_a_queue_type_that_cannot_carry_a_group_is_refused_by_name(
    queue_type: str, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        GroupMember("amqp://unused", "g", ["g.q0"], "m", queue_type=queue_type)


def spec_release_enabled(
    member: str, counts: dict[str, int], start: dict[str, int], queue_count: int, variant: str
) -> bool:
    """The spec's Release guard, transcribed directly (Position, IdealNumber) over a view."""
    mine = counts[member]

    def ahead(other: str) -> bool:
        theirs = counts[other]
        if other == member or theirs == 0:
            return False
        tied_by_id = theirs == mine and start[member] < start[other]
        if variant == "spec":
            return theirs >= mine or tied_by_id
        return theirs > mine or tied_by_id

    position = -1 if mine == 0 else sum(ahead(other) for other in start)
    ideal, remainder = divmod(queue_count, len(start))
    if remainder and remainder >= position + 1:
        ideal += 1
    return mine > ideal


@given(
    counts=st.lists(st.integers(0, 9), min_size=1, max_size=7),
    extra_queues=st.integers(0, 12),
    variant=st.sampled_from(["id", "spec"]),
    data=st.data(),
)
def test_a_member_releases_exactly_when_the_spec_enables_its_release(
    counts: list[int], extra_queues: int, variant: str, data: st.DataObject
) -> None:
    members = [f"m{number}" for number in range(len(counts))]
    active = dict(zip(members, counts, strict=True))
    start_numbers = data.draw(st.permutations(range(1, len(members) + 1)))
    start = dict(zip(members, start_numbers, strict=True))
    start_keys = {member: (number, member) for member, number in start.items()}
    queue_count = sum(counts) + extra_queues
    for member in members:
        expected = spec_release_enabled(member, active, start, queue_count, variant)
        chosen = "spec" if variant == "spec" else "id"
        assert release_due(member, active, start_keys, queue_count, chosen) == expected


def _processes_in_group(group: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == group and fields[0] != "Z":
                found.append(int(entry.name))
    return found


def test_stopping_a_broker_process_ends_its_whole_process_group() -> None:
    parent = subprocess.Popen(
        ["sh", "-c", "trap '' TERM; sleep 300 & sleep 300 & wait"], start_new_session=True
    )
    deadline = time.monotonic() + 30.0
    while len(_processes_in_group(parent.pid)) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(_processes_in_group(parent.pid)) == 3
    stop_process_group(parent, grace=0.5)
    assert parent.returncode == -signal.SIGKILL  # it ignored SIGTERM
    deadline = time.monotonic() + 10.0
    while _processes_in_group(parent.pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _processes_in_group(parent.pid) == []


def test_a_failed_install_is_an_error_that_carries_apt_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_apt = tmp_path / "apt-get"
    fake_apt.write_text("#!/bin/sh\necho 'E: the mirror is unreachable'\nexit 100\n")
    fake_apt.chmod(0o755)
    monkeypatch.setattr(rabbitmq_broker, "find_scripts", lambda: None)
    monkeypatch.setattr(rabbitmq_broker.os, "geteuid", lambda: 0)  # no sudo in front of it
    with pytest.raises(BrokerUnavailableError, match="the mirror is unreachable"):
        rabbitmq_broker.install_rabbitmq(apt_get=str(fake_apt))


def test_importing_the_library_does_not_import_pika() -> None:
    program = (
        "import sys, rebalancing, rebalancing.strategies, rebalancing.adapters; "
        "print('pika' in sys.modules)"
    )
    completed = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True
    )
    assert completed.stdout.strip() == "False"
