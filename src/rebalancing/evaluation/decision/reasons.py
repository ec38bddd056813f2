"""The verdict's sentences: why the pick won on a criterion, why candidates are out, what the
pick gives up, and how a tie reads, each built from the measured numbers in the score's own unit
and precision (rebalancing.evaluation.scoring.definitions). rebalancing.evaluation.decision.verdict
decides; this module only says it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from rebalancing.evaluation.decision.differences import LEVEL_FRACTION, Difference
from rebalancing.evaluation.scoring.aggregates import Aggregate, Overall
from rebalancing.evaluation.scoring.definitions import SCORES, Score, format_value

SPEED_RATIO = 2.0
"""A tie on every criterion is broken by time only when one is this many times faster, by the
median of its calls: the median, not the 99th percentile, since a busy machine's preemptions
land in the tail and moved a p99 ratio across 2 between two runs of one profile and seed."""


GIVES_UP_SHOWN = 2
"""The deciding scores on which the reason says the recommendation is beaten, the first ones."""


OUT_ON_SHOWN = 4
"""The candidates a reason names as set aside on a criterion, the closest first; the others
are counted."""


STILL_LEVEL_SHOWN = 2
"""The unsettled comparisons a run stopped by the cap names; the others are counted."""


def gives_up(
    pick: str,
    sound: list[str],
    criteria: list[Score],
    overall: Overall,
    differences: Mapping[tuple[str, str], list[Difference]],
) -> str | None:
    """What the recommendation pays for being chosen: the deciding scores, in order, on which
    another sound candidate is better beyond doubt (the first GIVES_UP_SHOWN of them), each
    with the best such candidate's mean; None when it is nowhere worse. A criterion that came
    later, or a candidate dropped earlier, can be better: the trade-off a reader weighs. Then,
    where balance decides nothing, the pick's count imbalance (`count_imbalance`)."""
    items = []
    for index, score in enumerate(criteria):
        better = [
            other
            for other in sound
            if other != pick and differences[(pick, other)][index].better > 0
        ]
        if better:
            best = min(better, key=lambda name: sort_key(overall[name][score.metric], score))
            mine, theirs = overall[pick][score.metric].mean, overall[best][score.metric].mean
            unit = _unit(score)
            items.append(
                f"{score.label} {_value(mine, score)}{unit} against "
                f"{_value(theirs, score)}{unit} for {best}"
            )
    shown = items[:GIVES_UP_SHOWN]
    imbalance = count_imbalance(pick, sound, criteria, overall)
    if imbalance is not None:
        shown.append(imbalance)
    if not shown:
        return None
    return f"It gives up: {'; '.join(shown)}."


BALANCED_SPREAD = 1.0
"""A plan whose queue counts differ by at most one is balanced in counts: a mean spread above
this is a count imbalance."""


def count_imbalance(
    pick: str, sound: list[str], criteria: list[Score], overall: Overall
) -> str | None:
    """The pick's count imbalance, when balance decides nothing (the load ratio superseded it:
    with weights, equal counts of unequal queues are not the aim) yet the pick's queue counts
    differ by more than one on average where another sound candidate's do not: a reader should
    know that the pick gives some consumers many more queues than others. None otherwise."""
    if any(score.metric in ("balance_degree", "spread") for score in criteria):
        return None  # then balance decides, and the items above name it
    spread = SCORES["spread"]
    mine = overall[pick]["spread"].mean
    balanced = [
        other
        for other in sound
        if other != pick and (overall[other]["spread"].mean or 0.0) <= BALANCED_SPREAD
    ]
    if mine is None or mine <= BALANCED_SPREAD or not balanced:
        return None
    best = min(balanced, key=lambda name: overall[name]["spread"].mean or 0.0)
    return (
        f"even queue counts (spread {_value(mine, spread)} queues, most minus fewest, against "
        f"{_value(overall[best]['spread'].mean, spread)} for {best})"
    )


