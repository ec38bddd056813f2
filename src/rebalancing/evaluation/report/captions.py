"""The report's figure captions: each figure's title and reading (what to look at in it), and
where a reading depends on the system the run is for (a figure of protocol releases reads
differently under Kafka, Pulsar and RabbitMQ's single active consumer), the reading for that
system. rebalancing.evaluation.report.plots draws the figures; this module only says them.
"""

from __future__ import annotations

BANDS = (
    "Band: 5th to 95th percentile; whisker: minimum to maximum, ticks at the 1st and 99th "
    "percentiles; white line: median; dot: mean."
)
"""How to read quantile_bands and deciding_score, for the captions."""

COMPUTE_TIME = "Compute time of the assign call"
"""The compute-time figures' title: the strategy's own function's wall time (for a protocol
strategy, its whole simulated session), not the protocol seconds the verdict's `time s` is."""

CAPTIONS: dict[str, tuple[str, str]] = {
    "stickiness.png": (
        "Stickiness per change kind",
        "Higher is better: the share of queues that kept their consumer through a change. "
        "Compare the strategies within each change kind; the whisker down to the minimum and "
        "the tick at the 1st percentile are the bad rebalances. " + BANDS,
    ),
    "moves.png": (
        "Moves per change kind",
        "Lower is better: queues taken from a consumer that stayed in the group. A join forces "
        "some (the newcomer's share), a leave or a crash none; compare strategies within one "
        "change kind, and read the top of the whisker for the worst rebalances. " + BANDS,
    ),
    "queues_paused.png": (
        "Queues paused per change kind",
        "Lower is better: queues with no consumer while the group rebalances. A plain "
        "strategy is scored under Kafka's eager protocol, which pauses every queue a remaining "
        "consumer read; under the cooperative protocol (cooperative_sticky, or any strategy with "
        "cooperative=True) only what moves pauses: read the moves figure then. SAC pauses what "
        "it releases. " + BANDS,
    ),
    "stickiness_gap.png": (
        "Gap to the best achievable stickiness",
        "Lower is better: how many queues (as a share) a strategy moved beyond what balance "
        "required, against the best plan with spread at most 1 for the same change. 0 means "
        "nothing better was possible; sticky strategies should sit near 0, round robin does not. "
        "A strategy that does not balance (consistent_hash) can keep more than any balanced "
        "plan could: its gap goes below 0.",
    ),
    "client_views.png": (
        "What client-side rebalancing costs",
        "Only in a run with client views (--views client): queue-periods read by two consumers "
        "(duplicate consumption) and by none (stalled queues) while the consumers' views "
        "disagree, per client-side strategy and change kind. Broker-side rebalancing has none.",
    ),
    "assign_time.png": (
        COMPUTE_TIME,
        "Lower is better. Wall time on this machine of one call of the strategy's assign "
        "function (for a strategy that runs a protocol of its own, its whole simulated "
        "rebalance), on a logarithmic axis (linear below 1 µs): p50 is the usual cost, p99 and "
        "max the tail. Not the protocol's seconds (the verdict's time s). Timings depend on the "
        "machine and its load, so compare strategies within one run, not across runs.",
    ),
    "releases.png": (
        "Protocol releases",
        "Strategies that run a protocol only: the hand-overs of one rebalance (RabbitMQ's "
        "single active consumer: queues whose active consumer stepped down; Kafka: partitions "
        "revoked from members that stay; Pulsar: partitions whose active consumer, still "
        "subscribed, stepped down; Event Hubs and KCL: ownership records given up). Fewer is "
        "cheaper; p95 and p99 show what large changes cost.",
    ),
    "rounds.png": (
        "Protocol rounds",
        "Strategies that run a protocol only: the rounds a rebalance needed before the group "
        "was quiet (RabbitMQ's single active consumer: waves of releases; Kafka: join/sync "
        "rounds or target assignments; Pulsar and super streams: 1 pass of the broker; Event "
        "Hubs and KCL: a member's cycles); the maximum shows the slowest rebalance of the run.",
    ),
    "releases_by_group_size.png": (
        "Protocol cost against group size",
        "Protocol strategies only, log-log: the median releases of a rebalance against queues x "
        "apps. A slope of 1 means the cost grows with the group's size; at about 2 ms a release "
        "on a real broker, the y value times 2 ms is how long a group takes to settle.",
    ),
    "assign_time_by_queue_count.png": (
        f"{COMPUTE_TIME} against queue count",
        "Log-log: the median wall time of one assign call (a protocol strategy: its simulated "
        "rebalance) against the number of queues. A line's slope is the strategy's growth (1: "
        "linear); lines that cross show where another strategy gets cheaper. Machine-dependent: "
        "compare within one run.",
    ),
}
"""Every figure's title and reading, by file name, as they read for no system in particular."""

