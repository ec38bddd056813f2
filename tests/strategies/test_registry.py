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


def test_a_module_not_on_the_path_is_named_with_a_pythonpath_hint() -> None:
    with pytest.raises(ValueError, match="on PYTHONPATH") as missing:
        resolve("no_such_module_here:assign")
    assert "could not import module 'no_such_module_here'" in str(missing.value)
    # a package on the path that lacks the module: the path is not the cause, no hint
    with pytest.raises(ValueError, match="could not import module") as inner:
        resolve("rebalancing.no_such_submodule:assign")
    assert "PYTHONPATH" not in str(inner.value)


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


def zoned(queues, consumers, previous=None, *, consumer_zones=None):  # type: ignore[no-untyped-def]
    return averagely.assign(queues, consumers, previous)


def test_a_strategy_declares_the_inputs_it_reads_and_its_assign_must_accept_them() -> None:
    strategy = Strategy("zoned", zoned, "a test's own", uses={"consumer_zones"})
    assert strategy.uses == frozenset({"consumer_zones"})
    with pytest.raises(ValueError, match=r"declares \['queue_zones'\] in uses, but its assign"):
        Strategy("zoned", zoned, "a test's own", uses={"consumer_zones", "queue_zones"})
    with pytest.raises(ValueError, match=r"unknown inputs \['rack'\]"):
        Strategy("zoned", zoned, "a test's own", uses={"rack"})
    with pytest.raises(ValueError, match=r"unknown promises \['fast'\]"):
        Strategy("zoned", zoned, "a test's own", promises={"fast"})


def test_a_caller_passes_a_strategy_only_the_inputs_it_declares() -> None:
    available = {"consumer_zones": {"c1": "a"}, "queue_zones": None, "weights": {"q1": 2}}
    assert STRATEGIES["rack_aware_range"].inputs_for(available) == {"consumer_zones": {"c1": "a"}}
    assert STRATEGIES["lag_greedy"].inputs_for(available) == {"weights": {"q1": 2}}
    assert STRATEGIES["sticky"].inputs_for(available) == {}
    plan = STRATEGIES["lag_greedy"](["q1"], ["c1"], None, weights={"q1": 2})
    assert plan == {"c1": ["q1"]}


def test_strategies_that_read_zones_or_weights_are_not_scored_by_default_yet() -> None:
    from rebalancing.strategies import DEFAULT_STRATEGIES

    assert "rack_aware_sticky" in STRATEGIES
    assert not any(STRATEGIES[name].uses for name in DEFAULT_STRATEGIES)
    assert {"sticky", "averagely", "sac"} <= set(DEFAULT_STRATEGIES)
