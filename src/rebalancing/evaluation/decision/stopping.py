"""Scenarios drawn until the verdict is decided (`rebalancing compare --scenarios auto`): score
in growing batches, look at the verdict after each, and stop when the comparisons the
recommendation (or the tie) rests on are settled, or at a cap.

The rule keeps its error rate honest under repeated looks with a fixed schedule planned before
the first scenario is drawn: looks at FIRST_LOOK scenarios, then twice as many each time, and at
the cap (so the number of looks K depends only on the cap); every look's intervals are taken at
confidence 1 - ERROR_RATE / K (Bonferroni over the planned looks). Each comparison's interval
then misses the true difference at some look with probability at most ERROR_RATE, and a
comparison settled at the look that stops the run (its interval wholly beyond the level band,
or wholly within it: rebalancing.evaluation.decision.differences) is right unless its interval
missed: so the recommendation rests on comparisons each wrong at most ERROR_RATE of the time,
however early the run stops. (Like the fixed run's 95%, the rate is per comparison, not
corrected for the number of candidates.)

What the recommendation rests on: for the pick (or each candidate of a tie) against every other
sound candidate, the deciding scores in the system's order, each settled, up to the first one
that tells them apart. A comparison outside that, left unsettled, counts as level in the verdict
(the scenarios cannot tell) and does not hold the run.

The cap (DEFAULT_MAX_SCENARIOS) bounds the time of a run whose candidates differ by about the
band itself, which no number of scenarios settles. Runtime complexity: O(looks) verdicts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rebalancing.evaluation.decision.differences import Difference
from rebalancing.evaluation.decision.verdict import Verdict

FIRST_LOOK = 50
"""Scenarios of the first look: enough for Student's interval over scenarios to be a fair
approximation (49 degrees of freedom), and about a second on a small profile."""

ERROR_RATE = 0.05
"""The chance, over all the looks together, that a settled comparison is wrong: the fixed run's
5% (its 95% intervals)."""

DEFAULT_MAX_SCENARIOS = 3200
"""The cap of `--scenarios auto`: the seventh look (50 doubled six times). At 3,200 scenarios
the corrected interval (99.3%, t = 2.69) is 0.77 times as wide as the 95% interval of the fixed
1,000 scenarios that were the default before (1.96 / sqrt(1000) against 2.69 / sqrt(3200)), so
whatever the old default could tell apart, the cap can; and a run that needs the cap takes 3.2
times as long as the old default did, minutes at worst, where most stop at the first looks."""


def looks(cap: int, first: int = FIRST_LOOK) -> tuple[int, ...]:
    """The planned looks: `first`, doubled while below `cap`, then `cap` (`cap` alone when it
    is at most `first`)."""
    if cap < 1 or first < 1:
        raise ValueError(f"cap and first must be at least 1, got cap={cap!r}, first={first!r}")
    planned = []
    count = first
    while count < cap:
        planned.append(count)
        count *= 2
    return (*planned, cap)


def corrected_confidence(planned: tuple[int, ...]) -> float:
    """The confidence of every look's intervals: 1 - ERROR_RATE / looks (Bonferroni)."""
    return 1 - ERROR_RATE / len(planned)


def unsettled(verdict: Verdict) -> list[tuple[str, str, Difference]]:
    """The comparisons the verdict's recommendation rests on that are not settled: for each
    recommended candidate against every other sound one, the first deciding score, in order,
    that is not settled, unless a settled difference on an earlier one told them apart
    (as (recommended, other, difference); each tied pair once)."""
    sound = [name for name in verdict.candidates if name not in verdict.broken]
    found = []
    for pick in verdict.recommended:
        for other in sound:
            if other == pick or (other in verdict.recommended and other < pick):
                continue
            for difference in verdict.differences[(pick, other)]:
                if not difference.settled:
                    found.append((pick, other, difference))
                    break
                if difference.better:
                    break
    return found


@dataclass(frozen=True)
class Stopped:
    """Where a run drawn until decided stopped: the verdict at its last look, how many
    scenarios it took, whether the cap stopped it (with comparisons still unsettled), the
    looks planned and their confidence."""

    verdict: Verdict
    scenarios: int
    capped: bool
    planned: tuple[int, ...]
    confidence: float


def draw_until_settled(
    cap: int, verdict_at: Callable[[int, float], Verdict], first: int = FIRST_LOOK
) -> Stopped:
    """Look at `verdict_at(scenarios, confidence)` (the verdict on the first `scenarios`
    scenarios, intervals at `confidence`) at each planned look, and stop at the first whose
    recommendation rests on settled comparisons only, or at `cap`."""
    planned = looks(cap, first)
    confidence = corrected_confidence(planned)
    for count in planned:
        verdict = verdict_at(count, confidence)
        if not unsettled(verdict):
            return Stopped(verdict, count, False, planned, confidence)
    return Stopped(verdict, planned[-1], True, planned, confidence)
