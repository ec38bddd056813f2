"""The conformance suite: every registered strategy against the contract of DESIGN.md.

rebalancing.testing.CHECKS x STRATEGIES, with ids such as `sticky-order_insensitive`, the way
scikit-learn's `parametrize_with_checks` runs every estimator: a strategy gets the whole suite by
being registered, and `pytest -k order_insensitive` runs one check on every strategy. The same
properties also run on hypothesis-generated groups (ids ending in `-hypothesis`).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable

import pytest
from hypothesis import given

from rebalancing.contract import AssignFunction
from rebalancing.strategies import STRATEGIES, Strategy
from rebalancing.testing import CHECKS, PROPERTIES, Case
from tests.groups import GroupCase, groups

REGISTERED = list(STRATEGIES.values())


@pytest.mark.parametrize(
    ("strategy", "check"),
    [(strategy, check) for strategy in REGISTERED for check in CHECKS.values()],
    ids=[f"{strategy.name}-{name}" for strategy in REGISTERED for name in CHECKS],
)
def test_contract(strategy: Strategy, check: Callable[[AssignFunction], None]) -> None:
    check(strategy.assign)


@pytest.mark.parametrize(
    ("strategy", "prop"),
    [(strategy, prop) for strategy in REGISTERED for prop in PROPERTIES.values()],
    ids=[f"{strategy.name}-{name}-hypothesis" for strategy in REGISTERED for name in PROPERTIES],
)
def test_contract_on_hypothesis_groups(
    strategy: Strategy, prop: Callable[[AssignFunction, Case], None]
) -> None:
    @given(groups())
    def holds(group: GroupCase) -> None:
        prop(strategy.assign, Case(group.queues, group.consumers, group.previous))

    holds()


@pytest.mark.parametrize("strategy", REGISTERED, ids=[s.name for s in REGISTERED])
def test_none_is_an_id_like_any_other(strategy: Strategy) -> None:
    assert strategy.assign(["q1", "q2"], [None]) == {None: ["q1", "q2"]}
    assert strategy.assign([None], ["c1"], {"c1": [None]}) == {"c1": [None]}


@pytest.mark.parametrize("strategy", REGISTERED, ids=[s.name for s in REGISTERED])
def test_ids_that_sort_without_a_total_order_are_refused(strategy: Strategy) -> None:
    with pytest.raises(TypeError, match="nan"):
        strategy.assign([math.nan, 1.0, 0.5], ["c1"])
    with pytest.raises(TypeError, match="frozenset"):
        strategy.assign(["q1"], [frozenset({1}), frozenset({2})])


def test_the_registry_holds_the_mission_strategies_each_with_its_origin() -> None:
    assert {"averagely", "round_robin", "sticky", "sac"} <= set(STRATEGIES)
    for name, strategy in STRATEGIES.items():
        assert strategy.name == name
        assert strategy.origin
        assert "\n" not in strategy.origin
        module = sys.modules[strategy.assign.__module__]
        assert module.__doc__, f"strategy {name} has no module docstring saying where it comes from"
    assert STRATEGIES["sac"].open_session is not None
    assert STRATEGIES["sticky"].open_session is None
