"""One strategy through one scenario: the plan in force (in every form the next step reads it),
the session of a protocol strategy, the compiled twin where one stands for the strategy, a step's
rebalance, putting a plan in force, and the stability check. A session that can be told how a
change happened (rebalancing.contract.ChangeAwareSession: a crash, a rolling restart, a graceful
change) is given each step's change kind (`apply_change`); any other, the group (`rebalance`).
A strategy scored on a system that declares the protocol its assignors run inside (`protocol`, a
session factory `(assignor, *, seed) -> StrategySession`, such as Kafka's group protocols) runs
through that protocol's session around its `assign`, which the session calls with the step's
placement inputs; its time (`Attempt.nanoseconds`) is then the assign calls' alone, the compute
cost, and the protocol's own cost is in seconds in its run.
A session that holds members' partitions while they are away (`HoldingSession`: Kafka's static
members down for a restart within the session timeout, whose assignment the coordinator keeps)
has its plan scored with those members and their partitions: held, not orphaned, and the step
that took them down moves nothing (`Runner.scored_group`); what the wait costs is in the run's
seconds.

A plan is put in force by one method, `Runner.accept`, in one of two forms: read by the compiled
scores (their `Owners`, and the plan as a CheckedPlan that is inverted only if the strategy
reads it) or by the reference scores (their exact PreviousReading, or None when it was not
exact, and the plan checked when it passed). A rebalance returns an `Attempt` and changes
nothing; the scoring core scores it, then accepts its plan when it did not fail.
Runtime complexity: a rebalance is the strategy's own cost; the stability check up to
STABILITY_BOUND more, plus O(|Q| + |C|) each to compare the plans.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from itertools import chain
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from rebalancing.contract import (
    ChangeAwareSession,
    CheckedPlan,
    PreviousMismatchWarning,
    ProtocolRun,
    StrategySession,
)
from rebalancing.evaluation.scenarios.changes import INITIAL
from rebalancing.evaluation.scenarios.views import ViewOutcome, client_side_rebalance
from rebalancing.evaluation.scoring.definitions import STABILITY_BOUND
from rebalancing.evaluation.scoring.groups import ClientViews, Group
from rebalancing.evaluation.scoring.scores import PreviousReading, read_previous
from rebalancing.strategies import Strategy

ProtocolFactory = Callable[..., StrategySession]
"""A system's protocol as a session factory: `protocol(assignor, seed=...)`, the session of one
group whose members plan with `assignor` (an assign function)."""


@runtime_checkable
class HoldingSession(Protocol):
    """A session whose coordinator holds members' partitions while they are away, with no
    rebalance (Kafka's static members restarting within the session timeout: KIP-345)."""

    def held_owners(self) -> dict[Any, list[Any]]:
        """Each member away whose partitions are held for it -> those partitions, sorted;
        empty when none is away. The run's owners leave them out (nobody reads them)."""
        ...


if TYPE_CHECKING:
    from rebalancing.evaluation.scoring.compiled_scores import ConsumerNumbers, Owners
    from rebalancing.evaluation.scoring.compiled_strategies import Twin


@dataclass(slots=True)
class PlanInForce:
    """A strategy's plan in force and how the next step reads it: `plan` as the strategy
    returned it (None before the first); `previous`, what the next `assign` gets (the plan
    checked when it passed, else as it was); `reading`, the plan as the reference scores read
    a previous plan (None: read `previous` when needed); `owners`, as the compiled scores read
    it (None: unknown to them, so the reference scores the next step)."""

    plan: dict[Any, list[Any]] | None = None
    previous: Mapping[Any, list[Any]] | CheckedPlan[Any, Any] | None = None
    reading: PreviousReading | None = field(default_factory=lambda: read_previous(None))
    owners: Owners | None = None


@dataclass(frozen=True, slots=True)
class Attempt:
    """What one rebalance gave: the plan (empty when it failed), the protocol's run (a session
    only), the error if it failed, its nanoseconds (None when a compiled twin stood for the
    strategy: its time is not the strategy's), the plan's positions in the group's sorted
    queues (a twin only), and what the client views cost (client-side only)."""

    plan: dict[Any, list[Any]]
    run: ProtocolRun | None
    error: str | None
    nanoseconds: int | None
    positions: tuple[Any, Any] | None = None
    views: ViewOutcome | None = None


class Runner:
    """One strategy through one scenario. With `numbers` (the scenario's consumer numbers:
    the kernel engine), the compiled scores read its plans, and its compiled twin, if it has
    one, stands for it where `twin_ready` says."""

    def __init__(
        self,
        strategy: Strategy,
        seed: int,
        numbers: ConsumerNumbers | None,
        protocol: ProtocolFactory | None = None,
    ) -> None:
        self.strategy = strategy
        self.inputs: dict[str, Any] = {}  # the step's placement this strategy declares
        self.in_protocol = protocol is not None
        self.assign_nanoseconds = 0  # the assign calls' time, in a protocol's session
        self.session: StrategySession | None = None
        if protocol is not None:
            self.session = protocol(self._timed_assign, seed=seed)
        elif strategy.open_session:
            self.session = strategy.open_session(seed=seed)
        self.change_aware = isinstance(self.session, ChangeAwareSession)
        self.holding = isinstance(self.session, HoldingSession)
        self.held: dict[Any, list[Any]] = {}  # members away -> their partitions, held for them
        self.in_force = PlanInForce()
        self.numbers = numbers
        self.twin: Twin | None = None
        if numbers is not None:
            from rebalancing.evaluation.scoring.compiled_scores import NO_PLAN
            from rebalancing.evaluation.scoring.compiled_strategies import twin_of

            self.in_force.owners = NO_PLAN
            if self.session is None:  # a protocol's session rebalances, never its `assign`
                self.twin = twin_of(strategy.assign)
        # whether every queue id of the plan in force is a plain int, as a twin gives them back:
        # sticky keeps its previous plan's own ids (True, an IntEnum member) where the group's
        # queue equals them, so the twin may stand for it only then (kept with a twin only)
        self.plain_previous = True

    def assign(self) -> Callable[..., Any]:
        """The strategy's `assign`, given the step's placement it declares (`self.inputs`)."""
        if not self.inputs:
            return self.strategy.assign
        return partial(self.strategy.assign, **self.inputs)

    def _timed_assign(
        self, queues: Iterable[Any], consumers: Iterable[Any], previous: Any = None
    ) -> Any:
        """The strategy's `assign` (with the step's inputs) as a protocol's session calls it,
        its time added to `assign_nanoseconds`."""
        started = time.perf_counter_ns()
        try:
            return self.assign()(queues, consumers, previous)
        finally:
            self.assign_nanoseconds += time.perf_counter_ns() - started

    def reading_before(self) -> PreviousReading | None:
        """The plan in force as the reference scores read a previous plan, read now when the
        strategy could change it in place (a plan that failed the check); None: read
        `in_force.previous` after the step, if the reference scores it."""
        in_force = self.in_force
        if in_force.reading is None and type(in_force.previous) is not CheckedPlan:
            return read_previous(in_force.plan)
        return in_force.reading

    def rebalance(self, group: Group, views: ClientViews | None, timed: bool = True) -> Attempt:
        """The strategy's rebalance of `group` from the plan in force, which it leaves as it
        is. With `views`, each consumer rebalances on its own view. `timed`: the step is one
        of the timed sample, where the strategy's own function runs even if its compiled twin
        could stand for it (the same plan), so that its time is the one consumer code waits
        for; elsewhere the twin, where ready, runs untimed."""
        run: ProtocolRun | None = None
        positions = outcome = None
        twin_ready = not timed and views is None and self.twin_ready(group, self.in_force.owners)
        self.assign_nanoseconds = 0
        self.held = {}  # until the session says (a session that raises holds nothing known)
        started = time.perf_counter_ns()
        try:
            if self.change_aware:
                assert isinstance(self.session, ChangeAwareSession)
                run = self.session.apply_change(group.queues, group.consumers, group.step.kind)
                result: Any = self._with_held(run.owners)
                if self.in_protocol and group.step.kind == INITIAL:
                    run = _cold_start(run)
            elif self.session is not None:
                run = self.session.rebalance(group.queues, group.consumers)
                result = self._with_held(run.owners)
            elif twin_ready:
                result, positions = self._run_twin(group, self.in_force.owners)
            elif views is not None:
                with warnings.catch_warnings():
                    # a consumer's own view of the plan: all its queues can be gone, rightly
                    warnings.simplefilter("ignore", PreviousMismatchWarning)
                    outcome = client_side_rebalance(
                        self.assign(),
                        group.step.queues,
                        group.step.consumers,
                        views.queues_before,
                        views.consumers_before,
                        self.in_force.plan,
                        views.lags,
                    )
                result = outcome.plan
            elif self.inputs:
                result = self.assign()(group.queues, group.consumers, self.in_force.previous)
            else:
                result = self.strategy.assign(group.queues, group.consumers, self.in_force.previous)
        except Exception as error:  # the row reports it; one broken strategy stops nothing
            elapsed = None if twin_ready else self._elapsed(started)
            return Attempt({}, None, f"{type(error).__name__}: {error}", elapsed)
        elapsed = None if twin_ready or self._first_call() else self._elapsed(started)
        if self.held and run is not None:  # its positions are the owners' without the held
            run = replace(run, positions=None)
        plan, error_text = as_plan(result)
        return Attempt(plan, run, error_text, elapsed, positions, outcome)

    def _with_held(self, owners: dict[Any, list[Any]]) -> dict[Any, list[Any]]:
        """A session's `owners` with the partitions it holds for members away
        (HoldingSession; they are then in `held`), consumers in order; `owners` itself when
        none is held."""
        if not self.holding:
            return owners
        assert isinstance(self.session, HoldingSession)
        self.held = self.session.held_owners()
        if not self.held:
            return owners
        return dict(sorted({**owners, **self.held}.items()))

    def scored_group(self, group: Group) -> Group:
        """The group this runner's plan is scored against: the step's, plus the members away
        whose partitions the session holds (`held`), which are in the plan (`_with_held`);
        `group` itself when none is held."""
        if not self.held:
            return group
        consumers = tuple(sorted({*group.step.consumers, *self.held}))
        return Group.of(replace(group.step, consumers=consumers), group, self.numbers)

    def _first_call(self) -> bool:
        """Whether this was the first call of the strategy's function in this process (noted
        now): it pays for lazy imports and compiled kernels loading, which no call after it
        does, so its time is not kept (a tie broken on speed would read a warm-up)."""
        function = self.strategy.assign
        if _CALLED_IN_THIS_PROCESS.get(id(function)) is function:
            return False
        _CALLED_IN_THIS_PROCESS[id(function)] = function
        return True

    def _elapsed(self, started: int) -> int:
        """The rebalance's compute time: the assign calls' in a protocol's session, else the
        whole call's since `started`."""
        if self.in_protocol:
            return self.assign_nanoseconds
        return time.perf_counter_ns() - started

    def accept(
        self,
        plan: dict[Any, list[Any]],
        group: Group,
        owners: Owners | None = None,
        positions: tuple[Any, Any] | None = None,
        reading: PreviousReading | None = None,
        checked: CheckedPlan[Any, Any] | None = None,
    ) -> None:
        """Put `plan` in force: as the compiled scores read it (`owners`; `positions`, when it
        came as positions) or, `owners` None, as the reference scores did (`reading` when it
        was exact, `checked` when it passed the check)."""
        if owners is not None:
            if self.twin is not None:  # the twin's own plans hold plain ints (read from an array)
                self.plain_previous = positions is not None or _plain_ints(plan)
            previous = CheckedPlan.of_checked_lists(plan, within=group.queue_set)
            self.in_force = PlanInForce(plan, previous, None, owners)
        else:
            self.in_force = PlanInForce(plan, plan if checked is None else checked, reading, None)

    def twin_ready(self, group: Group, owners: Owners | None) -> bool:
        """Whether the compiled twin stands for the strategy on this step: it has one, the
        previous plan is known as `owners` and holds plain ints only, the queues are plain ints
        with consumers to take them, and the step passes the strategy no placement."""
        return (
            self.twin is not None
            and owners is not None
            and self.plain_previous
            and group.integers is not None
            and group.integers.plain
            and len(group.consumers) > 0
            and not self.inputs
        )

    def _run_twin(
        self, group: Group, owners: Owners | None
    ) -> tuple[dict[Any, list[Any]], tuple[Any, Any]]:
        """The twin's plan and positions (`twin_ready` said it can run)."""
        assert self.twin is not None
        assert self.numbers is not None
        assert owners is not None
        assert group.integers is not None
        return self.twin(group.integers, owners, len(self.numbers.number_of))

    def stability(self, group: Group) -> tuple[int, int]:
        """(moves when unchanged, rebalances to a fixed point) of the plan in force, which
        this step put there: the strategy applied again with nothing changed, up to
        STABILITY_BOUND times, each time to the plan the time before gave (a function: `assign`
        with that plan as previous, the plan in force staying as it was; a protocol: its
        session rebalanced again with the same group, which a quiet protocol leaves as it
        was). The moves are the first time's (`changes`). A fixed point is the plan given back
        (by a protocol, with no protocol step taken); the rebalances to it are those that
        changed something before one did not, STABILITY_BOUND when none within the bound did
        not, or when the strategy raised or returned no plan. A session's plan includes the
        partitions it holds for members away (`_with_held`), as the step's did."""
        moves: int | None = None  # the first time's
        in_force, previous = self.in_force.plan or {}, self.in_force.previous
        owners = self.in_force.owners
        if type(previous) is CheckedPlan:  # a copy, so that the next step's still has no owners
            previous = CheckedPlan.of_checked_lists(previous, within=previous.within)
        for rebalances in range(STABILITY_BOUND):
            again, quiet = self._apply_again(group, previous, owners)
            moved, same = changes(in_force, again, group)
            moves = moved if moves is None else moves
            if again is None:
                break
            if same and quiet:
                return moves, rebalances
            in_force, owners = again, None  # the compiled scores have not read `again`
            previous = checked_plan(again) or again
        return moves or 0, STABILITY_BOUND

    def _apply_again(
        self, group: Group, previous: Mapping[Any, Any] | None, owners: Owners | None = None
    ) -> tuple[dict[Any, list[Any]] | None, bool]:
        """(the plan the strategy gives with nothing changed, or None when it raised or gave no
        plan; whether it was quiet: no protocol step taken). `owners`: `previous` as the
        compiled scores read it, when they did (the twin, if any, runs then)."""
        try:
            if self.session is not None:
                run = self.session.rebalance(group.queues, group.consumers)
                result, quiet = self._with_held(run.owners), run.steps == 0
            elif self.twin_ready(group, owners):
                result, quiet = self._run_twin(group, owners)[0], True
            elif type(previous) is CheckedPlan:  # the contract does not look at one
                result, quiet = self.assign()(group.queues, group.consumers, previous), True
            else:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", PreviousMismatchWarning)
                    result = self.assign()(group.queues, group.consumers, previous)
                quiet = True
        except Exception:  # the row's stability score says so
            return None, False
        again, error = as_plan(result)
        return (None, False) if error is not None else (again, quiet)


def _plain_ints(plan: dict[Any, list[Any]]) -> bool:
    from rebalancing.evaluation.scoring.compiled_scores import plain_ints

    return plain_ints(chain.from_iterable(plan.values()))


_CALLED_IN_THIS_PROCESS: dict[int, object] = {}
"""The strategies' functions called once in this process (Runner._first_call), by id, each kept
with its id: a freed function's id can be given to a new one, which must still count as new (a
test's function once read as called, and its warm-up was timed); a forked child inherits what
its parent called."""

_NO_OWNER: Any = object()
"""No holder (distinct from every consumer id, None included)."""


def changes(
    before: dict[Any, list[Any]], after: dict[Any, list[Any]] | None, group: Group
) -> tuple[int, bool]:
    """(the queues of the group that `before` gives to a consumer of the group and `after` to
    another or to none, whether `after` is the same plan); `after` None: no plan, so every such
    queue moves. Never raises: a plan whose ids cannot even be compared moves every queue."""
    try:
        if after is not None and (after is before or after == before):
            return 0, True
        owner_before, owner_after = _owners(before), _owners(after or {})
        moved = 0
        for queue, consumer in owner_before.items():
            if queue in group.queue_set and consumer in group.consumer_set:
                holder = owner_after.get(queue, _NO_OWNER)
                moved += holder is not consumer and holder != consumer
        return moved, after is not None and owner_before == owner_after
    except Exception:  # ids whose comparison raises: nothing can be said to stay
        return len(group.queue_set), False


def _owners(plan: dict[Any, list[Any]]) -> dict[Any, Any]:
    """queue -> its first holder in `plan`'s order; unhashable entries are left out."""
    owner: dict[Any, Any] = {}
    for consumer, owned in plan.items():
        for queue in owned:
            try:
                owner.setdefault(queue, consumer)
            except TypeError:
                continue
    return owner


def as_plan(result: Any) -> tuple[dict[Any, list[Any]], str | None]:
    """`result` as consumer -> list of queues (copied only where it holds other iterables), or
    an empty plan and why `result` is not one (what reading it raised, too: a key no dict can
    hold, queues that raise when read)."""
    if type(result) is dict and set(map(type, result.values())) <= {list}:  # the common case
        return result, None
    try:
        return _copied_plan(result)
    except Exception as error:  # the row reports it; one broken strategy stops nothing
        return {}, f"{type(error).__name__}: the plan cannot be read: {error}"


def _copied_plan(result: Any) -> tuple[dict[Any, list[Any]], str | None]:
    """`as_plan` past its common case; raises what reading `result` raises."""
    if not isinstance(result, Mapping):
        return (
            {},
            f"TypeError: returned {type(result).__name__}, not a mapping of consumer -> queues",
        )
    all_lists = True
    for consumer, owned in result.items():
        if isinstance(owned, list):
            continue
        if isinstance(owned, str | bytes) or not isinstance(owned, Iterable):
            return {}, f"TypeError: returned {type(owned).__name__} as the queues of {consumer!r}"
        all_lists = False
    if all_lists and isinstance(result, dict):
        return result, None
    return {consumer: list(owned) for consumer, owned in result.items()}, None


def checked_plan(plan: dict[Any, list[Any]]) -> CheckedPlan[Any, Any] | None:
    """`plan` checked as a previous plan, or None when it holds a queue twice or an unhashable
    one (the scores count those; the next step's strategy refuses such a previous)."""
    try:
        return CheckedPlan(plan)
    except (TypeError, ValueError):
        return None


def _cold_start(run: ProtocolRun) -> ProtocolRun:
    """A system protocol's run of a scenario's step 0 without its cost: the group's cold start
    is no rebalance an operator weighs, and the protocols start cold unalike (the classic
    barrier leaves every partition unread until the first sync; under the consumer protocol
    the first member to heartbeat takes them all, then gives most back), so counting it would
    decide between protocols on a deployment rather than on the changes (as the figures of
    rebalancing.evaluation.scoring.kafka_time, which settle a cold start first, do not)."""
    return replace(
        run,
        queues_paused=None,
        seconds_to_balance=None,
        queue_seconds_unowned=None,
        queue_seconds_doubly_owned=None,
        queue_seconds_paused=None,
        heartbeats=None,
    )