def out_on(
    score: Score, best: str, dropped: list[str], overall: Overall, left: list[str] | None = None
) -> str:
    """Which candidates a criterion set aside, with their means against the best one's (the
    closest OUT_ON_SHOWN of them, best first, and how many more). When some of those it was
    taken over (`left`) have no value of it (`any`: a function has no seconds), it set aside
    among those that have one only, and the sentence says so, naming the best."""
    closest = sorted(dropped, key=lambda name: sort_key(overall[name][score.metric], score))
    values = first_few(
        [f"{name} {_value(overall[name][score.metric].mean, score)}" for name in closest],
        OUT_ON_SHOWN,
    )
    best_value = f"{_value(overall[best][score.metric].mean, score)}{_unit(score)}"
    if any(not _known(overall[name][score.metric]) for name in left or ()):
        return (
            f"Out on {score.label}, among the candidates with a value of it ({score.better} is "
            f"better; the best {best} {best_value}; those with none are level on it): {values}."
        )
    return f"Out on {score.label} ({score.better} is better; the best {best_value}): {values}."


def _known(aggregate: Aggregate) -> bool:
    """Whether the aggregate has a mean to compare (a plain strategy has no time to balance)."""
    return aggregate.mean is not None and not math.isnan(aggregate.mean)


def sort_key(aggregate: Aggregate, score: Score) -> float:
    if aggregate.mean is None or math.isnan(aggregate.mean):
        return math.inf
    return -aggregate.mean if score.better == "higher" else aggregate.mean


def reason_on(
    pick: str,
    dropped: list[str],
    score: Score,
    overall: Overall,
    tied_on: list[Score],
    differences: Mapping[tuple[str, str], list[Difference]],
    index: int,
    dominated: Mapping[str, list[str]] | None = None,
    narrowed: bool = False,
) -> str:
    """Why `pick` won on `score` against the next best there of those it set aside (`tied_on`:
    the earlier criteria, those the table shows, that they were level on; `narrowed`: earlier
    criteria set others aside, so "next best" is among those they left). Of the set-aside that
    print the same mean, the one no other of them dominates (`dominated`) is named: the verdict
    ranks it higher, so naming the one it dominates would read as a contradiction."""
    runner_up = next_best(dropped, score, overall, dominated or {})
    difference = differences[(pick, runner_up)][index]
    unit = _unit(score)
    level = ", ".join(
        tied.label
        for tied in tied_on
        if _known(overall[pick][tied.metric]) and _known(overall[runner_up][tied.metric])
    )
    # "earlier": the level-on list in brackets names those scores, and the out-on sentences
    # that follow name the candidates they set aside (a longer phrase pushed the verdict below
    # the report's first window)
    among = " of those not out earlier" if narrowed else ""
    return (
        f"{pick}: {score.label} {_value(overall[pick][score.metric].mean, score)}{unit} per "
        f"rebalance against {_value(overall[runner_up][score.metric].mean, score)}{unit} for "
        f"{runner_up}, the next best on {score.label}{among} ("
        + (
            f"the difference per scenario, averaged over {difference.scenarios:,}: "
            if difference.scenarios
            else "difference "
        )
        + f"{_value(abs(difference.difference), score)}"
        f" ± {_value(difference.half_width, score)}{unit} at {percent(difference.confidence)}"
        + (f"; level on {level}" if level else "")
        + ")."
    )


def next_best(
    names: list[str], score: Score, overall: Overall, dominated: Mapping[str, list[str]]
) -> str:
    """The best of `names` on `score` by its mean as printed; among those printing the same
    mean, one that no other of `names` dominates, then the first by name."""

    def key(name: str) -> tuple[float, bool, str]:
        shown = format_value(score, overall[name][score.metric].mean)
        value = math.inf if shown == "n/a" else float(shown.replace(",", ""))
        beaten = any(other in names for other in dominated.get(name, []))
        return (-value if score.better == "higher" else value, beaten, name)

    return min(names, key=key)


