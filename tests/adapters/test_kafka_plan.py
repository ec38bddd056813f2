"""The client-independent rules of the Kafka assignors: who owns what (stale generations,
conflicting claims), per-topic planning for members with different subscriptions, the checks on
a strategy's plan, and the two phases of a cooperative rebalance (KIP-429)."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rebalancing.adapters.kafka_plan import (
    Partition,
    Subscription,
    by_topic,
    cooperative_round,
    ownership,
    plan_group,
    subscribed_partitions,
)
from rebalancing.contract import PreviousMismatchWarning
from rebalancing.evaluation.scoring.scores import score
from rebalancing.strategies import STRATEGIES, Strategy, resolve, sticky
from tests.evaluation.test_scores import JUNK

STICKY = STRATEGIES["sticky"]


def member(
    member_id: str, topics: Iterable[str], owned: Iterable[Partition] = (), generation: int = -1
) -> Subscription:
    return Subscription(member_id, frozenset(topics), tuple(owned), generation)


# --- who owns what ------------------------------------------------------------------------


def test_a_member_with_a_stale_generation_owns_nothing() -> None:
    owners = ownership(
        [
            member("a", ["t"], [("t", 0), ("t", 1)], generation=7),
            member("b", ["t"], [("t", 2)], generation=6),  # missed generation 7
        ]
    )
    assert owners.previous == {"a": [("t", 0), ("t", 1)], "b": []}
    assert owners.stale == ("b",)
    assert owners.newest_generation == 7


def test_of_two_claims_on_a_partition_the_highest_generation_wins() -> None:
    owners = ownership(
        [
            member("old", ["t"], [("t", 0), ("t", 1)], generation=3),
            member("new", ["t"], [("t", 1)], generation=4),
        ]
    )
    assert owners.previous == {"new": [("t", 1)], "old": []}
    assert owners.claimants == {("t", 1): ("new",)}


def test_two_claims_of_the_same_generation_cancel_without_a_crash() -> None:
    owners = ownership(
        [
            member("a", ["t"], [("t", 0), ("t", 1)], generation=5),
            member("b", ["t"], [("t", 1), ("t", 2)], generation=5),
        ]
    )
    assert owners.previous == {"a": [("t", 0)], "b": [("t", 2)]}
    assert owners.claimants[("t", 1)] == ("a", "b")


def test_a_partition_listed_twice_by_one_member_is_one_claim() -> None:
    owners = ownership([member("a", ["t"], [("t", 0), ("t", 0)], generation=1)])
    assert owners.previous == {"a": [("t", 0)]}
    assert owners.claimants == {("t", 0): ("a",)}


def test_members_that_never_had_an_assignment_claim_nothing() -> None:
    owners = ownership([member("a", ["t"]), member("b", ["t"])])
    assert owners.previous == {"a": [], "b": []}
    assert owners.newest_generation == -1
    assert owners.stale == ()


def test_a_new_member_without_a_generation_does_not_make_the_others_stale() -> None:
    owners = ownership([member("a", ["t"], [("t", 0)], generation=2), member("new", ["t"])])
    assert owners.previous == {"a": [("t", 0)], "new": []}


# --- the plan -----------------------------------------------------------------------------


def test_members_with_the_same_topics_are_planned_as_one_group() -> None:
    members = [member("a", ["t", "u"]), member("b", ["t", "u"]), member("c", ["t", "u"])]
    plan = plan_group(STICKY, {"t": [0], "u": [0]}, members)
    # one call of sticky over both topics: 2 partitions over 3 members, not 1 + 1 to "a"
    assert plan == {"a": [("t", 0)], "b": [("u", 0)], "c": []}


def test_members_with_different_topics_get_only_partitions_of_their_topics() -> None:
    members = [member("a", ["t"]), member("b", ["t", "u"]), member("c", ["u"])]
    plan = plan_group(STICKY, {"t": range(4), "u": range(2)}, members)
    assert plan == {
        "a": [("t", 0), ("t", 2)],
        "b": [("t", 1), ("t", 3), ("u", 0)],
        "c": [("u", 1)],
    }


def test_per_topic_planning_balances_each_topic_not_the_totals() -> None:
    """The price of planning per topic, as with Kafka's RangeAssignor: three one-partition
    topics shared by "a" and "b" all go to "a" (ties go to the lowest id in each topic)."""
    members = [member("a", ["t1", "t2", "t3"]), member("b", ["t1", "t2", "t3", "x"])]
    plan = plan_group(STICKY, {"t1": [0], "t2": [0], "t3": [0], "x": [0]}, members)
    assert plan == {"a": [("t1", 0), ("t2", 0), ("t3", 0)], "b": [("x", 0)]}


def test_the_previous_plan_is_restricted_to_each_topic() -> None:
    members = [
        member("a", ["t"], [("t", 0), ("t", 1), ("u", 0)], generation=1),
        member("b", ["t", "u"], [("t", 2), ("u", 1)], generation=1),
        member("c", ["t", "u"], generation=-1),
    ]
    plan = plan_group(STICKY, {"t": range(3), "u": range(2)}, members)
    # "a" no longer subscribes to "u": its ("u", 0) is free; everything else stays
    assert plan == {"a": [("t", 0)], "b": [("t", 2), ("u", 1)], "c": [("t", 1), ("u", 0)]}


def test_a_topic_the_cluster_does_not_know_has_nothing_to_assign() -> None:
    members = [member("a", ["t", "missing"]), member("b", ["t"])]
    plan = plan_group(STICKY, {"t": range(2)}, members)
    assert plan == {"a": [("t", 0)], "b": [("t", 1)]}


@pytest.mark.parametrize("other_topics", [["t"], ["t", "u"]], ids=["one group", "per topic"])
def test_claims_on_a_deleted_topic_are_dropped_without_an_id_form_warning(
    other_topics: list[str],
) -> None:
    """Claims on partitions that no longer exist are normal in Kafka (a topic deleted, a
    subscription dropped): the strategy is not told of them, so it does not warn that the
    ids might be of another form (PreviousMismatchWarning)."""
    members = [
        member("a", ["t", "u"], [("deleted", 0), ("u", 0)], generation=3),
        member("b", other_topics),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error", PreviousMismatchWarning)
        plan = plan_group(STICKY, {"t": range(2)}, members)
    assert sorted(plan["a"] + plan["b"]) == [("t", 0), ("t", 1)]


def test_an_empty_group_gets_an_empty_plan() -> None:
    assert plan_group(STICKY, {"t": range(3)}, []) == {}


def test_a_member_that_appears_twice_is_named() -> None:
    with pytest.raises(ValueError, match="member 'a' appears 2 times"):
        plan_group(STICKY, {"t": [0]}, [member("a", ["t"]), member("a", ["t"])])


def test_a_static_member_is_planned_under_its_group_instance_id() -> None:
    """KIP-345: a static member keeps its group.instance.id across restarts, not its member
    id, so the strategy sees it, its claims included, under the instance id."""
    restarted = Subscription("b-1f3e", frozenset(["t"]), (("t", 1),), 4, group_instance_id="b")
    members = [member("a", ["t"], [("t", 0)], generation=4), restarted]
    assert restarted.consumer_id == "b"
    assert ownership(members).previous == {"a": [("t", 0)], "b": [("t", 1)]}
    assert plan_group(STICKY, {"t": range(2)}, members) == {"a": [("t", 0)], "b": [("t", 1)]}


@pytest.mark.parametrize(
    ("members", "message"),
    [
        (
            [
                Subscription("x-1", frozenset(["t"]), group_instance_id="x"),
                Subscription("x-2", frozenset(["t"]), group_instance_id="x"),
            ],
            "members 'x-1', 'x-2' would both be planned as 'x'",
        ),
        (
            [member("a", ["t"]), Subscription("a-9", frozenset(["t"]), group_instance_id="a")],
            "members 'a', 'a-9' would both be planned as 'a'",
        ),
    ],
)
def test_two_members_planned_under_one_consumer_id_are_named(
    members: list[Subscription], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        plan_group(STICKY, {"t": [0]}, members)


@pytest.mark.parametrize("instance", ["", 7])
def test_a_group_instance_id_must_be_a_non_empty_string(instance: Any) -> None:
    with pytest.raises(
        TypeError, match=r"member 'm': group\.instance\.id .* is not a non-empty str"
    ):
        Subscription("m", frozenset(), group_instance_id=instance)


def test_a_member_id_must_be_a_string() -> None:
    with pytest.raises(TypeError, match="member id 3 is not a str"):
        Subscription(3, frozenset())  # type: ignore[arg-type]


# --- what the planner accepts, and how it refuses the rest ------------------------------


@contextmanager
def records_logged() -> Iterator[list[logging.LogRecord]]:
    """The records the planner logs inside the block (its warnings are how it reports odd but
    valid input, so refused input must log nothing)."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.DEBUG)
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("rebalancing.adapters.kafka_plan")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield records
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