_KAFKA_RELEASES = (
    "Strategies that run a protocol only: partitions revoked from members that stay in the "
    "group, per rebalance (the eager protocol revokes every partition they hold, the "
    "cooperative and consumer protocols only those that move). Fewer is cheaper; p95 and p99 "
    "show what large changes cost."
)
_KAFKA_ROUNDS = (
    "Strategies that run a protocol only: the rounds a rebalance needed before the group was "
    "quiet (classic protocol: join/sync rounds, 2 when the cooperative protocol revokes; "
    "consumer protocol: target assignments computed); the maximum shows the slowest rebalance "
    "of the run."
)
_PAUSED = "Lower is better: queues with no consumer while the group rebalances. "

ON_SYSTEM: dict[tuple[str, str], str] = {
    ("releases.png", "kafka"): _KAFKA_RELEASES,
    ("rounds.png", "kafka"): _KAFKA_ROUNDS,
    ("releases.png", "pulsar"): (
        "The partitions whose active consumer, still subscribed, stepped down in one rebalance: "
        "each goes unread for the broker's failover delay (1 s by default). Fewer is cheaper; "
        "p95 and p99 show what large changes cost."
    ),
    ("rounds.png", "pulsar"): (
        "1 when any partition's active consumer changed, else 0: the broker makes its "
        "hand-overs in one pass, so the count shows only which rebalances changed anything."
    ),
    ("releases.png", "rabbitmq"): (
        "Queues whose active consumer had to step down per rebalance (single active consumer: "
        "each a cancel and a new subscription at the broker; super streams: a consumer "
        "update). Fewer is cheaper; p95 and p99 show what large changes cost."
    ),
    ("rounds.png", "rabbitmq"): (
        "The waves of releases a rebalance needed before the group was quiet (super streams: "
        "one pass of the broker), which bounds how long it takes to settle; the maximum shows "
        "the slowest rebalance of the run."
    ),
    ("queues_paused.png", "kafka-eager"): _PAUSED
    + "Every candidate here runs under Kafka's eager protocol, which pauses every partition a "
    "remaining member read: the same for every strategy (the moves figure tells them apart). "
    + BANDS,
    ("queues_paused.png", "kafka-cooperative"): _PAUSED
    + "Every candidate here runs Kafka's cooperative protocol: only the partitions that move "
    "are revoked and paused, for a second rebalance, so this is the moves figure again. " + BANDS,
    ("queues_paused.png", "kafka-consumer"): _PAUSED
    + "Under the consumer protocol (KIP-848) only the partitions that move are revoked and "
    "paused, member by member, so this is the moves figure again. " + BANDS,
    ("queues_paused.png", "kafka"): _PAUSED
    + "An eager:* candidate pauses every partition a remaining member read; cooperative:* and "
    "consumer:* candidates only the partitions that move. " + BANDS,
    ("queues_paused.png", "pulsar"): _PAUSED
    + "The partitions whose active consumer, still subscribed, stepped down: each unread for "
    "the broker's failover delay. " + BANDS,
    ("queues_paused.png", "rabbitmq"): _PAUSED
    + "A queue pauses when its active consumer, still in the group, steps down for another. "
    + BANDS,
}
"""Readings for one system, by (file name, system name or vendor): the system's own first."""


def caption(name: str, system: str | None = None, vendor: str | None = None) -> tuple[str, str]:
    """The title and reading of the figure `name` for a run on `system` (its vendor
    `vendor`): that system's reading, else its vendor's, else the general one (CAPTIONS)."""
    title, reading = CAPTIONS[name]
    for key in (system, vendor):
        if key is not None and (name, key) in ON_SYSTEM:
            return title, ON_SYSTEM[(name, key)]
    return title, reading
