"""Which strategy for my group? The verdict on a summary: for the system the group runs on, the
candidates' deciding scores side by side, which candidates are dominated and by whom, and a
recommendation with its reason, built from the measured numbers.

How it decides (the same for every system, only the criteria differ):
- A candidate whose plans were ever broken (a failure, an orphan, a duplicate, an unknown id) or
  that oscillates (no fixed point within the stability check's bound when applied again with
  nothing changed) is set aside and named: every score the glossary says must be 0, or calls
  broken at a value. Queues moved when nothing changed, by a strategy that then settles, are a
  cost: the last criterion of every system.
- With weights, the load ratio decides where the balance of queue counts would (the glossary's
  `superseded_by`): equal counts of unequal queues are not what a group wants.
- Two candidates are compared on a criterion by their means over every rebalance (the summary's
  "all" rows) with a 95% confidence interval of the difference, from the standard deviations and
  counts (Welch's interval, normal quantile 1.96); means within 10% of the larger one are level
  however many scenarios tell them apart (a difference too small to act on). The interval does
  not use the pairing of the rebalances (both candidates ran the same scenarios), so it is wide,
  and it errs toward "can't tell" rather than toward a difference that is not there.
- A candidate is dominated when another is better on at least one criterion and worse on none.
- Among the rest, the criteria are taken in the system's order (balance, then what that system
  pays for: paused queues, hand-overs, moves, stickiness): each keeps the candidates that are not
  worse than the best one left. One left is the recommendation; several left are a tie, unless
  one rebalances at least twice as fast at the 99th percentile (time is not part of dominance;
  a time the kernel engine took on a compiled twin, glossary.TIMED_AS_TWINS, is not set against
  a Python function's).

Runtime complexity: O(candidates^2 x criteria).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rebalancing.evaluation.aggregates import ALL_CHANGES, Aggregate
from rebalancing.evaluation.glossary import SCORES, TIMED_AS_TWINS, Score, format_value
from rebalancing.strategies import STRATEGIES, SYSTEMS, Strategy
from rebalancing.strategies.registry import default_strategies, runs_on

Summary = Mapping[tuple[str, str], Mapping[str, Aggregate]]

CONFIDENCE_QUANTILE = 1.96
"""The normal quantile of the two-sided 95% interval of a difference of means."""

LEVEL_FRACTION = 0.10
"""Two means closer than this fraction of the larger one are level, however many scenarios tell
them apart: a balance of 0.38 against 0.40 queues decides nothing a person would act on."""

SPEED_RATIO = 2.0
"""A tie on every criterion is broken by time only when one is this many times faster (p99)."""

ANY_SYSTEM = "any"

GIVES_UP_SHOWN = 2
"""The deciding scores on which the reason says the recommendation is beaten, the first ones."""

OUT_ON_SHOWN = 4
"""The candidates a reason names as set aside on a criterion, the closest first; the others
are counted."""

TERMINAL_ROWS = 12
"""The most candidates the terminal's table shows (in ranking order; the others are counted,
summary.md and the report show them all), so that the verdict stays within about 30 lines
whatever the number of candidates (zones and weights bring six more)."""

TERMINAL_WIDTH = 120
"""The widest the terminal's table gets: columns that decide nothing go first (`_fitted`)."""

TERMINAL_DOMINATED = 5
"""With more dominated candidates than this, the terminal names them without by whom."""


@dataclass(frozen=True)
class System:
    """Where the group runs: which strategies are candidates and which costs decide.

    `criteria` are score metrics in the order they decide; `shown` the columns of the verdict's
    table as (metric, statistic); `views` the view mode the scores must be taken under
    (rebalancing.evaluation.views: client-side systems pay for disagreeing views).
    """

    name: str
    title: str
    costs: str
    criteria: tuple[str, ...]
    shown: tuple[tuple[str, str], ...]
    views: str = "broker"

    def candidates(
        self, registry: Mapping[str, Strategy] = STRATEGIES, carried: Collection[str] = ()
    ) -> tuple[str, ...]:
        """The registered strategies that run on this system (the defaults for `any`), for
        scenarios that carry the inputs `carried` (ScenarioSettings.carried_inputs): those
        that read zones or weights (`Strategy.uses`) only when the scenarios carry them
        (registry.runs_on), as default_strategies does."""
        if self.name == ANY_SYSTEM:
            defaults = default_strategies(carried)
            return tuple(name for name in registry if name in defaults)
        return tuple(
            name
            for name, strategy in registry.items()
            if self.name in (strategy.systems or ()) and runs_on(strategy, carried)
        )

    def accepts(self, strategy: Strategy) -> bool:
        """Whether `strategy` (a registered one or a user's) can run on this system."""
        return self.name == ANY_SYSTEM or self.name in (strategy.systems or ())


