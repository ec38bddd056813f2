"""round_robin: sorted queue k goes to sorted consumer k mod n."""

from __future__ import annotations

from hypothesis import given

from rebalancing.strategies import round_robin
from tests.groups import GroupCase, groups


def test_eight_queues_are_dealt_round_the_three_consumers() -> None:
    queues = [f"Q{n}" for n in range(1, 9)]
    assert round_robin.assign(queues, ["C2", "C0", "C1"]) == {
        "C0": ["Q1", "Q4", "Q7"],
        "C1": ["Q2", "Q5", "Q8"],
        "C2": ["Q3", "Q6"],
    }


@given(groups(min_consumers=1))
def test_sorted_queue_k_goes_to_sorted_consumer_k_mod_n(case: GroupCase) -> None:
    plan = round_robin.assign(case.queues, case.consumers, case.previous)
    consumers = sorted(case.consumers)
    owner = {queue: consumer for consumer, owned in plan.items() for queue in owned}
    for position, queue in enumerate(sorted(case.queues)):
        assert owner[queue] == consumers[position % len(consumers)]


@given(groups())
def test_previous_does_not_change_the_result(case: GroupCase) -> None:
    assert round_robin.assign(case.queues, case.consumers, case.previous) == round_robin.assign(
        case.queues, case.consumers
    )