def tie(
    left: list[str],
    tied_on: list[Score],
    overall: Overall,
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
    # every time is the strategy's own function's (a compiled twin's never is: replay.TIMED_EVERY)
    times = {name: overall[name]["assign_micros"].p50 for name in left}
    # and compared only on one clock: all of them in a protocol's seconds or none (a protocol's
    # own session's compute is its whole simulated rebalance, no function's call)
    clocks = {_known(overall[name]["seconds_to_balance"]) for name in left}
    if len(clocks) == 1 and all(value is not None for value in times.values()):
        fastest = min(left, key=lambda name: times[name] or 0.0)
        others = [name for name in left if name != fastest]
        slowest_ratio = min(
            (times[name] or 0.0) / max(times[fastest] or 0.0, 1e-9) for name in others
        )
        if level and slowest_ratio >= SPEED_RATIO:
            return (fastest,), (
                f"{fastest}: no difference the scenarios can tell from "
                f"{', '.join(others)} on {labels}, and it rebalances at least "
                f"{slowest_ratio:.1f}x faster (median {_micros(times[fastest])} a call)."
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


def drawn_until_decided(
    scenarios: int,
    planned: tuple[int, ...],
    confidence: float,
    still_level: list[tuple[str, str, Difference]],
    compared: bool = True,
) -> str:
    """How many scenarios a run drawn until decided took, and, when the cap (the last planned
    look) stopped it, which candidates are still level and on what (the first STILL_LEVEL_SHOWN
    of the comparisons left unsettled, with their intervals across the level band's edge).
    Without a comparison (`compared` false: one sound candidate), only how many: nothing was
    there to settle."""
    if not compared:
        return f"Measured on {scenarios:,} scenarios."
    rule = (
        f"intervals at {percent(confidence)}, for {len(planned)} planned "
        f"look{'s' if len(planned) > 1 else ''} of at most {planned[-1]:,} scenarios"
    )
    if not still_level:
        return f"Decided on {scenarios:,} scenarios, drawn until settled ({rule})."
    items = []
    for first, second, difference in still_level[:STILL_LEVEL_SHOWN]:
        score = SCORES[difference.metric]
        items.append(
            f"{first} and {second} on {score.label} (difference "
            f"{_value(abs(difference.difference), score)} ± "
            f"{_value(difference.half_width, score)}{_unit(score)})"
        )
    more = len(still_level) - STILL_LEVEL_SHOWN
    return (
        f"Stopped at the cap of {scenarios:,} scenarios (--max-scenarios; {rule}) with "
        f"candidates still level: {'; '.join(items)}{f' and {more} more' if more > 0 else ''}; "
        f"each interval reaches across the {LEVEL_FRACTION:.0%} band: whether they differ by "
        f"more than that is not settled, and as far as {scenarios:,} scenarios tell, either "
        "will do. A larger --max-scenarios may settle it."
    )


def percent(fraction: float) -> str:
    """A confidence as a percentage with the digits it needs: 95%, 99.3%."""
    return f"{fraction * 100:.1f}".removesuffix(".0") + "%"


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


def first_few(names: list[str], shown: int = 2) -> str:
    """The first `shown` names, and how many more."""
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")


SOLE_CANDIDATE_LEVERS: dict[str, str] = {
    "pulsar-failover": (
        "What is left to choose is the consumers' names and priority levels: a newcomer whose "
        "name sorts last moves no more partitions than one whose name sorts first (often fewer), a "
        "consumer that restarts under its name "
        "gets its partitions back, and priority levels keep standby consumers idle until every "
        "consumer above them has gone (docs/reference/strategies/pulsar_failover.md)."
    ),
    "aws-kcl": (
        "What is left to choose is the failover time: a lower one shortens the unread seconds "
        "of a crash, a join and a rolling restart, at the price of more DynamoDB reads "
        "(docs/reference/strategies/kcl.md)."
    ),
}
"""For a system with one candidate, by its name: what a group can still change there."""


def sole_candidate(
    name: str, system: str, system_candidates: int, criteria: list[Score], overall: Overall
) -> str:
    """The reason when one candidate was scored (`system_candidates`: how many the system
    has): nothing was compared, so what it costs the group on each deciding score (its means
    per rebalance), and the lever there is: the system's own (SOLE_CANDIDATE_LEVERS), or the
    other candidates when the run named only this one."""
    costs = ", ".join(
        f"{score.label} {_value(overall[name][score.metric].mean, score)}{_unit(score)}"
        for score in criteria
        if _known(overall[name][score.metric])
    )
    if system_candidates > 1:
        lever = (
            f"To compare it, name others with --strategies ({system} has "
            f"{system_candidates}: rebalancing systems lists them)."
        )
    else:
        lever = SOLE_CANDIDATE_LEVERS.get(system, "")
    return " ".join(
        filter(
            None,
            [
                f"{name} is the only candidate: nothing to choose.",
                f"What it costs your group, per rebalance on average: {costs}." if costs else "",
                lever,
            ],
        )
    )
