"""Hypothesis strategies for consumer groups: queues, consumers and a previous assignment.

Ids come in the kinds users have: ints, strings and RocketMQ-like (topic, broker, queue) tuples.
A previous assignment may name consumers that have left and queues that no longer exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

QUEUE_IDS = st.one_of(
    st.just(st.integers(-1000, 1000)),
    st.just(st.text(min_size=0, max_size=6)),
    st.just(st.tuples(st.sampled_from(["orders", "audit"]), st.integers(0, 3), st.integers(0, 40))),
)
CONSUMER_IDS = st.one_of(
    st.just(st.integers(0, 500)),
    st.just(st.text(alphabet="abcdefgh0123456789-@.", min_size=1, max_size=8)),
)


@dataclass(frozen=True)
class GroupCase:
    """One rebalance's inputs, as a caller would pass them."""

    queues: list[Any]
    consumers: list[Any]
    previous: dict[Any, list[Any]] | None


@st.composite
def groups(
    draw: st.DrawFn,
    max_queues: int = 60,
    max_consumers: int = 12,
    min_consumers: int = 0,
    with_previous: bool = True,
) -> GroupCase:
    """A group after a change, and (usually) the assignment in force before it."""
    queue_ids = draw(QUEUE_IDS)
    consumer_ids = draw(CONSUMER_IDS)
    queues = draw(st.lists(queue_ids, unique=True, max_size=max_queues))
    consumers = draw(
        st.lists(consumer_ids, unique=True, min_size=min_consumers, max_size=max_consumers)
    )
    if not with_previous or draw(st.integers(0, 9)) == 0:
        return GroupCase(queues, consumers, None)
    departed = draw(
        st.lists(consumer_ids.filter(lambda c: c not in consumers), unique=True, max_size=3)
    )
    removed = draw(st.lists(queue_ids.filter(lambda q: q not in queues), unique=True, max_size=5))
    owners = consumers + departed
    previous: dict[Any, list[Any]] = {owner: [] for owner in owners}
    if owners:
        for queue in queues + removed:
            choice = draw(st.integers(-1, len(owners) - 1))  # -1: nobody held it
            if choice >= 0:
                previous[owners[choice]].append(queue)
    return GroupCase(queues, consumers, previous)


@st.composite
def balanced_previous_groups(draw: st.DrawFn, max_queues: int = 60) -> GroupCase:
    """A group whose previous assignment is valid and balanced: every queue held, spread <= 1."""
    queues = draw(st.lists(st.integers(0, 10_000), unique=True, max_size=max_queues))
    consumers = draw(st.lists(st.integers(0, 500), unique=True, min_size=1, max_size=12))
    shuffled = draw(st.permutations(queues))
    rotated = draw(st.permutations(consumers))
    previous: dict[Any, list[Any]] = {consumer: [] for consumer in consumers}
    for position, queue in enumerate(shuffled):
        previous[rotated[position % len(rotated)]].append(queue)
    return GroupCase(queues, consumers, previous)


membership_changes = st.lists(
    st.tuples(
        st.integers(0, 40),
        st.one_of(st.just(set()), st.sets(st.sampled_from("abcdefgh"), min_size=1)),
    ),
    min_size=1,
    max_size=6,
)
"""Successive groups of a session: (queue count, consumers), queues `range(count)`; a group
may empty (no consumers) between two others, and its members may come back under their ids."""
