"""sac as a strategy: the protocol run from `previous` to quiescence."""

from __future__ import annotations

import pytest
from hypothesis import given

from rebalancing.sac import model
from rebalancing.strategies import sac, sticky
from tests.groups import GroupCase, groups


def test_the_specs_example_two_queues_two_apps() -> None:
    """a1 takes both queues, a2 waits; a1 releases q2 and a2 is made active on it."""
    run = sac.run(["q1", "q2"], ["a1", "a2"])
    assert run.owners == {"a1": ["q1"], "a2": ["q2"]}
    assert (run.releases, run.converged, run.queues_paused) == (1, True, 1)


def test_apps_still_present_keep_their_queues_when_a_balanced_group_loses_nobody() -> None:
    previous = sticky.assign(range(12), ["a", "b", "c"])
    run = sac.run(range(12), ["a", "b", "c"], previous)
    assert run.owners == previous
    assert (run.releases, run.steps, run.rounds) == (0, 0, 0)


def test_a_newcomer_starts_after_the_existing_apps_and_waits_at_the_back() -> None:
    # "b" was there (start id 1); "a" is new (start id 2) although it sorts first.
    state = sac.protocol_state(["q1", "q2"], ["a", "b"], {"b": ["q1", "q2"]})
    assert (state.start_id["b"], state.start_id["a"], state.next_id) == (1, 0, 2)
    run = sac.run(["q1", "q2"], ["a", "b"], {"b": ["q1", "q2"]})
    assert run.owners == {"a": ["q2"], "b": ["q1"]}


def test_waiting_order_of_existing_apps_follows_their_start_ids() -> None:
    state = sac.protocol_state(
        ["q1", "q2", "q3"], ["x", "y", "z"], {"z": ["q1"], "x": ["q2"], "y": []}
    )
    assert [state.start_id[app] for app in ("x", "y", "z")] == [1, 2, 3]
    assert list(state.waiting["q1"]) == ["x", "y"]
    assert list(state.waiting["q3"]) == ["x", "y", "z"]
    assert model.state_invariant_violations(state) == []


@given(groups(min_consumers=1, max_queues=40, max_consumers=8))
def test_both_variants_converge_to_a_balanced_plan(case: GroupCase) -> None:
    for variant in model.POSITION_VARIANTS:
        run = sac.run(case.queues, case.consumers, case.previous, variant)
        assert run.converged
        counts = [len(owned) for owned in run.owners.values()]
        assert max(counts) - min(counts) <= 1
        assert run.rounds <= run.releases


def test_a_departure_from_a_balanced_group_moves_only_the_departed_apps_queues_here() -> None:
    queues = [f"Q{n}" for n in range(1, 9)]
    previous = sac.assign(queues, ["C0", "C1", "C2"])
    run = sac.run(queues, ["C0", "C2"], previous)
    assert run.converged
    assert sorted(len(owned) for owned in run.owners.values()) == [4, 4]
    for app in ("C0", "C2"):
        assert set(previous[app]) <= set(run.owners[app])


def test_the_step_bound_is_reported_in_the_run() -> None:
    run = sac.run(range(30), range(6), None, "id", max_steps=5)
    assert not run.converged
    assert sorted(queue for owned in run.owners.values() for queue in owned) == list(range(30))


def test_a_session_keeps_the_line_order_the_protocol_built_where_assign_cannot() -> None:
    """Apps join one by one as c, b, a: q1's line is c (active), then b, then a. When c leaves,
    the session promotes b, the next in line; `assign` has only the owners, rebuilds the line in
    sorted id order (a, b) and promotes a."""
    for engine in sac.ENGINES:
        session = sac.Session(engine=engine)
        for apps in (["c"], ["b", "c"], ["a", "b", "c"]):
            previous = session.rebalance(["q1"], apps).owners
        assert previous == {"a": [], "b": [], "c": ["q1"]}
        assert session.snapshot()[2] == (("b", "a"),)
        assert session.rebalance(["q1"], ["a", "b"]).owners == {"a": [], "b": ["q1"]}
        assert sac.assign(["q1"], ["a", "b"], previous) == {"a": ["q1"], "b": []}