_BASE_SHOWN = (
    ("balance_degree", "mean"),
    ("stickiness", "mean"),
    ("stickiness", "p5"),
    ("moves", "mean"),
)
_TIME = ("assign_micros", "p99")
_LEASE_CRITERIA = (
    "converged",
    "balance_degree",
    "seconds_to_balance",
    "queue_seconds_unowned",
    "queue_seconds_doubly_owned",
    "moves",
    "stickiness",
)
"""Leaderless ownership protocols settle in time: balance, then how long and what it cost."""
_LEASE_SHOWN = (
    *_BASE_SHOWN,
    ("seconds_to_balance", "mean"),
    ("seconds_to_balance", "p95"),
    ("queue_seconds_unowned", "mean"),
    ("queue_seconds_doubly_owned", "mean"),
    ("steals", "mean"),
    ("converged", "mean"),
    _TIME,
)

_CROSS_ZONE = ("cross_zone_fraction", "mean")
_LOAD = ("load_ratio", "mean")


def _placed(criteria: tuple[str, ...], zones: bool) -> tuple[str, ...]:
    """`criteria` with the placement scores: the load ratio just before balance (with weights,
    load is what balance is for), the cross-zone fraction just after it (KIP-881's order:
    balance, then racks) on the systems whose clients know zones (`zones`). Each counts only
    when the run's scores have it (glossary Score.needs; `_measured`)."""
    placed: list[str] = []
    for metric in criteria:
        if metric == "balance_degree":
            placed += ["load_ratio", metric] + (["cross_zone_fraction"] if zones else [])
        else:
            placed.append(metric)
    return tuple(placed)


def _shown_placed(shown: tuple[tuple[str, str], ...], zones: bool) -> tuple[tuple[str, str], ...]:
    """`shown` with the placement columns before the time column (last)."""
    return (*shown[:-1], *((_CROSS_ZONE,) if zones else ()), _LOAD, shown[-1])


_WITHOUT_PLACEMENT: tuple[System, ...] = (
    System(
        "kafka-eager",
        "Kafka, eager rebalance protocol",
        "every member gives up every partition at each rebalance, so the partitions that "
        "move cost a handover (state, caches, in-flight work) on top of the pause",
        ("balance_degree", "queues_paused", "moves", "stickiness"),
        (*_BASE_SHOWN, ("queues_paused", "mean"), _TIME),
    ),
    System(
        "kafka-cooperative",
        "Kafka, cooperative rebalance protocol (KIP-429)",
        "only the partitions that move are revoked and paused, for a second rebalance: "
        "moves are the pauses",
        ("balance_degree", "moves", "stickiness"),
        (*_BASE_SHOWN, _TIME),
    ),
    System(
        "rocketmq-client",
        "RocketMQ, client-side rebalancing",
        "each consumer plans from its own view of the group, so only plans that ignore the "
        "previous one qualify, and views that disagree leave queues unread or read twice",
        (
            "balance_degree",
            "queue_periods_unread",
            "queue_periods_read_twice",
            "moves",
            "stickiness",
        ),
        (
            *_BASE_SHOWN,
            ("queue_periods_unread", "mean"),
            ("queue_periods_read_twice", "mean"),
            _TIME,
        ),
        views="client",
    ),
    System(
        "rocketmq-broker",
        "RocketMQ, broker-side rebalancing",
        "the broker plans with the previous plan in hand, so moved queues are the cost",
        ("balance_degree", "moves", "stickiness"),
        (*_BASE_SHOWN, _TIME),
    ),
    System(
        "rabbitmq-sac",
        "RabbitMQ single active consumer",
        "the group settles by releases; each released queue is paused for a hand-over "
        "and the protocol must settle",
        (
            "converged",
            "balance_degree",
            "queues_paused",
            "releases",
            "seconds_to_balance",
            "moves",
            "stickiness",
        ),
        (
            *_BASE_SHOWN,
            ("queues_paused", "mean"),
            ("releases", "mean"),
            ("rounds", "p99"),
            ("seconds_to_balance", "p95"),
            ("converged", "mean"),
            _TIME,
        ),
    ),
    System(
        "pulsar-failover",
        "Apache Pulsar, Failover subscription on a partitioned topic",
        "the broker picks each partition's active consumer by its own rule (priority "
        "level, then name), so the choice is the consumers' names and levels; a partition "
        "whose active consumer changes is paused while the old one steps down",
        ("balance_degree", "queues_paused", "moves", "stickiness"),
        (*_BASE_SHOWN, ("queues_paused", "mean"), ("releases", "mean"), _TIME),
    ),
    System(
        "azure-event-hubs",
        "Azure Event Hubs, event processor load balancing",
        "every processor claims or steals partitions on its own 10 s cycle, so the group "
        "takes seconds to minutes to settle: queues wait unowned until claimed, and a "
        "stolen one is processed twice until its old owner's next cycle",
        _LEASE_CRITERIA,
        _LEASE_SHOWN,
    ),
    System(
        "aws-kcl",
        "AWS Kinesis Client Library 2.x, lease taking",
        "every worker's lease taker takes expired leases and steals one at a time on its "
        "own 20 s run, so the group takes seconds to minutes to settle: a departed worker's "
        "shards wait until its leases expire, and a stolen one is processed twice until its "
        "old owner's next renewal",
        _LEASE_CRITERIA,
        _LEASE_SHOWN,
    ),
    System(
        ANY_SYSTEM,
        "any system (every default strategy)",
        "balance, then, where a candidate settles in time, how long and what it cost, then "
        "queues paused, moves and stickiness",
        (
            "converged",
            "balance_degree",
            "seconds_to_balance",
            "queue_seconds_unowned",
            "queue_seconds_doubly_owned",
            "queues_paused",
            "moves",
            "stickiness",
        ),
        (
            *_BASE_SHOWN,
            ("queues_paused", "mean"),
            ("releases", "mean"),
            ("seconds_to_balance", "mean"),
            _TIME,
        ),
    ),
)

