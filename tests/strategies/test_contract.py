"""The conformance suite: every registered strategy against the contract of DESIGN.md.

rebalancing.testing.CHECKS x STRATEGIES, with ids such as `sticky-order_insensitive`, the way
scikit-learn's `parametrize_with_checks` runs every estimator: a strategy gets the whole suite by
being registered, and `pytest -k order_insensitive` runs one check on every strategy. The same
properties also run on hypothesis-generated groups (ids ending in `-hypothesis`). A strategy that
declares extra inputs (`uses`) and promises gets their checks too
(rebalancing.testing.placement_checks), with ids such as `rack_aware_sticky-promise_balanced`.
"""

from __future__ import annotations

import json
import math
import pickle
import re
import sys
import warnings
from collections.abc import Callable, KeysView
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rebalancing
from rebalancing.contract import (
    LONGEST_SHOWN,
    AssignFunction,
    CheckedPlan,
    PreviousMismatchWarning,
    SortedIds,
    prepare,
    previous_owners,
    shortened_repr,
    sorted_distinct_ids,
)
from rebalancing.strategies import STRATEGIES, Strategy
from rebalancing.testing import CHECKS, PROPERTIES, Case, placement_checks
from tests.groups import GroupCase, groups, membership_changes

REGISTERED = list(STRATEGIES.values())
CONTRACT_EXAMPLES = settings.default.max_examples // 3
"""Hypothesis groups per strategy and property: 100 by default, 1000 in the thorough profile.
Every property also runs on the 160 seeded groups of rebalancing.testing.groups in
test_contract, so the default run needs fewer random ones (the whole suite is kept in time)."""


@pytest.mark.parametrize(
    ("strategy", "check"),
    [(strategy, check) for strategy in REGISTERED for check in CHECKS.values()],
    ids=[f"{strategy.name}-{name}" for strategy in REGISTERED for name in CHECKS],
)
def test_contract(strategy: Strategy, check: Callable[[AssignFunction], None]) -> None:
    check(strategy.assign)


PLACEMENT_CASES = [
    (strategy, name, check)
    for strategy in REGISTERED
    for name, check in placement_checks(strategy.uses, strategy.promises).items()
]


@pytest.mark.parametrize(
    ("strategy", "check"),
    [(strategy, check) for strategy, _, check in PLACEMENT_CASES],
    ids=[f"{strategy.name}-{name}" for strategy, name, _ in PLACEMENT_CASES],
)
def test_placement_contract(strategy: Strategy, check: Callable[[AssignFunction], None]) -> None:
    check(strategy.assign)


@pytest.mark.parametrize(
    ("strategy", "prop"),
    [(strategy, prop) for strategy in REGISTERED for prop in PROPERTIES.values()],
    ids=[f"{strategy.name}-{name}-hypothesis" for strategy in REGISTERED for name in PROPERTIES],
)
def test_contract_on_hypothesis_groups(
    strategy: Strategy, prop: Callable[[AssignFunction, Case], None]
) -> None:
    @settings(max_examples=CONTRACT_EXAMPLES)
    @given(groups())
    def holds(group: GroupCase) -> None:
        prop(strategy.assign, Case(group.queues, group.consumers, group.previous))

    holds()


@pytest.mark.parametrize("strategy", REGISTERED, ids=[s.name for s in REGISTERED])
def test_none_is_an_id_like_any_other(strategy: Strategy) -> None:
    assert strategy.assign(["q1", "q2"], [None]) == {None: ["q1", "q2"]}
    assert strategy.assign([None], ["c1"], {"c1": [None]}) == {"c1": [None]}


@pytest.mark.parametrize(
    "strategy", [s for s in REGISTERED if s.open_session], ids=lambda s: s.name
)
def test_none_is_an_id_like_any_other_in_a_session(strategy: Strategy) -> None:
    assert strategy.open_session is not None
    session = strategy.open_session(seed=0)
    assert session.rebalance(["q1", "q2", "q3"], [None]).owners == {None: ["q1", "q2", "q3"]}
    assert session.rebalance([None], ["c1"]).owners == {"c1": [None]}


SESSIONS = [s for s in REGISTERED if s.open_session]


