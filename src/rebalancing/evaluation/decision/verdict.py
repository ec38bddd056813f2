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
- Two candidates are compared on a criterion paired, scenario by scenario (both ran the same
  scenarios): the mean over the scenarios of the difference of their scenario means, with
  Student's interval over the scenarios, which are independent where the rebalances of one
  scenario are not (rebalancing.evaluation.decision.differences). Candidates within 10% of the
  larger mean are level however many scenarios tell them apart (a difference too small to act
  on); one is better only when the whole interval lies beyond that band; an interval across
  the band's edge is not settled and counts as level (the scenarios cannot tell). A summary
  without per-scenario means (the Spark harness's) is compared over rows, unpaired (Welch).
- A candidate is dominated when another is better on at least one criterion and worse on none.
- Among the rest, the criteria are taken in the system's order (balance, then what that system
  pays for: paused queues, hand-overs, moves, stickiness): each keeps the candidates that are not
  worse than the best one left. One left is the recommendation; several left are a tie, unless
  one rebalances at least twice as fast by its median call (time is not part of dominance;
  every time is the strategy's own function's, never a compiled twin's: replay.TIMED_EVERY).

Runtime complexity: O(candidates^2 x criteria).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rebalancing.evaluation.decision.differences import (
    CONFIDENCE,
    LEVEL_FRACTION,
    Difference,
    ScenarioMeans,
    compare,
    compare_paired,
)
from rebalancing.evaluation.decision.reasons import (
    first_few,
    gives_up,
    out_on,
    reason_on,
    sole_candidate,
    sort_key,
    tie,
)
from rebalancing.evaluation.decision.systems import System, baseline_note, baseline_strategy
from rebalancing.evaluation.scoring.aggregates import (
    ALL_CHANGES,
    FLOORS,
    Aggregate,
    Summary,
    mean_floor,
)
from rebalancing.evaluation.scoring.definitions import SCORES, Score, format_value
from rebalancing.strategies import STRATEGIES


@dataclass(frozen=True)
class Verdict:
    """The answer for one system: the table rows (candidate -> shown statistic -> value), who is
    set aside and why, who is dominated and by whom, the recommendation (one name, or several
    for a tie) and its reason in a sentence or two; `floors`: each candidate's mean floor of the
    scores printed beside one (aggregates.FLOORS), None where not measured."""

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
    differences: Mapping[tuple[str, str], list[Difference]] = field(default_factory=dict)
    """(first, second) -> their comparison on each deciding score, in the system's order, for
    every two sound candidates."""
    floors: dict[str, dict[str, float | None]] = field(default_factory=dict)

    @property
    def is_tie(self) -> bool:
        return len(self.recommended) > 1

    @property
    def is_sole(self) -> bool:
        """Whether one candidate was scored and kept: nothing was compared."""
        return len(self.candidates) == 1 and self.recommended == self.candidates


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


def decide(
    summary: Summary,
    system: System,
    candidates: Sequence[str] | None = None,
    scenario_means: ScenarioMeans | None = None,
    confidence: float = CONFIDENCE,
) -> Verdict:
    """The verdict on `summary` for `system`, among `candidates` (default: every strategy of the
    summary that the system accepts, as the registry says; names it does not know count as
    candidates, since the caller chose them). With `scenario_means` (the same scenarios for
    every candidate), candidates are compared paired, at `confidence`; without, over the
    summary's rows (Welch, 95%)."""
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
    differences: dict[tuple[str, str], list[Difference]] = {}
    for position, first in enumerate(sound):  # each pair once, the other way round mirrored
        for second in sound[position + 1 :]:
            differences[(first, second)] = [
                _one_sided(overall[first][score.metric], overall[second][score.metric], score)
                or (
                    compare(overall[first][score.metric], overall[second][score.metric], score)
                    if scenario_means is None
                    else compare_paired(
                        scenario_means.get(first, {}).get(score.metric, {}),
                        scenario_means.get(second, {}).get(score.metric, {}),
                        score,
                        confidence,
                    )
                )
                for score in criteria
            ]
            differences[(second, first)] = [
                replace(d, difference=-d.difference, better=-d.better)
                for d in differences[(first, second)]
            ]
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
    dominated, circles = _without_circles(dominated, sound)
    undominated = [name for name in sound if name not in dominated]
    in_table = frozenset(metric for metric, _ in system.shown)
    recommended, reason = _recommend(undominated, criteria, overall, differences, in_table)
    if len(undominated) == 1 and len(sound) > 1:
        # the criteria in order over every sound candidate say what sets it apart
        over_all, why = _recommend(sound, criteria, overall, differences, in_table, dominated)
        reason = (
            why
            if over_all == recommended
            else f"{recommended[0]} is at least as good as every other candidate on every "
            "deciding score, and better on at least one."
        )
    if len(recommended) == 1:
        reason = " ".join(
            filter(None, [reason, gives_up(recommended[0], sound, criteria, overall, differences)])
        )
    sole = len(chosen) == 1 and recommended == tuple(chosen)
    if sole:  # nothing compared: what it costs, and what is left to change
        reason = sole_candidate(chosen[0], system.name, len(system.candidates()), criteria, overall)
    notes = [
        f"{', '.join(circle)} dominate one another in a circle (a difference within "
        f"{LEVEL_FRACTION:.0%} of the larger mean is level, so dominance need not be "
        "transitive): none of them is set aside by dominance."
        for circle in circles
    ]
    notes += _one_clock_note(system, overall, sound)
    if system.note is not None:
        notes += system.note(overall, sound)
    means = {
        name: {metric: overall[name][metric].mean for metric in system.criteria} for name in chosen
    }
    if sole and baseline_strategy(system.name) == recommended[0]:  # no change to weigh
        notes.append(f"Without this library: {system.baseline}; {recommended[0]} makes that plan.")
    elif len(recommended) == 1:
        notes += filter(None, [baseline_note(system, recommended[0], means)])
    return Verdict(
        system=system,
        candidates=tuple(chosen),
        table=table,
        means=means,
        broken=broken,
        dominated=dominated,
        recommended=recommended,
        reason=reason,
        not_candidates=not_candidates,
        missing=missing,
        notes=notes,
        differences=differences,
        floors={
            name: {metric: mean_floor(overall[name], metric) for metric in FLOORS}
            for name in chosen
        },
    )


def _one_sided(first: Aggregate, second: Aggregate, score: Score) -> Difference | None:
    """A comparison on a score one candidate or neither has (a strategy with no time model has
    no seconds to balance, `any` runs both): level, and settled, since no number of scenarios
    gives it a value. So the score decides only among those that have it (the best of them
    sets the others with it aside, the rest stay level), a protocol's seconds are never set
    against a function's microseconds, nor against nothing, and two functions are not kept
    drawing scenarios for a score neither has. None when both have it: compare them as
    usual."""
    if first.count and second.count:
        return None
    return Difference(score.metric, math.nan, 0.0, 0, settled=True)


def _one_clock_note(
    system: System, overall: Mapping[str, Mapping[str, Aggregate]], sound: list[str]
) -> list[str]:
    """Where the seconds to balance decide but only some sound candidates have them (`any`:
    the strategies that run a protocol of their own with a time model, beside functions),
    which ones the seconds decided among, in a sentence; none otherwise."""
    if "seconds_to_balance" not in system.criteria:
        return []
    clocked = [name for name in sound if overall[name]["seconds_to_balance"].count]
    unclocked = [name for name in sound if name not in clocked]
    if not clocked or not unclocked:
        return []
    return [
        f"Time is the seconds to balance under a protocol: only {first_few(clocked, 3)} "
        f"{'runs' if len(clocked) == 1 else 'run'} one with a time model here; "
        f"{first_few(unclocked, 3)} "
        f"{'runs as a plain function' if len(unclocked) == 1 else 'run as plain functions'}, "
        "no time (n/a): the seconds set a candidate aside only against another with seconds, "
        "never against compute µs; one with none is level with the rest on them."
    ]


def _without_circles(
    dominated: dict[str, list[str]], sound: list[str]
) -> tuple[dict[str, list[str]], list[list[str]]]:
    """`dominated` without the candidates dominated only from within a circle of dominance
    that nothing outside it dominates (A over B, B over C, C over A: possible because
    "level" is a band), and those circles. Every candidate is then either undominated or
    dominated by one that is, so a sound candidate is always left to recommend."""
    reach = {name: set(dominators) for name, dominators in dominated.items()}
    changed = True
    while changed:  # who dominates whom, directly or through others (O(candidates^3))
        changed = False
        for dominators in reach.values():
            through = set().union(*(reach.get(other, set()) for other in dominators))
            if not through <= dominators:
                dominators |= through
                changed = True
    kept: dict[str, list[str]] = {}
    circles: list[list[str]] = []
    for name in sound:
        dominators = reach.get(name, set())
        in_circle = {other for other in dominators if name in reach.get(other, set())}
        if dominators and dominators <= in_circle | {name}:
            circle = sorted(in_circle | {name})
            if circle not in circles:
                circles.append(circle)
        elif name in dominated:
            kept[name] = dominated[name]
    return kept, circles


def _recommend(
    left: list[str],
    criteria: list[Score],
    overall: Mapping[str, Mapping[str, Aggregate]],
    differences: Mapping[tuple[str, str], list[Difference]],
    in_table: frozenset[str],
    dominated: Mapping[str, list[str]] | None = None,
) -> tuple[tuple[str, ...], str]:
    """The candidates the criteria, in order, keep; and the reason, from the numbers (naming
    the scores they are level on only where the table shows them, `in_table`, and the next
    best as the verdict ranks it, `dominated`)."""
    if not left:
        return (), "No candidate of this system was scored, or every one was set aside above."
    if len(left) == 1:
        return (left[0],), f"{left[0]} is the only candidate left."
    tied_on: list[Score] = []
    out_earlier: list[str] = []
    for index, score in enumerate(criteria):
        best = min(left, key=lambda name: sort_key(overall[name][score.metric], score))
        keep = [
            name for name in left if name == best or differences[(name, best)][index].better <= 0
        ]
        if len(keep) < len(left):
            dropped = [name for name in left if name not in keep]
            if len(keep) == 1:
                level_on = [tied for tied in tied_on if tied.metric in in_table]
                sentence = reason_on(
                    best,
                    dropped,
                    score,
                    overall,
                    level_on,
                    differences,
                    index,
                    dominated,
                    narrowed=bool(out_earlier),
                )
                return (best,), " ".join([sentence, *out_earlier])
            out_earlier.append(out_on(score, best, dropped, overall, left))
            left = keep
        tied_on.append(score)
    recommended, reason = tie(left, tied_on, overall, differences)
    return recommended, " ".join([reason, *out_earlier])


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
