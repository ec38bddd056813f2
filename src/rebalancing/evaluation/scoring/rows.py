"""A row of the scoring core: the scores of one strategy on one step of one scenario, and the
builder that puts a step's results (the scores of the plan, the protocol's run, the client
views' cost, the stability check, the placement scores) into one.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from rebalancing.contract import ProtocolRun
from rebalancing.evaluation.scenarios.changes import Scenario, Step
from rebalancing.evaluation.scenarios.views import ViewOutcome
from rebalancing.evaluation.scoring.placement_step import PlacementScores
from rebalancing.evaluation.scoring.scores import Scores


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
    assign_micros: float | None
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
    queue_seconds_paused: float | None = None
    heartbeats: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


ROW_FIELDS: tuple[str, ...] = tuple(field.name for field in fields(ScoreRow))
"""Column names of a row, in order."""


def queues_paused(run: ProtocolRun | None, scores: Scores, error: str | None) -> int | None:
    """The queues a consumer still in the group was reading and that went unread during the
    rebalance: what the protocol reports; for a strategy without one, Kafka's eager protocol,
    where every member gives up every partition first (all kept and moved queues)."""
    if error is not None:
        return None
    if run is not None:
        return run.queues_paused
    return scores.kept + scores.moves


def make_row(
    scenario: Scenario,
    step: Step,
    strategy: str,
    outcome: Any,
    scores: Scores,
    stability: tuple[int | None, int | None],
    placed: PlacementScores,
    on_clients: bool,
) -> ScoreRow:
    """The row of `strategy` on `step`: `outcome` is the runner's Attempt (its plan's protocol
    run, error, time and client views), `scores` the plan's, `stability` (moves when
    unchanged, rebalances to a fixed point) or Nones, `placed` the placement scores;
    `on_clients`, whether the strategy runs on the clients' views (from the first step on,
    which has no views to differ yet)."""
    run: ProtocolRun | None = outcome.run
    views: ViewOutcome | None = outcome.views
    return ScoreRow(
        base_seed=scenario.base_seed,
        scenario=scenario.index,
        step=step.index,
        strategy=strategy,
        change=step.kind,
        queue_count=len(step.queues),
        consumer_count=len(step.consumers),
        joined=step.joined,
        departed=step.departed,
        queues_added=step.queues_added,
        queues_removed=step.queues_removed,
        assign_micros=None if outcome.nanoseconds is None else outcome.nanoseconds / 1000,
        releases=run.releases if run else None,
        protocol_steps=run.steps if run else None,
        rounds=run.rounds if run else None,
        converged=run.converged if run else None,
        queues_paused=queues_paused(run, scores, outcome.error),
        failed=outcome.error is not None,
        error=outcome.error,
        views="client" if on_clients else "broker",
        queue_periods_read_twice=views.queue_periods_read_twice if views else 0,
        queue_periods_unread=views.queue_periods_unread if views else 0,
        periods_to_agree=views.periods_to_agree if views else 0,
        moves_when_unchanged=stability[0],
        rebalances_to_fixed_point=stability[1],
        claims=run.claims if run else None,
        steals=run.steals if run else None,
        seconds_to_balance=run.seconds_to_balance if run else None,
        queue_seconds_unowned=run.queue_seconds_unowned if run else None,
        queue_seconds_doubly_owned=run.queue_seconds_doubly_owned if run else None,
        queue_seconds_paused=run.queue_seconds_paused if run else None,
        heartbeats=run.heartbeats if run else None,
        **vars(placed),  # PlacementScores' fields are ScoreRow's of the same names
        **vars(scores),  # its fields, without the deep copy asdict makes
    )
