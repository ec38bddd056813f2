"""super_stream: sorted partition i to the consumer at position i mod n of the join order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rebalancing.strategies import round_robin, super_stream
from rebalancing.testing import check_strategy
from tests.groups import GroupCase, groups


def test_the_contract_holds() -> None:
    check_strategy(super_stream.assign)


def test_consumers_are_dealt_partitions_in_the_order_they_joined() -> None:
    session = super_stream.Session()
    partitions = [f"invoices-{n}" for n in range(5)]
    session.rebalance(partitions, ["c"])
    run = session.rebalance(partitions, ["a", "c"])  # a joins after c, although it sorts first
    assert run.owners == {
        "a": ["invoices-1", "invoices-3"],
        "c": ["invoices-0", "invoices-2", "invoices-4"],
    }
    assert (run.releases, run.steps, run.rounds, run.converged) == (2, 2, 1, True)


def test_a_departure_shifts_everyone_after_it() -> None:
    session = super_stream.Session()
    partitions = list(range(6))
    session.rebalance(partitions, ["x", "y", "z"])  # joined at once: sorted order x, y, z
    run = session.rebalance(partitions, ["y", "z"])  # x leaves: y and z move up one place
    assert run.owners == {"y": [0, 2, 4], "z": [1, 3, 5]}
    # x held 0 and 3: they change hands without anyone stepping down; 1 (y -> z) and 2 (z -> y)
    # need their active consumer, still present, to step down; 4 and 5 stay.
    assert (run.releases, run.steps, run.rounds) == (2, 4, 1)


def test_a_rebalance_that_changes_nothing_costs_nothing() -> None:
    session = super_stream.Session()
    session.rebalance(range(7), ["a", "b"])
    run = session.rebalance(range(7), ["b", "a"])
    assert (run.releases, run.steps, run.rounds) == (0, 0, 0)


def test_a_member_that_leaves_and_returns_joins_at_the_end() -> None:
    session = super_stream.Session()
    session.rebalance(range(3), ["a", "b", "c"])
    session.rebalance(range(3), ["b", "c"])
    assert session.rebalance(range(3), ["a", "b", "c"]).owners == {"a": [2], "b": [0], "c": [1]}


@given(groups(min_consumers=1))
def test_without_a_join_order_it_is_round_robin(case: GroupCase) -> None:
    assert super_stream.assign(case.queues, case.consumers, case.previous) == round_robin.assign(
        case.queues, case.consumers
    )


@given(st.lists(st.sets(st.integers(0, 9), min_size=1), min_size=1, max_size=6), st.integers(0, 30))
def test_sessions_stay_balanced_and_follow_the_join_order(
    memberships: list[set[int]], partition_count: int
) -> None:
    session = super_stream.Session()
    join_order: list[int] = []
    for members in memberships:
        join_order = [m for m in join_order if m in members] + sorted(members - set(join_order))
        run = session.rebalance(range(partition_count), members)
        counts = [len(owned) for owned in run.owners.values()]
        assert max(counts) - min(counts) <= 1
        for partition in range(partition_count):
            assert partition in run.owners[join_order[partition % len(join_order)]]
