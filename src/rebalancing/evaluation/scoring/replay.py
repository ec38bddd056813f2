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
step starts from the last plan in force, as a real group would. No Spark here. A session that
holds the partitions of members away (Kafka's static members restarting within the session
timeout: rebalancing.evaluation.scoring.runner.HoldingSession) is scored on the step's group
plus those members, so their partitions count as held, not orphaned (its placement scores too).
Every input is checked once, however many strategies read it (rebalancing.contract): each
step's queues and consumers once (SortedIds), and each plan once, as a CheckedPlan that the
next step passes as `previous`. The scores count the plan either compiled, from an array of its
queue ids or, for a protocol run that gives them, of its queues' positions
(rebalancing.evaluation.scoring.compiled_scores: the CheckedPlan is then inverted only if the
strategy reads its owners), or with the reference, through the CheckedPlan's inversion (`engine`
on `score_scenario`; the rows are the same). The kernel engine also runs the registry's
`sticky`, `averagely`, `consistent_hash` and `bounded_consistent_hash` as compiled twins where
the group's ids allow (rebalancing.evaluation.scoring.compiled_strategies: the same plans, handed
to the scores as positions), except on a seeded sample of steps (TIMED_EVERY) where their own
functions run and are timed: a twin's time is never reported. The strategies take both without
checking, sorting or inverting them again, so `assign_micros` is the strategy's own work on
inputs already checked (a CheckedPlan not inverted yet is inverted by the strategy that reads it). A
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
The pieces: groups.py (a step's group, checked once), runner.py (one strategy's plan in force,
its rebalance, the stability check), scores.py and compiled_scores.py (the two engines' scores),
placement_step.py (the placement scores), rows.py (the row).
Runtime complexity: per step and strategy, the strategy's own cost plus O(|Q| + |C|); on a
checked step, the strategy's own cost once more (up to STABILITY_BOUND times if it oscillates);
with zones, once per step, the fewest cross-zone queues' maximum flow.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from rebalancing.contract import AssignFunction
from rebalancing.evaluation.scenarios.changes import Scenario, scenario_seed
from rebalancing.evaluation.scenarios.views import (
    VIEW_MODES,
    ViewSettings,
    draw_lags,
    step_rng,
)
from rebalancing.evaluation.scoring.definitions import STABILITY_BOUND
from rebalancing.evaluation.scoring.groups import ClientViews, Group
from rebalancing.evaluation.scoring.placement_step import NOT_PLACED, StepPlacement, exact
from rebalancing.evaluation.scoring.rows import ROW_FIELDS, ScoreRow, make_row
from rebalancing.evaluation.scoring.runner import Attempt, ProtocolFactory, Runner, checked_plan
from rebalancing.evaluation.scoring.scores import (
    PreviousReading,
    Scores,
    read_and_score,
    read_previous,
)
from rebalancing.strategies import Strategy
from rebalancing.strategies.sac import ENGINES, default_engine  # the same two engines as SAC's

if TYPE_CHECKING:
    from rebalancing.evaluation.scoring.compiled_scores import ConsumerNumbers

__all__ = [
    "ROW_FIELDS",
    "STABILITY_BOUND",
    "STABILITY_EVERY",
    "TIMED_EVERY",
    "ScoreRow",
    "as_strategies",
    "score_scenario",
    "score_scenarios",
]

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


TIMED_EVERY = 8
TIMED_OFFSET = 1
"""A strategy with a compiled twin (Strategy.compiled_twin) runs its own function, timed, on
every 8th step of a scenario (those where the scenario's seed plus the step's index is 1
modulo 8: a seeded sample, the same steps for every strategy and any partitioning of a run,
none of them a stability check's step), and its twin, untimed, on the others (their rows'
`assign_micros` is None). So the time column is always the time of the function consumer code
calls, never the twin's, measured on an eighth of the steps: about 2,500 rebalances of each
strategy on the tutorial's profile (1,000 scenarios), enough for its 99th percentile, at an
eighth of the cost of timing them all (consistent hashing's own function, which hashes its
ring at every call, was 85% of that profile's scoring time)."""


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


def _checked_arguments(views: str, engine: str | None, stability_every: int) -> str:
    """The engine to count with; ValueError names an argument of score_scenario that is off."""
    if type(stability_every) is not int or stability_every < 1:
        raise ValueError(f"stability_every must be a positive integer, not {stability_every!r}")
    if views not in VIEW_MODES:
        raise ValueError(f"unknown views {views!r}; known: {', '.join(VIEW_MODES)}")
    chosen = default_engine() if engine is None else engine
    if chosen not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; known: {', '.join(ENGINES)}")
    return chosen


def score_scenario(
    scenario: Scenario,
    strategies: Mapping[str, Strategy | AssignFunction],
    views: str = "broker",
    view_settings: ViewSettings | None = None,
    engine: str | None = None,
    stability_every: int = STABILITY_EVERY,
    protocol: ProtocolFactory | Mapping[str, ProtocolFactory] | None = None,
) -> Iterator[ScoreRow]:
    """Rows for every (step, strategy) of `scenario`, step by step, strategies in name order.

    `views="client"` runs every client-side strategy on each consumer's own, possibly stale,
    view (rebalancing.evaluation.scenarios.views); the others run broker-side as always, and
    rows say which. `engine` counts the scores compiled ("kernel", the default when numba is
    installed) or with the reference ("reference"): the rows are the same (ENGINES). Every
    `stability_every`-th step (STABILITY_EVERY) each strategy is applied again with nothing
    changed (`Runner.stability`); the other rows have no stability score (None). With
    `protocol` (a system's: rebalancing.evaluation.scoring.runner.ProtocolFactory), every
    strategy runs inside a session of it around its `assign`, each step told its change kind
    (a mapping: strategy name -> its own protocol, the others none).
    """
    chosen_engine = _checked_arguments(views, engine, stability_every)
    settings = view_settings or ViewSettings()
    seed = scenario_seed(scenario.base_seed, scenario.index)
    numbers: ConsumerNumbers | None = None
    if chosen_engine == "kernel":
        from rebalancing.evaluation.scoring.compiled_scores import ConsumerNumbers

        numbers = ConsumerNumbers()
    runners = {
        name: Runner(
            strategy,
            seed,
            numbers,
            protocol.get(name) if isinstance(protocol, Mapping) else protocol,
        )
        for name, strategy in as_strategies(strategies).items()
    }
    before: Group | None = None
    for step in scenario.steps():
        group = Group.of(step, before, numbers)
        client_views = None
        if views == "client" and before is not None:
            lags = draw_lags(step.consumers, settings, step_rng(seed, step.index))
            client_views = ClientViews(before.step.queues, before.step.consumers, lags)
        before = group
        checked_step = (seed + step.index) % stability_every == 0
        timed_step = (seed + step.index) % TIMED_EVERY == TIMED_OFFSET
        placement = StepPlacement.of(step, group)
        held_placements: dict[tuple[Any, ...], StepPlacement | None] = {}  # by consumers
        for name, runner in runners.items():
            if placement is not None:
                runner.inputs = runner.strategy.inputs_for(placement.available)
            plan_before = runner.in_force.plan
            reading = runner.reading_before()
            on_clients = (
                views == "client" and runner.session is None and runner.strategy.client_side
            )
            attempt = runner.rebalance(group, client_views if on_clients else None, timed_step)
            # a session's members away with their partitions held are scored as members
            scored_group = runner.scored_group(group)
            scores = _scored(runner, scored_group, attempt, reading, numbers)
            stability: tuple[int | None, int | None] = (None, None)
            if attempt.error is None and checked_step:
                stability = runner.stability(group)
            placed = NOT_PLACED
            if placement is not None and attempt.error is None and exact(scores):
                placed_group: StepPlacement | None = placement
                if scored_group is not group:  # members held for, placed with their queues
                    placed_group = held_placements.setdefault(
                        scored_group.consumers, StepPlacement.of(scored_group.step, scored_group)
                    )
                assert placed_group is not None
                placed = placed_group.scores(plan_before, attempt.plan)
            yield make_row(scenario, step, name, attempt, scores, stability, placed, on_clients)


def _scored(
    runner: Runner,
    group: Group,
    attempt: Attempt,
    reading: PreviousReading | None,
    numbers: ConsumerNumbers | None,
) -> Scores:
    """The scores of the attempt's plan against the plan in force (`reading`: as the reference
    reads it, or None to read it now), then that plan put in force when the step did not fail:
    compiled where they can read both plans, else by the reference. A failed step has no plan:
    its balance and stickiness are undefined, not perfect."""
    plan, in_force = attempt.plan, runner.in_force
    if attempt.error is None and in_force.owners is not None and group.integers is not None:
        from rebalancing.evaluation.scoring.compiled_scores import score_exact, score_positions

        assert numbers is not None
        positions = attempt.run.positions if attempt.run is not None else attempt.positions
        if positions is not None:
            scored = score_positions(group.integers, plan, positions, in_force.owners, numbers)
        else:
            scored = score_exact(group.integers, plan, in_force.owners, numbers)
        if scored is not None:
            scores, owners = scored
            runner.accept(plan, group, owners=owners, positions=attempt.positions)
            return scores
    if reading is None:  # a CheckedPlan, with tuples of its own: read when needed
        reading = read_previous(in_force.previous)
    checked = checked_plan(plan) if attempt.error is None else None
    plan_reading, scores = read_and_score(
        group.queue_set,
        group.consumer_set,
        reading,
        plan if checked is None else checked,
    )
    if attempt.error is not None:
        return replace(
            scores, balance_degree=None, spread=None, stickiness=None, stickiness_gap=None
        )
    exact_reading = plan_reading.as_previous() if plan_reading.exact else None
    runner.accept(plan, group, reading=exact_reading, checked=checked)
    return scores


def score_scenarios(
    scenarios: Iterable[Scenario],
    strategies: Mapping[str, Strategy | AssignFunction],
    views: str = "broker",
    view_settings: ViewSettings | None = None,
    engine: str | None = None,
    stability_every: int = STABILITY_EVERY,
    protocol: ProtocolFactory | Mapping[str, ProtocolFactory] | None = None,
) -> Iterator[ScoreRow]:
    """Rows for every scenario in turn, lazily (one scenario's state in memory at a time)."""
    for scenario in scenarios:
        yield from score_scenario(
            scenario, strategies, views, view_settings, engine, stability_every, protocol
        )