@pytest.mark.parametrize("strategy", SESSIONS, ids=lambda s: s.name)
def test_a_member_back_under_its_id_after_the_group_emptied_settles(strategy: Strategy) -> None:
    """The group empties, then its member comes back: issue 43's KCL sequence, for every
    protocol session (scenarios never empty a group, so only a session shows it)."""
    assert strategy.open_session is not None
    session = strategy.open_session(seed=0)
    for consumers in (["worker-a"], [], ["worker-a"], ["worker-a", "worker-b"], [], ["worker-b"]):
        run = session.rebalance([0, 1, 2], consumers)
        assert run.converged, (consumers, run)
        expected = sorted(q for owned in run.owners.values() for q in owned)
        assert list(run.owners) == consumers
        assert expected == ([0, 1, 2] if consumers else [])


@pytest.mark.parametrize("strategy", SESSIONS, ids=lambda s: s.name)
def test_every_session_settles_every_group_in_turn_emptied_ones_included(
    strategy: Strategy,
) -> None:
    @settings(max_examples=25, deadline=None)
    @given(membership_changes, st.integers(0, 2**16))
    def holds(steps: list[tuple[int, set[str]]], seed: int) -> None:
        assert strategy.open_session is not None
        session = strategy.open_session(seed=seed)
        for count, consumers in steps:
            run = session.rebalance(range(count), consumers)
            assert run.converged
            assert list(run.owners) == sorted(consumers)
            owned = sorted(q for queues in run.owners.values() for q in queues)
            assert owned == (list(range(count)) if consumers else [])

    holds()


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


# --- inputs checked once: SortedIds and CheckedPlan ----------------------------------------------


@pytest.mark.parametrize("strategy", REGISTERED, ids=[s.name for s in REGISTERED])
def test_checked_inputs_give_the_plan_the_unchecked_ones_give(strategy: Strategy) -> None:
    @settings(max_examples=40, deadline=None)
    @given(groups())
    def holds(case: GroupCase) -> None:
        expected = strategy.assign(case.queues, case.consumers, case.previous)
        queues, consumers = SortedIds(case.queues, "queue"), SortedIds(case.consumers, "consumer")
        checked = CheckedPlan(case.previous)
        assert strategy.assign(queues, consumers, checked) == expected
        assert strategy.assign(case.queues, case.consumers, checked) == expected

    holds()


BAD_PREVIOUS: list[Any] = [
    [("c1", ["q1"])],
    {"c1": 7},
    {"c1": "q9"},  # not a queue of the group: one that is gets a message of its own (below)
    {"c1": [["q1"]]},
    {"c1": ["q3"], "c2": ["q1", "q3"]},
    {"c1": ["q3", "q3"]},
    {"c1": ("q1", "q2"), "c2": ["q2"]},
]


@pytest.mark.parametrize("previous", BAD_PREVIOUS, ids=repr)
def test_a_checked_plan_refuses_what_assign_refuses_with_the_same_message(previous: Any) -> None:
    with pytest.raises((TypeError, ValueError)) as refused_by_assign:
        STRATEGIES["averagely"].assign(["q1", "q2", "q3"], ["c1", "c2"], previous)
    with pytest.raises(refused_by_assign.type, match=re.escape(str(refused_by_assign.value))):
        CheckedPlan(previous)


def test_a_checked_plan_of_generators_reads_each_once_and_names_the_queue_held_twice() -> None:
    generators = {"c1": (q for q in ["q1"]), "c2": (q for q in ["q2", "q1"])}
    with pytest.raises(ValueError, match="'q1' is owned by both 'c1' and 'c2'"):
        CheckedPlan(generators)
    read_once = CheckedPlan({"c1": (q for q in ["q1", "q2"])})
    assert read_once == {"c1": ("q1", "q2")}
    assert dict(read_once.owner) == {"q1": "c1", "q2": "c1"}


