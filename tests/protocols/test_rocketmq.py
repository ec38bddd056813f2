"""RocketMQ's rebalancing in seconds (rebalancing.protocols.rocketmq): worked timelines with kept
phases (nothing drawn; every figure derived by hand in the comments from the module's rules and
RocketMQ's defaults), the change kinds, the broker-side session, properties over random groups
and a stateful machine."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from rebalancing.contract import ChangeAwareSession, ProtocolRun
from rebalancing.evaluation.scenarios.changes import Scenario, ScenarioSettings, scenario_seed
from rebalancing.protocols.rocketmq import (
    RocketMQSession,
    RocketMQTimers,
    broker_session,
    client_session,
)
from rebalancing.strategies import averagely, round_robin, sticky


def kept(**timers: int) -> RocketMQSession:
    return client_session(averagely.assign, seed=0, phases="kept", timers=RocketMQTimers(**timers))


def times(run: ProtocolRun) -> tuple[Any, ...]:
    """(seconds to balance, unowned, doubly owned, paused), rounded off float noise."""
    return tuple(
        round(value or 0.0, 9)
        for value in (
            run.seconds_to_balance,
            run.queue_seconds_unowned,
            run.queue_seconds_doubly_owned,
            run.queue_seconds_paused,
        )
    )


def test_the_timers_default_to_rocketmqs() -> None:
    timers = RocketMQTimers()
    assert timers.rebalance_wait_interval_ms == 20_000
    assert timers.rebalance_min_interval_ms == 1_000
    assert timers.first_pull_delay_ms == 500
    assert timers.heartbeat_broker_interval_ms == timers.poll_name_server_interval_ms == 30_000
    assert timers.channel_expired_timeout_ms == timers.server_channel_max_idle_ms == 120_000
    assert timers.channel_scan_interval_ms == 10_000
    assert timers.seconds("rebalance_wait_interval") == 20.0


def test_bad_options_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="first_pull_delay_ms"):
        RocketMQTimers(first_pull_delay_ms=1_000)
    with pytest.raises(TypeError, match="channel_scan_interval_ms"):
        RocketMQTimers(channel_scan_interval_ms=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="rebalance_wait_interval_ms"):
        RocketMQTimers(rebalance_wait_interval_ms=0)
    with pytest.raises(ValueError, match="plan_seconds"):
        client_session(averagely.assign, seed=0, plan_seconds=0.1)
    with pytest.raises(ValueError, match="phases"):
        client_session(averagely.assign, seed=0, phases="synced")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="crashed client 'z'"):
        kept().change(range(2), ["a"], crashed=["z"])


def test_a_cold_start_waits_the_least_interval_then_the_first_pull() -> None:
    # both clients are built at 0, so their first runs wait the 1 s least interval; each
    # queue's first pull follows 0.5 s later: 4 queues unread 1.5 s each
    session = kept()
    run = session.rebalance(range(4), ["a", "b"])
    assert run.owners == {"a": [0, 1], "b": [2, 3]}
    assert times(run) == (1.5, 6.0, 0.0, 0.0)
    assert (run.steps, run.releases, run.rounds, session.now) == (4, 0, 1, 1.5)


def test_a_join_is_notified_at_once_and_the_newcomer_runs_a_second_later() -> None:
    session = kept()
    session.rebalance(range(4), ["a", "b"])  # a and b last ran at 1.0; now 1.5
    run = session.rebalance(range(4), ["a", "b", "c"])
    # the broker notifies a and b at 1.5 (arriving at 1.51), but they ran at 1.0: they run at
    # 2.0; b drops queue 3 then; c, built at 1.5, runs at 2.5 and reads 3 from 3.0
    assert run.owners == {"a": [0, 1], "b": [2], "c": [3]}
    assert times(run) == (1.5, 1.0, 0.0, 1.0)
    assert (run.releases, run.steps, run.queues_paused, session.now) == (1, 1, 1, 3.0)


def test_a_notification_slower_than_the_newcomer_reads_queues_twice() -> None:
    session = kept(notify_delay_ms=2_000)
    session.rebalance(range(6), ["a", "b"])  # a: 0-2, b: 3-5; now 1.5
    run = session.rebalance(range(6), ["a", "b", "c"])
    # c runs at 2.5 and reads 4 and 5 from 3.0; a and b hear of c only at 3.5: b drops 4, 5
    # then (0.5 s each read twice), takes 2 from a, which drops it at 3.5: read from 4.0
    assert run.owners == {"a": [0, 1], "b": [2, 3], "c": [4, 5]}
    assert times(run) == (2.5, 0.5, 1.0, 0.5)
    assert session.most_consumers() == 2


def test_two_clients_a_join_the_notification_and_the_20_s_period() -> None:
    # a alone: built at 0, its first run at 1.0 (the least interval), reads 0-3 from 1.5
    for late_ms, expected in ((10, (1.5, 2.0, 0.0, 2.0)), (30_000, (19.5, 0.0, 36.0, 0.0))):
        session = kept(notify_delay_ms=late_ms)
        session.rebalance(range(4), ["a"])
        run = session.rebalance(range(4), ["a", "b"])
        assert run.owners == {"a": [0, 1], "b": [2, 3]}
        assert times(run) == expected
        assert (run.releases, run.steps, run.rounds) == (2, 2, 1)
    # b joins at 1.5. On time, the notice reaches a at 1.51, a runs at 2.0 (1 s after its run
    # at 1.0) and drops 2 and 3; b runs at 2.5 (1 s after its start), reads them from 3.0:
    # 2 queues read by nobody for 1 s, time 3.0 - 1.5. Late as if lost (RocketMQ sends it
    # one-way, and never again): b still runs at 2.5 and reads 2 and 3 from 3.0, while a reads
    # all four until its periodic run at 21.0 (20 s after 1.0): 2 queues read twice for 18 s,
    # none read by nobody, time 21.0 - 1.5
    assert session.now == 21.0
    assert session.most_consumers() == 2


def test_a_graceful_leave_is_notified_at_once() -> None:
    session = kept()
    session.rebalance(range(6), ["a", "b", "c"])  # everyone ran at 1.0; now 1.5
    run = session.rebalance(range(6), ["b", "c"])
    # a shuts down at 1.5: 0 and 1 unread from then; b and c run at 2.0 (least interval):
    # b takes 0, 1 and drops 3, which c takes: all read from 2.5
    assert run.owners == {"b": [0, 1, 2], "c": [3, 4, 5]}
    assert times(run) == (1.0, 2.5, 0.0, 0.5)
    assert (run.releases, run.steps) == (1, 3)
    assert times(kept().apply_change(range(6), ["a"], "rolling_restart")) == times(
        kept().rebalance(range(6), ["a"])
    )


def test_a_crash_closed_as_idle_is_notified_after_two_minutes() -> None:
    session = kept()
    session.rebalance(range(6), ["a", "b", "c"])
    run = session.apply_change(range(6), ["b", "c"], "crash")
    # a crashes at 1.5; its last heartbeat was at 0, so the channel expires at 120 and the
    # scan (every 10 s) would find it at 130, but the channel is closed as idle at 121.5 and
    # that notifies: b and c ran at 121.0, so they run at 122.0 and read from 122.5.
    # Queues 0, 1: 121 s each; queue 3 (b drops it, c takes it): 0.5 s
    assert run.owners == {"b": [0, 1, 2], "c": [3, 4, 5]}
    assert times(run) == (121.0, 242.5, 0.0, 0.5)
    assert session.now == 122.5


def test_a_crash_found_by_the_expiry_scan_is_not_notified() -> None:
    session = kept(server_channel_max_idle_ms=300_000)
    session.rebalance(range(6), ["a", "b", "c"])
    run = session.apply_change(range(6), ["b", "c"], "crash")
    # the scan at 130 removes a without a notification: b and c see it at their periodic run
    # at 141.0 (every 20 s from 1.0) and read from 141.5: 140 s for queues 0 and 1
    assert times(run) == (140.0, 280.5, 0.0, 0.5)
    crashing = client_session(
        averagely.assign,
        seed=0,
        phases="kept",
        departures="crash",
        timers=RocketMQTimers(server_channel_max_idle_ms=300_000),
    )
    crashing.rebalance(range(6), ["a", "b", "c"])
    assert times(crashing.rebalance(range(6), ["b", "c"])) == times(run)


def test_queues_added_wait_for_the_name_server_poll_and_the_next_run() -> None:
    session = kept()
    session.rebalance(range(4), ["a", "b"])
    run = session.rebalance(range(6), ["a", "b"])
    # a and b poll the name server every 30 s from 0: they learn of 4 and 5 at 30 and use
    # them at their run at 41.0: 4 and 5 unread 40 s; 2 moves from b to a (0.5 s)
    assert run.owners == {"a": [0, 1, 2], "b": [3, 4, 5]}
    assert times(run) == (40.0, 80.5, 0.0, 0.5)


def test_an_unchanged_group_costs_nothing_and_keeps_the_clock() -> None:
    session = kept()
    session.rebalance(range(4), ["a", "b"])
    run = session.rebalance(range(4), ["b", "a"])
    assert times(run) == (0.0, 0.0, 0.0, 0.0)
    assert session.now == 1.5
    assert run.owners == {"a": [0, 1], "b": [2, 3]}


def test_the_broker_computes_on_the_request_path_and_knows_the_previous_plan() -> None:
    session = broker_session(sticky.assign, seed=0, phases="kept", plan_seconds=0.25)
    run = session.rebalance(range(6), ["a", "b"])
    # each run's query waits 0.25 s for the plan: runs at 1.0 apply at 1.25, read at 1.75
    assert times(run) == (1.75, 10.5, 0.0, 0.0)
    first = run.owners
    joined = session.rebalance(range(6), ["a", "b", "c"])
    assert joined.owners == sticky.assign(range(6), ["a", "b", "c"], first)
    assert joined.releases == 2  # sticky moves one queue from each; averagely would move 3
    assert isinstance(session, ChangeAwareSession)


def test_client_side_plans_are_the_assignors_own_at_quiescence() -> None:
    session = client_session(round_robin.assign, seed=5)
    for consumers in (["a", "b"], ["a", "b", "c"], ["b", "c"], ["b", "c", "d", "e"]):
        run = session.apply_change(range(9), consumers, "crash")
        assert run.converged
        assert run.owners == round_robin.assign(range(9), consumers)


groups = st.lists(
    st.tuples(
        st.integers(0, 12),  # queues
        st.sets(st.sampled_from("abcdef"), max_size=5),  # consumers
        st.sampled_from(["crash", "rolling_restart", "consumer_leave"]),
    ),
    min_size=1,
    max_size=5,
)


@settings(max_examples=25, deadline=None)
@given(groups, st.integers(0, 2**32 - 1), st.sampled_from(["client", "broker"]))
def test_every_queue_is_owned_once_at_quiescence_and_the_seed_decides(
    changes: list[tuple[int, set[str], str]], seed: int, mode: str
) -> None:
    factory = client_session if mode == "client" else broker_session
    runs: list[list[ProtocolRun]] = []
    for _ in range(2):
        session = factory(averagely.assign, seed=seed)
        runs.append([session.apply_change(range(q), sorted(c), k) for q, c, k in changes])
        for (queue_count, consumers, _), run in zip(changes, runs[-1], strict=True):
            assert run.converged
            owned = sorted(queue for queues in run.owners.values() for queue in queues)
            assert owned == (list(range(queue_count)) if consumers else [])
            assert sorted(run.owners) == sorted(consumers)
            assert 0 <= (run.queue_seconds_paused or 0) <= (run.queue_seconds_unowned or 0)
            assert (run.queue_seconds_doubly_owned or 0) >= 0
    assert runs[0] == runs[1]


class WatchedViews(RocketMQSession):
    """A client-side session that records each run: its time, the client and the view it read
    (a run's time is its client's `next_run` when `_view` is called)."""

    def __init__(self, seed: int) -> None:
        super().__init__(averagely.assign, mode="client", seed=seed)
        self.runs: list[tuple[float, Any, tuple[Any, ...]]] = []

    def _view(self, client: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        view = super()._view(client)
        name = next(name for name, known in self.clients.items() if known is client)
        self.runs.append((client.next_run, name, view))
        return view


def replay_read_twice(session: WatchedViews, views: dict[Any, Any], end: float) -> float:
    """Replay the last change's ledger with the runs between its records: assert that the
    readers of a queue read twice never share a view, and that every queue is read by one
    client at quiescence; the queue-seconds read twice (`views`: each client's view before
    the change, updated in place)."""
    ledger = session._ledger
    readers: dict[Any, set[Any]] = {queue: set() for queue in ledger.queues}
    for member, held in ledger.holdings.items():
        for queue in held:
            readers[queue].add(member)
    runs = [(time, -1, name, view) for time, name, view in session.runs if time >= ledger.start]
    records = [  # one record moves a batch of queues at one instant: one event per queue
        (time, order, member, (kind, queue))
        for time, order, kind, member, queues, _ in ledger.records
        for queue in sorted(queues)
    ]
    events = sorted([*runs, *records], key=lambda event: (event[0], event[1]))
    read_twice, last = 0.0, ledger.start
    for time, order, member, what in [*events, (end, -2, None, None)]:
        if time > last:
            for queue, members in readers.items():
                if len(members) >= 2:
                    assert len({views[member] for member in members}) > 1, (queue, members)
                    read_twice += time - last
            last = time
        if order == -1:
            views[member] = what
        elif what is not None:
            kind, queue = what
            (readers[queue].discard if kind == 0 else readers[queue].add)(member)
    if session.clients:
        assert all(len(members) == 1 for members in readers.values())
    return read_twice


scenario_settings = ScenarioSettings(
    queue_range=(1, 16), consumer_range=(1, 6), change_count_range=(1, 5)
)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**16), st.integers(0, 2**16))
def test_in_seeded_scenarios_a_queue_is_read_twice_only_while_views_disagree(
    base_seed: int, index: int
) -> None:
    scenario = Scenario(base_seed, index, scenario_settings)
    session = WatchedViews(scenario_seed(base_seed, index))
    views: dict[Any, Any] = {}
    for step in scenario.steps():
        session.runs.clear()
        run = session.apply_change(step.queues, step.consumers, step.kind)
        assert run.converged
        assert run.owners == averagely.assign(step.queues, step.consumers)
        read_twice = replay_read_twice(session, views, session.now)
        assert read_twice == pytest.approx(run.queue_seconds_doubly_owned or 0.0, abs=1e-6)


class RocketMQGroup(RuleBasedStateMachine):
    """A client-side group under joins, leaves, crashes and queue changes: after every
    change the group is quiet, every queue is read by exactly one client, the plan is the
    assignor's for the final view, and the clock never runs back."""

    def __init__(self) -> None:
        super().__init__()
        self.session = client_session(averagely.assign, seed=7)
        self.queues = 4
        self.members: list[str] = []
        self.joined = 0
        self.run: ProtocolRun | None = None
        self.clock = 0.0

    def apply(self, kind: str) -> None:
        before = self.session.now
        self.run = self.session.apply_change(range(self.queues), self.members, kind)
        assert self.session.now >= before
        self.clock = self.session.now

    @rule(count=st.integers(1, 3))
    def join(self, count: int) -> None:
        for _ in range(count):
            self.members.append(f"c{self.joined:02d}")
            self.joined += 1
        self.apply("consumer_join")

    @precondition(lambda self: self.members)
    @rule(index=st.integers(0, 10), kind=st.sampled_from(["crash", "consumer_leave"]))
    def depart(self, index: int, kind: str) -> None:
        self.members.pop(index % len(self.members))
        self.apply(kind)

    @rule(queues=st.integers(0, 10))
    def resize(self, queues: int) -> None:
        self.queues = queues
        self.apply("queues_changed")

    @invariant()
    def quiet_and_owned_once(self) -> None:
        if self.run is None:
            return
        assert self.run.converged
        assert self.run.owners == averagely.assign(range(self.queues), self.members)
        reading = self.session._reading(list(range(self.queues)))
        assert all(len(readers) == (1 if self.members else 0) for readers in reading.values())
        assert (self.run.seconds_to_balance or 0) <= self.clock


def test_the_group_machine() -> None:
    RocketMQGroup.TestCase.settings = settings(
        max_examples=20, stateful_step_count=8, deadline=None
    )
    RocketMQGroup.TestCase().runTest()