@pytest.mark.parametrize("topics", ["orders", b"orders", bytearray(b"orders")])
def test_topics_given_as_one_string_are_refused_naming_the_member(topics: Any) -> None:
    with records_logged() as records, pytest.raises(TypeError) as refused:
        Subscription("m-2", topics)
    assert "member 'm-2'" in str(refused.value)
    assert "a set of topic names, e.g. {'orders'}" in str(refused.value)
    assert records == []


@pytest.mark.parametrize(
    "topics",
    [{"orders", "audit"}, ["audit", "orders"], ("orders", "audit"), iter(["audit", "orders"])],
)
def test_topics_may_be_any_collection_of_names_and_are_kept_as_a_frozenset(topics: Any) -> None:
    assert Subscription("m", topics).topics == frozenset({"audit", "orders"})


def test_members_subscribing_to_sets_of_different_topics_are_planned_per_topic() -> None:
    members = [Subscription("a", {"t"}), Subscription("b", {"t", "u"})]
    assert plan_group(STICKY, {"t": range(2), "u": range(1)}, members) == {
        "a": [("t", 0)],
        "b": [("t", 1), ("u", 0)],
    }


@pytest.mark.parametrize(
    ("topics", "error", "message"),
    [
        (["orders", 3], TypeError, "member 'm': topic 3 is int, not a str"),
        (["orders", ""], ValueError, "member 'm': a topic name is empty"),
        (None, TypeError, "member 'm': topics must be a set of topic names"),
        (7, TypeError, "member 'm': topics must be a set of topic names"),
    ],
)
def test_a_topic_must_be_a_non_empty_name(topics: Any, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        Subscription("m", topics)


def test_an_owned_partition_given_as_a_two_item_list_is_taken_as_a_pair() -> None:
    """JSON has no tuples: a group's state read from JSON lists its partitions as lists."""
    claimed = Subscription("m-1", {"orders"}, owned=(["orders", 0], ("orders", 1)), generation=2)
    assert claimed.owned == (("orders", 0), ("orders", 1))
    assert ownership([claimed]).previous == {"m-1": [("orders", 0), ("orders", 1)]}


@pytest.mark.parametrize(
    ("owned", "error", "message"),
    [
        (
            ("orders", 0),
            TypeError,
            r"member 'm': owned item 'orders' is not a \(topic, partition\)",
        ),
        ("orders", TypeError, r"member 'm': owned must be a collection of \(topic, partition\)"),
        (3, TypeError, r"member 'm': owned must be a collection of \(topic, partition\)"),
        ([["orders"]], TypeError, r"owned item \['orders'\] is not a \(topic, partition\)"),
        ([("orders", 0, 1)], TypeError, r"owned item \('orders', 0, 1\) is not a \(topic, "),
        ([(0, "orders")], TypeError, r"owned item \(0, 'orders'\): topic 0 is int, not a str"),
        ([("orders", 1.0)], TypeError, r"owned item \('orders', 1\.0\): partition 1\.0 is"),
        ([("orders", True)], TypeError, r"owned item \('orders', True\): partition True is"),
        ([("orders", -1)], ValueError, r"owned item \('orders', -1\): partition -1 is negat"),
        ([("", 0)], ValueError, r"owned item \('', 0\): a topic name is empty"),
        ([{"orders": 0}], TypeError, r"owned item \{'orders': 0\} is not a \(topic, partition\)"),
    ],
)
def test_an_owned_item_that_is_not_a_topic_partition_pair_is_refused_naming_it(
    owned: Any, error: type, message: str
) -> None:
    with pytest.raises(error, match=message):
        Subscription("m", {"orders"}, owned=owned, generation=1)


@pytest.mark.parametrize(
    ("generation", "error", "message"),
    [
        ("7", TypeError, "member 'm': generation '7' is str, not an int"),
        (7.0, TypeError, "member 'm': generation 7.0 is float, not an int"),
        (True, TypeError, "member 'm': generation True is bool, not an int"),
        (-2, ValueError, r"member 'm': generation -2 is below NO_GENERATION \(-1\)"),
    ],
)
def test_a_generation_is_an_int_from_no_generation_up(
    generation: Any, error: type, message: str
) -> None:
    with pytest.raises(error, match=message):
        Subscription("m", {"orders"}, generation=generation)


@pytest.mark.parametrize("name", ["sticky", "rebalancing.strategies.sticky:assign"])
def test_plan_group_takes_a_strategy_by_name_as_the_command_lines_do(name: str) -> None:
    members = [member("a", ["t"], [("t", 0), ("t", 1)], generation=1), member("b", ["t"])]
    assert plan_group(name, {"t": range(4)}, members) == plan_group(
        STICKY, {"t": range(4)}, members
    )


@pytest.mark.parametrize(
    ("strategy", "error", "message"),
    [
        ("stiky", ValueError, "unknown strategy 'stiky'"),
        (3, TypeError, "strategy must be a name or a Strategy, not int"),
        (sticky.assign, TypeError, "strategy must be a name or a Strategy, not function"),
    ],
)
def test_plan_group_names_a_strategy_it_cannot_run(
    strategy: Any, error: type, message: str
) -> None:
    with pytest.raises(error, match=message):
        plan_group(strategy, {"t": range(2)}, [member("a", ["t"])])


@pytest.mark.parametrize(
    ("subscriptions", "message"),
    [
        (member("a", ["t"]), "subscriptions must be a collection of Subscription, not one"),
        ([member("a", ["t"]), {"member_id": "b"}], "subscription 1 is dict, not a Subscription"),
        (None, "subscriptions must be a collection of Subscription, not NoneType"),
    ],
)
def test_plan_group_refuses_what_is_not_a_subscription_naming_it(
    subscriptions: Any, message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        plan_group(STICKY, {"t": range(2)}, subscriptions)


def test_plan_group_reads_subscriptions_given_as_an_iterator_once() -> None:
    members = [member("a", ["t"], [("t", 0)], generation=1), member("b", ["t"])]
    expected = plan_group(STICKY, {"t": range(4)}, members)
    assert plan_group(STICKY, {"t": range(4)}, iter(members)) == expected


@pytest.mark.parametrize(
    ("partitions", "error", "message"),
    [
        (["t"], TypeError, "partition metadata must be a mapping topic -> partition numbers"),
        (
            {"t": 6},
            TypeError,
            r"of topic 't': partition numbers must be a collection of ints, .* not int 6",
        ),
        (
            {"t": "012"},
            TypeError,
            "of topic 't': partition numbers must be a collection of ints, .* not str '012'",
        ),
        ({"t": [0, "1"]}, TypeError, "topic 't': partition '1' is str, not an int"),
        ({"t": [0, -1]}, ValueError, "topic 't': partition -1 is negative"),
        ({"t": [0, 1, 0]}, ValueError, "topic 't': partition 0 is listed twice"),
        ({3: [0]}, TypeError, "partition metadata: topic 3 is int, not a str"),
    ],
)
def test_partition_metadata_maps_topic_names_to_distinct_partition_numbers(
    partitions: Any, error: type, message: str
) -> None:
    with records_logged() as records, pytest.raises(error, match=message):
        plan_group(STICKY, partitions, [member("a", ["t"])])
    assert records == []


def test_owners_must_be_an_ownership() -> None:
    with pytest.raises(TypeError, match=r"owners must be an Ownership .*, not dict"):
        plan_group(STICKY, {"t": range(2)}, [member("a", ["t"])], {"a": []})  # type: ignore[arg-type]


JUNK_FIELDS = {
    # field -> what the refusal must name
    "member_id": "member",
    "topics": "member 'm-1'",
    "owned": "member 'm-1'",
    "generation": "member 'm-1'",
    "group_instance_id": "member",
    "strategy": "strategy",
    "partitions": "partition",
    "subscriptions": "subscription",
}


@given(field=st.sampled_from(sorted(JUNK_FIELDS)), value=JUNK)
def test_junk_in_any_field_is_refused_naming_it_or_taken_in_canonical_form(
    field: str, value: Any
) -> None:
    """Whatever one field holds, the planner either refuses it with a ValueError/TypeError
    that names the culprit, before it logs anything, or takes it in the documented form and
    returns a valid plan; never an AttributeError, a bare 'unhashable' or a letter per topic."""
    given_values: dict[str, Any] = {
        "member_id": "m-1",
        "topics": {"orders"},
        "owned": (("orders", 0),),
        "generation": 3,
        "group_instance_id": None,
        "strategy": "sticky",
        "partitions": {"orders": range(4)},
    }
    if field == "partitions" and isinstance(value, Mapping):  # an iterator is read only once
        value = {
            topic: list(numbers) if isinstance(numbers, Iterator) else numbers
            for topic, numbers in value.items()
        }
    given_values[field] = value
    with records_logged() as records:
        try:
            claimed = Subscription(
                given_values["member_id"],
                given_values["topics"],
                given_values["owned"],
                given_values["generation"],
                given_values["group_instance_id"],
            )
            members = (
                value if field == "subscriptions" else [claimed, Subscription("m-2", {"orders"})]
            )
            plan = plan_group(given_values["strategy"], given_values["partitions"], members)
        except (ValueError, TypeError) as refusal:
            message = str(refusal)
            assert JUNK_FIELDS[field] in message
            assert "unhashable" not in message
            assert "has no attribute" not in message
            assert records == []
            return
    assert isinstance(claimed.topics, frozenset)
    assert all(isinstance(topic, str) and topic for topic in claimed.topics)
    assert all(
        type(partition) is tuple and isinstance(partition[0], str) and type(partition[1]) is int
        for partition in claimed.owned
    )
    assert type(claimed.generation) is int
    if field != "subscriptions":
        partitions = {topic: list(numbers) for topic, numbers in given_values["partitions"].items()}
        member_of = {subscription.consumer_id: subscription.member_id for subscription in members}
        by_member = {member_of[consumer]: owned for consumer, owned in plan.items()}
        _every_subscribed_partition_once_and_only_to_a_subscriber(by_member, partitions, members)


def _drops_the_last(queues: Any, consumers: Any, previous: Any = None) -> dict[Any, list[Any]]:
    plan = sticky.assign(queues, consumers, previous)
    for owned in plan.values():
        if owned:
            owned.pop()
            break
    return plan


def _doubles_the_first(queues: Any, consumers: Any, previous: Any = None) -> dict[Any, list[Any]]:
    ordered = sorted(queues)
    return {consumer: ordered[:1] for consumer in consumers}


def _forgets_a_member(queues: Any, consumers: Any, previous: Any = None) -> dict[Any, list[Any]]:
    plan = sticky.assign(queues, consumers, previous)
    plan[max(plan)].extend(plan.pop(min(plan)))
    return plan


def _invents_a_member(queues: Any, consumers: Any, previous: Any = None) -> dict[Any, list[Any]]:
    return {**sticky.assign(queues, consumers, previous), "ghost": []}


def _invents_a_partition(queues: Any, consumers: Any, previous: Any = None) -> dict[Any, list[Any]]:
    plan = sticky.assign(queues, consumers, previous)
    plan[min(plan)].append(("nowhere", 0))
    return plan


@pytest.mark.parametrize(
    ("assign", "message"),
    [
        (_drops_the_last, r"strategy 'broken' for the group leaves \('t', \d\) unassigned"),
        (_doubles_the_first, r"assigns \('t', 0\) to both 'a' and 'b'"),
        (_forgets_a_member, "leaves member 'a' out of its plan"),
        (_invents_a_member, "names 'ghost', which is not in the group"),
        (_invents_a_partition, r"assigns \('nowhere', 0\), which it was not given"),
    ],
)
def test_a_plan_that_breaks_the_contract_is_refused_naming_the_strategy(
    assign: Any, message: str
) -> None:
    broken = Strategy("broken", assign, "a test's broken strategy")
    with pytest.raises(RuntimeError, match=message):
        plan_group(broken, {"t": range(3)}, [member("a", ["t"]), member("b", ["t"])])


def test_a_broken_plan_for_one_topic_names_the_topic() -> None:
    broken = Strategy("broken", _drops_the_last, "a test's broken strategy")
    with pytest.raises(RuntimeError, match="strategy 'broken' for topic 'u'"):
        plan_group(broken, {"u": range(2)}, [member("a", ["u"]), member("b", ["t", "u"])])


def test_subscribed_partitions_asks_the_cluster_for_every_subscribed_topic() -> None:
    class Cluster:
        def partitions_for_topic(self, topic: str) -> set[int] | None:
            return {"t": {2, 0, 1}}.get(topic)

    members = [member("a", ["t", "gone"]), member("b", ["t"])]
    assert subscribed_partitions(Cluster(), members) == {"t": [0, 1, 2]}


def test_by_topic_lists_partitions_the_way_the_protocol_structs_do() -> None:
    assert by_topic([("u", 1), ("t", 2), ("t", 0)]) == {"t": [0, 2], "u": [1]}


# --- whole groups, at random --------------------------------------------------------------

TOPICS = ["audit", "orders", "payments"]


@st.composite
def kafka_groups(draw: st.DrawFn) -> tuple[dict[str, range], list[Subscription]]:
    """Topics with partition counts; members with a subscription and claims of any generation,
    on partitions that may no longer exist (some conflicting, some stale)."""
    partitions = {
        topic: range(draw(st.integers(0, 12)))
        for topic in draw(st.lists(st.sampled_from(TOPICS), unique=True, min_size=1))
    }
    member_ids = draw(st.lists(st.sampled_from("abcdefgh"), unique=True, max_size=6))
    same = draw(st.booleans())
    everything = [*partitions, "unknown"]
    shared = draw(st.sets(st.sampled_from(everything), min_size=1))
    members = []
    for member_id in member_ids:
        topics = shared if same else draw(st.sets(st.sampled_from(everything)))
        owned = draw(
            st.lists(st.tuples(st.sampled_from(everything), st.integers(0, 14)), max_size=8)
        )
        generation = draw(st.integers(-1, 3))
        members.append(member(member_id, topics, owned, generation))
    return partitions, members


def _every_subscribed_partition_once_and_only_to_a_subscriber(
    plan: Mapping[str, list[Partition]],
    partitions: Mapping[str, Iterable[int]],
    members: list[Subscription],
) -> None:
    topics_of = {subscription.member_id: subscription.topics for subscription in members}
    assert set(plan) == set(topics_of)
    held = [partition for owned in plan.values() for partition in owned]
    subscribed = frozenset().union(*topics_of.values())
    expected = [(t, n) for t in partitions if t in subscribed for n in partitions[t]]
    assert sorted(held) == sorted(expected)
    for member_id, owned in plan.items():
        assert all(topic in topics_of[member_id] for topic, _ in owned)
        assert owned == sorted(owned)


@pytest.mark.parametrize("name", ["sticky", "averagely", "round_robin", "sac"])
@given(group=kafka_groups())
def test_every_subscribed_partition_goes_once_to_a_subscriber(
    name: str, group: tuple[dict[str, range], list[Subscription]]
) -> None:
    partitions, members = group
    plan = plan_group(resolve(name), partitions, members)
    _every_subscribed_partition_once_and_only_to_a_subscriber(plan, partitions, members)


@given(group=kafka_groups())
def test_sticky_keeps_its_promises_per_topic_or_on_the_whole_group(
    group: tuple[dict[str, range], list[Subscription]],
) -> None:
    """Balanced (spread <= 1) and as sticky as balance allows, on the whole group when all
    subscribe to the same topics, else on each topic among its subscribers."""
    partitions, members = group
    owners = ownership(members)
    plan = plan_group(STICKY, partitions, members, owners)
    topics_of = {subscription.member_id: subscription.topics for subscription in members}
    subscribed = frozenset().union(*topics_of.values())
    if len(set(topics_of.values())) <= 1:
        scopes = [(subscribed, list(topics_of))]
    else:
        scopes = [({t}, [m for m in topics_of if t in topics_of[m]]) for t in subscribed]
    for topics, consumers in scopes:
        queues = [(t, n) for t in sorted(topics) if t in partitions for n in partitions[t]]
        mine = {m: [p for p in plan[m] if p[0] in topics] for m in consumers}
        before = {m: [p for p in owners.previous[m] if p[0] in topics] for m in consumers}
        scores = score(queues, consumers, before, mine)
        assert scores.spread is None or scores.spread <= 1
        assert scores.stickiness_gap in (None, 0)


# --- cooperative rebalancing --------------------------------------------------------------


def test_a_partition_that_moves_is_revoked_first_and_assigned_in_the_next_round() -> None:
    owners = ownership(
        [
            member("a", ["t"], [("t", 0), ("t", 1), ("t", 2)], generation=1),
            member("b", ["t"], [("t", 3)], generation=1),
        ]
    )
    target = {"a": [("t", 0), ("t", 1)], "b": [("t", 2), ("t", 3)]}
    first = cooperative_round(target, owners.claimants)
    assert first.assignment == {"a": [("t", 0), ("t", 1)], "b": [("t", 3)]}
    assert first.revoked == {"a": [("t", 2)], "b": []}
    assert first.deferred == {"a": [], "b": [("t", 2)]}
    assert not first.settled
    after = ownership(
        [
            member("a", ["t"], first.assignment["a"], generation=2),
            member("b", ["t"], first.assignment["b"], generation=2),
        ]
    )
    second = cooperative_round(target, after.claimants)
    assert second.assignment == target
    assert second.settled


def test_an_unowned_partition_is_assigned_at_once() -> None:
    first = cooperative_round({"a": [("t", 0)], "b": [("t", 1)]}, {("t", 0): ("a",)})
    assert first.assignment == {"a": [("t", 0)], "b": [("t", 1)]}
    assert first.settled


def test_a_partition_claimed_twice_is_revoked_by_both_before_it_moves() -> None:
    first = cooperative_round({"a": [("t", 0)], "b": []}, {("t", 0): ("a", "b")})
    assert first.assignment == {"a": [], "b": []}
    assert first.revoked == {"a": [("t", 0)], "b": [("t", 0)]}
    assert first.deferred == {"a": [("t", 0)], "b": []}


def test_claims_of_members_outside_the_group_hold_nothing_back() -> None:
    first = cooperative_round({"a": [("t", 0)]}, {("t", 0): ("gone",)})
    assert first.assignment == {"a": [("t", 0)]}


@pytest.mark.parametrize("name", ["sticky", "averagely", "round_robin"])
@given(group=kafka_groups())
def test_a_cooperative_rebalance_never_gives_an_owned_partition_and_settles_in_two_rounds(
    name: str, group: tuple[dict[str, range], list[Subscription]]
) -> None:
    """Round 1 gives nobody a partition another member still owns; the owners revoke what
    they lose; round 2 (next generation, from what round 1 left) keeps everything round 1
    gave, assigns what was held back, revokes nothing, and the group settles."""
    strategy = resolve(name)
    partitions, members = group
    owners = ownership(members)
    target = plan_group(strategy, partitions, members, owners)
    first = cooperative_round(target, owners.claimants)
    for member_id, owned in first.assignment.items():
        for partition in owned:
            assert set(owners.claimants.get(partition, ())) <= {member_id}
    generation = owners.newest_generation + 1
    after = [
        member(m.member_id, m.topics, first.assignment[m.member_id], generation) for m in members
    ]
    owners_after = ownership(after)
    second_target = plan_group(strategy, partitions, after, owners_after)
    second = cooperative_round(second_target, owners_after.claimants)
    for member_id, owned in first.assignment.items():
        assert set(owned) <= set(second_target[member_id])
    assert second.assignment == second_target
    assert second.settled
