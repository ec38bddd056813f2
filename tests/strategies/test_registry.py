"""Names resolve to strategies: registered names, and `package.module:function` for your own."""

from __future__ import annotations

import pytest

from rebalancing.strategies import (
    STRATEGIES,
    Strategy,
    UnknownStrategyError,
    averagely,
    resolve,
    select,
)


def test_a_registered_name_resolves_to_the_registered_object() -> None:
    assert resolve("sticky") is STRATEGIES["sticky"]


def test_module_colon_function_resolves_to_that_function() -> None:
    strategy = resolve("rebalancing.strategies.averagely:assign")
    assert strategy.assign is averagely.assign
    assert strategy.name == "rebalancing.strategies.averagely:assign"
    assert strategy.open_session is None


def test_module_colon_name_of_a_strategy_object_gives_that_object() -> None:
    assert resolve("tests.strategies.test_registry:MY_STRATEGY") is MY_STRATEGY


MY_STRATEGY = Strategy("mine", averagely.assign, "a test's own")


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("bogus", "not a registered name"),
        ("no_such_package.anything:assign", "could not import module 'no_such_package.anything'"),
        ("rebalancing.strategies.averagely:nothing", "has no function 'nothing'"),
        ("rebalancing.strategies.averagely:__doc__", "has no function '__doc__'"),
    ],
)
def test_a_name_that_resolves_to_nothing_says_what_was_tried(name: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        resolve(name)


def test_select_reports_every_name_that_fails() -> None:
    with pytest.raises(ValueError, match=r"'one'.*'two'"):
        select("sticky, one, two")
    with pytest.raises(ValueError, match="no strategy given"):
        select(" , ")
    assert [strategy.name for strategy in select("sac, sticky")] == ["sac", "sticky"]


def test_an_unknown_name_in_the_registry_is_a_key_error_listing_the_known_names() -> None:
    with pytest.raises(KeyError) as raised:
        STRATEGIES["stiky"]
    assert isinstance(raised.value, UnknownStrategyError)
    message = str(raised.value)
    assert message.startswith("unknown strategy 'stiky' (did you mean 'sticky'? known: ")
    for name in STRATEGIES:
        assert name in message
    assert STRATEGIES.get("stiky") is None  # Mapping's other readers still see a KeyError
    assert "stiky" not in STRATEGIES


def test_a_name_far_from_every_known_one_suggests_none() -> None:
    with pytest.raises(UnknownStrategyError) as raised:
        STRATEGIES["zzzzzzzz"]
    assert "did you mean" not in str(raised.value)
    with pytest.raises(
        ValueError, match=r"unknown strategy 'round_robbin'.*did you mean 'round_robin'"
    ):
        resolve("round_robbin")


def test_the_registry_cannot_be_changed() -> None:
    with pytest.raises(TypeError):
        STRATEGIES["mine"] = MY_STRATEGY  # type: ignore[index]


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_a_strategy_is_called_as_its_assign(name: str) -> None:
    strategy = STRATEGIES[name]
    queues, consumers, previous = ["q1", "q2", "q3"], ["c1", "c2"], {"c1": ["q1", "q2", "q3"]}
    assert strategy(queues, consumers, previous) == strategy.assign(queues, consumers, previous)
    assert strategy(queues, consumers) == strategy.assign(queues, consumers)
    assert callable(strategy)