def test_a_checked_plan_cannot_change_once_checked() -> None:
    plan = {"a": [1, 2], "b": [3]}
    checked = CheckedPlan(plan)
    plan["a"].append(3)  # the caller's lists are copied: this does not reach the checked plan
    plan["c"] = [4]
    assert checked == {"a": (1, 2), "b": (3,)}
    assert dict(checked.owner) == {1: "a", 2: "a", 3: "b"}
    assert not hasattr(checked, "__setitem__")
    with pytest.raises(AttributeError):
        checked.extra = 1  # type: ignore[attr-defined]
    assert prepare([1, 2, 3], ["a", "b"], checked).previous is checked  # taken as it is
    assert previous_owners(checked) == {1: "a", 2: "a", 3: "b"}
    assert CheckedPlan(None) == {}
    assert not CheckedPlan(None).owner


def test_sorted_ids_are_checked_sorted_and_taken_as_they_are() -> None:
    ids = SortedIds(("q3", "q1", "q2"), "queue")
    assert ids == ("q1", "q2", "q3")
    assert sorted_distinct_ids(ids, "queue") == ["q1", "q2", "q3"]
    assert pickle.loads(pickle.dumps(ids)) == ids
    assert type(pickle.loads(pickle.dumps(ids))) is SortedIds
    for bad, error, message in (
        (["q1", "q2", "q1"], ValueError, "duplicate queue id 'q1'"),
        ([math.nan, 1.0, 0.5], TypeError, "nan"),
        ([["q1"]], TypeError, r"\['q1'\]"),
        ([1, "q2"], TypeError, "'q2'"),
        ("q1", TypeError, "queues must be an iterable"),
    ):
        with pytest.raises(error, match=message):
            SortedIds(bad, "queue")


@given(groups())
def test_kept_queues_and_kept_owner_say_the_same(case: GroupCase) -> None:
    group = prepare(case.queues, case.consumers, case.previous)
    grouped = {
        consumer: sorted(queue for queue, owner in group.kept_owner.items() if owner == consumer)
        for consumer in set(group.kept_owner.values())
    }
    by_consumer = {consumer: sorted(owned) for consumer, owned in group.kept_queues.items()}
    assert {consumer: owned for consumer, owned in by_consumer.items() if owned} == grouped
    present = set(case.queues)
    expected = {
        queue: owner
        for owner, owned in (case.previous or {}).items()
        if owner in case.consumers
        for queue in owned
        if queue in present
    }
    assert group.kept_owner == expected


@given(groups())
def test_a_previous_plan_known_within_the_queue_set_keeps_what_a_checked_one_keeps(
    case: GroupCase,
) -> None:
    """The scoring core's path: queues as SortedIds, the previous plan made with `within` the
    step's queue set. When that is this group's own set, kept_queues skips its pass over the
    previous queues and must come to the same; with another set (the queues changed), it
    makes the pass."""
    queues = SortedIds(case.queues, "queue")
    checked = CheckedPlan(case.previous)
    expected = prepare(queues, case.consumers, checked).kept_queues
    still_there = {
        consumer: [queue for queue in owned if queue in queues.as_set]
        for consumer, owned in checked.items()
    }
    within_this_set = CheckedPlan.of_checked_lists(still_there, within=queues.as_set)
    group = prepare(queues, case.consumers, within_this_set)
    assert group.queue_set is queues.as_set
    assert dict(group.kept_queues) == dict(expected)
    within_another_set = CheckedPlan.of_checked_lists(checked, within=frozenset(checked.owner))
    assert dict(prepare(queues, case.consumers, within_another_set).kept_queues) == dict(expected)


def test_a_plan_said_to_lie_within_the_group_s_own_queue_set_is_kept_without_a_pass() -> None:
    """The skip happens: told that every queue lies within this group's set (here wrongly,
    which only a caller of of_checked_lists could do), kept_queues takes the plan as it is,
    where the pass it skips would drop queue 7; told another set, it makes the pass."""
    queues = SortedIds([1, 2], "queue")
    said_within = CheckedPlan.of_checked_lists({"c": [1, 7]}, within=queues.as_set)
    assert dict(prepare(queues, ["c"], said_within).kept_queues) == {"c": (1, 7)}
    within_another = CheckedPlan.of_checked_lists({"c": [1, 7]}, within=frozenset({1, 2, 7}))
    assert dict(prepare(queues, ["c"], within_another).kept_queues) == {"c": (1,)}