def test_a_rejoining_app_is_a_new_app_at_the_back_of_every_line() -> None:
    session = sac.Session()
    session.rebalance(["q1", "q2"], ["a", "b"])
    session.rebalance(["q1", "q2"], ["b"])
    session.rebalance(["q1", "q2"], ["a", "b"])
    _, apps, _, _, start_ids, next_id = session.snapshot()
    assert (apps, start_ids, next_id) == (("a", "b"), (3, 2), 4)


@pytest.mark.parametrize("policy", sac.RELEASE_POLICIES)
def test_every_release_policy_settles_balanced_and_releases_what_it_names(policy: str) -> None:
    run = sac.run(range(6), ["a1", "a2"], release=policy, engine="reference")
    assert sorted(len(owned) for owned in run.owners.values()) == [3, 3]
    # a1 starts first and is active on all six; it releases three of them to a2
    released = set(run.owners["a2"])
    if policy == "highest":
        assert released == {3, 4, 5}
    elif policy == "lowest":
        assert released == {0, 1, 2}
    elif policy == "newest":  # promoted in queue order, so the newest are the highest
        assert released == {3, 4, 5}


def test_newest_releases_the_queue_promoted_last_not_the_highest() -> None:
    """a alone holds queues 1..4; queue 0 is added as b joins: a, first in its line, is
    promoted on 0 last, so `newest` releases 0 where `highest` would release 4."""
    session = sac.Session(release="newest", engine="reference")
    session.rebalance([1, 2, 3, 4], ["a"])
    run = session.rebalance([0, 1, 2, 3, 4], ["a", "b"])
    assert 0 in run.owners["b"]  # 0 became active on a last, so a released it first


def test_bad_parameters_name_the_culprit() -> None:
    with pytest.raises(ValueError, match="release policy 'oldest'"):
        sac.Session(release="oldest")
    with pytest.raises(ValueError, match="Position variant 'ids'"):
        sac.Session(variant="ids")
    with pytest.raises(ValueError, match="engine 'gpu'"):
        sac.run(["q"], ["a"], engine="gpu")  # type: ignore[arg-type]


@pytest.mark.parametrize("engine", sac.ENGINES)
def test_a_session_checks_every_group_it_is_given_even_after_the_same_valid_one(
    engine: sac.Engine,
) -> None:
    """A session skips sorting and checking ids equal to the last ones it was given: anything
    else is checked as `assign` checks it, and a group that raised changes nothing."""
    session = sac.Session(engine=engine)
    first = session.rebalance(["q2", "q1"], ["b", "a"])
    with pytest.raises(TypeError, match="not str"):
        session.rebalance("q1", ["a", "b"])
    with pytest.raises(ValueError, match="duplicate queue id 'q1'"):
        session.rebalance(["q1", "q1"], ["a", "b"])
    with pytest.raises(TypeError, match="cannot be ordered"):
        session.rebalance(["q1", 2], ["a", "b"])
    with pytest.raises(TypeError, match="not hashable"):
        session.rebalance(["q1", "q2"], [["a"], "b"])
    # the same group again, given in another order and as other iterables: nothing to do
    again = session.rebalance(iter(["q1", "q2"]), ("a", "b"))
    assert (again.owners, again.releases, again.steps) == (first.owners, 0, 0)
    fresh = sac.Session(engine=engine)
    fresh.rebalance(["q2", "q1"], ["b", "a"])
    assert session.snapshot() == fresh.snapshot()


def test_a_release_costs_one_two_millisecond_hand_over_and_a_round_of_them_runs_at_once() -> None:
    session = sac.Session(engine="reference")
    session.rebalance(range(8), ["a1"])
    run = session.rebalance(range(8), ["a1", "a2", "a3"])
    assert run.releases > 0
    assert run.seconds_to_balance == pytest.approx(run.rounds * sac.HANDOVER_SECONDS)
    assert run.queue_seconds_unowned == pytest.approx(run.releases * sac.HANDOVER_SECONDS)
    assert run.queue_seconds_doubly_owned == 0.0  # one active consumer at a time
    assert (run.claims, run.steals) == (None, None)
    assert sac.run(range(8), ["a1", "a2"]).seconds_to_balance == pytest.approx(0.002)
