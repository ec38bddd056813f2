"""The verdict's wording where a new user tripped on it: the candidate a reason names against
the pick (never one the verdict ranks below another that prints the same mean), a run with one
candidate (nothing compared: what it costs and what is left to choose), and `any`'s seconds
(set aside among those with seconds only, as the one-clock note says)."""

from __future__ import annotations

from rebalancing.evaluation.decision.reasons import drawn_until_decided
from rebalancing.evaluation.decision.systems import SYSTEM_VERDICTS
from rebalancing.evaluation.decision.verdict import decide
from rebalancing.evaluation.report.verdict_text import conclusion, render_text, table
from tests.evaluation.test_one_clock import clocked
from tests.evaluation.test_verdict import exactly, metrics, spread_around, summary_of


def test_of_two_set_aside_with_the_same_mean_the_one_not_dominated_by_the_other_is_named() -> None:
    """eager:range is dominated by eager:sticky (level on moves, worse on stickiness) and both
    print 40 moves: the reason names eager:sticky, which the table ranks higher, and says what
    "next best" means."""
    summary = summary_of(
        eager_range=metrics(moves=exactly(40.0), stickiness=spread_around(0.2, 0.01)),
        eager_sticky=metrics(moves=exactly(40.0), stickiness=spread_around(0.7, 0.01)),
        winner=metrics(moves=exactly(8.0), stickiness=spread_around(0.7, 0.01)),
    )
    verdict = decide(summary, SYSTEM_VERDICTS["kafka-eager"])
    assert verdict.recommended == ("winner",)
    assert verdict.dominated["eager_range"] == ["eager_sticky", "winner"]
    assert "against 40 queues for eager_sticky, the next best on moves (" in verdict.reason
    assert "still in the running" not in verdict.reason


def test_a_next_best_after_an_earlier_score_says_of_which_candidates() -> None:
    """Out on balance first, so a candidate with fewer moves is not the next best on moves."""
    summary = summary_of(
        unbalanced=metrics(balance_degree=exactly(4.0), moves=exactly(9.0)),
        winner=metrics(moves=exactly(8.0)),
        mover=metrics(moves=exactly(14.0)),
    )
    verdict = decide(summary, SYSTEM_VERDICTS["kafka-eager"])
    assert verdict.recommended == ("winner",)
    assert (
        "14 queues for mover, the next best on moves of those not out earlier (" in verdict.reason
    )


def test_one_candidate_is_no_choice_what_it_costs_and_the_lever_there_is() -> None:
    summary = summary_of(
        pulsar_failover=metrics(
            moves=exactly(286.0), stickiness=exactly(0.474), seconds_to_balance=exactly(5.63)
        )
    )
    verdict = decide(summary, SYSTEM_VERDICTS["pulsar-failover"])
    assert verdict.recommended == ("pulsar_failover",)  # the decision itself is unchanged
    assert verdict.is_sole
    said = conclusion(verdict)
    assert said.startswith("pulsar_failover is the only candidate: nothing to choose. ")
    assert "What it costs your group, per rebalance on average: balance 0.30 queues" in said
    assert "time 5.63 s" in said
    assert "moves 286 queues" in said
    assert "consumers' names and priority levels" in said
    for misleading in ("Use pulsar_failover", "only candidate left", "recommended"):
        assert misleading not in said
    assert table(verdict)[1][0][-1] == "only candidate"
    text = render_text(verdict, "a group")
    assert "gains nothing" not in text
    assert "pulsar_failover makes that plan." in " ".join(text.split())
    assert drawn_until_decided(50, (50, 100), 0.993, [], compared=False) == (
        "Measured on 50 scenarios."
    )


def test_one_candidate_named_on_a_system_with_more_points_to_the_others() -> None:
    summary = summary_of(sticky=metrics(moves=exactly(8.0)))
    verdict = decide(summary, SYSTEM_VERDICTS["kafka-eager"], ["sticky"])
    assert verdict.is_sole
    assert "name others with --strategies (kafka-eager has 5" in verdict.reason


def test_two_candidates_are_still_a_recommendation() -> None:
    summary = summary_of(
        sticky=metrics(moves=exactly(8.0)), round_robin=metrics(moves=exactly(40.0))
    )
    verdict = decide(summary, SYSTEM_VERDICTS["kafka-eager"])
    assert not verdict.is_sole
    assert conclusion(verdict).startswith("Use sticky.")
    assert drawn_until_decided(50, (50, 100), 0.993, []).startswith(
        "Decided on 50 scenarios, drawn until settled"
    )


def test_out_on_seconds_is_among_the_candidates_with_seconds_as_the_note_says() -> None:
    """A protocol slower than another is out on time; a function has none: the sentence says
    the seconds set it aside among those with seconds, and the note does not say the seconds
    decided anything for the functions."""
    summary = summary_of(
        sac_newest=clocked(3.13),
        sac_random=clocked(5.70),
        averagely=metrics(
            assign_micros=spread_around(10.0, 1.0), queues_paused=spread_around(20.0, 1.0)
        ),
    )
    verdict = decide(summary, SYSTEM_VERDICTS["any"], ["sac_newest", "sac_random", "averagely"])
    assert verdict.recommended == ("averagely",)
    (out,) = [part for part in verdict.reason.split(". ") if part.startswith("Out on time")]
    assert out.startswith(
        "Out on time, among the candidates with a value of it (lower is better; the best "
        "sac_newest 3.13 s; those with none are level on it): sac_random 5.70"
    )
    (note,) = [note for note in verdict.notes if note.startswith("Time is")]
    assert "set a candidate aside only against another with seconds" in note
    assert "decided among the first" not in note
