"""cooperative_sticky: sticky's plan in two rebalances, pausing only what moves."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rebalancing.evaluation.scenarios.changes import Scenario, ScenarioSettings
from rebalancing.evaluation.scoring.replay import score_scenario
from rebalancing.strategies import STRATEGIES, cooperative_sticky, sticky


def test_a_join_revokes_only_what_moves_and_takes_two_rebalances() -> None:
    session = cooperative_sticky.Session()
    first = session.rebalance(range(6), ["a", "b"])
    assert (first.rounds, first.queues_paused, first.steps) == (1, 0, 6)
    joined = session.rebalance(range(6), ["a", "b", "c"])
    assert joined.owners == sticky.assign(range(6), ["a", "b", "c"], first.owners)
    assert (joined.rounds, joined.releases, joined.queues_paused, joined.steps) == (2, 2, 2, 2)
    again = session.rebalance(range(6), ["c", "b", "a"])
    assert (again.rounds, again.queues_paused, again.steps) == (1, 0, 0)


def test_a_departure_moves_only_the_departed_members_partitions_in_one_rebalance() -> None:
    session = cooperative_sticky.Session()
    session.rebalance(range(9), ["a", "b", "c"])
    run = session.rebalance(range(9), ["a", "b"])
    assert (run.rounds, run.queues_paused, run.steps) == (1, 0, 3)


@given(st.lists(st.sets(st.integers(0, 6), min_size=1), min_size=1, max_size=6), st.integers(0, 25))
def test_the_plans_are_stickys_and_only_moved_partitions_pause(
    memberships: list[set[int]], partition_count: int
) -> None:
    session = cooperative_sticky.Session()
    previous = None
    for members in memberships:
        run = session.rebalance(range(partition_count), members)
        assert run.owners == sticky.assign(range(partition_count), members, previous)
        moved = sum(
            1
            for consumer, owned in (previous or {}).items()
            for queue in owned
            if consumer in members and queue not in run.owners[consumer]
        )
        assert run.queues_paused == run.releases == moved
        assert run.rounds == (2 if moved else 1)
        previous = run.owners


def test_eager_strategies_pause_every_read_queue_and_cooperative_only_the_moved_ones() -> None:
    settings = ScenarioSettings(queue_range=(4, 80), consumer_range=(2, 10))
    chosen = {name: STRATEGIES[name] for name in ("sticky", "cooperative_sticky")}
    rows = [
        row for index in range(20) for row in score_scenario(Scenario(8, index, settings), chosen)
    ]
    by_key = {(row.scenario, row.step, row.strategy): row for row in rows}
    for (scenario, step, name), row in by_key.items():
        if name != "sticky":
            continue
        cooperative = by_key[(scenario, step, "cooperative_sticky")]
        assert row.queues_paused == row.kept + row.moves  # eager: everything read is given up
        assert cooperative.queues_paused == row.moves  # cooperative: only what moves
        assert cooperative.kept == row.kept