_ZONE_AWARE_SYSTEMS = frozenset(
    {"kafka-eager", "kafka-cooperative", "rocketmq-client", "rocketmq-broker", ANY_SYSTEM}
)
"""The systems whose clients know zones (Kafka's client.rack, KIP-881; RocketMQ's machine
rooms), where the cross-zone fraction decides."""

_UNSTABLE = "moves_when_unchanged"
"""The last criterion of every system: queues a strategy moves when nothing changed are hand-overs
a rebalance had no reason for (Kafka's rack-aware sticky makes some: a partition balance put
outside its racks is dealt again). One that never settles is set aside instead (the glossary's
broken_at of rebalances to a fixed point)."""

SYSTEM_VERDICTS: dict[str, System] = {
    system.name: replace(
        system,
        criteria=(*_placed(system.criteria, system.name in _ZONE_AWARE_SYSTEMS), _UNSTABLE),
        shown=_shown_placed(system.shown, system.name in _ZONE_AWARE_SYSTEMS),
    )
    for system in _WITHOUT_PLACEMENT
}
"""The verdict's view of each system (SYSTEMS of the registry, and `any`)."""

assert set(SYSTEM_VERDICTS) == {*SYSTEMS, ANY_SYSTEM}, "every registry system has a verdict"


@dataclass(frozen=True)
class Difference:
    """A candidate against another on one criterion: the difference of their means (first minus
    second), the half-width of its 95% interval, and which is better (-1: the first, 1: the
    second, 0: the scenarios cannot tell)."""

    metric: str
    difference: float
    half_width: float
    better: int


@dataclass(frozen=True)
class Verdict:
    """The answer for one system: the table rows (candidate -> shown statistic -> value), who is
    set aside and why, who is dominated and by whom, the recommendation (one name, or several
    for a tie) and its reason in a sentence or two."""

    system: System
    candidates: tuple[str, ...]
    table: dict[str, dict[tuple[str, str], float | None]]
    means: dict[str, dict[str, float | None]]
    broken: dict[str, str]
    dominated: dict[str, list[str]]
    recommended: tuple[str, ...]
    reason: str
    not_candidates: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)

    @property
    def is_tie(self) -> bool:
        return len(self.recommended) > 1


def compare(first: Aggregate, second: Aggregate, score: Score) -> Difference:
    """`first` against `second` on the mean of `score`, with Welch's 95% interval."""
    first_mean, second_mean = first.mean, second.mean
    if first_mean is None or second_mean is None or math.isnan(first_mean - second_mean):
        return Difference(score.metric, math.nan, math.inf, 0)
    difference = first_mean - second_mean
    larger = max(abs(first_mean), abs(second_mean))
    if abs(difference) <= max(1e-9, LEVEL_FRACTION * larger):
        return Difference(score.metric, difference, 0.0, 0)
    variance = _variance_of_mean(first) + _variance_of_mean(second)
    half_width = CONFIDENCE_QUANTILE * math.sqrt(variance)
    if abs(difference) <= half_width:
        return Difference(score.metric, difference, half_width, 0)
    first_lower = difference < 0
    first_better = first_lower == (score.better in ("lower", "zero"))
    return Difference(score.metric, difference, half_width, -1 if first_better else 1)


def _variance_of_mean(aggregate: Aggregate) -> float:
    if aggregate.count < 2 or aggregate.stddev is None:
        return math.inf if aggregate.count < 2 else 0.0
    return aggregate.stddev**2 / aggregate.count


