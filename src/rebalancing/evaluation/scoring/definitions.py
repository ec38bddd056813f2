"""The glossary's definitions: what every score means, its unit, which way is better and what
must be 0, and how a value of it is written (its unit's precision), so that summary.md, the
command lines' `--help`, the verdict and report.html never describe a number two ways. The
tables built from them (which statistic of which score is a column) are the report's
(rebalancing.evaluation.report.tables).

A `Score` is a row column of the scoring core (rebalancing.evaluation.scoring.replay.ScoreRow).
Definitions follow the
scores' exact definitions in rebalancing.evaluation.scoring.scores, and for the placement scores
(zones
and weights) in rebalancing.evaluation.scoring.placement_scores.

One placement score is not a column: `topic_spread` (placement_scores.topic_spread, the largest
over topics of the most minus the fewest partitions of a topic held by one consumer) applies only
where queue ids are (topic, partition) pairs, and the scenarios' queue ids are integers, so it
would be None in every row: it stays a library function (LIBRARY_SCORES).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

Better = Literal["lower", "higher", "zero"]

STABILITY_BOUND = 4
"""The most rebalances with nothing changed that the stability check runs after a step
(rebalancing.evaluation.scoring.runner): a value of `rebalances_to_fixed_point` this high is a
strategy that oscillates (its broken_at). A function's plan must be its own fixed point (one
rebalance shows it); a protocol whose plan takes rounds (Kafka's cooperative one: two) must
settle well within four."""


@dataclass(frozen=True)
class Score:
    """One score: its row column, a short label, its definition, unit and which way is better
    ("zero": it must be 0, anything else is a broken plan; `broken_at`: a value that high is
    one). `percent` scores are fractions (0 to 1) shown as percentages; `integral` ones are
    counts."""

    metric: str
    label: str
    definition: str
    unit: str
    better: Better
    integral: bool = False
    percent: bool = False
    needs: str | None = None  # "zones" or "weights": null in the rows of steps without them
    superseded_by: str | None = None  # a score that decides instead, when the run measured it
    broken_at: float | None = None  # a value this high in any rebalance is a broken plan


SCORES: dict[str, Score] = {
    score.metric: score
    for score in (
        Score(
            "balance_degree",
            "balance",
            "population standard deviation of the queue counts of the consumers (a consumer "
            "with none counts); the least a group of that size allows is 0 when the queues "
            "divide evenly, about 0.5 otherwise",
            "queues",
            "lower",
            # with weights, equal counts are not the goal, equal loads are: counts stay shown
            superseded_by="load_ratio",
        ),
        Score(
            "spread", "spread", "most queues of a consumer minus fewest", "queues", "lower", True
        ),
        Score(
            "stickiness",
            "stickiness",
            "share of the queues that kept their consumer through the rebalance (undefined on "
            "the first assignment)",
            "%",
            "higher",
            percent=True,
        ),
        Score(
            "optimal_stickiness",
            "best stickiness",
            "the highest stickiness any plan with spread at most 1 could reach from the same "
            "previous plan, computed independently of every strategy",
            "%",
            "higher",
            percent=True,
        ),
        Score(
            "stickiness_gap",
            "gap",
            "best stickiness minus the stickiness reached: what the strategy gave up",
            "%",
            "lower",
            percent=True,
        ),
        Score("kept", "kept", "queues that kept their consumer", "queues", "higher", True),
        Score(
            "moves",
            "moves",
            "queues taken from a consumer that is still in the group (under Kafka's cooperative "
            "protocol, exactly the partitions revoked and paused)",
            "queues",
            "lower",
            True,
        ),
        Score(
            "revocations",
            "revocations",
            "queues whose consumer changed, including those of consumers that left",
            "queues",
            "lower",
            True,
        ),
        Score("orphans", "orphans", "queues no consumer got (must be 0)", "queues", "zero", True),
        Score(
            "duplicates",
            "duplicates",
            "queues given to more than one consumer (must be 0)",
            "queues",
            "zero",
            True,
        ),
        Score(
            "unknown_queues",
            "unknown queues",
            "queues in the plan that are not in the group (must be 0)",
            "queues",
            "zero",
            True,
        ),
        Score(
            "unknown_consumers",
            "unknown consumers",
            "consumers in the plan that are not in the group (must be 0)",
            "consumers",
            "zero",
            True,
        ),
        Score(
            "assign_micros",
            "compute",
            "the compute cost of one rebalance, wall time on this machine: the call of the "
            "strategy's own function, as consumer code calls it (where a compiled copy makes "
            "the plans, as for sticky, averagely and the consistent hashings, the function "
            "itself runs and is timed on a seeded eighth of the steps); inside a system's "
            "protocol (Kafka's), its assign calls only; a protocol strategy's own session, its "
            "whole rebalance",
            "µs",
            "lower",
        ),
        Score(
            "releases",
            "releases",
            "protocol hand-overs in one rebalance (SAC: queues released by an app over its "
            "share; cooperative Kafka: partitions revoked); protocol strategies only",
            "queues",
            "lower",
            True,
        ),
        Score(
            "protocol_steps",
            "protocol steps",
            "protocol actions until the group is quiet (activations and releases)",
            "steps",
            "lower",
            True,
        ),
        Score(
            "rounds",
            "rounds",
            "protocol rounds until the group is quiet (SAC: waves of releases; cooperative "
            "Kafka: 1 or 2 rebalances)",
            "rounds",
            "lower",
            True,
        ),
        Score(
            "converged",
            "converged",
            "share of rebalances after which the protocol reached a balanced, quiet group "
            "within its step bound",
            "%",
            "higher",
            percent=True,
        ),
        Score(
            "queues_paused",
            "paused",
            "queues with no consumer during the rebalance: under Kafka's eager protocol every "
            "queue a remaining consumer read; under a protocol, what it revoked or released",
            "queues",
            "lower",
            True,
        ),
        Score(
            "failed",
            "failed",
            "share of rebalances in which the strategy raised or returned no plan (must be 0)",
            "%",
            "zero",
            percent=True,
        ),
        Score(
            "queue_periods_read_twice",
            "read twice",
            "client-side views only: queue-periods in which two consumers read the same queue "
            "because their views of the group disagreed",
            "queue-periods",
            "lower",
            True,
        ),
        Score(
            "queue_periods_unread",
            "unread",
            "client-side views only: queue-periods in which no consumer read a queue because "
            "their views of the group disagreed",
            "queue-periods",
            "lower",
            True,
        ),
        Score(
            "periods_to_agree",
            "periods to agree",
            "client-side views only: periods until every consumer's view agreed again",
            "periods",
            "lower",
            True,
        ),
        Score(
            "moves_when_unchanged",
            "moves when unchanged",
            "queues that move when the strategy is applied again to its own plan with nothing "
            "changed (a protocol: its group rebalanced again): 0 when its plan is its own "
            "fixed point; each one a hand-over in a rebalance that had nothing to change",
            "queues",
            "lower",
            True,
        ),
        Score(
            "rebalances_to_fixed_point",
            "rebalances to fixed point",
            "rebalances with nothing changed that still change the plan (or take a protocol "
            "step) before one does not: 0 when the plan is its own fixed point, the check's "
            f"bound ({STABILITY_BOUND}) when none within it reaches one: the strategy "
            "oscillates, and the verdict sets it aside",
            "rebalances",
            "lower",
            True,
            broken_at=STABILITY_BOUND,
        ),
        Score(
            "claims",
            "claims",
            "ownership writes that took an unowned or expired queue (Event Hubs: claims; KCL: "
            "lease takes); leaderless ownership protocols only",
            "queues",
            "lower",
            True,
        ),
        Score(
            "steals",
            "steals",
            "ownership writes that took a queue another member held, each a hand-over the "
            "holder learns of only at its next cycle or renewal; leaderless ownership protocols "
            "only",
            "queues",
            "lower",
            True,
        ),
        Score(
            "seconds_to_balance",
            "time",
            "seconds from the change until the last change of who processes what, with the "
            "system's default intervals (Kafka: its group protocol's heartbeats, session "
            "timeout and rounds; RocketMQ: each client's 20 s rebalance and the broker's "
            "notice; Event Hubs: 30 s cycles; KCL: 20 s taker runs; SAC: a 2 ms hand-over per "
            "round of releases; Pulsar: the broker's 1 s failover delay, a crash detected by "
            "the 30 s keep-alive, 30-60 s); protocols with a time model only",
            "s",
            "lower",
        ),
        Score(
            "queue_seconds_unowned",
            "unowned",
            "seconds each queue had no member processing it after the change, read by nobody "
            "(a departed member's queues until taken, new queues until claimed, released ones "
            "during the hand-over), summed over the queues",
            "queue-seconds",
            "lower",
        ),
        Score(
            "queue_seconds_doubly_owned",
            "doubly owned",
            "seconds each queue had two members that both believed they owned it, read twice "
            "(a stolen queue until its old owner notices; RocketMQ: a queue taken by a client "
            "before its old owner's view drops it), summed over the queues",
            "queue-seconds",
            "lower",
        ),
        Score(
            "queue_seconds_paused",
            "paused s",
            "the part of the unowned time that followed a revocation from a member still in "
            "the group (a queue read, given up on purpose, and not yet read again: under "
            "Kafka's eager protocol every partition until the sync), summed over the queues; "
            "Kafka's, RocketMQ's clients' and Pulsar's protocols only",
            "queue-seconds",
            "lower",
        ),
        Score(
            "heartbeats",
            "heartbeats",
            "heartbeat requests the members sent from the change until the group was quiet "
            "(Kafka's consumer protocol, KIP-848, whose rebalance runs on heartbeats)",
            "requests",
            "lower",
            True,
        ),
        Score(
            "cross_zone_fraction",
            "cross-zone",
            "share of the queues read by a consumer whose zone holds no replica of them (a "
            "consumer with no zone reads every queue cross-zone); with zones only, and only for "
            "an exact plan",
            "%",
            "lower",
            percent=True,
            needs="zones",
        ),
        Score(
            "cross_zone_gap",
            "cross-zone gap",
            "cross-zone queues minus the fewest any balanced plan (counts differ by at most one) "
            "of the same group reaches (a maximum flow, computed independently of every "
            "strategy), over the queue count; below 0 for a plan that is not balanced",
            "%",
            "lower",
            percent=True,
            needs="zones",
        ),
        Score(
            "load_ratio",
            "load ratio",
            "the most-loaded consumer's load (the sum of its queues' weights) over the mean load "
            "(total load over the consumer count); 1 is perfect; with weights only, null when "
            "the total load is 0",
            "x",
            "lower",
            needs="weights",
        ),
        Score(
            "load_ratio_gap",
            "load ratio gap",
            "load ratio minus a lower bound on any plan's: max(mean, heaviest queue) over the mean",
            "x",
            "lower",
            needs="weights",
        ),
        Score(
            "load_kept",
            "load kept",
            "load-weighted stickiness: of the weight of the queues that existed before and "
            "whose consumer is still in the group, the share that kept its consumer (null on "
            "the first assignment and when that weight is 0)",
            "%",
            "higher",
            percent=True,
            needs="weights",
        ),
        Score(
            "load_moved",
            "load moved",
            "weight of the queues that existed before and changed consumer (a departed "
            "consumer's included), over the total load of the group (null on the first "
            "assignment)",
            "%",
            "lower",
            percent=True,
            needs="weights",
        ),
    )
}
"""Every score the scoring core writes, by row column."""

_INTERVALS: dict[str, str] = {
    "kafka": "Kafka: its group protocol's heartbeats, session timeout and rounds",
    "rocketmq": "RocketMQ: each client's 20 s rebalance and the broker's notice",
    "rabbitmq": "single active consumer: a 2 ms hand-over per round of releases",
    "pulsar": (
        "Pulsar: the broker's 1 s failover delay for each hand-over; a crashed consumer's "
        "partitions wait for the 30 s keep-alive to close its connection, 30-60 s, see "
        "docs/explanation/leaderless-protocols.md"
    ),
    "event-hubs": "Event Hubs: each processor's 30 s load-balancing cycle",
    "kcl": "KCL: each worker's 20 s lease taker run",
}
"""Each vendor's default intervals, as the time of its protocol counts them."""

_PAUSED: dict[str, str] = {
    "kafka": (
        "the part of the unowned time that followed a revocation from a member still in the "
        "group (under the eager protocol every partition until the sync, under the cooperative "
        "and consumer protocols the partitions that move), summed over the queues"
    ),
    "pulsar": (
        "the part of the unowned time of partitions whose active consumer, still subscribed, "
        "stepped down: the broker's failover delay of each hand-over, summed over the queues"
    ),
    "rocketmq": (
        "the part of the unowned time that followed a client dropping a queue it read while "
        "it stays in the group, summed over the queues"
    ),
}
"""What `queue_seconds_paused` is under each vendor's protocols that fill it in."""


def definition_on(score: Score, vendor: str | None) -> str:
    """`score`'s definition as it reads for a run on `vendor`'s system (decision.systems's
    System.vendor; None: every system, as `--system any` runs), where a score's definition
    names several systems' details: only that system's."""
    if vendor is None:
        return score.definition
    if score.metric == "seconds_to_balance" and vendor in _INTERVALS:
        return (
            "seconds from the change until the last change of who processes what, with the "
            f"system's default intervals ({_INTERVALS[vendor]})"
        )
    if score.metric == "queue_seconds_paused":
        return _PAUSED.get(vendor, "not measured on this system: n/a")
    return score.definition


LIBRARY_SCORES: dict[str, str] = {
    "topic_spread": (
        "for queues that are (topic, partition) pairs: the largest, over topics, of the most "
        "minus the fewest partitions of that topic held by one consumer (consumers holding none "
        "count 0), what KAFKA-16277 reports; rebalancing.evaluation.scoring.placement_scores."
        "topic_spread. Not a column: the scenarios' queue ids are integers, so it never applies"
    ),
}
"""Placement scores the library computes that no row carries, and why."""

STATISTIC_NAMES: dict[str, str] = {
    "count": "number of rebalances with a value",
    "mean": "mean",
    "stddev": "sample standard deviation",
    "min": "smallest value",
    "p1": "1st percentile (1% of rebalances are at or below it)",
    "p5": "5th percentile",
    "p50": "median",
    "p95": "95th percentile (5% of rebalances are at or above it)",
    "p99": "99th percentile",
    "max": "largest value",
}
"""What each statistic of an aggregate means."""


def format_value(score: Score, value: float | None) -> str:
    """`value` of `score` in the score's unit, as every output prints it."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if score.percent:
        return f"{100 * value:.1f}"
    if score.integral and float(value).is_integer():
        return f"{int(value):,}"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:,.1f}"
    return f"{value:,.2f}"
