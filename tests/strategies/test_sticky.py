"""sticky: balance first, then keep as many previous pairs as balance allows."""

from __future__ import annotations

import heapq
from typing import Any

from hypothesis import given, settings

from rebalancing.evaluation.scoring.scores import score
from rebalancing.strategies import averagely, sticky
from tests.groups import GroupCase, balanced_previous_groups, groups

SEED_QUEUES = [f"Q{n}" for n in range(1, 9)]


def test_seed_worked_example_initial_allocation() -> None:
    """8 queues over C0, C1, C2 from scratch, each to the consumer with the fewest."""
    assert sticky.assign(SEED_QUEUES, ["C0", "C1", "C2"]) == {
        "C0": ["Q1", "Q4", "Q7"],
        "C1": ["Q2", "Q5", "Q8"],
        "C2": ["Q3", "Q6"],
    }


def test_seed_worked_example_after_c1_leaves() -> None:
    """C1's queues Q2, Q5, Q8 go to C2, C0, C2 in turn, exactly as printed in the report."""
    previous = sticky.assign(SEED_QUEUES, ["C0", "C1", "C2"])
    assert sticky.assign(SEED_QUEUES, ["C0", "C2"], previous) == {
        "C0": ["Q1", "Q4", "Q5", "Q7"],
        "C2": ["Q2", "Q3", "Q6", "Q8"],
    }


def test_seed_comparison_sticky_keeps_everything_averagely_moves_when_c1_leaves() -> None:
    queues = [f"Q{n:02d}" for n in range(1, 13)]
    before = averagely.assign(queues, ["C1", "C2", "C3"])
    sticky_scores = score(queues, ["C2", "C3"], before, sticky.assign(queues, ["C2", "C3"], before))
    averagely_scores = score(
        queues, ["C2", "C3"], before, averagely.assign(queues, ["C2", "C3"], before)
    )
    assert (sticky_scores.kept, sticky_scores.moves, sticky_scores.revocations) == (8, 0, 4)
    assert (averagely_scores.kept, averagely_scores.moves, averagely_scores.revocations) == (
        6,
        2,
        6,
    )


def test_a_joining_consumer_takes_only_what_balance_requires() -> None:
    previous = {"a": [1, 2, 3], "b": [4, 5, 6]}
    plan = sticky.assign(range(1, 7), ["a", "b", "c"], previous)
    assert plan == {"a": [1, 2], "b": [4, 5], "c": [3, 6]}


def test_the_larger_quotas_go_to_the_consumers_that_can_keep_the_most() -> None:
    # 7 queues over 3 consumers: quotas 3, 2, 2. "c" held 3 and keeps them all.
    previous = {"a": [1, 2], "c": [3, 4, 5], "gone": [6, 7]}
    plan = sticky.assign(range(1, 8), ["a", "b", "c"], previous)
    assert plan["c"] == [3, 4, 5]
    assert plan["a"] == [1, 2]
    assert plan["b"] == [6, 7]


@given(groups())
def test_counts_differ_by_at_most_one(case: GroupCase) -> None:
    plan = sticky.assign(case.queues, case.consumers, case.previous)
    counts = [len(owned) for owned in plan.values()]
    assert not counts or max(counts) - min(counts) <= 1


@given(groups())
def test_stickiness_equals_the_optimum(case: GroupCase) -> None:
    plan = sticky.assign(case.queues, case.consumers, case.previous)
    scores = score(case.queues, case.consumers, case.previous, plan)
    assert scores.stickiness_gap in (None, 0.0)
    assert scores.stickiness == scores.optimal_stickiness


@given(balanced_previous_groups())
def test_a_balanced_valid_previous_comes_back_unchanged(case: GroupCase) -> None:
    assert case.previous is not None
    plan = sticky.assign(case.queues, case.consumers, case.previous)
    assert plan == {consumer: sorted(owned) for consumer, owned in case.previous.items()}


def _reference_sticky(case: GroupCase) -> dict[Any, list[Any]]:
    """The report's algorithm restated from scratch, sharing no code with the strategy or the
    contract: the oracle. Quotas by a sort on (-keepable, id), keeping in queue order, and the
    hand-out with a heap of (count, id)."""
    queues, consumers = sorted(case.queues), sorted(case.consumers)
    if not consumers:
        return {}
    present = set(consumers)
    before = {queue: owner for owner, owned in (case.previous or {}).items() for queue in owned}
    keepable = {consumer: 0 for consumer in consumers}
    for queue in queues:
        if before.get(queue, _GONE) in present:
            keepable[before[queue]] += 1
    base, extra = divmod(len(queues), len(consumers))
    larger = {consumer for _, consumer in sorted((-keepable[c], c) for c in consumers)[:extra]}
    quota = {consumer: base + (consumer in larger) for consumer in consumers}
    plan: dict[Any, list[Any]] = {consumer: [] for consumer in consumers}
    free = []
    for queue in queues:
        owner = before.get(queue, _GONE)
        if owner in present and len(plan[owner]) < quota[owner]:
            plan[owner].append(queue)
        else:
            free.append(queue)
    heap = [(len(plan[consumer]), consumer) for consumer in consumers]
    heapq.heapify(heap)
    for queue in free:
        count, consumer = heapq.heappop(heap)
        plan[consumer].append(queue)
        heapq.heappush(heap, (count + 1, consumer))
    return {consumer: sorted(owned) for consumer, owned in plan.items()}


_GONE = object()


@given(groups())
def test_hands_out_exactly_like_a_fewest_first_heap(case: GroupCase) -> None:
    assert sticky.assign(case.queues, case.consumers, case.previous) == _reference_sticky(case)


@settings(max_examples=60, deadline=None)
@given(groups(max_queues=300, max_consumers=40))
def test_hands_out_like_a_fewest_first_heap_on_larger_groups(case: GroupCase) -> None:
    """Many consumers holding many different counts: the hand-out crosses several levels."""
    assert sticky.assign(case.queues, case.consumers, case.previous) == _reference_sticky(case)


def test_consumers_join_in_as_the_level_rises_and_the_last_round_stops_midway() -> None:
    # a keeps 5, b keeps 2, c and d are new: c, d take 2 each (levels 0 and 1), then b, c, d
    # take one each at levels 2, 3, 4 until the queues run out at level 4 after b and c.
    previous = {"a": [0, 1, 2, 3, 4], "b": [5, 6]}
    plan = sticky.assign(range(16), ["a", "b", "c", "d"], previous)
    assert plan == _reference_sticky(GroupCase(list(range(16)), ["a", "b", "c", "d"], previous))
    assert [len(owned) for owned in plan.values()] == [4, 4, 4, 4]
    assert plan["a"] == [0, 1, 2, 3]


def test_removed_queues_and_departed_consumers_are_not_kept() -> None:
    previous = {"a": [0, 1, 2, 9], "gone": [3, 4], "b": [5, 8]}
    plan = sticky.assign([0, 1, 2, 3, 4, 5, 6, 7], ["a", "b"], previous)  # 8 and 9 removed
    # a keeps 0-2, b keeps 5; b takes 3 and 4 to catch up, then a and b take 6 and 7 in turn
    assert plan == {"a": [0, 1, 2, 6], "b": [3, 4, 5, 7]}