def _broken(metrics: Mapping[str, Aggregate]) -> str | None:
    """Why a candidate's plans cannot be trusted, or None: every score that must be 0 (the
    glossary says which) and was not, in some rebalance, and every score that reached the value
    the glossary calls broken (a strategy with no fixed point: it oscillates)."""
    problems = []
    for score in SCORES.values():
        aggregate = metrics.get(score.metric)
        if aggregate is None or aggregate.max is None:
            continue
        if (score.better == "zero" and aggregate.max) or (
            score.broken_at is not None and aggregate.max >= score.broken_at
        ):
            worst = format_value(score, aggregate.mean if score.percent else aggregate.max)
            problems.append(f"{score.label} {worst}{' %' if score.percent else ''}")
    return ", ".join(problems) or None


def _measured(system: System, overall: Mapping[str, Mapping[str, Aggregate]]) -> System:
    """`system` without the criteria and columns of scores that need zones or weights
    (glossary Score.needs) when no candidate has a value of them: the scenarios had none; and
    without the criteria another measured score supersedes (Score.superseded_by: with weights,
    the load ratio decides where the balance of counts would), their columns still shown."""

    def measured(metric: str) -> bool:
        return any(metrics[metric].count for metrics in overall.values() if metric in metrics)

    def deciding(metric: str) -> bool:
        successor = SCORES[metric].superseded_by
        superseded = successor is not None and successor in system.criteria and measured(successor)
        return measured(metric) and not superseded

    return replace(
        system,
        criteria=tuple(metric for metric in system.criteria if deciding(metric)),
        shown=tuple(shown for shown in system.shown if measured(shown[0])),
    )


def decide(summary: Summary, system: System, candidates: Sequence[str] | None = None) -> Verdict:
    """The verdict on `summary` for `system`, among `candidates` (default: every strategy of the
    summary that the system accepts, as the registry says; names it does not know count as
    candidates, since the caller chose them)."""
    scored = sorted({strategy for strategy, change in summary if change == ALL_CHANGES})
    if candidates is None:
        chosen = [
            name for name in scored if name not in STRATEGIES or system.accepts(STRATEGIES[name])
        ]
    else:
        chosen = [name for name in candidates if name in scored]
    missing = tuple(name for name in (candidates or ()) if name not in scored)
    not_candidates = tuple(name for name in scored if name not in chosen)
    overall = {name: summary[(name, ALL_CHANGES)] for name in chosen}
    system = _measured(system, overall)
    table = {
        name: {shown: getattr(overall[name][shown[0]], shown[1]) for shown in system.shown}
        for name in chosen
    }
    broken = {name: why for name in chosen if (why := _broken(overall[name])) is not None}
    sound = [name for name in chosen if name not in broken]
    criteria = [SCORES[metric] for metric in system.criteria]
    differences = {
        (first, second): [
            compare(overall[first][score.metric], overall[second][score.metric], score)
            for score in criteria
        ]
        for first in sound
        for second in sound
        if first != second
    }
    dominated = {
        name: [
            other
            for other in sound
            if other != name
            and all(d.better <= 0 for d in differences[(other, name)])
            and any(d.better < 0 for d in differences[(other, name)])
        ]
        for name in sound
    }
    dominated = {name: by for name, by in dominated.items() if by}
    undominated = [name for name in sound if name not in dominated]
    in_table = frozenset(metric for metric, _ in system.shown)
    recommended, reason = _recommend(undominated, criteria, overall, differences, in_table)
    if len(undominated) == 1 and len(sound) > 1:
        # the criteria in order over every sound candidate say what sets it apart
        over_all, why = _recommend(sound, criteria, overall, differences, in_table)
        reason = (
            why
            if over_all == recommended
            else f"{recommended[0]} is at least as good as every other candidate on every "
            "deciding score, and better on at least one."
        )
    if len(recommended) == 1:
        reason = " ".join(
            filter(None, [reason, _gives_up(recommended[0], sound, criteria, overall, differences)])
        )
    notes = []
    if system.name == "kafka-eager":
        notes += _eager_note(overall, sound)
    return Verdict(
        system=system,
        candidates=tuple(chosen),
        table=table,
        means={
            name: {metric: overall[name][metric].mean for metric in system.criteria}
            for name in chosen
        },
        broken=broken,
        dominated=dominated,
        recommended=recommended,
        reason=reason,
        not_candidates=not_candidates,
        missing=missing,
        notes=notes,
    )


