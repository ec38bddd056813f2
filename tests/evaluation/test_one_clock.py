"""`--system any` on one clock: the seconds to balance decide only among the candidates that
have them (strategies that run a protocol with a time model), never against a function's
compute microseconds; a function is level with them there, settled (no number of scenarios
gives it seconds), and a tie between the two kinds is not broken by compute time."""

from __future__ import annotations

from dataclasses import replace

from rebalancing.evaluation.decision.stopping import unsettled
from rebalancing.evaluation.decision.systems import SYSTEM_VERDICTS
from rebalancing.evaluation.decision.verdict import decide
from tests.evaluation.test_verdict import exactly, metrics, spread_around, summary_of

ANY = SYSTEM_VERDICTS["any"]


def clocked(seconds: float) -> dict[str, object]:
    """A protocol's own session: seconds to balance, and its whole simulation as compute."""
    return metrics(
        seconds_to_balance=spread_around(seconds, 1.0),
        converged=exactly(1.0),
        assign_micros=spread_around(5_000.0, 10.0),
    )


def test_the_seconds_decide_only_among_the_candidates_that_have_them() -> None:
    summary = summary_of(
        sac=clocked(5.0),
        slow_protocol=clocked(50.0),
        averagely=metrics(assign_micros=spread_around(10.0, 1.0)),  # no protocol, no seconds
    )
    verdict = decide(summary, ANY, ["sac", "slow_protocol", "averagely"])
    assert verdict.dominated == {"slow_protocol": ["sac"]}
    # averagely has no seconds: level with both on them, and 500x faster to compute, but a
    # protocol's simulated rebalance is no function's call: a tie, not broken by speed
    assert set(verdict.recommended) == {"sac", "averagely"}
    assert "faster" not in verdict.reason
    assert not unsettled(verdict)  # nothing left for more scenarios to settle
    seconds = [
        d for d in verdict.differences[("sac", "averagely")] if d.metric == "seconds_to_balance"
    ]
    assert [(d.better, d.settled) for d in seconds] == [(0, True)]
    (note,) = [note for note in verdict.notes if note.startswith("Time is")]
    assert "only sac, slow_protocol run one with a time model" in note
    assert "averagely runs as a plain function, no time (n/a)" in note


def test_among_functions_alone_a_tie_is_still_broken_by_speed() -> None:
    summary = summary_of(
        averagely=metrics(assign_micros=spread_around(10.0, 1.0)),
        round_robin=metrics(assign_micros=spread_around(100.0, 1.0)),
    )
    verdict = decide(summary, ANY, ["averagely", "round_robin"])
    assert verdict.recommended == ("averagely",)
    assert "faster" in verdict.reason
    assert not any(note.startswith("Time is") for note in verdict.notes)


def test_a_tie_is_broken_by_the_median_call_not_by_the_tail() -> None:
    """Twice as fast by the median decides; a tail twice as long (a busy machine's preemptions
    land there) with equal medians does not."""
    faster_median = summary_of(
        averagely=metrics(assign_micros=spread_around(10.0, 1.0)),
        round_robin=metrics(assign_micros=replace(spread_around(25.0, 1.0), p99=12.0)),
    )
    verdict = decide(faster_median, ANY, ["averagely", "round_robin"])
    assert verdict.recommended == ("averagely",)
    assert "2.5x faster (median 10" in verdict.reason
    longer_tail = summary_of(
        averagely=metrics(assign_micros=spread_around(10.0, 1.0)),
        round_robin=metrics(assign_micros=replace(spread_around(10.0, 1.0), p99=500.0)),
    )
    verdict = decide(longer_tail, ANY, ["averagely", "round_robin"])
    assert set(verdict.recommended) == {"averagely", "round_robin"}
    assert "faster" not in verdict.reason


def test_a_score_neither_candidate_has_is_a_settled_level() -> None:
    """Two functions have no seconds: level on them, settled (no number of scenarios gives them
    any), so an automatic run does not draw scenarios to the cap for it."""
    summary = summary_of(
        sac=clocked(5.0),
        averagely=metrics(assign_micros=spread_around(10.0, 1.0)),
        cooperative_sticky=metrics(assign_micros=spread_around(12.0, 1.0)),
    )
    verdict = decide(summary, ANY, ["sac", "averagely", "cooperative_sticky"])
    seconds = [
        d
        for d in verdict.differences[("averagely", "cooperative_sticky")]
        if d.metric == "seconds_to_balance"
    ]
    assert [(d.better, d.settled) for d in seconds] == [(0, True)]
    assert unsettled(verdict) == []
