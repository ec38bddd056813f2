"""pulsar_failover: sorted partition i to consumer i mod k of the consumers sorted by (priority
level, name), k those at the highest level present; against super_stream's join order."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rebalancing.evaluation.scenarios.changes import Scenario, ScenarioSettings
from rebalancing.evaluation.scoring.replay import score_scenario
from rebalancing.strategies import STRATEGIES, pulsar_failover, round_robin, super_stream
from rebalancing.testing import check_strategy
from tests.groups import GroupCase, groups


def owner_of(plan: dict[Any, list[Any]]) -> dict[Any, Any]:
    return {queue: consumer for consumer, owned in plan.items() for queue in owned}


def test_a_priority_assign_passes_the_whole_contract() -> None:
    check_strategy(pulsar_failover.with_priorities({"a": 1, "b": 0, 3: 2}))


@given(groups(min_consumers=1))
def test_sorted_partition_i_goes_to_sorted_consumer_i_mod_n(case: GroupCase) -> None:
    plan = pulsar_failover.assign(case.queues, case.consumers, case.previous)
    names, owner = sorted(case.consumers), owner_of(plan)
    for index, queue in enumerate(sorted(case.queues)):
        assert owner[queue] == names[index % len(names)]
    assert plan == round_robin.assign(case.queues, case.consumers)  # with one level, the same


@given(
    st.lists(st.text(alphabet="abcdef", min_size=1, max_size=3), unique=True, min_size=1),
    st.data(),
    st.integers(0, 40),
)
def test_only_the_highest_level_present_gets_partitions_dealt_in_name_order(
    consumers: list[str], data: st.DataObject, partition_count: int
) -> None:
    levels = {name: data.draw(st.integers(0, 3), label=name) for name in consumers}
    plan = pulsar_failover.with_priorities(levels)(range(partition_count), consumers)
    ranked = sorted(consumers, key=lambda name: (levels[name], name))  # Pulsar's sort
    active = [name for name in ranked if levels[name] == levels[ranked[0]]]
    owner = owner_of(plan)
    for partition in range(partition_count):
        assert owner[partition] == active[partition % len(active)]
    assert all(not plan[name] for name in consumers if name not in active)  # they wait
    assert set(plan) == set(consumers)


def test_standby_consumers_take_over_only_when_every_one_above_them_has_gone() -> None:
    levels = {"alpha": 1, "bravo": 0, "charlie": 0, "delta": 2}
    assign = pulsar_failover.with_priorities(levels)
    everyone = ["alpha", "bravo", "charlie", "delta"]
    assert assign(range(5), everyone) == {
        "alpha": [],
        "bravo": [0, 2, 4],
        "charlie": [1, 3],
        "delta": [],
    }
    assert assign(range(5), ["alpha", "charlie", "delta"])["charlie"] == [0, 1, 2, 3, 4]
    assert assign(range(5), ["alpha", "delta"])["alpha"] == [0, 1, 2, 3, 4]
    assert assign(range(5), ["delta", "echo"]) == {"delta": [], "echo": [0, 1, 2, 3, 4]}  # echo: 0


def test_pulsars_own_add_and_remove_consumer_example_on_partition_0() -> None:
    """PersistentDispatcherFailoverConsumerTest.testAddRemoveConsumer (partitionIndex 0, every
    consumer at level 0): Cons1 is active; Cons2 joins and Cons1 stays; Cons0 joins and takes
    over; Cons2 leaves and Cons0 stays; Cons0 leaves and Cons1 takes over again."""
    session = pulsar_failover.Session()
    partitions = ["invoices-partition-0"]
    expected = [
        (["Cons1"], "Cons1", 0),
        (["Cons1", "Cons2"], "Cons1", 0),
        (["Cons1", "Cons2", "Cons0"], "Cons0", 1),  # Cons1, still there, steps down
        (["Cons1", "Cons0"], "Cons0", 0),
        (["Cons1"], "Cons1", 0),  # Cons0 is gone: nobody steps down
    ]
    for consumers, active, stepped_down in expected:
        run = session.rebalance(partitions, consumers)
        assert owner_of(run.owners) == {"invoices-partition-0": active}
        assert (run.releases, run.queues_paused, run.converged) == (stepped_down,) * 2 + (True,)


def test_a_session_counts_a_hand_over_per_partition_whose_active_consumer_changes() -> None:
    session = pulsar_failover.Session(levels={"b": 1})
    assert session.rebalance(range(4), ["a", "b"]).steps == 4  # every partition gets a first one
    run = session.rebalance(range(4), ["a", "b", "c"])  # c at level 0 shares with a
    assert run.owners == {"a": [0, 2], "b": [], "c": [1, 3]}
    assert (run.releases, run.steps, run.rounds) == (2, 2, 1)
    run = session.rebalance(range(4), ["a", "b", "c"])
    assert (run.releases, run.steps, run.rounds) == (0, 0, 0)


@pytest.mark.parametrize(
    ("levels", "error", "message"),
    [
        ({"a": -1}, ValueError, "priority level of consumer 'a' must be 0 or more"),
        ({"a": True}, TypeError, "priority level of consumer 'a' must be an integer"),
        ({"b": "1"}, TypeError, "priority level of consumer 'b' must be an integer, not '1'"),
        ([("a", 1)], TypeError, "priority levels must be a mapping of consumer -> level"),
    ],
)
def test_levels_that_pulsar_would_refuse_are_refused_naming_the_consumer(
    levels: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        pulsar_failover.with_priorities(levels)
    with pytest.raises(error, match=message):
        pulsar_failover.Session(levels=levels)


def test_the_levels_are_copied_when_the_assign_is_made() -> None:
    levels = {"a": 0, "b": 1}
    assign = pulsar_failover.with_priorities(levels)
    levels["b"] = 0
    assert assign(range(4), ["a", "b"]) == {"a": [0, 1, 2, 3], "b": []}


# Name order against join order (super_stream), on the same groups.


@given(st.integers(0, 130), st.integers(1, 30), st.data())
def test_a_newcomer_costs_at_least_as_many_moves_at_its_names_place_as_at_the_end(
    partition_count: int, member_count: int, data: st.DataObject
) -> None:
    """While the orders agree (a group that joined at once), a join moves no fewer partitions in
    name order than in join order, where the newcomer goes to the end."""
    members = [f"member-{number:02d}" for number in range(member_count)]
    newcomer = f"member-{data.draw(st.integers(0, member_count)):02d}x"  # any place in the names
    by_name, by_join = pulsar_failover.Session(), super_stream.Session()
    for session in (by_name, by_join):
        session.rebalance(range(partition_count), members)
    name_run = by_name.rebalance(range(partition_count), [*members, newcomer])
    join_run = by_join.rebalance(range(partition_count), [*members, newcomer])
    # on a join every consumer before it stays: a partition moved is one whose consumer stepped down
    assert name_run.releases >= join_run.releases


def test_a_member_that_leaves_and_returns_gets_its_partitions_back_only_in_name_order() -> None:
    members = ["a", "b", "c", "d"]
    by_name, by_join = pulsar_failover.Session(), super_stream.Session()
    before = {
        session: session.rebalance(range(12), members).owners for session in (by_name, by_join)
    }
    for session in (by_name, by_join):
        session.rebalance(range(12), ["a", "c", "d"])  # b restarts...
    assert by_name.rebalance(range(12), members).owners == before[by_name]  # ...and comes back
    assert by_join.rebalance(range(12), members).owners != before[by_join]  # b is last now


CHURN = ScenarioSettings(
    queue_range=(8, 64),
    consumer_range=(2, 12),
    change_count_range=(2, 6),
    change_weights={"join": 1.0, "leave": 1.0, "crash": 1.0, "flapping": 1.0},
)


def test_on_scenarios_the_orders_agree_until_a_join_which_costs_name_order_more() -> None:
    chosen = {"by_name": STRATEGIES["pulsar_failover"], "by_join": STRATEGIES["super_stream"]}
    first_joins = 0
    name_moves = join_moves = 0
    for index in range(150):
        rows = list(score_scenario(Scenario(34, index, CHURN), chosen))
        steps = [rows[position : position + 2] for position in range(0, len(rows), 2)]
        for by_join, by_name in steps:  # rows come in strategy name order
            assert (by_join.strategy, by_name.strategy) == ("by_join", "by_name")
            if by_name.joined:  # one newcomer, or a flapping member back under its name
                first_joins += 1
                name_moves += by_name.moves
                join_moves += by_join.moves
                assert by_name.moves >= by_join.moves
                break  # the orders may differ from here on
            assert (by_name.moves, by_name.queues_paused) == (by_join.moves, by_join.queues_paused)
            assert by_name.stickiness == by_join.stickiness
    assert first_joins > 20
    assert name_moves > join_moves  # somewhere the newcomer's name does not sort last
