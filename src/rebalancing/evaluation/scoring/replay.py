"""The pure-Python scoring core: scenarios in, one flat row of scores per rebalance out.

Each strategy runs through each scenario on its own: step 0 assigns from scratch, every later step
rebalances from the strategy's own previous plan. A protocol strategy (one with `open_session`) runs
through one session per scenario, so each step starts from the state the previous one left, and its
rows carry the protocol cost: releases, protocol steps, rounds and whether it converged (None for
the others), and for a protocol that models time with its system's own intervals, its claims and
steals, the seconds until balanced and the queue-seconds with no owner and with two (None otherwise:
rebalancing.contract.ProtocolRun); every row says how many queues the rebalance paused
(`queues_paused`: the protocol's count, or for a plain function Kafka's eager protocol, which pauses
every queue a remaining consumer was reading). The function the caller passes is the one that runs,
whatever its name. A strategy that raises, or returns something that is not a plan, fails that step:
the row says so (`failed`, `error`), scores an empty plan (every queue an orphan) and leaves
balance, spread and stickiness undefined (None), so that a failure never looks balanced; the next
step starts from the last plan in force, as a real group would. No Spark here.
Every input is checked once, however many strategies read it (rebalancing.contract): each
step's queues and consumers once (SortedIds), and each plan once, as a CheckedPlan that the
next step passes as `previous`. The scores count the plan either compiled, from an array of its
queue ids or, for a protocol run that gives them, of its queues' positions
(rebalancing.evaluation.scoring.compiled_scores: the CheckedPlan is then inverted only if the
strategy reads its owners), or with the reference, through the CheckedPlan's inversion (`engine`
on `score_scenario`; the rows are the same). The kernel engine also runs the registry's
`sticky` and `averagely` as compiled twins where the group's ids allow
(rebalancing.evaluation.scoring.compiled_strategies: the same plans, timed as the twins' calls,
handed
to the scores as positions). The strategies take both without checking,
sorting or inverting them again, so `assign_micros` is the strategy's own work on inputs
already checked (a CheckedPlan not inverted yet is inverted by the strategy that reads it). A
plan that fails the check is passed on as it was, for the strategy to refuse. The contract's
PreviousMismatchWarning (a caller's previous plan sharing no queue with the group) is not for
these plans, whose queues can all be gone rightly: a CheckedPlan is not looked at, and the one
path that passes plain plans, each consumer's own part under client views, silences it.
Stability: on every STABILITY_EVERY-th step, each strategy is applied again to its own plan with
nothing changed, up to STABILITY_BOUND times (a protocol: its session rebalanced again with the
same group); the row says how many queues moved the first time (`moves_when_unchanged`, which
must be 0) and after how many rebalances the plan stopped changing (`rebalances_to_fixed_point`).
Zones and weights: a step that carries them (rebalancing.evaluation.scenarios.changes) passes each
strategy only those it declares (`Strategy.inputs_for`), in its call and in the stability check
alike (a client-side rebalance: each consumer's call), and its rows carry the placement scores
(rebalancing.evaluation.scoring.placement_scores, which shares no code with any strategy): the
cross-zone fraction and its gap to the fewest any balanced plan reaches when the step has
zones, the load ratio and its gap to the bound, the load kept and the load moved when it has
weights; None otherwise, and None for a plan that is not exact (an orphan, a duplicate, an
unknown id, a failure), never a number that would look perfect. A step without them costs
nothing more.
Runtime complexity: per step and strategy, the strategy's own cost plus O(|Q| + |C|); on a
checked step, the strategy's own cost once more (up to STABILITY_BOUND times if it oscillates);
with zones, once per step, the fewest cross-zone queues' maximum flow.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, fields, replace
from functools import partial
from itertools import chain
from typing import TYPE_CHECKING, Any

from rebalancing.contract import (
    AssignFunction,
    CheckedPlan,
    PreviousMismatchWarning,
    ProtocolRun,
    SortedIds,
    StrategySession,
)
from rebalancing.evaluation.scenarios.changes import Scenario, Step, scenario_seed
from rebalancing.evaluation.scenarios.views import (
    VIEW_MODES,
    ViewOutcome,
    ViewSettings,
    client_side_rebalance,
    draw_lags,
    step_rng,
)
from rebalancing.evaluation.scoring.scores import (
    PreviousReading,
    Scores,
    read_and_score,
    read_previous,
)
from rebalancing.strategies import Strategy
from rebalancing.strategies.sac import ENGINES, default_engine  # the same two engines as SAC's

if TYPE_CHECKING:
    from rebalancing.evaluation.scoring.compiled_scores import ConsumerNumbers, IntegerGroup, Owners
    from rebalancing.evaluation.scoring.compiled_strategies import Twin


@dataclass(slots=True)
class ScoreRow:
    """The scores of one strategy on one step of one scenario (with slots and not frozen, for
    speed, as rebalancing.evaluation.scoring.scores.Scores says; nothing changes a row once
    made)."""

    base_seed: int
    scenario: int
    step: int
    strategy: str
    change: str
    queue_count: int
    consumer_count: int
    joined: int
    departed: int
    queues_added: int
    queues_removed: int
    balance_degree: float | None
    spread: int | None
    stickiness: float | None
    optimal_stickiness: float | None
    stickiness_gap: float | None
    kept: int
    moves: int
    revocations: int
    orphans: int
    duplicates: int
    unknown_queues: int
    unknown_consumers: int
    assign_micros: float
    releases: int | None = None
    protocol_steps: int | None = None
    rounds: int | None = None
    converged: bool | None = None
    failed: bool = False
    error: str | None = None
    queues_paused: int | None = None
    views: str = "broker"
    queue_periods_read_twice: int = 0
    queue_periods_unread: int = 0
    periods_to_agree: int = 0
    moves_when_unchanged: int | None = None
    rebalances_to_fixed_point: int | None = None
    claims: int | None = None
    steals: int | None = None
    seconds_to_balance: float | None = None
    queue_seconds_unowned: float | None = None
    queue_seconds_doubly_owned: float | None = None
    cross_zone_fraction: float | None = None
    cross_zone_gap: float | None = None
    load_ratio: float | None = None
    load_ratio_gap: float | None = None
    load_kept: float | None = None
    load_moved: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


ROW_FIELDS: tuple[str, ...] = tuple(field.name for field in fields(ScoreRow))
"""Column names of a row, in order."""

STABILITY_BOUND = 4
"""The most rebalances with nothing changed that the stability check runs after a step. A
function's plan must be its own fixed point (one rebalance shows it); a protocol whose plan
takes rounds (Kafka's cooperative one: two) must settle well within four."""

STABILITY_EVERY = 4
"""The stability check runs on every 4th step of a scenario, the same steps for every strategy,
from an offset the scenario's seed gives (so the rows are the same for any partitioning of a
run). Checked at every step, it costs about one more rebalance per strategy and step: on the
profile of `rebalancing compare --queues 64 --consumers 4:12 --scenarios 300`, 2.17 s of scoring
CPU became 3.49 s (+58%; consistent hashing, which builds its ring at every call, two thirds of
it); every 4th step costs about a quarter of that. An oscillation the check is for is either
systematic, and then every checked step shows it, or tied to some states, and then k of them
go unseen with probability (3/4)^k: 6% for 10. `score_scenario(..., stability_every=1)` checks
every step."""


def as_strategies(strategies: Mapping[str, Strategy | AssignFunction]) -> dict[str, Strategy]:
    """name -> Strategy, in name order; a bare function becomes a Strategy without a session.

    The name given here labels the rows; the object given is what runs, even under a name the
    registry also has.
    """
    chosen: dict[str, Strategy] = {}
    for name in sorted(strategies):
        given = strategies[name]
        if isinstance(given, Strategy):
            chosen[name] = given
        elif callable(given):
            chosen[name] = Strategy(name, given, "given by the caller")
        else:
            raise TypeError(f"strategy {name!r} must be a Strategy or a function, not {given!r}")
    return chosen


@dataclass(frozen=True)
class _ClientViews:
    """One step's client views: the group before the change, and each consumer's lags."""

    queues_before: tuple[Any, ...]
    consumers_before: tuple[Any, ...]
    lags: dict[Any, tuple[int, int]]


@dataclass(frozen=True)
class _Group:
    """One step's group, checked once for every strategy: its queues and consumers as
    SortedIds (as the step gives them when they fail the check: each strategy refuses them
    then) and as frozen sets. What did not change since the step before is taken from it."""

    step: Step
    queues: tuple[Any, ...]
    consumers: tuple[Any, ...]
    queue_set: frozenset[Any]
    consumer_set: frozenset[Any]
    integers: IntegerGroup | None = None  # the group as the compiled scores take it

    @staticmethod
    def of(step: Step, before: _Group | None, numbers: ConsumerNumbers | None = None) -> _Group:
        """The step's group; with `numbers` (the scenario's consumer numbers), also as the
        compiled scores take it, when they can."""
        if before is not None and (
            step.queues is before.step.queues or step.queues == before.step.queues
        ):
            # the very same frozen set tells the scores that no queue of a previous plan is gone
            queues, queue_set = before.queues, before.queue_set
        else:
            queues = _checked_ids(step.queues, "queue")
            queue_set = _id_set(queues)
        if before is not None and (
            step.consumers is before.step.consumers or step.consumers == before.step.consumers
        ):
            consumers, consumer_set = before.consumers, before.consumer_set
        else:
            consumers = _checked_ids(step.consumers, "consumer")
            consumer_set = _id_set(consumers)
        integers = None
        if numbers is not None and type(queues) is SortedIds and type(consumers) is SortedIds:
            from rebalancing.evaluation.scoring.compiled_scores import IntegerGroup

            earlier = before.integers if before is not None else None
            if earlier is not None and earlier.queue_set is queue_set:
                integers = earlier.with_consumers(consumers, consumer_set, numbers)
            else:
                integers = IntegerGroup.of(queues, queue_set, consumers, consumer_set, numbers)
        return _Group(step, queues, consumers, queue_set, consumer_set, integers)


def _id_set(ids: tuple[Any, ...]) -> frozenset[Any]:
    """The set of `ids` (from `_checked_ids`): their SortedIds' own, which every strategy of the
    step shares, or made here when they failed the check."""
    return ids.as_set if type(ids) is SortedIds else frozenset(ids)


def _checked_ids(ids: tuple[Any, ...], kind: str) -> tuple[Any, ...]:
    """`ids` as SortedIds (themselves when they are already), or as they are when they fail
    the check."""
    if type(ids) is SortedIds:
        return ids
    try:
        return SortedIds(ids, kind)
    except (TypeError, ValueError):
        return ids


class _Runner:
    """One strategy through one scenario: its plan in force, and its session if it has one."""

    def __init__(self, strategy: Strategy, seed: int) -> None:
        self.strategy = strategy
        self.session: StrategySession | None = (
            strategy.open_session(seed=seed) if strategy.open_session else None
        )
        self.plan: dict[Any, list[Any]] | None = None  # the plan in force, as returned
        # what the next step's `assign` gets: the plan in force, checked when it passed
        self.previous: Mapping[Any, list[Any]] | CheckedPlan[Any, Any] | None = None
        # the plan in force as the scores read a previous plan (its reading, when that was
        # exact); None: read `plan` when needed
        self.previous_reading: PreviousReading | None = read_previous(None)
        self.outcome: ViewOutcome | None = None  # what the last client-side rebalance cost
        # the plan in force as the compiled scores read a previous plan; None: not known to
        # them (the reference engine, or a plan they could not read), so the reference scores
        self.owners: Owners | None = None
        self.inputs: dict[str, Any] = {}  # the step's placement this strategy declares
        # the strategy's compiled twin and the scenario's consumer numbers it reads (the kernel
        # engine only: rebalancing.evaluation.scoring.compiled_strategies); the last plan's
        # positions
        self.twin: Twin | None = None
        self.numbers: ConsumerNumbers | None = None
        self.positions: tuple[Any, Any] | None = None
        # whether every queue id of the plan in force is a plain int, as a twin gives them back:
        # sticky keeps its previous plan's own ids (True, an IntEnum member) where the group's
        # queue equals them, so the twin may stand for it only then (kept with a twin only)
        self.plain_previous = True

    def assign(self) -> Callable[..., Any]:
        """The strategy's `assign`, given the step's placement it declares (`self.inputs`)."""
        if not self.inputs:
            return self.strategy.assign
        return partial(self.strategy.assign, **self.inputs)

    def rebalance(
        self, group: _Group, views: _ClientViews | None
    ) -> tuple[dict[Any, list[Any]], ProtocolRun | None, str | None, int]:
        """(the plan, its protocol run, the error if the step failed, nanoseconds); the plan in
        force moves on only when the step succeeded. With `views`, each consumer rebalances on
        its own view (`self.outcome` says what that cost)."""
        run: ProtocolRun | None = None
        self.outcome = self.positions = None
        twin_ready = views is None and self._twin_ready(group, self.owners)
        started = time.perf_counter_ns()
        try:
            if self.session is not None:
                run = self.session.rebalance(group.queues, group.consumers)
                result: Any = run.owners
            elif twin_ready:
                result, self.positions = self._run_twin(group, self.owners)
            elif views is not None:
                with warnings.catch_warnings():
                    # a consumer's own view of the plan: all its queues can be gone, rightly
                    warnings.simplefilter("ignore", PreviousMismatchWarning)
                    self.outcome = client_side_rebalance(
                        self.assign(),
                        group.step.queues,
                        group.step.consumers,
                        views.queues_before,
                        views.consumers_before,
                        self.plan,
                        views.lags,
                    )
                result = self.outcome.plan
            elif self.inputs:
                result = self.assign()(group.queues, group.consumers, self.previous)
            else:
                result = self.strategy.assign(group.queues, group.consumers, self.previous)
        except Exception as error:  # the row reports it; one broken strategy stops nothing
            return {}, None, f"{type(error).__name__}: {error}", time.perf_counter_ns() - started
        elapsed = time.perf_counter_ns() - started
        plan, error_text = _as_plan(result)
        if error_text is None:
            self.plan = plan
        return plan, run, error_text, elapsed

    def _twin_ready(self, group: _Group, owners: Owners | None) -> bool:
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
        self, group: _Group, owners: Owners | None
    ) -> tuple[dict[Any, list[Any]], tuple[Any, Any]]:
        """The twin's plan and positions (`_twin_ready` said it can run)."""
        assert self.twin is not None
        assert self.numbers is not None
        assert owners is not None
        assert group.integers is not None
        return self.twin(group.integers, owners, len(self.numbers.number_of))

    def stability(self, group: _Group, plan: dict[Any, list[Any]]) -> tuple[int, int]:
        """(moves when unchanged, rebalances to a fixed point) of `plan`, the plan this step
        put in force: the strategy applied again with nothing changed, up to STABILITY_BOUND
        times, each time to the plan the time before gave (a function: `assign` with that plan
        as previous, the plan in force staying as it was; a protocol: its session rebalanced
        again with the same group, which a quiet protocol leaves as it was). The moves are the
        first time's (`_changes`). A fixed point is the plan given back (by a protocol, with no
        protocol step taken); the rebalances to it are those that changed something before one
        did not, STABILITY_BOUND when none within the bound did not, or when the strategy
        raised or returned no plan."""
        moves: int | None = None  # the first time's
        in_force, previous, owners = plan, self.previous, self.owners
        if type(previous) is CheckedPlan:  # a copy, so that the next step's still has no owners
            previous = CheckedPlan.of_checked_lists(previous, within=previous.within)
        for rebalances in range(STABILITY_BOUND):
            again, quiet = self._apply_again(group, previous, owners)
            moved, same = _changes(in_force, again, group)
            moves = moved if moves is None else moves
            if again is None:
                break
            if same and quiet:
                return moves, rebalances
            in_force, owners = again, None  # the compiled scores have not read `again`
            previous = _checked(again) or again
        return moves or 0, STABILITY_BOUND

    def _apply_again(
        self, group: _Group, previous: Mapping[Any, Any] | None, owners: Owners | None = None
    ) -> tuple[dict[Any, list[Any]] | None, bool]:
        """(the plan the strategy gives with nothing changed, or None when it raised or gave no
        plan; whether it was quiet: no protocol step taken). `owners`: `previous` as the
        compiled scores read it, when they did (the twin, if any, runs then)."""
        try:
            if self.session is not None:
                run = self.session.rebalance(group.queues, group.consumers)
                result, quiet = run.owners, run.steps == 0
            elif self._twin_ready(group, owners):
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
        again, error = _as_plan(result)
        return (None, False) if error is not None else (again, quiet)


