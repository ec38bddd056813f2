"""Kafka's uniform assignor for members with differing subscriptions: its heterogeneous builder,
which `uniform.assign_subscribed` runs when not every member subscribes to the same topics.

Origin: apache/kafka `group-coordinator/.../assignor/UniformHeterogeneousAssignmentBuilder.java`
as reworked by KAFKA-17710 (October 2024), and its test
`UniformHeterogeneousAssignmentBuilderTest`, read at commit
1eb7644349cb07139d6a3c1ad1986979647cac99 (trunk, 4.0.0-SNAPSHOT). The facts carry over; the
code is ours.

1. Keep: every member keeps what it held of the topics it still subscribes to.
2. Deal: topics ordered by partitions per subscriber (most first), then by subscriber count
   (fewest first), then by topic (Kafka: topic id; here the order given); each topic's free
   partitions, ascending, go to its least-loaded subscribers (`_Balancer.least_loaded`).
3. Balance: in that topic order, each topic with two or more subscribers whose loads differ by
   two or more hands partitions from its most-loaded subscribers (their highest partitions of
   it) to its least-loaded ones until they differ by at most one; the passes over the topics
   repeat until one moves nothing, 16 at most. Loads are totals over all topics, so with
   overlapping subscriptions the result can stay unbalanced (9, 10, 11 in Kafka's example).

"Least" and "most loaded" are two cursors over the topic's subscribers sorted by load, then
member order: a cursor deals round the members at the lowest (highest) load and widens to the
next load level when a round ends; a most-loaded member holding nothing of the topic is left
out. Which member receives or gives up a partition depends on the member order, which Kafka
reads from the group's member map (a hash map), and on nothing else: its tests sort the members
to make the plan deterministic, and so does this module (member ids sorted).
Runtime complexity, T topics with s subscribers each on average: O(T log T + |Q| log |Q|) for the
orders, O(|Q| + T s log s) per pass of step 3, at most 16 passes.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from fractions import Fraction

from rebalancing.contract import ConsumerT, QueueT

MAX_PASSES = 16
"""Kafka's MAX_ITERATION_COUNT: the most passes of the balancing step over the topics."""


def heterogeneous_plan(
    topics: Mapping[Hashable, Sequence[QueueT]],
    members: Sequence[ConsumerT],
    subscriptions: Mapping[ConsumerT, Collection[Hashable]],
    held: Mapping[ConsumerT, Iterable[QueueT]],
) -> dict[ConsumerT, list[QueueT]]:
    """The builder over explicit orders: `topics` maps each topic to its partitions (position =
    partition number), in the order that breaks the last tie of the topic order; `members` in
    Kafka's member order; `subscriptions` each member's topics (all keys of `topics`); `held`
    each member's previous partitions that still exist (any order). Returns each member's
    partitions, sorted; partitions of topics nobody subscribes to are in no list."""
    subscribers: dict[Hashable, list[int]] = {}
    for index, member in enumerate(members):
        for topic in subscriptions[member]:
            subscribers.setdefault(topic, []).append(index)
    position = {
        queue: (topic, number)
        for topic, partitions in topics.items()
        for number, queue in enumerate(partitions)
    }
    owners = {topic: [-1] * len(topics[topic]) for topic in subscribers}
    loads = [0] * len(members)
    for index, member in enumerate(members):
        for queue in held.get(member, ()):
            topic, number = position[queue]
            if topic in subscriptions[member]:
                owners[topic][number] = index
                loads[index] += 1
    rank = {topic: order for order, topic in enumerate(topics)}

    def topic_order(topic: Hashable) -> tuple[Fraction, int, int]:
        count = len(subscribers[topic])
        return (Fraction(-len(topics[topic]), count), count, rank[topic])

    for topic in sorted(subscribers, key=topic_order):
        balancer = _Balancer(subscribers[topic], loads)
        for number, owner in enumerate(owners[topic]):
            if owner == -1:
                receiver = balancer.least_loaded()
                owners[topic][number] = receiver
                loads[receiver] += 1
    movable = sorted((t for t in subscribers if len(subscribers[t]) >= 2), key=topic_order)
    _balance(movable, subscribers, owners, loads)
    plan: dict[ConsumerT, list[QueueT]] = {member: [] for member in members}
    for topic, topic_owners in owners.items():
        for number, owner in enumerate(topic_owners):
            plan[members[owner]].append(topics[topic][number])
    for owned in plan.values():
        owned.sort()
    return plan