def _recommend(
    left: list[str],
    criteria: list[Score],
    overall: Mapping[str, Mapping[str, Aggregate]],
    differences: Mapping[tuple[str, str], list[Difference]],
    in_table: frozenset[str],
) -> tuple[tuple[str, ...], str]:
    """The candidates the criteria, in order, keep; and the reason, from the numbers (naming
    the scores they are level on only where the table shows them, `in_table`)."""
    if not left:
        return (), "No candidate of this system was scored, or every one was set aside above."
    if len(left) == 1:
        return (left[0],), f"{left[0]} is the only candidate left."
    tied_on: list[Score] = []
    out_earlier: list[str] = []
    for index, score in enumerate(criteria):
        best = min(left, key=lambda name: _sort_key(overall[name][score.metric], score))
        keep = [
            name for name in left if name == best or differences[(name, best)][index].better <= 0
        ]
        if len(keep) < len(left):
            dropped = [name for name in left if name not in keep]
            if len(keep) == 1:
                level_on = [tied for tied in tied_on if tied.metric in in_table]
                sentence = _reason(best, dropped, score, overall, level_on, differences, index)
                return (best,), " ".join([sentence, *out_earlier])
            out_earlier.append(_out_on(score, best, dropped, overall))
            left = keep
        tied_on.append(score)
    recommended, reason = _tie(left, tied_on, overall, differences)
    return recommended, " ".join([reason, *out_earlier])


def _gives_up(
    pick: str,
    sound: list[str],
    criteria: list[Score],
    overall: Mapping[str, Mapping[str, Aggregate]],
    differences: Mapping[tuple[str, str], list[Difference]],
) -> str | None:
    """What the recommendation pays for being chosen: the deciding scores, in order, on which
    another sound candidate is better beyond doubt (the first GIVES_UP_SHOWN of them), each
    with the best such candidate's mean; None when it is nowhere worse. A criterion that came
    later, or a candidate dropped earlier, can be better: the trade-off a reader weighs."""
    items = []
    for index, score in enumerate(criteria):
        better = [
            other
            for other in sound
            if other != pick and differences[(pick, other)][index].better > 0
        ]
        if better:
            best = min(better, key=lambda name: _sort_key(overall[name][score.metric], score))
            mine, theirs = overall[pick][score.metric].mean, overall[best][score.metric].mean
            unit = _unit(score)
            items.append(
                f"{score.label} {_value(mine, score)}{unit} against "
                f"{_value(theirs, score)}{unit} for {best}"
            )
    if not items:
        return None
    return f"It gives up: {'; '.join(items[:GIVES_UP_SHOWN])}."


def _out_on(
    score: Score, best: str, dropped: list[str], overall: Mapping[str, Mapping[str, Aggregate]]
) -> str:
    """Which candidates a criterion set aside, with their means against the best one's (the
    closest OUT_ON_SHOWN of them, best first, and how many more)."""
    closest = sorted(dropped, key=lambda name: _sort_key(overall[name][score.metric], score))
    values = _first_few(
        [f"{name} {_value(overall[name][score.metric].mean, score)}" for name in closest],
        OUT_ON_SHOWN,
    )
    return (
        f"Out on {score.label} ({score.better} is better; the best "
        f"{_value(overall[best][score.metric].mean, score)}{_unit(score)}): {values}."
    )


def _known(aggregate: Aggregate) -> bool:
    """Whether the aggregate has a mean to compare (a plain strategy has no time to balance)."""
    return aggregate.mean is not None and not math.isnan(aggregate.mean)


def _sort_key(aggregate: Aggregate, score: Score) -> float:
    if aggregate.mean is None or math.isnan(aggregate.mean):
        return math.inf
    return -aggregate.mean if score.better == "higher" else aggregate.mean


def _reason(
    pick: str,
    dropped: list[str],
    score: Score,
    overall: Mapping[str, Mapping[str, Aggregate]],
    tied_on: list[Score],
    differences: Mapping[tuple[str, str], list[Difference]],
    index: int,
) -> str:
    """Why `pick` won on `score` against the best of those it set aside there (`tied_on`: the
    earlier criteria, those the table shows, that they were level on)."""
    runner_up = min(dropped, key=lambda name: _sort_key(overall[name][score.metric], score))
    difference = differences[(pick, runner_up)][index]
    unit = _unit(score)
    level = ", ".join(
        tied.label
        for tied in tied_on
        if _known(overall[pick][tied.metric]) and _known(overall[runner_up][tied.metric])
    )
    return (
        f"{pick}: {score.label} {_value(overall[pick][score.metric].mean, score)}{unit} per "
        f"rebalance against {_value(overall[runner_up][score.metric].mean, score)}{unit} for "
        f"{runner_up}, the best of the others still in the running (difference "
        f"{_value(abs(difference.difference), score)}"
        f" ± {_value(difference.half_width, score)}{unit} at 95%"
        + (f"; level on {level}" if level else "")
        + ")."
    )


