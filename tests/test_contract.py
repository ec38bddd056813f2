"""The conformance suite: every registered strategy against the contract of DESIGN.md.

Parametrised over STRATEGIES x checks, with ids such as `sticky-order_insensitive`, the way
scikit-learn's `parametrize_with_checks` runs every estimator: a strategy gets the whole suite by
being registered. `pytest -k order_insensitive` runs one check on every strategy.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rebalancing.contract import AssignFunction
from rebalancing.strategies import STRATEGIES
from tests.groups import GroupCase, groups


def _assert_plan_is_valid(case: GroupCase, plan: dict[Any, list[Any]]) -> None:
    assert set(plan) == set(case.consumers)
    assert list(plan) == sorted(case.consumers), "consumers come in sorted order"
    handed_out = [queue for owned in plan.values() for queue in owned]
    if case.consumers:
        assert sorted(handed_out) == sorted(case.queues), "every queue exactly once"
    for owned in plan.values():
        assert isinstance(owned, list)
        assert owned == sorted(owned), "each consumer's queues are sorted"


def check_every_queue_exactly_once(assign: AssignFunction) -> None:
    @given(groups())
    def run(case: GroupCase) -> None:
        _assert_plan_is_valid(case, assign(case.queues, case.consumers, case.previous))

    run()


def check_no_consumers_gives_empty_plan(assign: AssignFunction) -> None:
    @given(groups(max_consumers=0))
    def run(case: GroupCase) -> None:
        assert assign(case.queues, case.consumers, case.previous) == {}

    run()


def check_no_queues_gives_every_consumer_an_empty_list(assign: AssignFunction) -> None:
    @given(groups(max_queues=0))
    def run(case: GroupCase) -> None:
        plan = assign(case.queues, case.consumers, case.previous)
        assert plan == {consumer: [] for consumer in case.consumers}

    run()


def check_deterministic(assign: AssignFunction) -> None:
    @given(groups())
    def run(case: GroupCase) -> None:
        assert assign(case.queues, case.consumers, case.previous) == assign(
            case.queues, case.consumers, case.previous
        )

    run()


def check_order_insensitive(assign: AssignFunction) -> None:
    @given(groups(), st.randoms(use_true_random=False))
    def run(case: GroupCase, rng: Any) -> None:
        expected = assign(case.queues, case.consumers, case.previous)
        queues = rng.sample(case.queues, len(case.queues))
        consumers = rng.sample(case.consumers, len(case.consumers))
        previous = None
        if case.previous is not None:
            owners = rng.sample(list(case.previous), len(case.previous))
            previous = {
                owner: rng.sample(case.previous[owner], len(case.previous[owner]))
                for owner in owners
            }
        assert assign(queues, consumers, previous) == expected

    run()


def check_accepts_any_iterables(assign: AssignFunction) -> None:
    @given(groups())
    def run(case: GroupCase) -> None:
        expected = assign(case.queues, case.consumers, case.previous)
        previous = None
        if case.previous is not None:
            previous = {owner: iter(owned) for owner, owned in case.previous.items()}
        assert assign(iter(case.queues), tuple(case.consumers), previous) == expected
        # A set, a dict's keys and a range are distinct by construction: the fast path.
        generators = None
        if case.previous is not None:
            generators = {
                owner: (queue for queue in owned) for owner, owned in case.previous.items()
            }
        assert (
            assign(set(case.queues), dict.fromkeys(case.consumers).keys(), generators) == expected
        )

    run()


def check_inputs_not_mutated(assign: AssignFunction) -> None:
    @given(groups())
    def run(case: GroupCase) -> None:
        before = copy.deepcopy(case)
        plan = assign(case.queues, case.consumers, case.previous)
        assert case == before
        if case.previous is not None:
            for consumer, owned in plan.items():
                assert owned is not case.previous.get(consumer), "result shares a list"

    run()


def check_rejects_duplicate_queue(assign: AssignFunction) -> None:
    with pytest.raises(ValueError, match="duplicate queue id 'q2'"):
        assign(["q1", "q2", "q3", "q2"], ["c1"])


def check_rejects_duplicate_consumer(assign: AssignFunction) -> None:
    with pytest.raises(ValueError, match="duplicate consumer id 'c1'"):
        assign(["q1"], ["c1", "c2", "c1"])


def check_rejects_queue_owned_twice(assign: AssignFunction) -> None:
    with pytest.raises(ValueError, match="queue 'q3' is owned by both 'c1' and 'c2' in previous"):
        assign(["q1", "q3"], ["c1", "c2"], {"c1": ["q3"], "c2": ["q1", "q3"]})
    with pytest.raises(ValueError, match="queue 'q3' is listed twice for 'c1' in previous"):
        assign(["q1", "q3"], ["c1", "c2"], {"c1": ["q3", "q3"]})


def check_rejects_queue_owned_twice_in_generators(assign: AssignFunction) -> None:
    previous = {"c1": (queue for queue in ["q1"]), "c2": (queue for queue in ["q2", "q1"])}
    with pytest.raises(ValueError, match="queue 'q1' is owned by both 'c1' and 'c2' in previous"):
        assign(["q1", "q2"], ["c1", "c2"], previous)


def check_rejects_unorderable_ids(assign: AssignFunction) -> None:
    with pytest.raises(
        TypeError, match=r"queue ids cannot be ordered together: .*\(int\).*\(str\)"
    ):
        assign([1, "q2"], ["c1"])
    with pytest.raises(TypeError, match="consumer ids cannot be ordered together"):
        assign(["q1"], ["c1", 2])


def check_rejects_unhashable_ids(assign: AssignFunction) -> None:
    with pytest.raises(TypeError, match=r"queue id \['q1'\] is not hashable"):
        assign([["q1"]], ["c1"])
    with pytest.raises(TypeError, match=r"consumer id \{\} is not hashable"):
        assign(["q1"], [{}])
    with pytest.raises(TypeError, match=r"queue id \['q1'\] in previous\['c1'\] is not hashable"):
        assign(["q1"], ["c1"], {"c1": [["q1"]]})


def check_rejects_malformed_previous(assign: AssignFunction) -> None:
    with pytest.raises(TypeError, match="previous must be a mapping"):
        assign(["q1"], ["c1"], [("c1", ["q1"])])  # type: ignore[arg-type]
    with pytest.raises(
        TypeError, match=r"previous\['c1'\] must be an iterable of queue ids, not int"
    ):
        assign(["q1"], ["c1"], {"c1": 7})  # type: ignore[dict-item]
    with pytest.raises(
        TypeError, match=r"previous\['c1'\] must be an iterable of queue ids, not str"
    ):
        assign(["q1"], ["c1"], {"c1": "q1"})


def check_rejects_a_string_as_the_id_list(assign: AssignFunction) -> None:
    with pytest.raises(TypeError, match="queues must be an iterable of queue ids, not str"):
        assign("q1", ["c1"])
    with pytest.raises(TypeError, match="consumers must be an iterable of consumer ids, not int"):
        assign(["q1"], 3)  # type: ignore[arg-type]


_PROGRAM = """
import json, sys
from rebalancing.strategies import STRATEGIES
queues = [f"orders-{n}" for n in range(40)] + ["audit", "billing", "zeta"]
consumers = ["host-b@11", "host-a@7", "host-c@3", "host-a@9"]
previous = {"host-a@7": queues[:20], "host-gone@1": queues[20:35], "host-c@3": ["ghost"]}
plan = STRATEGIES[sys.argv[1]](queues, consumers, previous)
print(json.dumps(list(plan.items())))
"""


def check_deterministic_across_processes(assign: AssignFunction) -> None:
    name = next(name for name, registered in STRATEGIES.items() if registered is assign)
    outputs = []
    for hash_seed in ("1", "4242"):
        completed = subprocess.run(
            [sys.executable, "-c", _PROGRAM, name],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
        )
        outputs.append(json.loads(completed.stdout))
    assert outputs[0] == outputs[1]
    assert sorted(queue for _, owned in outputs[0] for queue in owned) == sorted(
        [f"orders-{n}" for n in range(40)] + ["audit", "billing", "zeta"]
    )


CHECKS: list[Callable[[AssignFunction], None]] = [
    check_every_queue_exactly_once,
    check_no_consumers_gives_empty_plan,
    check_no_queues_gives_every_consumer_an_empty_list,
    check_deterministic,
    check_order_insensitive,
    check_accepts_any_iterables,
    check_inputs_not_mutated,
    check_rejects_duplicate_queue,
    check_rejects_duplicate_consumer,
    check_rejects_queue_owned_twice,
    check_rejects_queue_owned_twice_in_generators,
    check_rejects_unorderable_ids,
    check_rejects_unhashable_ids,
    check_rejects_malformed_previous,
    check_rejects_a_string_as_the_id_list,
    check_deterministic_across_processes,
]


@pytest.mark.parametrize(
    ("assign", "check"),
    [(assign, check) for assign in STRATEGIES.values() for check in CHECKS],
    ids=[
        f"{name}-{check.__name__.removeprefix('check_')}" for name in STRATEGIES for check in CHECKS
    ],
)
def test_contract(assign: AssignFunction, check: Callable[[AssignFunction], None]) -> None:
    check(assign)


def test_registry_names_are_the_mission_strategies() -> None:
    assert {"averagely", "round_robin", "sticky"} <= set(STRATEGIES)
    for name, assign in STRATEGIES.items():
        module = sys.modules[assign.__module__]
        assert module.__doc__, f"strategy {name} has no module docstring saying where it comes from"
