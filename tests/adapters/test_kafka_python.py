"""The kafka-python assignor, driven through whole groups with kafka-python's own protocol
objects: every subscription and assignment is encoded to bytes and decoded again as the
coordinator and the broker do, members join, leave, time out and come back stale, change their
subscriptions, and topics grow. Every plan is decoded and checked: valid, balanced as the
strategy promises, as sticky as balance allows, and against kafka-python's own
StickyPartitionAssignor. The cooperative variant is driven through KIP-429's two rounds."""

from __future__ import annotations

import hashlib
import uuid
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.coordinator.assignors.abstract import AbstractPartitionAssignor, RebalanceProtocol
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData
from kafka.protocol.consumer.group import JoinGroupResponse
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)

from rebalancing.adapters.kafka import kafka_python_assignor
from rebalancing.adapters.kafka_plan import Partition, by_topic
from rebalancing.evaluation.scoring.scores import score

TOPICS = ("audit", "orders", "payments")

GROUP_EXAMPLES = max(20, settings.default.max_examples // 5)
"""Whole histories of a group are costlier than one rebalance: a fifth of the profile's
examples (60 by default, 600 with HYPOTHESIS_PROFILE=thorough)."""


class Cluster:
    """The question kafka-python's assignors ask of ClusterMetadata, with a fresh set each
    time as ClusterMetadata answers it."""

    def __init__(self, partitions: dict[str, int]) -> None:
        self.partitions = dict(partitions)

    def topics(self) -> set[str]:
        return set(self.partitions)

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        count = self.partitions.get(topic)
        return None if count is None else set(range(count))

    def brokers(self) -> list[Any]:
        """No broker is known, so no partition has a replica rack (zone strategies plan as
        without zones; tests/adapters/test_kafka_zones.py builds a real ClusterMetadata)."""
        return []

    def all_partitions(self, topics: Iterable[str]) -> list[Partition]:
        return [
            (t, n)
            for t in sorted(set(topics))
            if t in self.partitions
            for n in range(self.partitions[t])
        ]


@dataclass
class Member:
    """One consumer: its member id (the broker's), its subscription, its assignor, what it
    consumes right now, and for a static member its group.instance.id."""

    member_id: str
    topics: frozenset[str]
    assignor: AbstractPartitionAssignor
    held: set[Partition] = field(default_factory=set)
    group_instance_id: str | None = None


@dataclass(frozen=True)
class Round:
    """One rebalance as the members saw it."""

    generation: int
    before: dict[str, set[Partition]]  # what each member held when it sent JoinGroup
    plan: dict[str, list[Partition]]  # the decoded assignments
    revoked: dict[str, set[Partition]]


def encoded_and_decoded(subscription: Any) -> Any:
    """What the leader reads: the member's subscription through the wire and back."""
    return ConsumerProtocolSubscription.decode(subscription.encode())


class Group:
    """A consumer group as kafka-python's coordinator runs it (coordinator/consumer.py): before
    JoinGroup an eager member revokes everything and a cooperative one what it no longer
    subscribes to; the first member to have joined leads and runs `assign` (every member's
    assignor is asked, and must answer the same); every member decodes its assignment and
    calls `on_assignment(assignment, generation)`; a cooperative member that lost partitions
    revokes them and rejoins.

    Members are named: a dynamic member's name is its member id; with `static`, members are
    static (KIP-345), their name is their group.instance.id, and the broker gives them a new
    member id each time they join, `<group.instance.id>-<uuid>` as Kafka's GroupCoordinator
    makes it. Plans and holdings are by name."""

    def __init__(
        self,
        cluster: Cluster,
        make_assignor: Callable[[], AbstractPartitionAssignor],
        *,
        static: bool = False,
    ):
        self.cluster = cluster
        self.make_assignor = make_assignor
        self.static = static
        self.generation = 0
        self.members: dict[str, Member] = {}
        self.away: dict[str, Member] = {}
        self.rounds: list[Round] = []
        self.member_ids_made = 0

    def new_member_id(self, name: str) -> str:
        """The member id the broker gives a member joining under `name` (module docstring)."""
        if not self.static:
            return name
        self.member_ids_made += 1
        key = f"{name}/{self.member_ids_made}".encode()
        return f"{name}-{uuid.UUID(bytes=hashlib.blake2b(key, digest_size=16).digest())}"

    def join(self, name: str, topics: Iterable[str]) -> None:
        instance = name if self.static else None
        member_id = self.new_member_id(name)
        self.members[name] = Member(
            member_id, frozenset(topics), self.make_assignor(), set(), instance
        )

    def leave(self, name: str) -> None:
        del self.members[name]

    def time_out(self, name: str) -> None:
        """The member misses rebalances: kafka-python's consumer, on losing its generation,
        drops its partitions but its assignor keeps what it last had."""
        member = self.members.pop(name)
        member.held = set()
        self.away[name] = member

    def come_back(self, name: str) -> None:
        """The member that timed out joins again, its assignor as it was; a static member
        under a new member id (its session expired, the broker removed it)."""
        member = self.away.pop(name)
        if self.static:
            member.member_id = self.new_member_id(name)
        self.members[name] = member

    def restart(self, name: str, *, replayed: bool = True) -> None:
        """A static member's consumer restarts: a new process (a new assignor) under the same
        group.instance.id, given a new member id. Within session.timeout.ms, the group stable
        (`replayed`), the broker gives it the assignment in force with no rebalance (KIP-345)
        and its coordinator calls `on_assignment` with it and the generation; if it joins
        while a rebalance is under way, it holds and claims nothing."""
        old = self.members[name]
        assert old.group_instance_id == name, "only a static member restarts under its id"
        new = Member(self.new_member_id(name), old.topics, self.make_assignor(), set(), name)
        if replayed:
            new.held = set(old.held)
            assignment = ConsumerProtocolAssignment(0, list(by_topic(old.held).items()), b"")
            new.assignor.on_assignment(assignment, self.generation)
        self.members[name] = new  # the same place in the order of joining

    def subscribe(self, member_id: str, topics: Iterable[str]) -> None:
        self.members[member_id].topics = frozenset(topics)

    @property
    def protocol(self) -> RebalanceProtocol:
        common = set(RebalanceProtocol)
        for member in self.members.values():
            common &= set(member.assignor.supported_protocols())
        return max(common)

    def rebalance(self) -> Round:
        self.generation += 1
        names = {member.assignor.name for member in self.members.values()}
        assert len(names) <= 1, f"the members have no protocol in common: {sorted(names)}"
        protocol = self.protocol
        for member in self.members.values():
            if protocol == RebalanceProtocol.EAGER:
                member.held = set()
            else:
                member.held = {p for p in member.held if p[0] in member.topics}
        before = {name: set(member.held) for name, member in self.members.items()}
        joined = [
            JoinGroupResponse.JoinGroupResponseMember(
                member_id=member.member_id,
                group_instance_id=member.group_instance_id,
                metadata=encoded_and_decoded(member.assignor.metadata(set(member.topics))),
            )
            for member in self.members.values()
        ]
        answers = [member.assignor.assign(self.cluster, joined) for member in self.members.values()]
        answer = answers[0]  # the first member to have joined leads
        assert set(answer) == {member.member_id for member in self.members.values()}
        for other in answers[1:]:  # any member leading would have sent the same assignments
            assert {m: a.encode() for m, a in other.items()} == {
                m: a.encode() for m, a in answer.items()
            }
        plan: dict[str, list[Partition]] = {}
        revoked: dict[str, set[Partition]] = {}
        for name, member in self.members.items():
            assignment = ConsumerProtocolAssignment.decode(answer[member.member_id].encode())
            plan[name] = [(p.topic, p.partition) for p in assignment.partitions()]
            revoked[name] = member.held - set(plan[name])
            member.held = set(plan[name])
            member.assignor.on_assignment(assignment, self.generation)
        result = Round(self.generation, before, plan, revoked)
        self.rounds.append(result)
        return result

    def settle(self, max_rounds: int = 5) -> list[Round]:
        """Rebalance until no member rejoins (at once under EAGER)."""
        rounds = [self.rebalance()]
        while any(rounds[-1].revoked.values()) and self.protocol == RebalanceProtocol.COOPERATIVE:
            assert len(rounds) < max_rounds, "the cooperative rebalance does not settle"
            rounds.append(self.rebalance())
        return rounds

    @property
    def held(self) -> dict[str, list[Partition]]:
        return {member_id: sorted(member.held) for member_id, member in self.members.items()}


def assert_valid(group: Group, plan: dict[str, list[Partition]]) -> None:
    """Every partition of a subscribed topic exactly once, and only to a subscriber."""
    topics_of = {member_id: member.topics for member_id, member in group.members.items()}
    assert set(plan) == set(topics_of)
    held = sorted(p for owned in plan.values() for p in owned)
    assert held == sorted(group.cluster.all_partitions(frozenset().union(*topics_of.values())))
    for member_id, owned in plan.items():
        assert {topic for topic, _ in owned} <= topics_of[member_id], member_id


def scopes(group: Group) -> list[tuple[list[Partition], list[str]]]:
    """Where the strategy's promises hold: the whole group when all members subscribe to the
    same topics, else each topic among its subscribers."""
    topics_of = {member_id: member.topics for member_id, member in group.members.items()}
    subscribed = frozenset().union(*topics_of.values())
    if len(set(topics_of.values())) <= 1:
        return [(group.cluster.all_partitions(subscribed), sorted(topics_of))]
    return [
        (
            group.cluster.all_partitions([topic]),
            sorted(m for m in topics_of if topic in topics_of[m]),
        )
        for topic in sorted(subscribed)
    ]


def assert_balanced_and_sticky(
    group: Group,
    previous: dict[str, list[Partition]],
    plan: dict[str, list[Partition]],
    sticky: bool,
    balanced: bool = True,
) -> None:
    for queues, consumers in scopes(group):
        in_scope = set(queues)
        mine = {m: [p for p in plan[m] if p in in_scope] for m in consumers}
        before = {m: [p for p in previous.get(m, []) if p in in_scope] for m in consumers}
        scores = score(queues, consumers, before, mine)
        if balanced:
            assert scores.spread is None or scores.spread <= 1, (queues, mine)
        if sticky:
            assert scores.stickiness_gap in (None, 0), (before, mine)


# --- a group through several generations --------------------------------------------------

MEMBER_IDS = [f"consumer-{n}" for n in range(8)]

Event = tuple[str, int, frozenset[str]]


@st.composite
def histories(
    draw: st.DrawFn, max_events: int = 8, static: bool = False
) -> tuple[dict[str, int], list[Event]]:
    """Starting partition counts and a sequence of membership changes: ("join", member,
    topics), ("leave", member, _), ("time_out", member, _), ("come_back", member, _),
    ("subscribe", member, topics), ("grow", topic index, _); with `static`, also a static
    member's consumer restarting: ("restart", member, _), its assignment given back by the
    broker, and ("restart_during_rebalance", member, _), with nothing."""
    partitions = {topic: draw(st.integers(0, 12)) for topic in TOPICS}
    topic_sets = st.frozensets(st.sampled_from(TOPICS), min_size=1)
    same = draw(st.booleans())
    shared = draw(topic_sets)
    subscriptions = st.just(shared) if same else topic_sets
    kinds = ["join", "join", "leave", "time_out", "come_back", "grow"]
    if not same:
        kinds.append("subscribe")
    if static:
        kinds += ["restart", "restart", "restart_during_rebalance"]
    events: list[Event] = [("join", 0, draw(subscriptions))]
    for _ in range(draw(st.integers(1, max_events))):
        kind = draw(st.sampled_from(kinds))
        events.append((kind, draw(st.integers(0, len(MEMBER_IDS) - 1)), draw(subscriptions)))
    return partitions, events


def apply(group: Group, event: Event) -> str | None:
    """Apply one change to the group, the index choosing among the members it can concern;
    the member (or topic) it concerns, None when there is none (nobody away to come back)."""
    kind, index, topics = event
    present, away = list(group.members), list(group.away)
    new = [m for m in MEMBER_IDS if m not in group.members and m not in group.away]
    if kind == "join" and new:
        member_id = new[index % len(new)]
        group.join(member_id, topics)
    elif kind in ("leave", "time_out") and len(present) > 1:
        member_id = present[index % len(present)]
        (group.leave if kind == "leave" else group.time_out)(member_id)
    elif kind == "come_back" and away:
        member_id = away[index % len(away)]
        group.come_back(member_id)
    elif kind in ("restart", "restart_during_rebalance") and present:
        member_id = present[index % len(present)]
        group.restart(member_id, replayed=kind == "restart")
    elif kind == "subscribe" and present:
        member_id = present[index % len(present)]
        group.subscribe(member_id, topics)
    elif kind == "grow":
        member_id = TOPICS[index % len(TOPICS)]
        group.cluster.partitions[member_id] += 1 + index % 3
    else:
        return None
    return member_id


def expected_previous(
    group: Group, before_event: dict[str, list[Partition]]
) -> dict[str, list[Partition]]:
    """The plan in force as the leader should see it: what each member present held, except a
    member that missed a rebalance (stale), restricted to the topics it still subscribes to."""
    return {
        member_id: [p for p in before_event.get(member_id, []) if p[0] in member.topics]
        for member_id, member in group.members.items()
    }


def run_history(
    strategy: str,
    history: tuple[dict[str, int], list[Event]],
    *,
    cooperative: bool = False,
    static: bool = False,
) -> Group:
    """The group through the history, settled after each change and checked: valid, balanced
    (but for consistent_hash, which does not balance), as sticky as balance allows for sticky,
    KIP-429's promise when cooperative; and after a static member's restart that the broker
    answers with its assignment, the plan in force before it, by group.instance.id: the member
    keeps its partitions, nobody moves."""
    partitions, events = history
    group = Group(
        Cluster(partitions),
        lambda: kafka_python_assignor(strategy, cooperative=cooperative),
        static=static,
    )
    settled: dict[str, list[Partition]] = {}
    for event in events:
        concerned = apply(group, event)
        if concerned is None:
            continue
        previous = expected_previous(group, settled)
        if event[0] in ("come_back", "restart_during_rebalance"):
            previous[concerned] = []  # stale, or a new process: it claims nothing that counts
        rounds = group.settle()
        assert_valid(group, rounds[-1].plan)
        assert_balanced_and_sticky(
            group,
            previous,
            rounds[-1].plan,
            sticky=strategy == "sticky",
            balanced=strategy != "consistent_hash",
        )
        if cooperative:
            assert_cooperative(rounds)
        if event[0] == "restart":  # given its assignment back by the broker
            assert rounds[-1].plan == settled, (event, settled)
        settled = group.held
    return group


@pytest.mark.parametrize("strategy", ["sticky", "averagely", "round_robin"])
@settings(max_examples=GROUP_EXAMPLES)
@given(history=histories())
def test_a_group_through_generations_gets_valid_balanced_sticky_plans(
    strategy: str, history: tuple[dict[str, int], list[Event]]
) -> None:
    run_history(strategy, history)


@pytest.mark.parametrize(
    ("strategy", "cooperative"),
    [
        ("sticky", False),
        ("sticky", True),
        ("averagely", False),
        ("round_robin", False),
        ("consistent_hash", False),
        ("bounded_consistent_hash", False),
    ],
)
@settings(max_examples=GROUP_EXAMPLES)
@given(history=histories(static=True))
def test_static_members_keep_their_partitions_when_their_consumers_restart(
    strategy: str, cooperative: bool, history: tuple[dict[str, int], list[Event]]
) -> None:
    """Static members (group.instance.id, KIP-345) through generations of joins, leaves,
    time-outs and restarts, each under a new member id: a restart given its assignment back
    by the broker leaves the plan as it was (run_history); one that joins a rebalance claiming
    nothing (its new process remembers nothing) may lose what it held, as in Kafka; every plan
    valid and, where the strategy promises it, balanced and sticky."""
    run_history(strategy, history, cooperative=cooperative, static=True)


def test_a_static_member_back_under_its_group_instance_id_is_the_same_consumer() -> None:
    """consistent_hash plans from ids alone. "b"'s consumer restarts (a new member id, its
    assignment given back): nothing moves. Its session then times out: it leaves (a rebalance)
    and joins again under its group.instance.id and yet another member id (a rebalance), what
    the harness's rolling_restart models: it gets back the very partitions it had."""
    group = Group(
        Cluster({"orders": 12}), lambda: kafka_python_assignor("consistent_hash"), static=True
    )
    for name in ("a", "b", "c"):
        group.join(name, ["orders"])
    first = group.rebalance().plan
    first_member_id = group.members["b"].member_id
    group.restart("b")
    assert group.members["b"].member_id not in (first_member_id, "b")
    assert group.rebalance().plan == first
    group.leave("b")
    without_b = group.rebalance().plan
    group.join("b", ["orders"])
    assert group.rebalance().plan == first != {**without_b, "b": []}


def quiet_assignor(name: str) -> Any:
    """The assignor of a registered strategy, made without zones or weights on purpose (this
    test fakes neither), so without the warning that says they were not given."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return kafka_python_assignor(name)


@settings(max_examples=GROUP_EXAMPLES // 2)
@given(history=histories(max_events=4))
def test_every_registered_strategy_gives_valid_plans_through_the_adapter(
    history: tuple[dict[str, int], list[Event]],
) -> None:
    from rebalancing.strategies import STRATEGIES

    for name in STRATEGIES:
        partitions, events = history
        group = Group(Cluster(partitions), lambda name=name: quiet_assignor(name))
        for event in events:
            if apply(group, event) is not None:  # cooperative_sticky: two rounds
                assert_valid(group, group.settle()[-1].plan)


def until_a_stale_member_comes_back(group: Group) -> list[dict[str, list[Partition]]]:
    """ "b" times out holding orders-1 and orders-3, which go to "a", then "c" joins and takes
    orders-2 and orders-3; "b" comes back, still claiming orders-1 and orders-3 with its old
    generation. The plans of the three rounds before it comes back."""
    group.join("a", ["orders"])
    group.join("b", ["orders"])
    plans = [group.rebalance().plan]
    group.time_out("b")
    plans.append(group.rebalance().plan)
    group.join("c", ["orders"])
    plans.append(group.rebalance().plan)
    group.come_back("b")
    return plans


def orders(*numbers: int) -> list[Partition]:
    return [("orders", number) for number in numbers]


def test_a_member_that_comes_back_stale_does_not_count_as_an_owner() -> None:
    group = Group(Cluster({"orders": 4}), lambda: kafka_python_assignor("sticky"))
    plans = until_a_stale_member_comes_back(group)
    assert plans[0] == {"a": orders(0, 2), "b": orders(1, 3)}
    assert plans[2] == {"a": orders(0, 1), "c": orders(2, 3)}
    claimed = StickyAssignorUserData.decode(
        group.members["b"].assignor.metadata({"orders"}).user_data, version=1, header=False
    )
    assert claimed.generation == 1  # "b" still claims orders-1 and orders-3, of generation 1
    # "a" and "c" (generation 3) keep all that balance allows; had "b"'s stale claims cancelled
    # theirs, "a" would have lost orders-1 for nothing
    assert group.rebalance().plan == {"a": orders(0, 1), "b": orders(3), "c": orders(2)}


def test_same_generation_conflicting_claims_do_not_crash_the_leader() -> None:
    leader = kafka_python_assignor("sticky")
    data = StickyAssignorUserData(previous_assignment=[("orders", [0, 1])], generation=4)
    user_data = data.encode(version=1, header=False)
    members = [
        JoinGroupResponse.JoinGroupResponseMember(
            member_id=member_id,
            group_instance_id=None,
            metadata=ConsumerProtocolSubscription(0, ["orders"], user_data),
        )
        for member_id in ("a", "b")
    ]
    answer = leader.assign(Cluster({"orders": 4}), members)
    plans = {m: [(p.topic, p.partition) for p in a.partitions()] for m, a in answer.items()}
    assert sorted(p for owned in plans.values() for p in owned) == [("orders", n) for n in range(4)]
    assert sorted(map(len, plans.values())) == [2, 2]


def assert_sharing_refused(group: Group, shared: Any, sharing: str) -> None:
    """Two members of `group` share the assignor `shared`: the second to be given its
    assignment is refused with `sharing` (the number and what is shared), and the assignor
    still holds the first member's partitions."""
    group.join("a", ["orders"])
    group.join("b", ["orders"])
    with pytest.raises(
        ValueError,
        match=f"assignor 'rebalancing-sticky' was given two different assignments for {sharing}",
    ):
        group.rebalance()
    assert shared.owned == (("orders", 0), ("orders", 2))  # "a"'s, not "b"'s


def test_one_assignor_shared_by_two_members_is_refused_at_the_second_assignment() -> None:
    shared = kafka_python_assignor("sticky")
    group = Group(Cluster({"orders": 4}), lambda: shared)
    assert_sharing_refused(
        group, shared, "generation 1 .*one assignor instance is shared by two consumers"
    )


def test_the_same_assignment_given_again_for_its_generation_is_accepted() -> None:
    """A static member whose consumer restarts with the same assignor instance is given its
    assignment again, for the same generation (KIP-345): that is no sharing."""
    assignor = kafka_python_assignor("sticky")
    assignment = ConsumerProtocolAssignment(0, [("orders", [1, 3])], b"")
    assignor.on_assignment(assignment, 4)
    assignor.on_assignment(ConsumerProtocolAssignment(0, [("orders", [3, 1])], b""), 4)
    assignor.on_assignment(ConsumerProtocolAssignment(0, [("orders", [0])], b""), 5)
    assert (assignor.owned, assignor.generation) == ((("orders", 0),), 5)


# --- against kafka-python's own StickyPartitionAssignor -----------------------------------


def kafka_python_sticky_plan(
    cluster: Cluster, topics: frozenset[str], previous: dict[str, list[Partition]], generation: int
) -> dict[str, list[Partition]]:
    """kafka-python's StickyPartitionAssignor on the same group, each member sending its
    previous partitions the way kafka-python's sticky members do."""
    joined = []
    for member_id, owned in previous.items():
        assignor = StickyPartitionAssignor()
        if owned or generation > 0:
            by_topic: dict[str, list[int]] = {}
            for topic, number in owned:
                by_topic.setdefault(topic, []).append(number)
            assignor.on_assignment(
                ConsumerProtocolAssignment(0, sorted(by_topic.items()), b""), generation
            )
        joined.append(
            JoinGroupResponse.JoinGroupResponseMember(
                member_id=member_id,
                group_instance_id=None,
                metadata=encoded_and_decoded(assignor.metadata(set(topics))),
            )
        )
    answer = StickyPartitionAssignor().assign(cluster, joined)
    return {m: [(p.topic, p.partition) for p in a.partitions()] for m, a in answer.items()}


@settings(max_examples=2 * GROUP_EXAMPLES)
@given(history=histories())
def test_our_sticky_keeps_as_much_as_kafka_pythons_and_all_it_can(
    history: tuple[dict[str, int], list[Event]],
) -> None:
    """On every generation of a group whose members all subscribe to the same topics, fed the
    same previous plan: ours is balanced and keeps as much as any balanced plan can; where
    kafka-python's is balanced it keeps no more than ours, and where it is optimal ours keeps
    exactly as much with the same counts. Where kafka-python's keeps every previous pair (a
    fresh group, members leaving, partitions added), the two plans are the very same; where it
    must take partitions away, both are optimal but may take different ones (kafka-python
    moves a member's lowest partitions, ours keeps them) or give the larger share to another
    of the tied members."""
    partitions, events = history
    shared = events[0][2]
    events = [(kind, index, shared) for kind, index, _ in events if kind != "subscribe"]
    group = Group(Cluster(partitions), lambda: kafka_python_assignor("sticky"))
    settled: dict[str, list[Partition]] = {}
    for event in events:
        if event[0] == "come_back" or apply(group, event) is None:
            continue  # kafka-python's sticky reads stale claims differently: not compared
        previous = expected_previous(group, settled)
        ours = group.rebalance().plan
        theirs = kafka_python_sticky_plan(group.cluster, shared, previous, group.generation - 1)
        queues = group.cluster.all_partitions(shared)
        members = sorted(group.members)
        our_scores = score(queues, members, previous, ours)
        their_scores = score(queues, members, previous, theirs)
        assert their_scores.orphans == their_scores.duplicates == 0
        assert our_scores.spread is None or our_scores.spread <= 1
        assert our_scores.stickiness_gap in (None, 0)
        still_valid = sum(p in set(queues) for owned in previous.values() for p in owned)
        if their_scores.kept == still_valid:  # kafka-python's keeps all: the very same plan
            assert ours == theirs
        if their_scores.spread is not None and their_scores.spread <= 1:
            assert our_scores.kept >= their_scores.kept
            if their_scores.stickiness_gap in (None, 0):
                assert our_scores.kept == their_scores.kept
                assert sorted(map(len, ours.values())) == sorted(map(len, theirs.values()))
        settled = group.held


def test_kafka_pythons_docstring_example_keeps_as_much_through_the_adapter() -> None:
    """kafka-python's StickyPartitionAssignor example 1: topics t0..t3 of two partitions each,
    C0, C1, C2; C1 leaves and sticky keeps every partition of C0 and C2 where it is."""
    cluster = Cluster({"t0": 2, "t1": 2, "t2": 2, "t3": 2})
    topics = ["t0", "t1", "t2", "t3"]
    group = Group(cluster, lambda: kafka_python_assignor("sticky"))
    for member_id in ("C0", "C1", "C2"):
        group.join(member_id, topics)
    first = group.rebalance().plan
    theirs = kafka_python_sticky_plan(
        cluster, frozenset(topics), {member_id: [] for member_id in first}, 0
    )
    assert first == theirs
    group.leave("C1")
    second = group.rebalance().plan
    for member_id in ("C0", "C2"):
        assert set(first[member_id]) <= set(second[member_id])
    assert sorted(map(len, second.values())) == [4, 4]


# --- cooperative (KIP-429) ----------------------------------------------------------------


def test_kafka_python_3_0_12_has_a_cooperative_protocol() -> None:
    """kafka-python 3.0.12 has KIP-429: RebalanceProtocol.COOPERATIVE, its own
    CooperativeStickyAssignor, and a coordinator that keeps partitions across JoinGroup,
    revokes only those missing from the new assignment and rejoins when it revoked any
    (coordinator/consumer.py, _on_join_complete_async)."""
    assert RebalanceProtocol.COOPERATIVE == 1
    assert CooperativeStickyAssignor().supported_protocols() == [RebalanceProtocol.COOPERATIVE]
    assert kafka_python_assignor("sticky", cooperative=True).supported_protocols() == [
        RebalanceProtocol.COOPERATIVE
    ]
    assert kafka_python_assignor("sticky").supported_protocols() == [RebalanceProtocol.EAGER]


def assert_cooperative(rounds: list[Round]) -> None:
    """KIP-429's promise: no member is given a partition another member still holds, and the
    group settles in two rounds (the second only when something was revoked)."""
    for round_ in rounds:
        for member_id, owned in round_.plan.items():
            for partition in set(owned) - round_.before[member_id]:
                holders = [m for m, held in round_.before.items() if partition in held]
                assert holders == [], (partition, member_id, holders)
    assert len(rounds) <= 2


@pytest.mark.parametrize("strategy", ["sticky", "averagely", "round_robin"])
@settings(max_examples=GROUP_EXAMPLES)
@given(history=histories())
def test_a_cooperative_group_never_shares_a_partition_and_settles_in_two_rounds(
    strategy: str, history: tuple[dict[str, int], list[Event]]
) -> None:
    run_history(strategy, history, cooperative=True)


def test_a_cooperative_move_takes_two_rounds() -> None:
    group = Group(Cluster({"orders": 4}), lambda: kafka_python_assignor("sticky", cooperative=True))
    group.join("a", ["orders"])
    assert group.settle()[-1].plan == {"a": [("orders", n) for n in range(4)]}
    group.join("b", ["orders"])
    first, second = group.settle()
    assert first.plan == {"a": [("orders", 0), ("orders", 1)], "b": []}
    assert first.revoked == {"a": {("orders", 2), ("orders", 3)}, "b": set()}
    assert second.plan == {"a": [("orders", 0), ("orders", 1)], "b": [("orders", 2), ("orders", 3)]}
    assert second.revoked == {"a": set(), "b": set()}


def test_a_group_spelling_cooperative_sticky_both_ways_moves_a_partition_in_two_rounds() -> None:
    """Half the members name Kafka's CooperativeStickyAssignor, half ask for sticky with
    cooperative=True (a group migrating from one spelling to the other): one protocol."""
    spellings = iter(
        [
            kafka_python_assignor("cooperative_sticky"),
            kafka_python_assignor("sticky", cooperative=True),
        ]
    )
    group = Group(Cluster({"orders": 4}), lambda: next(spellings))
    group.join("a", ["orders"])
    group.settle()
    group.join("b", ["orders"])
    first, second = group.settle()
    assert first.plan == {"a": orders(0, 1), "b": []}
    assert second.plan == {"a": orders(0, 1), "b": orders(2, 3)}


def test_cooperative_members_also_send_owned_partitions_and_generation_id() -> None:
    assignor = kafka_python_assignor("sticky", cooperative=True)
    assignor.on_assignment(
        ConsumerProtocolAssignment(0, [("orders", [3, 1]), ("gone", [0])], b""), 9
    )
    sent = encoded_and_decoded(assignor.metadata({"orders"}))
    assert sent.version == 2
    assert [(tp.topic, tp.partitions) for tp in sent.owned_partitions] == [("orders", [1, 3])]
    assert sent.generation_id == 9
    claimed = StickyAssignorUserData.decode(sent.user_data, version=1, header=False)
    assert [(tp.topic, tp.partitions) for tp in claimed.previous_assignment] == [("orders", [1, 3])]
    assert claimed.generation == 9


def test_a_member_with_owned_partitions_but_no_user_data_is_read_from_the_fields() -> None:
    """Java's cooperative consumers send owned_partitions and generation_id (v1+, v2+) and
    no sticky user data; the leader reads the claims from there."""
    leader = kafka_python_assignor("sticky", cooperative=True)
    SubTP = ConsumerProtocolSubscription.TopicPartition  # noqa: N806
    members = [
        JoinGroupResponse.JoinGroupResponseMember(
            member_id="a",
            group_instance_id=None,
            metadata=encoded_and_decoded(
                ConsumerProtocolSubscription(
                    version=2,
                    topics=["orders"],
                    user_data=b"",
                    owned_partitions=[SubTP(topic="orders", partitions=[0, 1, 2, 3])],
                    generation_id=5,
                )
            ),
        ),
        JoinGroupResponse.JoinGroupResponseMember(
            member_id="b",
            group_instance_id=None,
            metadata=ConsumerProtocolSubscription(0, ["orders"], b""),
        ),
    ]
    answer = leader.assign(Cluster({"orders": 4}), members)
    assert [(p.topic, p.partition) for p in answer["a"].partitions()] == [
        ("orders", 0),
        ("orders", 1),
    ]
    assert answer["b"].partitions() == []  # ("orders", 2) and 3 wait until "a" revokes them