def _tie(
    left: list[str],
    tied_on: list[Score],
    overall: Mapping[str, Mapping[str, Aggregate]],
    differences: Mapping[tuple[str, str], list[Difference]],
) -> tuple[tuple[str, ...], str]:
    labels = ", ".join(
        score.label
        for score in tied_on
        if all(_known(overall[name][score.metric]) for name in left)
    )
    level = not any(  # no two of those left told apart on any criterion
        difference.better
        for first in left
        for second in left
        if first != second
        for difference in differences[(first, second)]
    )
    times = {name: overall[name]["assign_micros"].p99 for name in left}
    # a compiled twin's time against a Python function's says nothing about either's speed
    twinned = TIMED_AS_TWINS.intersection(left)
    timed_alike = not twinned or twinned == set(left)
    if timed_alike and all(value is not None for value in times.values()):
        fastest = min(left, key=lambda name: times[name] or 0.0)
        others = [name for name in left if name != fastest]
        slowest_ratio = min(
            (times[name] or 0.0) / max(times[fastest] or 0.0, 1e-9) for name in others
        )
        if level and slowest_ratio >= SPEED_RATIO:
            return (fastest,), (
                f"{fastest}: no difference the scenarios can tell from "
                f"{', '.join(others)} on {labels}, and it rebalances at least "
                f"{slowest_ratio:.1f}x faster (p99 {_micros(times[fastest])})."
            )
    if not level:
        return tuple(left), (
            f"No clear winner among {', '.join(left)}: some of them differ on {labels}, but no "
            "one is ahead of all the others the scenarios can tell apart; compare their rows "
            "(more scenarios narrow the intervals)."
        )
    return tuple(left), (
        f"No difference the scenarios can tell between {', '.join(left)} on {labels}: "
        "either will do (more scenarios narrow the intervals)."
    )


def _eager_note(overall: Mapping[str, Mapping[str, Aggregate]], sound: list[str]) -> list[str]:
    """Under the eager protocol the pause is the group's, whatever the strategy: say what the
    cooperative protocol would pause instead (the moves), when the numbers are there."""
    paused = [overall[name]["queues_paused"].mean for name in sound]
    moved = [overall[name]["moves"].mean for name in sound]
    if not sound or None in paused or None in moved:
        return []
    best = min(sound, key=lambda name: overall[name]["moves"].mean or 0.0)
    low, high = (
        _value(bound(p for p in paused if p is not None), SCORES["queues_paused"])
        for bound in (min, max)
    )
    return [
        f"Under Kafka's eager protocol a rebalance pauses "
        f"{low if low == high else f'{low}-{high}'} queues on average "
        f"whatever the strategy; the cooperative protocol pauses only the moves "
        f"({best}: {_value(overall[best]['moves'].mean, SCORES['moves'])} per rebalance)."
    ]


def _value(value: float | None, score: Score) -> str:
    return format_value(score, value)


def _unit(score: Score) -> str:
    if score.unit == "%":
        return " %"
    return f" {score.unit}"


def _micros(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value / 1000:.2f} ms" if value >= 1000 else f"{value:.0f} µs"


def _header(metric: str, statistic: str) -> str:
    score = SCORES[metric]
    named = score.label if statistic == "mean" else f"{score.label} {statistic}"
    unit = {"%": "%", "µs": "µs"}.get(score.unit, "")
    return f"{named} {unit}".strip()


def ranking(verdict: Verdict) -> list[str]:
    """The candidates as the verdict ranks them: the recommended first, then the others by
    their means on the deciding scores in order, as the table prints them (two means that
    print alike are level there, and the next score orders them); those set aside last."""
    criteria = [SCORES[metric] for metric in verdict.system.criteria]

    def key(name: str) -> tuple[Any, ...]:
        means = tuple(
            _rank_value(verdict.means[name].get(score.metric), score) for score in criteria
        )
        return (name not in verdict.recommended, name in verdict.broken, means, name)

    return sorted(verdict.candidates, key=key)


def _rank_value(mean: float | None, score: Score) -> float:
    """`mean` as printed (format_value's rounding), signed so that lower ranks first."""
    shown = format_value(score, mean)
    if shown == "n/a":
        return math.inf
    value = float(shown.replace(",", ""))
    return -value if score.better == "higher" else value


def table(verdict: Verdict) -> tuple[list[str], list[list[str]]]:
    """The verdict's table as text cells: a header, then one row per candidate in ranking
    order, with its standing (recommended, tie, dominated, set aside, or not dominated)."""
    headers = ["strategy", *(_header(*shown) for shown in verdict.system.shown), "standing"]
    rows = []
    for name in ranking(verdict):
        if name in verdict.recommended:
            standing = "tie" if verdict.is_tie else "recommended"
        elif name in verdict.broken:
            standing = "set aside"
        elif name in verdict.dominated:
            standing = "dominated"
        else:
            standing = "not dominated"
        cells = [
            format_value(SCORES[shown[0]], verdict.table[name][shown])
            for shown in verdict.system.shown
        ]
        rows.append([name, *cells, standing])
    return headers, rows


def conclusion(verdict: Verdict) -> str:
    """The recommendation in one line, then its reason."""
    if not verdict.recommended:
        return "No recommendation. " + verdict.reason
    if verdict.is_tie:
        return "Tie. " + verdict.reason
    return f"Use {verdict.recommended[0]}. " + verdict.reason