def test_sorted_ids_share_one_set_that_is_not_pickled() -> None:
    ids = SortedIds((3, 1, 2), "queue")
    assert ids.as_set == frozenset({1, 2, 3})
    assert ids.as_set is ids.as_set
    assert prepare(ids, ["c"], None).queue_set is ids.as_set
    assert prepare([3, 1, 2], ["c"], None).queue_set == ids.as_set
    copied = pickle.loads(pickle.dumps(ids))
    assert "as_set" not in vars(copied)
    assert copied.as_set == ids.as_set


@pytest.mark.parametrize("strategy", REGISTERED, ids=[s.name for s in REGISTERED])
def test_ids_given_as_a_descending_range_are_sorted(strategy: Strategy) -> None:
    assert strategy.assign(range(5, 0, -1), range(2, 0, -1)) == strategy.assign(
        [1, 2, 3, 4, 5], [1, 2]
    )


# --- ids from any iterable, and error messages that stay readable -------------------------------


@pytest.mark.parametrize("strategy", REGISTERED, ids=[s.name for s in REGISTERED])
def test_unhashable_ids_from_a_non_dict_mapping_s_keys_are_refused_naming_the_id(
    strategy: Strategy,
) -> None:
    # a KeysView of anything but a dict yields whatever its mapping iterates over
    with pytest.raises(TypeError, match=r"queue id \['q2'\] is not hashable \(list\)"):
        strategy.assign(KeysView(["q1", ["q2"]]), ["c1"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"consumer id \{\} is not hashable \(dict\)"):
        strategy.assign(["q1"], KeysView([{}]))  # type: ignore[arg-type]
    # hashable ids from such a view are taken like any others
    hashable: Any = KeysView(["q2", "q1"])  # type: ignore[arg-type]
    assert strategy.assign(hashable, ["c1"]) == {"c1": ["q1", "q2"]}


def test_a_long_value_is_shown_by_its_start_its_length_and_its_end() -> None:
    assert shortened_repr("q7") == "'q7'"
    assert shortened_repr(("orders", 3)) == "('orders', 3)"
    huge = "head-" + "x" * 1_000_000 + "-tail"
    shown = shortened_repr(huge)
    assert len(shown) <= LONGEST_SHOWN
    assert shown.startswith("'head-xxx")
    assert shown.endswith("xxx-tail'")
    assert "1,000,012 characters" in shown  # the repr's length, quotes included


HUGE = "head-" + "x" * 1_000_000 + "-tail"


@pytest.mark.parametrize("strategy", REGISTERED, ids=[s.name for s in REGISTERED])
@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        (([HUGE, "q1", HUGE], ["c1"]), ValueError),  # a duplicate queue
        ((["q1"], ["c1", HUGE, HUGE]), ValueError),  # a duplicate consumer
        (([HUGE, 1], ["c1"]), TypeError),  # ids that cannot be ordered together
        (([HUGE], ["c1", "c2"], {"c1": [HUGE], "c2": [HUGE]}), ValueError),  # owned twice
        ((["q1"], [HUGE], {HUGE: 7}), TypeError),  # a malformed previous
        ((["q1"], ["c1"], {HUGE: ["q1", ["q2"]]}), TypeError),  # an unhashable queue in it
    ],
    ids=["duplicate_queue", "duplicate_consumer", "unorderable", "twice", "malformed", "hash"],
)
def test_an_error_naming_a_huge_id_stays_short_and_identifies_it(
    strategy: Strategy, arguments: tuple[Any, ...], error: type[Exception]
) -> None:
    with pytest.raises(error) as raised:
        strategy.assign(*arguments)
    message = str(raised.value)
    assert len(message) < 600, message[:600]
    assert "'head-xxx" in message
    assert "xxx-tail'" in message
    assert "1,000,012 characters" in message


# --- previous: a queue id for a list, ids of another form -----------------------------------------