_NO_OWNER: Any = object()
"""No holder (distinct from every consumer id, None included)."""


def _changes(
    before: dict[Any, list[Any]], after: dict[Any, list[Any]] | None, group: _Group
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


def _as_plan(result: Any) -> tuple[dict[Any, list[Any]], str | None]:
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
    """`_as_plan` past its common case; raises what reading `result` raises."""
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


def score_scenario(
    scenario: Scenario,
    strategies: Mapping[str, Strategy | AssignFunction],
    views: str = "broker",
    view_settings: ViewSettings | None = None,
    engine: str | None = None,
    stability_every: int = STABILITY_EVERY,
) -> Iterator[ScoreRow]:
    """Rows for every (step, strategy) of `scenario`, step by step, strategies in name order.

    `views="client"` runs every client-side strategy on each consumer's own, possibly stale, view
    (rebalancing.evaluation.scenarios.views); the others run broker-side as always, and rows say
    which.
    `engine` counts the scores compiled ("kernel", the default when numba is installed) or with
    the reference ("reference"): the rows are the same (ENGINES). Every `stability_every`-th
    step (STABILITY_EVERY) each strategy is applied again with nothing changed
    (`_Runner.stability`); the other rows have no stability score (None).
    """
    if type(stability_every) is not int or stability_every < 1:
        raise ValueError(f"stability_every must be a positive integer, not {stability_every!r}")
    if views not in VIEW_MODES:
        raise ValueError(f"unknown views {views!r}; known: {', '.join(VIEW_MODES)}")
    chosen_engine = default_engine() if engine is None else engine
    if chosen_engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; known: {', '.join(ENGINES)}")
    settings = view_settings or ViewSettings()
    seed = scenario_seed(scenario.base_seed, scenario.index)
    runners = {
        name: _Runner(strategy, seed) for name, strategy in as_strategies(strategies).items()
    }
    numbers: ConsumerNumbers | None = None
    if chosen_engine == "kernel":
        from rebalancing.evaluation.scoring.compiled_scores import NO_PLAN, ConsumerNumbers
        from rebalancing.evaluation.scoring.compiled_strategies import twin_of

        numbers = ConsumerNumbers()
        for runner in runners.values():
            runner.owners = NO_PLAN
            runner.numbers = numbers
            if runner.session is None:  # a protocol's session rebalances, never its `assign`
                runner.twin = twin_of(runner.strategy.assign)
    before: _Group | None = None
    for step in scenario.steps():
        group = _Group.of(step, before, numbers)
        client_views = None
        if views == "client" and before is not None:
            lags = draw_lags(step.consumers, settings, step_rng(seed, step.index))
            client_views = _ClientViews(before.step.queues, before.step.consumers, lags)
        before = group
        checked_step = (seed + step.index) % stability_every == 0
        placement = _StepPlacement.of(step, group)
        for name, runner in runners.items():
            if placement is not None:
                runner.inputs = runner.strategy.inputs_for(placement.available)
            plan_before = runner.plan
            previous, previous_plan = runner.previous_reading, runner.previous
            if previous is None and type(previous_plan) is not CheckedPlan:
                # a plan that failed the check is read now: the strategy may change it in place
                previous = read_previous(runner.plan)
            on_clients = views == "client" and runner.session is None
            on_clients = on_clients and runner.strategy.client_side
            plan, run, error, elapsed = runner.rebalance(
                group, client_views if on_clients else None
            )
            outcome = runner.outcome
            scored = _scored_compiled(runner, group, plan, run, numbers) if error is None else None
            if scored is not None:
                scores = scored
            else:
                if previous is None:  # a CheckedPlan, with tuples of its own: read when needed
                    previous = read_previous(previous_plan)
                checked = _checked(plan) if error is None else None
                reading, scores = read_and_score(
                    group.queue_set,
                    group.consumer_set,
                    previous,
                    plan if checked is None else checked,
                )
                if error is None:
                    runner.previous = plan if checked is None else checked
                    runner.previous_reading = reading.as_previous() if reading.exact else None
                    runner.owners = None  # a plan the compiled scores did not read
            if error:  # no plan: balance and stickiness are undefined, not perfect
                scores = replace(
                    scores, balance_degree=None, spread=None, stickiness=None, stickiness_gap=None
                )
            stability: tuple[int | None, int | None] = (None, None)
            if error is None and checked_step:
                stability = runner.stability(group, plan)
            placed = _NOT_PLACED
            if placement is not None and error is None and _exact(scores):
                placed = placement.scores(plan_before, plan)
            yield ScoreRow(
                base_seed=scenario.base_seed,
                scenario=scenario.index,
                step=step.index,
                strategy=name,
                change=step.kind,
                queue_count=len(step.queues),
                consumer_count=len(step.consumers),
                joined=step.joined,
                departed=step.departed,
                queues_added=step.queues_added,
                queues_removed=step.queues_removed,
                assign_micros=elapsed / 1000,
                releases=run.releases if run else None,
                protocol_steps=run.steps if run else None,
                rounds=run.rounds if run else None,
                converged=run.converged if run else None,
                queues_paused=_queues_paused(run, scores, error),
                failed=error is not None,
                error=error,
                views="client" if on_clients else "broker",
                queue_periods_read_twice=outcome.queue_periods_read_twice if outcome else 0,
                queue_periods_unread=outcome.queue_periods_unread if outcome else 0,
                periods_to_agree=outcome.periods_to_agree if outcome else 0,
                moves_when_unchanged=stability[0],
                rebalances_to_fixed_point=stability[1],
                claims=run.claims if run else None,
                steals=run.steals if run else None,
                seconds_to_balance=run.seconds_to_balance if run else None,
                queue_seconds_unowned=run.queue_seconds_unowned if run else None,
                queue_seconds_doubly_owned=run.queue_seconds_doubly_owned if run else None,
                **vars(placed),  # PlacementScores' fields are ScoreRow's of the same names
                **vars(scores),  # its fields, without the deep copy asdict makes
            )


def _exact(scores: Scores) -> bool:
    """Whether the scored plan gives every queue of the group to one consumer of it."""
    return not (
        scores.orphans or scores.duplicates or scores.unknown_queues or scores.unknown_consumers
    )


@dataclass(frozen=True)
class PlacementScores:
    """The placement scores of one plan (ScoreRow's fields of the same names; the glossary
    defines them); None where the step lacks the facts or the plan is not exact."""

    cross_zone_fraction: float | None = None
    cross_zone_gap: float | None = None
    load_ratio: float | None = None
    load_ratio_gap: float | None = None
    load_kept: float | None = None
    load_moved: float | None = None


_NOT_PLACED = PlacementScores()


class _StepPlacement:
    """One step's zones and weights, and what their scores need once per step (the fewest
    cross-zone queues, the load ratio's bound, the total load), computed when first asked."""

    def __init__(self, step: Step, group: _Group) -> None:
        self.step = step
        self.group = group
        self.available: dict[str, Any] = {
            "consumer_zones": step.consumer_zones,
            "queue_zones": step.queue_zones,
            "weights": step.weights,
        }
        self._per_step: tuple[int | None, float | None, float] | None = None

    @staticmethod
    def of(step: Step, group: _Group) -> _StepPlacement | None:
        """The step's placement, None when it has neither zones nor weights."""
        if step.consumer_zones is None and step.weights is None:
            return None
        return _StepPlacement(step, group)

    def per_step(self) -> tuple[int | None, float | None, float]:
        """(the fewest cross-zone queues of a balanced plan, the load ratio's bound, the total
        load of the group's queues); None where the step lacks the facts."""
        if self._per_step is None:
            from rebalancing.evaluation.scoring import placement_scores

            step, queues, consumers = self.step, self.step.queues, self.step.consumers
            fewest = bound = None
            total = 0.0
            if step.consumer_zones is not None and step.queue_zones is not None:
                fewest = placement_scores.fewest_cross_zone(
                    queues, consumers, step.consumer_zones, step.queue_zones
                )
            if step.weights is not None:
                bound = placement_scores.load_ratio_bound(queues, consumers, step.weights)
                weights = step.weights
                total = math.fsum(weights[queue] for queue in queues)
            self._per_step = (fewest, bound, total)
        return self._per_step

    def scores(
        self, previous: Mapping[Any, list[Any]] | None, plan: dict[Any, list[Any]]
    ) -> PlacementScores:
        """The placement scores of an exact `plan`, from `previous` (the plan in force before,
        None on the first assignment; a previous plan the scores refuse, one holding a queue
        twice, leaves the scores that read it None)."""
        from rebalancing.evaluation.scoring import placement_scores

        step = self.step
        fewest, bound, total = self.per_step()
        # every consumer of the group, those the plan leaves out holding nothing: the load
        # ratio's mean and the load kept count them (an exact plan names no other consumer)
        plan = {consumer: plan.get(consumer, []) for consumer in step.consumers}
        found: dict[str, float | None] = {}
        queue_count = len(step.queues)
        if fewest is not None and queue_count:
            crossing = placement_scores.cross_zone_count(
                plan, step.consumer_zones or {}, step.queue_zones or {}
            )
            found["cross_zone_fraction"] = crossing / queue_count
            found["cross_zone_gap"] = (crossing - fewest) / queue_count
        if step.weights is not None:
            ratio = placement_scores.load_ratio(plan, step.weights)
            found["load_ratio"] = ratio
            found["load_ratio_gap"] = None if ratio is None or bound is None else ratio - bound
            if previous is not None:
                try:
                    found["load_kept"] = placement_scores.load_kept(previous, plan, step.weights)
                    moved = placement_scores.load_moved(previous, plan, step.weights)
                    found["load_moved"] = moved / total if total else None
                except (TypeError, ValueError):  # a corrupt previous plan: nothing to say
                    pass
        return PlacementScores(**found)


def _scored_compiled(
    runner: _Runner,
    group: _Group,
    plan: dict[Any, list[Any]],
    run: ProtocolRun | None,
    numbers: ConsumerNumbers | None,
) -> Scores | None:
    """The scores of a new plan in force from the compiled path, when it can read both it and
    the previous one (rebalancing.evaluation.scoring.compiled_scores), from the run's positions when
    the protocol gave them; the runner then holds the plan as a CheckedPlan that is inverted
    only if its strategy reads the owners."""
    if runner.owners is None or group.integers is None or numbers is None:
        return None
    from rebalancing.evaluation.scoring.compiled_scores import (
        plain_ints,
        score_exact,
        score_positions,
    )

    positions = run.positions if run is not None else runner.positions
    if positions is not None:
        scored = score_positions(group.integers, plan, positions, runner.owners, numbers)
    else:
        scored = score_exact(group.integers, plan, runner.owners, numbers)
    if scored is None:
        return None
    scores, runner.owners = scored
    if runner.twin is not None:  # the twin's own plans hold plain ints (read from an array)
        runner.plain_previous = runner.positions is not None or plain_ints(
            chain.from_iterable(plan.values())
        )
    runner.previous = CheckedPlan.of_checked_lists(plan, within=group.queue_set)
    runner.previous_reading = None  # read `plan` if the reference needs it
    return scores


def _checked(plan: dict[Any, list[Any]]) -> CheckedPlan[Any, Any] | None:
    """`plan` checked as a previous plan, or None when it holds a queue twice or an unhashable
    one (the scores count those; the next step's strategy refuses such a previous)."""
    try:
        return CheckedPlan(plan)
    except (TypeError, ValueError):
        return None


def _queues_paused(run: ProtocolRun | None, scores: Scores, error: str | None) -> int | None:
    """The queues a consumer still in the group was reading and that went unread during the
    rebalance: what the protocol reports; for a strategy without one, Kafka's eager protocol,
    where every member gives up every partition first (all kept and moved queues)."""
    if error is not None:
        return None
    if run is not None:
        return run.queues_paused
    return scores.kept + scores.moves


def score_scenarios(
    scenarios: Iterable[Scenario],
    strategies: Mapping[str, Strategy | AssignFunction],
    views: str = "broker",
    view_settings: ViewSettings | None = None,
    engine: str | None = None,
    stability_every: int = STABILITY_EVERY,
) -> Iterator[ScoreRow]:
    """Rows for every scenario in turn, lazily (one scenario's state in memory at a time)."""
    for scenario in scenarios:
        yield from score_scenario(
            scenario, strategies, views, view_settings, engine, stability_every
        )