def _balance(
    movable: list[Hashable],
    subscribers: Mapping[Hashable, list[int]],
    owners: Mapping[Hashable, list[int]],
    loads: list[int],
) -> None:
    """Step 3: passes over `movable` (in topic order) until a whole round of the topics, from
    the last one that moved something, moves nothing; MAX_PASSES passes at most."""
    last_moved = -1
    for _ in range(MAX_PASSES):
        for index, topic in enumerate(movable):
            if index == last_moved:
                return
            moved = _balance_topic(subscribers[topic], owners[topic], loads)
            if moved or last_moved == -1:
                last_moved = index


def _balance_topic(topic_subscribers: list[int], owners: list[int], loads: list[int]) -> int:
    """One topic: give its most-loaded subscribers' highest partitions of it, one at a time, to
    its least-loaded subscribers, until their load levels differ by at most one or no
    most-loaded subscriber holds a partition of it. Returns how many moved."""
    balancer = _Balancer(topic_subscribers, loads)
    if balancer.spread <= 1:
        return 0
    # each owner's partitions of the topic, highest last: the ones it gives up first
    givable: dict[int, list[int]] = {}
    for number, owner in enumerate(owners):
        givable.setdefault(owner, []).append(number)
    moved = 0
    while not balancer.balanced():
        giver = balancer.most_loaded()
        while giver != -1 and not givable.get(giver):
            balancer.leave_out_last_most_loaded()
            giver = balancer.most_loaded()
        if giver == -1:
            break
        number = givable[giver].pop()
        receiver = balancer.least_loaded()
        if balancer.balanced():
            break
        owners[number] = receiver
        loads[giver] -= 1
        loads[receiver] += 1
        moved += 1
    return moved


class _Balancer:
    """Kafka's MemberAssignmentBalancer: the subscribers of one topic sorted by load, then
    member order, with one cursor dealing from the least-loaded end and one taking from the
    most-loaded end. Each cursor deals round the members of its range, the members at its
    level; when a round ends the level moves by one and the range widens to the members now at
    it. `loads` is the builder's, read live: the caller changes it after each pick."""

    def __init__(self, members: list[int], loads: list[int]) -> None:
        self.loads = loads
        self.order = sorted(members, key=lambda member: (loads[member], member))
        first, last = loads[self.order[0]], loads[self.order[-1]]
        self.spread = last - first
        self.least_end = 0  # the least-loaded range is order[:least_end]
        self.least_level = first - 1
        self.least_next = 0
        self.most_start = self.most_end = len(self.order)  # order[most_start:most_end]
        self.most_level = last + 1
        self.most_next = len(self.order) - 1

    def least_loaded(self) -> int:
        """The next member to receive a partition."""
        order, loads = self.order, self.loads
        if self.least_next >= self.least_end:
            self.least_level += 1
            while self.least_end < len(order) and loads[order[self.least_end]] == self.least_level:
                self.least_end += 1
            self.least_next = 0
        member = order[self.least_next]
        self.least_next += 1
        return member

    def most_loaded(self) -> int:
        """The next member to give up a partition, or -1 when none is left."""
        order, loads = self.order, self.loads
        if self.most_next < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                # the range emptied by leave_out_last_most_loaded: restart from the next level
                self.most_level = loads[order[self.most_start - 1]]
            else:
                self.most_level -= 1
            while self.most_start > 0 and loads[order[self.most_start - 1]] == self.most_level:
                self.most_start -= 1
            self.most_next = self.most_end - 1
        if self.most_next < 0:
            return -1
        member = order[self.most_next]
        self.most_next -= 1
        return member

    def leave_out_last_most_loaded(self) -> None:
        """Drop the member `most_loaded` just returned from the most-loaded range (it holds
        nothing of the topic to give): it swaps places with the range's last member, and the
        range ends one earlier."""
        order, given = self.order, self.most_next + 1
        order[given], order[self.most_end - 1] = order[self.most_end - 1], order[given]
        self.most_end -= 1

    def balanced(self) -> bool:
        """Whether the two cursors' levels differ by at most one."""
        return self.most_level - self.least_level <= 1