@pytest.mark.parametrize("strategy", REGISTERED, ids=[s.name for s in REGISTERED])
@pytest.mark.parametrize(
    ("queues", "previous", "named"),
    [
        (
            [("orders", 3), ("orders", 4)],
            {"c-a": [("orders", 4)], "c-b": ("orders", 3)},
            r"previous\['c-b'\] is the queue id \('orders', 3\) itself",
        ),
        (["q1", "q2"], {"c-a": "q2"}, r"previous\['c-a'\] is the queue id 'q2' itself"),
        ([3, 4], {"c-b": 3}, r"previous\['c-b'\] is the queue id 3 itself"),
    ],
    ids=["tuple", "str", "int"],
)
def test_a_queue_id_given_where_a_list_of_queue_ids_belongs_is_named_with_the_fix(
    strategy: Strategy, queues: list[Any], previous: dict[Any, Any], named: str
) -> None:
    with pytest.raises(TypeError, match=named + r".*wrap it in a list"):
        strategy.assign(queues, ["c-a", "c-b"], previous)


@pytest.mark.parametrize("strategy", REGISTERED, ids=[s.name for s in REGISTERED])
def test_a_tuple_of_queue_ids_is_still_a_list_of_queue_ids(strategy: Strategy) -> None:
    queues = [("orders", 3), ("orders", 4)]
    plan = strategy.assign(queues, ["c-a"], {"c-a": (("orders", 3), ("orders", 4))})
    assert plan == {"c-a": queues}


def _mismatch_warnings(call: Callable[[], Any]) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [warning for warning in caught if warning.category is PreviousMismatchWarning]


@pytest.mark.parametrize("strategy", REGISTERED, ids=[s.name for s in REGISTERED])
def test_a_previous_sharing_no_queue_warns_once_at_the_caller_naming_both_forms(
    strategy: Strategy,
) -> None:
    queues = [("orders", number) for number in range(4)]
    previous = {"c1": ["orders-0", "orders-1"], "c2": ["orders-2", "orders-3"]}
    caught = _mismatch_warnings(lambda: strategy.assign(queues, ["c1", "c2"], previous))
    assert len(caught) == 1
    assert caught[0].filename == __file__  # the line that called the strategy
    message = str(caught[0].message)
    assert "'orders-0' (str)" in message
    assert "('orders', 0) (tuple)" in message


def test_the_mismatch_warning_is_a_user_warning_that_can_be_made_an_error() -> None:
    assert issubclass(PreviousMismatchWarning, UserWarning)
    assert rebalancing.PreviousMismatchWarning is PreviousMismatchWarning
    with warnings.catch_warnings():
        warnings.simplefilter("error", PreviousMismatchWarning)
        with pytest.raises(PreviousMismatchWarning, match="ids of another form"):
            STRATEGIES["sticky"].assign([("orders", 0)], ["c1"], {"c1": ["orders-0"]})


@pytest.mark.parametrize("strategy", REGISTERED, ids=[s.name for s in REGISTERED])
def test_a_previous_sharing_a_queue_or_holding_none_does_not_warn(strategy: Strategy) -> None:
    calls: list[Callable[[], Any]] = [
        lambda: strategy.assign(["q1", "q2"], ["c1"], {"c1": ["q2", "gone"]}),
        lambda: strategy.assign(["q1", "q2"], ["c1"], {"c1": [], "c2": []}),  # holds no queue
        lambda: strategy.assign([], ["c1"], {"c1": ["gone"]}),  # no queues: every one is gone
        lambda: strategy.assign(["q1"], ["c1"], CheckedPlan({"c1": ["gone"]})),  # the library's
    ]
    for call in calls:
        assert _mismatch_warnings(call) == []


@pytest.mark.parametrize(
    "strategy", [s for s in REGISTERED if s.open_session], ids=lambda s: s.name
)
def test_a_session_whose_group_replaced_every_queue_does_not_warn(strategy: Strategy) -> None:
    assert strategy.open_session is not None
    session = strategy.open_session(seed=1)
    session.rebalance(["old-1", "old-2"], ["c1", "c2"])
    assert _mismatch_warnings(lambda: session.rebalance(["new-1", "new-2"], ["c1", "c2"])) == []


def test_a_previous_read_back_from_json_is_refused_saying_to_make_tuples_again() -> None:
    sticky = STRATEGIES["sticky"]
    plan = sticky.assign([("orders", 0), ("orders", 1)], ["c1"], None)
    read_back = json.loads(json.dumps(plan))
    with pytest.raises(TypeError, match=r"read back from JSON .*tuple\(queue\)"):
        sticky.assign([("orders", 0), ("orders", 1)], ["c1"], read_back)
