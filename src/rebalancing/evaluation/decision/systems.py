"""The systems the verdict knows, as declarations: for each `--system`, its title, what it pays for,
the deciding scores in order, the verdict's columns, the view mode its scores are taken under, how
to run a pick there and what it notes beside the pick. The verdict reads these and knows no
system by name; adding a system is one `System(...)` in DECLARED (its name also in the
registry's SYSTEMS, where strategies say where they run) and its tests.

How to run a pick is built from the strategy's own facts in the registry (`Strategy.native`:
what the system ships that makes the same plan; `Strategy.settings`: the adapter's arguments),
so no strategy is named here either.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial

from rebalancing.evaluation.decision.how_to_run import (
    by_the_system,
    in_kafka_python,
    in_rabbitmq,
    in_rocketmq,
    on_kafka_brokers,
)
from rebalancing.evaluation.scoring.aggregates import Overall
from rebalancing.evaluation.scoring.definitions import SCORES, format_value
from rebalancing.evaluation.scoring.runner import ProtocolFactory
from rebalancing.protocols import ConsumerSession, cooperative_session, eager_session
from rebalancing.protocols.rocketmq import broker_session, client_session
from rebalancing.strategies import STRATEGIES, SYSTEMS, Strategy, select
from rebalancing.strategies.registry import default_strategies, runs_on

ANY_SYSTEM = "any"
"""The system of a group that has not said where it runs: every default strategy competes."""


@dataclass(frozen=True)
class System:
    """Where the group runs: which strategies are candidates and which costs decide.

    `criteria` are score metrics in the order they decide; `shown` the columns of the verdict's
    table as (metric, statistic); `views` the view mode the scores must be taken under
    (rebalancing.evaluation.scenarios.views; rocketmq-client's session has views of its own);
    `vendor` whose system it is (registry.VENDORS, the key of Strategy.native); `zone_aware`,
    whether its clients know zones (the cross-zone fraction then decides); `how_to_run`, a
    strategy's registry entry -> how to run it there, in a sentence (None: no known way);
    `note`, the sound candidates' overall aggregates -> sentences the verdict adds; `baseline`,
    what a group on this system runs today without this library, in a phrase (the strategy
    whose plan that is, if one is registered, says so by its `baseline_on`); `protocol`, the
    group protocol the candidates' assign functions run inside, as a session factory
    `(assignor, *, seed) -> StrategySession` (rebalancing.evaluation.scoring.runner.
    ProtocolFactory; Kafka's: rebalancing.protocols), so that their rows carry the protocol's
    seconds; None: each candidate runs as it is (a function, or its own session). `pairs`, for
    a system whose candidates are a protocol and an assignor chosen together (`kafka`): each
    candidate's label (PROTOCOL:ASSIGNOR) -> (the system of that protocol, whose `protocol` it
    runs inside and whose `how_to_run` says how, the registered strategy that is its assignor).
    """

    name: str
    title: str
    costs: str
    criteria: tuple[str, ...]
    shown: tuple[tuple[str, str], ...]
    views: str = "broker"
    vendor: str | None = None
    zone_aware: bool = False
    how_to_run: Callable[[Strategy], str | None] | None = None
    note: Callable[[Overall, list[str]], list[str]] | None = None
    baseline: str = ""
    protocol: ProtocolFactory | None = None
    pairs: Mapping[str, tuple[str, str]] = field(default_factory=dict)

    def candidates(
        self, registry: Mapping[str, Strategy] = STRATEGIES, carried: Collection[str] = ()
    ) -> tuple[str, ...]:
        """The registered strategies that run on this system (the defaults for `any`), for
        scenarios that carry the inputs `carried` (ScenarioSettings.carried_inputs): those
        that read zones or weights (`Strategy.uses`) only when the scenarios carry them
        (registry.runs_on), as default_strategies does."""
        if self.pairs:
            return tuple(self.pairs)
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
        if self.pairs:
            return strategy.name in self.pairs
        return self.name == ANY_SYSTEM or self.name in (strategy.systems or ())

    def strategies(self, specs: Iterable[str]) -> tuple[Strategy, ...]:
        """The strategies `specs` name (registry.select), or for a system of `pairs`, each
        pair's assignor under the pair's label; ValueError names a spec that is neither and,
        for pairs, the known labels."""
        chosen = [spec.strip() for spec in specs if spec.strip()]
        if not self.pairs:
            return select(",".join(chosen))
        unknown = [spec for spec in chosen if spec not in self.pairs]
        if unknown:
            raise ValueError(
                f"unknown {self.name} candidate {unknown[0]!r}: give PROTOCOL:ASSIGNOR, one of "
                f"{', '.join(self.pairs)}"
            )
        return tuple(
            replace(STRATEGIES[self.pairs[label][1]], name=label, open_session=None)
            for label in chosen
        )

    def protocols(
        self, labels: Iterable[str], static_membership: bool = False
    ) -> ProtocolFactory | dict[str, ProtocolFactory]:
        """What the candidates `labels` run inside (score_scenario's `protocol`): the
        system's protocol, or for a system of `pairs`, each label's own (None: none); with
        `static_membership` (Kafka's only: every consumer sets group.instance.id), each made
        with static_membership=True."""
        if static_membership and self.vendor != "kafka":
            raise ValueError(f"static membership: {kafka_only(self.name)}")
        options = {"static_membership": True} if static_membership else {}
        if not self.pairs:
            if self.protocol is None or not options:
                return self.protocol  # type: ignore[return-value]
            return partial(self.protocol, **options)
        chosen: dict[str, ProtocolFactory] = {}
        for label in labels:
            factory = DECLARED_BY_NAME[self.pairs[label][0]].protocol
            if factory is not None:
                chosen[label] = partial(factory, **options) if options else factory
        return chosen


def _eager_note(overall: Overall, sound: list[str]) -> list[str]:
    """Under the eager protocol the pause is the group's, whatever the strategy: say what the
    cooperative protocol would pause instead (the moves), when the numbers are there."""
    paused = [overall[name]["queues_paused"].mean for name in sound]
    moved = [overall[name]["moves"].mean for name in sound]
    if not sound or None in paused or None in moved:
        return []
    best = min(sound, key=lambda name: overall[name]["moves"].mean or 0.0)
    low, high = (
        format_value(SCORES["queues_paused"], bound(p for p in paused if p is not None))
        for bound in (min, max)
    )
    return [
        f"Under Kafka's eager protocol a rebalance pauses "
        f"{low if low == high else f'{low}-{high}'} queues on average "
        f"whatever the strategy; the cooperative protocol pauses only the moves "
        f"({best}: {format_value(SCORES['moves'], overall[best]['moves'].mean)} per rebalance)."
    ]


_BASE_SHOWN = (
    ("balance_degree", "mean"),
    ("stickiness", "mean"),
    ("stickiness", "p5"),
    ("moves", "mean"),
)
_TIME = ("assign_micros", "p99")
_SECONDS = (("seconds_to_balance", "mean"), ("queue_seconds_paused", "mean"))
"""A Kafka protocol's rebalance in seconds: the time to balance and the partition-seconds
paused (the verdict's `time` column; `_TIME`, the assign calls' compute, stays last)."""
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

_ROCKETMQ_CLIENT_CRITERIA = (
    *("balance_degree", "queue_seconds_unowned", "queue_seconds_doubly_owned"),
    *("seconds_to_balance", "moves", "stickiness"),
)
"""rocketmq-client's order, its clients' runs in seconds (protocols.rocketmq.client_session):
balance first, as on every system with unbalanced candidates (consistent_hash): a lasting cost
where a rebalance's passes; then the queue-seconds read by nobody, messages left waiting (views
disagreeing, a crash unnoticed, a first pull); then read twice, messages delivered twice, which
at-least-once consumers tolerate already (work lost, no message); then the seconds to balance,
how long it all lasted, which both already weigh; then moves and stickiness."""

_PULSAR_CRITERIA = (
    *("balance_degree", "queue_seconds_unowned", "seconds_to_balance"),
    *("queues_paused", "moves", "stickiness"),
)
"""pulsar-failover's order, in the broker's seconds (strategies.pulsar_failover.Session): balance
first, a lasting cost where a rebalance's passes (priority levels leave standbys idle); then the
partition-seconds no consumer is dispatched, messages left waiting (each hand-over's failover
delay, a crashed consumer's partitions until the keep-alive closes its connection); then the
seconds to balance, how long that lasted, which the partition-seconds weigh already; then the
counts, for a candidate without the broker's clock. Nothing is doubly owned (one active consumer
per partition): no criterion."""

KAFKA_PAIRS: Mapping[str, tuple[str, str]] = {
    "eager:range": ("kafka-eager", "averagely"),
    "eager:round_robin": ("kafka-eager", "round_robin"),
    "eager:sticky": ("kafka-eager", "sticky"),
    "cooperative:cooperative_sticky": ("kafka-cooperative", "cooperative_sticky"),
    "consumer:uniform": ("kafka-consumer", "uniform"),
    "consumer:server_range": ("kafka-consumer", "server_range"),
}
"""`--system kafka`'s candidates, PROTOCOL:ASSIGNOR -> (the system of that protocol, the
registered strategy that is the assignor): the classic protocol's assignors Kafka ships (range is
averagely for one topic, RangeAssignor; RoundRobinAssignor; StickyAssignor; the cooperative
protocol's CooperativeStickyAssignor) and the consumer protocol's two server-side assignors."""

DECLARED: tuple[System, ...] = (
    System(
        "kafka-eager",
        "Kafka, eager rebalance protocol",
        "every member gives up every partition at each rebalance, so the partitions that "
        "move cost a handover (state, caches, in-flight work) on top of the pause",
        ("balance_degree", "queues_paused", "moves", "stickiness"),
        (*_BASE_SHOWN, ("queues_paused", "mean"), *_SECONDS, _TIME),
        vendor="kafka",
        zone_aware=True,
        how_to_run=in_kafka_python(cooperative=False),
        note=_eager_note,
        baseline="the Kafka clients' default assignor, RangeAssignor",
        protocol=eager_session,
    ),
    System(
        "kafka-cooperative",
        "Kafka, cooperative rebalance protocol (KIP-429)",
        "only the partitions that move are revoked and paused, for a second rebalance: "
        "moves are the pauses",
        ("balance_degree", "moves", "stickiness"),
        (*_BASE_SHOWN, *_SECONDS, ("rounds", "mean"), _TIME),
        vendor="kafka",
        zone_aware=True,
        how_to_run=in_kafka_python(cooperative=True),
        baseline="CooperativeStickyAssignor, the assignor Kafka's cooperative protocol comes with",
        protocol=cooperative_session,
    ),
    System(
        "kafka-consumer",
        "Kafka, consumer group protocol (KIP-848, group.protocol=consumer)",
        "the broker plans with its server-side assignor and revokes only the partitions that "
        "move, member by member, with no group-wide barrier: moves are the pauses",
        ("balance_degree", "moves", "stickiness"),
        (*_BASE_SHOWN, *_SECONDS, ("heartbeats", "mean"), _TIME),
        vendor="kafka",
        how_to_run=on_kafka_brokers,
        protocol=ConsumerSession,
        baseline="the broker's default server-side assignor, uniform (the first of "
        "group.consumer.assignors)",
    ),
    System(
        "kafka",
        "Kafka, the group protocol and its assignor chosen together",
        "a rebalance costs seconds of partitions unread: every partition until the barrier "
        "under the eager protocol, the moved ones for a second round under the cooperative "
        "one, the moved ones member by member under the consumer protocol (KIP-848)",
        # partition-seconds unread first: the eager barrier ends soonest but stops everything
        (
            "queue_seconds_unowned",
            "seconds_to_balance",
            "queue_seconds_paused",
            "balance_degree",
            "moves",
            "stickiness",
        ),
        (
            *_BASE_SHOWN,
            ("queues_paused", "mean"),
            ("seconds_to_balance", "mean"),
            ("seconds_to_balance", "p95"),
            ("queue_seconds_unowned", "mean"),
            ("queue_seconds_paused", "mean"),
            _TIME,
        ),
        vendor="kafka",
        baseline="the Java client's default, RangeAssignor under the eager protocol (eager:range)",
        pairs=KAFKA_PAIRS,
    ),
    System(
        "rocketmq-client",
        "RocketMQ, client-side rebalancing",
        "each consumer plans from its own view of the group on its own 20 s timer or the "
        "broker's notice, so only plans that ignore the previous one qualify, and while views "
        "disagree queues are read by nobody or read twice",
        _ROCKETMQ_CLIENT_CRITERIA,
        (
            *_BASE_SHOWN,
            ("seconds_to_balance", "mean"),
            ("queue_seconds_unowned", "mean"),
            ("queue_seconds_doubly_owned", "mean"),
            _TIME,
        ),
        vendor="rocketmq",
        zone_aware=True,
        how_to_run=in_rocketmq(client_side=True),
        baseline="RocketMQ's default allocation, AllocateMessageQueueAveragely",
        protocol=client_session,
    ),
    System(
        "rocketmq-broker",
        "RocketMQ, broker-side rebalancing",
        "the broker plans with the previous plan in hand, so moved queues are the cost",
        ("balance_degree", "moves", "stickiness"),
        (
            *_BASE_SHOWN,
            ("seconds_to_balance", "mean"),
            ("queue_seconds_unowned", "mean"),
            ("queue_seconds_doubly_owned", "mean"),
            _TIME,
        ),
        vendor="rocketmq",
        zone_aware=True,
        how_to_run=in_rocketmq(client_side=False),
        baseline="RocketMQ's default allocation, AllocateMessageQueueAveragely",
        protocol=broker_session,
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
        vendor="rabbitmq",
        how_to_run=in_rabbitmq,
        baseline="every consumer subscribes to every queue and none releases one, so the first "
        "subscriber is active on them all and the others idle until it leaves",
    ),
    System(
        "pulsar-failover",
        "Apache Pulsar, Failover subscription on a partitioned topic",
        "the broker picks each partition's active consumer by its own rule (priority "
        "level, then name), so the choice is the consumers' names and levels; a partition "
        "whose active consumer changes goes unread for the broker's 1 s failover delay, and "
        "a crashed consumer's until the keep-alive closes its connection, 30 to 60 s later",
        _PULSAR_CRITERIA,
        (
            *_BASE_SHOWN,
            ("queues_paused", "mean"),
            ("seconds_to_balance", "mean"),
            ("seconds_to_balance", "p95"),
            ("queue_seconds_unowned", "mean"),
            _TIME,
        ),
        vendor="pulsar",
        how_to_run=by_the_system(
            "Pulsar's broker does it itself: {native} (consumers ordered by priority level, "
            "then name).",
            "pulsar",
        ),
        baseline="the broker's own choice, which no client changes",
    ),
    System(
        "azure-event-hubs",
        "Azure Event Hubs, event processor load balancing",
        "every processor claims or steals partitions on its own 30 s cycle (the Python SDK's), "
        "so the group takes seconds to minutes to settle: queues wait unowned until claimed, and a "
        "stolen one is processed twice until its old owner's next cycle",
        _LEASE_CRITERIA,
        _LEASE_SHOWN,
        vendor="event-hubs",
        how_to_run=by_the_system(
            "The event processor does it itself: load_balancing_strategy=LoadBalancingStrategy."
            "{native} (Python; LoadBalancingStrategy.{title} in .NET, Java).",
            "event-hubs",
        ),
        baseline="the event processor's default load balancing, GREEDY (azure-eventhub 5.15.1, "
        "and the .NET and Java SDKs; the JavaScript SDK's is BALANCED)",
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
        vendor="kcl",
        how_to_run=by_the_system("The KCL does it itself: {native}.", "kcl"),
        baseline="the KCL's own lease taker, which no worker changes",
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
        zone_aware=True,
    ),
)
"""Every system as declared; SYSTEM_VERDICTS adds the placement and stability criteria."""

DECLARED_BY_NAME: dict[str, System] = {system.name: system for system in DECLARED}
"""Every system as declared, by name."""

_CROSS_ZONE = ("cross_zone_fraction", "mean")
_LOAD = ("load_ratio", "mean")

UNSTABLE = "moves_when_unchanged"
"""The last criterion of every system: queues a strategy moves when nothing changed are hand-overs
a rebalance had no reason for (Kafka's rack-aware sticky makes some: a partition balance put
outside its racks is dealt again). One that never settles is set aside instead (the glossary's
broken_at of rebalances to a fixed point)."""


def _placed(system: System) -> System:
    """`system` with the placement scores and the stability criterion: the load ratio just
    before balance (with weights, load is what balance is for), the cross-zone fraction just
    after it (KIP-881's order: balance, then racks) where its clients know zones, moves when
    unchanged last; the placement columns before the time column (last). A placement score
    counts only when the run's scores have it (the verdict's `measured`)."""
    criteria: list[str] = []
    for metric in system.criteria:
        if metric == "balance_degree":
            criteria += ["load_ratio", metric] + (
                ["cross_zone_fraction"] if system.zone_aware else []
            )
        else:
            criteria.append(metric)
    shown = system.shown
    placed_shown = (*shown[:-1], *((_CROSS_ZONE,) if system.zone_aware else ()), _LOAD, shown[-1])
    return replace(system, criteria=(*criteria, UNSTABLE), shown=placed_shown)


SYSTEM_VERDICTS: dict[str, System] = {system.name: _placed(system) for system in DECLARED}
"""The verdict's view of each system (SYSTEMS of the registry, and `any`), by name."""

_undeclared = {*SYSTEMS, ANY_SYSTEM} ^ set(SYSTEM_VERDICTS)
if _undeclared:
    raise ImportError(f"systems declared here and in the registry differ: {sorted(_undeclared)}")


def how_to_run(system: str, strategy: str) -> str | None:
    """Where the registered `strategy` plugs in on `system`, in a sentence: the adapter call, or
    the system's own class that makes the same plan, and what it needs (`Strategy.needs`); None
    where this project knows no way (a user's strategy, or `any`)."""
    declared = SYSTEM_VERDICTS[system]
    if strategy in declared.pairs:  # PROTOCOL:ASSIGNOR: how its protocol's system runs it
        return how_to_run(*declared.pairs[strategy])
    if strategy not in STRATEGIES or declared.how_to_run is None:
        return None
    how = declared.how_to_run(STRATEGIES[strategy])
    needs = STRATEGIES[strategy].needs
    return f"{how} It needs {needs}." if how and needs else how


def candidates_needs(system: System) -> dict[str, list[str]]:
    """What the system's candidates need beyond the library (`Strategy.needs`) -> the candidates
    that need it, for `rebalancing systems`."""
    needs: dict[str, list[str]] = {}
    for candidate, strategy in zip(
        system.candidates(), system.strategies(system.candidates()), strict=True
    ):
        if strategy.needs:
            needs.setdefault(strategy.needs, []).append(candidate)
    return needs


def baseline_strategy(system: str, registry: Mapping[str, Strategy] = STRATEGIES) -> str | None:
    """The registered strategy whose plan a group on `system` gets without this library (its
    `baseline_on`), or None when none is registered."""
    return next((name for name, entry in registry.items() if system in entry.baseline_on), None)


def baseline_note(
    system: System, pick: str, means: Mapping[str, Mapping[str, float | None]]
) -> str | None:
    """What changing from today's setup to `pick` gives, in a sentence: the system's baseline,
    and, when its strategy was scored beside the pick, the two's means on each deciding score
    on which they print differently (the table's means: whether a difference is more than
    noise is the verdict's reason's to say); None where the system has no baseline."""
    if not system.baseline:
        return None
    today = f"Without this library: {system.baseline}"
    name = baseline_strategy(system.name)
    if name == pick:
        return f"{today}; {pick} makes the same plan, so changing gains nothing here."
    if name is None or name not in means or pick not in means:
        return f"{today}."
    changes = []
    for metric in system.criteria:
        score = SCORES.get(metric)
        mine, theirs = means[pick].get(metric), means[name].get(metric)
        if score is None or mine is None or theirs is None:
            continue
        shown = format_value(score, mine), format_value(score, theirs)
        if shown[0] != shown[1]:
            changes.append(f"{score.label} {shown[0]} against {shown[1]}")
    if changes:
        return (
            f"{today} ({name} in the table). Changing to {pick} gives, in means: "
            f"{', '.join(changes)}."
        )
    return f"{today} ({name} in the table), level with {pick} on every deciding score."


def kafka_only(system: str) -> str:
    """Why static membership (`--static-membership`) is refused on `system`: it is Kafka's."""
    kafka = " or ".join(name for name, each in SYSTEM_VERDICTS.items() if each.vendor == "kafka")
    return f"Kafka's group.instance.id, only with --system {kafka}, not --system {system}"
