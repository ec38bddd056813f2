"""Stateful machines: a Kafka group under each protocol driven by joins, leaves, crashes,
partitions added, slow members and static restarts, in any order; after every step the group
is quiet, every partition has one consumer, none ever had two, the clock never goes back, and
a static restart within the session timeout moved nothing."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from rebalancing.contract import ProtocolRun
from rebalancing.protocols import ClassicSession, ConsumerSession
from rebalancing.strategies import sticky

POOL = [f"m{index}" for index in range(6)]


class KafkaGroup(RuleBasedStateMachine):
    """One static-membership group; `kind` is set by the subclasses below."""

    kind: ClassVar[str] = "consumer"

    def __init__(self) -> None:
        super().__init__()
        self.session: ClassicSession | ConsumerSession
        if self.kind == "consumer":
            self.session = ConsumerSession(sticky.assign, static_membership=True, seed=7)
        else:
            self.session = ClassicSession(
                sticky.assign,
                protocol=self.kind,  # type: ignore[arg-type]
                static_membership=True,
                seed=7,
            )
        self.members: list[str] = []
        self.partitions = 4
        self.last: ProtocolRun | None = None
        self.clock = 0.0

    def apply(self, members: list[str], **options: Any) -> None:
        self.last = self.session.change(range(self.partitions), sorted(members), **options)
        self.members = sorted(members)

    @rule(name=st.sampled_from(POOL), late=st.floats(0, 30))
    def join(self, name: str, late: float) -> None:
        if name in self.members:
            return
        slow = {self.members[0]: late} if self.members else None
        self.apply([*self.members, name], slow=slow)

    @precondition(lambda self: len(self.members) > 1)
    @rule(index=st.integers(0, 5), crash=st.booleans())
    def depart(self, index: int, crash: bool) -> None:
        gone = self.members[index % len(self.members)]
        rest = [member for member in self.members if member != gone]
        self.apply(rest, crashed=[gone] if crash else [])

    @rule(more=st.integers(1, 4))
    def add_partitions(self, more: int) -> None:
        self.partitions += more
        self.apply(self.members)

    @precondition(lambda self: bool(self.members))
    @rule(index=st.integers(0, 5), down=st.floats(0, 40))
    def restart_statically(self, index: int, down: float) -> None:
        before = {member: list(queues) for member, queues in self.last.owners.items()}  # type: ignore[union-attr]
        self.last = self.session.restart([self.members[index % len(self.members)]], down)
        assert self.last.owners == before
        assert self.last.steps == 0

    @invariant()
    def quiet_and_owned_once(self) -> None:
        if self.last is None:
            return
        assert self.last.converged
        held = sorted(queue for queues in self.last.owners.values() for queue in queues)
        assert held == (list(range(self.partitions)) if self.members else [])
        assert self.last.queue_seconds_doubly_owned == 0.0
        assert self.session.now >= self.clock
        self.clock = self.session.now
        if isinstance(self.session, ConsumerSession):
            assert self.session.most_consumers() <= 1


class EagerGroup(KafkaGroup):
    kind = "eager"


class CooperativeGroup(KafkaGroup):
    kind = "cooperative"


MACHINE_SETTINGS = settings(max_examples=40, stateful_step_count=12, deadline=None)


@pytest.mark.parametrize("machine", [KafkaGroup, EagerGroup, CooperativeGroup])
def test_the_group_machine(machine: type[KafkaGroup]) -> None:
    machine.TestCase.settings = MACHINE_SETTINGS
    machine.TestCase().runTest()
