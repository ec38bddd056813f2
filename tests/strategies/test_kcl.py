"""AWS KCL 2.x lease taking: the rules of DynamoDBLeaseTaker, in time."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rebalancing.strategies import STRATEGIES, kcl
from rebalancing.strategies.kcl import (
    FAILOVER_TIME_MILLIS,
    Session,
    renewer_interval,
    taker_interval,
)
from tests.groups import membership_changes

TAKER = taker_interval(FAILOVER_TIME_MILLIS)
RENEWER = renewer_interval(FAILOVER_TIME_MILLIS)


def test_the_taker_runs_every_twice_the_failover_time_and_the_renewer_three_times_as_often() -> (
    None
):
    # DynamoDBLeaseCoordinator: (failover + epsilon) * 2 and failover / 3 - epsilon
    assert pytest.approx(20.05) == TAKER
    assert pytest.approx(10 / 3 - 0.025) == RENEWER


def test_a_new_worker_steals_one_lease_per_taker_run_from_the_most_loaded() -> None:
    session = Session(seed=4)
    session.rebalance(range(8), ["w1"])
    run = session.rebalance(range(8), ["w1", "w2"])
    assert sorted(len(owned) for owned in run.owners.values()) == [4, 4]
    assert (run.claims, run.steals, run.rounds) == (0, 4, 4)
    assert run.seconds_to_balance is not None
    # the fourth steal comes three taker runs after the first, its victim notices at its next
    # renewal
    assert 3 * TAKER <= run.seconds_to_balance <= 3 * TAKER + RENEWER
    assert run.queue_seconds_doubly_owned is not None
    assert 0 < run.queue_seconds_doubly_owned <= 4 * RENEWER
    assert run.queue_seconds_unowned == 0.0


def test_a_departed_worker_s_leases_wait_until_the_takers_see_them_expired() -> None:
    session = Session(seed=9)
    session.rebalance(range(8), ["w1", "w2"])
    run = session.rebalance(range(8), ["w1"])
    assert run.owners == {"w1": list(range(8))}
    assert run.releases == 0  # KCL 2.x drops a stopping worker's leases without releasing them
    assert run.claims == 4
    assert run.queue_seconds_unowned is not None
    # a scan sees the last renewal, a scan more than failoverTimeMillis later sees it expired:
    # at least a taker run minus a renewal interval after the worker left, at most three runs
    assert 4 * (TAKER - RENEWER) <= run.queue_seconds_unowned <= 4 * 3 * TAKER


def test_new_unowned_leases_are_taken_first_and_all_by_the_first_taker() -> None:
    session = Session(seed=1)
    session.rebalance(range(4), ["w1", "w2"])
    run = session.rebalance(range(12), ["w1", "w2"])  # eight new shards' leases, never renewed
    assert run.claims == 8
    assert run.steals is not None
    assert run.steals >= 1
    assert sorted(len(owned) for owned in run.owners.values()) == [6, 6]


def test_of_two_takes_of_one_lease_one_wins() -> None:
    run = Session(seed=2).rebalance(range(10), ["w1", "w2", "w3"])  # all start together
    assert run.claims == 10
    assert sorted(q for owned in run.owners.values() for q in owned) == list(range(10))


def test_a_quiet_group_takes_no_step_when_nothing_changed() -> None:
    session = Session(seed=2)
    first = session.rebalance(range(10), ["a", "b", "c"])
    again = session.rebalance(range(10), ["a", "b", "c"])
    assert again.owners == first.owners
    assert (again.steps, again.rounds, again.seconds_to_balance) == (0, 0, 0.0)


@settings(max_examples=60, deadline=None)
@given(membership_changes, st.integers(0, 2**32))
def test_every_lease_ends_owned_and_the_counts_differ_by_at_most_one(
    steps: list[tuple[int, set[str]]], seed: int
) -> None:
    session = Session(seed=seed)
    for count, consumers in steps:
        run = session.rebalance(range(count), consumers)
        assert run.converged
        assert session.rule_violations() == []
        if not consumers:  # the group emptied: nobody owns anything
            assert run.owners == {}
            continue
        assert sorted(q for owned in run.owners.values() for q in owned) == list(range(count))
        counts = [len(owned) for owned in run.owners.values()]
        assert max(counts) - min(counts) <= 1
        assert run.queue_seconds_doubly_owned is not None
        # a victim notices at its next renewal, at most one renewer interval on (float slack)
        assert run.queue_seconds_doubly_owned <= (run.steals or 0) * RENEWER + 1e-9


def test_a_worker_back_under_its_old_id_after_the_group_emptied_renews_its_leases_at_once() -> None:
    """Its lease coordinator's start renews every lease that names it, even expired ones
    (DynamoDBLeaseRenewer.initialize): no take, no wait, and the table forgets its departure."""
    session = Session(seed=0)
    session.rebalance([0, 1, 2], ["worker-a"])
    assert session.rebalance([0, 1, 2], []).owners == {}
    back = session.rebalance([0, 1, 2], ["worker-a"])
    assert back.converged
    assert back.owners == {"worker-a": [0, 1, 2]}
    assert (back.claims, back.steals, back.rounds) == (0, 0, 0)
    assert back.queue_seconds_unowned == 0.0
    assert session.departed == {}


def test_a_worker_back_after_the_group_emptied_waits_for_the_others_leases_to_expire() -> None:
    session = Session(seed=0)
    session.rebalance(range(4), ["a", "b"])
    session.rebalance(range(4), [])
    back = session.rebalance(range(4), ["b"])
    assert back.converged
    assert back.owners == {"b": [0, 1, 2, 3]}
    assert (back.claims, back.steals) == (2, 0)  # a's two leases, once expired; its own renewed
    assert back.seconds_to_balance is not None
    assert back.seconds_to_balance > FAILOVER_TIME_MILLIS / 1000


def test_the_stateless_assign_keeps_what_the_present_workers_hold() -> None:
    previous = {"a": [0, 1, 2], "b": [3, 4, 5]}
    assert kcl.assign(range(6), ["a", "b"], previous) == previous


def test_it_runs_on_aws_kcl_only() -> None:
    assert STRATEGIES["kcl"].systems == frozenset({"aws-kcl"})


def test_settings_it_cannot_run_with_are_refused() -> None:
    with pytest.raises(ValueError, match="max_leases_to_steal_at_one_time"):
        Session(max_leases_to_steal_at_one_time=0)
    with pytest.raises(TypeError, match="failover_time_millis"):
        Session(failover_time_millis=10.0)  # type: ignore[arg-type]