_KAFKA_BUILT_IN = {
    "averagely": "RangeAssignor (the same plan for one topic)",
    "round_robin": "RoundRobinAssignor",
    "sticky": "StickyAssignor",
    "cooperative_sticky": "CooperativeStickyAssignor",
}
_ROCKETMQ_BUILT_IN = {
    "averagely": "AllocateMessageQueueAveragely",
    "round_robin": "AllocateMessageQueueAveragelyByCircle",
    "consistent_hash": "AllocateMessageQueueConsistentHash",
}
_ROCKETMQ_ORIGIN = {
    "machine_room_nearby": "AllocateMachineRoomNearby around AllocateMessageQueueAveragely",
    "by_machine_room": "AllocateMessageQueueByMachineRoom",
}
"""RocketMQ's classes these strategies follow, with differences their module docstring gives."""
_SAC_RELEASE = {"sac": "highest", "sac_newest": "newest", "sac_random": "random"}


def how_to_run(system: str, strategy: str) -> str | None:
    """Where `strategy` plugs in on `system`, in a sentence: the adapter call, or the system's
    own class that makes the same plan; None where this project knows no way (a user's
    strategy, or `any`)."""
    if system in ("kafka-eager", "kafka-cooperative") and strategy in STRATEGIES:
        cooperative = ", cooperative=True" if system == "kafka-cooperative" else ""
        if strategy == "cooperative_sticky":
            cooperative = ""
        built_in = _KAFKA_BUILT_IN.get(strategy)
        own = f"; Kafka's own {built_in} follows the same rules" if built_in else ""
        reads = STRATEGIES[strategy].uses
        given = [
            (argument, meaning)
            for fact, argument, meaning in (
                ("consumer_zones", "client_rack=RACK", "RACK the consumer's own client_rack"),
                ("weights", "weights=LAG", "LAG a function giving each partition's lag"),
            )
            if fact in reads
        ]
        facts = "".join(f", {argument}" for argument, _ in given)
        where = (
            f", {' and '.join(meaning for _, meaning in given)} (the Kafka guide: Zones and "
            "weights)"
            if given
            else ""
        )
        return (
            "In kafka-python: partition_assignment_strategy=["
            f"kafka_python_assignor({strategy!r}{cooperative}{facts})] "
            f"(rebalancing.adapters.kafka){where}{own}."
        )
    if system.startswith("rocketmq") and strategy in STRATEGIES:
        if strategy in _ROCKETMQ_BUILT_IN:
            return f"RocketMQ ships it: {_ROCKETMQ_BUILT_IN[strategy]}."
        module = _module_of(STRATEGIES[strategy])
        if strategy in _ROCKETMQ_ORIGIN:
            return (
                f"RocketMQ's own {_ROCKETMQ_ORIGIN[strategy]} is where it comes from ({module} "
                "says where the plans differ)."
            )
        where = "on every client" if system == "rocketmq-client" else "where the plan is made"
        return (
            f"RocketMQ has no {strategy}: port {module} (its docstring "
            f"gives the algorithm) to an AllocateMessageQueueStrategy {where}."
        )
    if system == "rabbitmq-sac" and strategy in _SAC_RELEASE:
        return (
            "In each app: rebalancing.adapters.rabbitmq.GroupMember(..., "
            f"release={_SAC_RELEASE[strategy]!r})."
        )
    if system == "pulsar-failover" and strategy == "pulsar_failover":
        return (
            "Pulsar's broker does it itself: a Failover subscription on a partitioned topic "
            "(consumers ordered by priority level, then name)."
        )
    if system == "azure-event-hubs" and strategy in ("event_hubs_balanced", "event_hubs_greedy"):
        choice = strategy.removeprefix("event_hubs_")
        return (
            "The event processor does it itself: load_balancing_strategy=LoadBalancingStrategy."
            f"{choice.upper()} (Python; LoadBalancingStrategy.{choice.title()} in .NET, Java)."
        )
    if system == "aws-kcl" and strategy == "kcl":
        return "The KCL does it itself: every worker's lease taker (LeaseManagementConfig)."
    if system == "rabbitmq-sac" and strategy == "super_stream":
        return "RabbitMQ streams do it themselves: single active consumer on a super stream."
    return None


def _module_of(strategy: Strategy) -> str:
    """The module of a strategy's code: its function's, or its callable object's class's
    (machine_room_nearby is a machine_room.Nearby)."""
    module = getattr(strategy.assign, "__module__", None) or type(strategy.assign).__module__
    return str(module)


