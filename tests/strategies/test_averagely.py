"""averagely: RocketMQ AllocateMessageQueueAveragely's contiguous blocks."""

from __future__ import annotations

from hypothesis import given

from rebalancing.strategies import averagely
from tests.groups import GroupCase, groups


def test_eight_queues_over_three_consumers_come_in_blocks_of_three_three_two() -> None:
    queues = [f"Q{n}" for n in range(1, 9)]
    assert averagely.assign(queues, ["C0", "C1", "C2"]) == {
        "C0": ["Q1", "Q2", "Q3"],
        "C1": ["Q4", "Q5", "Q6"],
        "C2": ["Q7", "Q8"],
    }


def test_with_more_consumers_than_queues_the_last_consumers_get_nothing() -> None:
    assert averagely.assign([0, 1, 2], ["a", "b", "c", "d", "e"]) == {
        "a": [0],
        "b": [1],
        "c": [2],
        "d": [],
        "e": [],
    }


def test_twelve_queues_after_c1_leaves_as_in_the_seeds_comparison() -> None:
    queues = [f"Q{n:02d}" for n in range(1, 13)]
    before = averagely.assign(queues, ["C1", "C2", "C3"])
    assert before["C1"] == ["Q01", "Q02", "Q03", "Q04"]
    after = averagely.assign(queues, ["C2", "C3"], before)
    assert after == {"C2": queues[:6], "C3": queues[6:]}


@given(groups(min_consumers=1))
def test_blocks_are_contiguous_in_sorted_order_and_sized_by_the_formula(case: GroupCase) -> None:
    plan = averagely.assign(case.queues, case.consumers, case.previous)
    ordered = sorted(case.queues)
    assert [queue for owned in plan.values() for queue in owned] == ordered
    base, extra = divmod(len(ordered), len(case.consumers))
    sizes = [len(owned) for owned in plan.values()]
    assert sizes == [base + 1] * extra + [base] * (len(case.consumers) - extra)


@given(groups())
def test_previous_does_not_change_the_result(case: GroupCase) -> None:
    assert averagely.assign(case.queues, case.consumers, case.previous) == averagely.assign(
        case.queues, case.consumers
    )
