"""Properties of Kafka's group-protocol sessions over random sequences of changes: every
partition owned once at quiescence, no partition consumed by two members under the consumer
protocol (nor under the classic one, as modelled), static restarts within the session timeout
move nothing, and the same seed gives the same runs."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from rebalancing.contract import ProtocolRun
from rebalancing.protocols import ClassicSession, ConsumerSession
from rebalancing.strategies import rack_aware_range, sticky

NAMES = ["a", "b", "c", "d", "e"]

change = st.tuples(
    st.sets(st.sampled_from(NAMES), min_size=1),  # the consumers after the change
    st.integers(min_value=1, max_value=12),  # the partitions after it (0..n-1)
    st.booleans(),  # the departures crash
    st.dictionaries(st.sampled_from(NAMES), st.floats(min_value=0, max_value=60), max_size=2),
)


def make(kind: str, seed: int, **options: Any) -> ClassicSession | ConsumerSession:
    if kind == "consumer":
        return ConsumerSession(sticky.assign, seed=seed, **options)
    return ClassicSession(sticky.assign, protocol=kind, seed=seed, **options)  # type: ignore[arg-type]


def drive(session: ClassicSession | ConsumerSession, changes: list[Any]) -> list[ProtocolRun]:
    runs = []
    members: set[str] = set()
    for consumers, partitions, crash, slow in changes:
        gone = members - consumers
        lateness = {m: s for m, s in slow.items() if m in members and m in consumers}
        runs.append(
            session.change(
                range(partitions), sorted(consumers), crashed=gone if crash else (), slow=lateness
            )
        )
        members = set(consumers)
    return runs


kinds = st.sampled_from(["eager", "cooperative", "consumer"])


@given(kinds, st.lists(change, min_size=1, max_size=6), st.integers(0, 2**32))
def test_every_partition_is_owned_once_at_quiescence(
    kind: str, changes: list[Any], seed: int
) -> None:
    session = make(kind, seed)
    for run, (consumers, partitions, _, _) in zip(drive(session, changes), changes, strict=True):
        assert run.converged
        assert set(run.owners) == consumers
        held = sorted(q for queues in run.owners.values() for q in queues)
        assert held == list(range(partitions))
        assert run.queue_seconds_doubly_owned == 0.0
        assert run.queue_seconds_paused is not None
        assert run.queue_seconds_unowned is not None
        assert 0.0 <= run.queue_seconds_paused <= run.queue_seconds_unowned + 1e-9


@given(st.lists(change, min_size=1, max_size=6), st.integers(0, 2**32))
def test_the_consumer_protocol_never_gives_a_partition_to_two_members(
    changes: list[Any], seed: int
) -> None:
    session = ConsumerSession(rack_aware_range.assign, seed=seed)
    for consumers, partitions, crash, slow in changes:
        gone = set(session.clients) - consumers
        lateness = {m: s for m, s in slow.items() if m in session.clients and m in consumers}
        session.change(
            range(partitions), sorted(consumers), crashed=gone if crash else (), slow=lateness
        )  # the coordinator's own records raise AssertionError on a second holder
        assert session.most_consumers() <= 1


@given(kinds, st.sets(st.sampled_from(NAMES), min_size=2), st.integers(1, 12), st.integers(0, 99))
def test_static_restarts_within_the_session_timeout_move_nothing(
    kind: str, consumers: set[str], partitions: int, seed: int
) -> None:
    session = make(kind, seed, static_membership=True)
    before = session.rebalance(range(partitions), sorted(consumers)).owners
    for member in sorted(consumers):
        run = session.restart([member], 44.0)
        assert run.owners == before
        assert run.steps == run.releases == 0


@given(kinds, st.lists(change, min_size=1, max_size=5), st.integers(0, 2**32))
def test_the_same_seed_gives_the_same_runs(kind: str, changes: list[Any], seed: int) -> None:
    assert drive(make(kind, seed), changes) == drive(make(kind, seed), changes)


def test_the_seed_draws_the_heartbeat_phases() -> None:
    def join_seconds(seed: int) -> float | None:
        session = make("eager", seed)
        session.rebalance(range(6), ["a", "b"])
        return session.rebalance(range(6), ["a", "b", "c"]).seconds_to_balance

    assert len({join_seconds(seed) for seed in range(5)}) > 1