def render_text(verdict: Verdict, profile: str, width: int = 100) -> str:
    """The verdict for a terminal: at most about 30 lines, the conclusion last."""
    headers, rows = table(verdict)
    rows, hidden = rows[:TERMINAL_ROWS], rows[TERMINAL_ROWS:]
    headers, rows = _fitted(verdict, headers, rows)
    widths = [max(len(row[index]) for row in [headers, *rows]) for index in range(len(headers))]
    lines = [
        f"Which strategy for this group on {verdict.system.title}?",
        _wrap(profile, width),
        _wrap(f"What it pays for: {verdict.system.costs}.", width),
        "",
        "  ".join(
            cell.ljust(w) if index in (0, len(headers) - 1) else cell.rjust(w)
            for index, (cell, w) in enumerate(zip(headers, widths, strict=True))
        ).rstrip(),
    ]
    for row in rows:
        lines.append(
            "  ".join(
                cell.ljust(w) if index in (0, len(row) - 1) else cell.rjust(w)
                for index, (cell, w) in enumerate(zip(row, widths, strict=True))
            ).rstrip()
        )
    if hidden:
        lines.append(f"... and {len(hidden)} more, ranked lower (every one: summary.md)")
    lines.append("")
    lines += standing_lines(verdict, width)
    lines.append(_wrap(conclusion(verdict), width))
    how = how_line(verdict)
    if how:
        lines.append(_wrap(how, width))
    return "\n".join(lines)


def _fitted(
    verdict: Verdict, headers: list[str], rows: list[list[str]]
) -> tuple[list[str], list[list[str]]]:
    """The table without its widest columns that decide nothing (no criterion), one by one,
    until it fits in TERMINAL_WIDTH (zones and weights add two columns)."""
    shown = [None, *verdict.system.shown, None]  # the strategy and standing columns: kept
    while True:
        widths = [max(len(row[index]) for row in [headers, *rows]) for index in range(len(headers))]
        if sum(widths) + 2 * (len(widths) - 1) <= TERMINAL_WIDTH:
            return headers, rows
        droppable = [
            index
            for index, column in enumerate(shown)
            if column is not None and column[0] not in verdict.system.criteria
        ]
        if not droppable:
            return headers, rows
        widest = max(droppable, key=lambda index: widths[index])
        del shown[widest]
        headers = [cell for index, cell in enumerate(headers) if index != widest]
        rows = [[cell for index, cell in enumerate(row) if index != widest] for row in rows]


def how_line(verdict: Verdict) -> str | None:
    """How to run the recommendation on the verdict's system (nothing for a tie)."""
    if len(verdict.recommended) != 1:
        return None
    return how_to_run(verdict.system.name, verdict.recommended[0])


def standing_lines(verdict: Verdict, width: int) -> list[str]:
    """Who is dominated and by whom, who is set aside and why, who is not a candidate, notes."""
    order = ranking(verdict)
    lines = []
    if verdict.dominated:
        dominated = "; ".join(
            f"{name} by {_first_few(sorted(verdict.dominated[name], key=order.index))}"
            for name in order
            if name in verdict.dominated
        )
        if width and len(verdict.dominated) > TERMINAL_DOMINATED:  # a terminal: names only
            names = [name for name in order if name in verdict.dominated]
            dominated = f"{', '.join(names)} (by whom: summary.md)"
        lines.append(
            _wrap(f"Dominated (worse or level on every deciding score): {dominated}.", width)
        )
    if verdict.broken:
        broken = "; ".join(f"{name}: {why}" for name, why in verdict.broken.items())
        lines.append(_wrap(f"Set aside, a score that must be 0 was not: {broken}.", width))
    if verdict.not_candidates:
        lines.append(
            _wrap(
                f"Not candidates on {verdict.system.name}: {', '.join(verdict.not_candidates)}.",
                width,
            )
        )
    if verdict.missing:
        lines.append(_wrap(f"Not scored in this run: {', '.join(verdict.missing)}.", width))
    lines += [_wrap(note, width) for note in verdict.notes]
    return lines


def _first_few(names: list[str], shown: int = 2) -> str:
    """The first `shown` names, and how many more."""
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")


def render_markdown(verdict: Verdict, profile: str) -> str:
    """The verdict as Markdown (the docs' "Choosing a strategy" page, summary.md's head)."""
    headers, rows = table(verdict)
    lines = [
        f"**{verdict.system.title}** — {profile}",
        "",
        "| " + " | ".join(headers) + " |",
        "|" + "---|" * len(headers),
        *("| " + " | ".join(row) + " |" for row in rows),
        "",
        *(f"{line}\n" for line in standing_lines(verdict, 0)),
        f"**{conclusion(verdict)}**",
        *(["", how] if (how := how_line(verdict)) else []),
    ]
    return "\n".join(lines)


def _wrap(text: str, width: int) -> str:
    """`text` folded to `width` columns (0: left whole, for HTML and Markdown)."""
    if not width:
        return text
    return "\n".join(textwrap.wrap(text, width)) if text else ""
