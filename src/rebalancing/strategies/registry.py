"""The registry: strategy name -> Strategy (name, `assign`, one line of origin, session hook).

Adding a strategy is one module in this package plus one line in STRATEGIES; the conformance
checks (rebalancing.testing), the scoring core and the command lines pick it up from there. A
protocol strategy, whose state outlives one rebalance, also gives `open_session`: the scoring
core runs it through one session per scenario and reports the protocol's cost.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from types import MappingProxyType
from typing import Any

from rebalancing.contract import (
    AssignFunction,
    ConsumerT,
    QueueT,
    StrategySession,
    shortened_repr,
)
from rebalancing.placement import INPUTS, PROMISES
from rebalancing.strategies import (
    averagely,
    bounded_consistent_hash,
    consistent_hash,
    cooperative_sticky,
    event_hubs,
    kcl,
    lag_greedy,
    largest_differencing,
    machine_room,
    pulsar_failover,
    rack_aware_range,
    rack_aware_sticky,
    round_robin,
    sac,
    server_range,
    sticky,
    super_stream,
    uniform,
    weighted_sticky,
)

SYSTEMS: Mapping[str, str] = MappingProxyType(
    {
        "kafka-eager": "Kafka consumer group, eager rebalance protocol (a client-side assignor)",
        "kafka-cooperative": "Kafka consumer group, cooperative rebalance protocol (KIP-429)",
        "kafka-consumer": "Kafka 4 consumer group protocol (KIP-848): the broker assigns",
        "kafka": "Kafka consumer group, the protocol and its assignor chosen together",
        "rocketmq-client": "RocketMQ, each consumer computes the plan from its own view",
        "rocketmq-broker": "RocketMQ, the broker computes the plan (and knows the previous one)",
        "rabbitmq-sac": "RabbitMQ single active consumer (queues, or a super stream's partitions)",
        "pulsar-failover": "Apache Pulsar, Failover subscription on a partitioned topic",
        "azure-event-hubs": "Azure Event Hubs, event processors balancing partition ownership",
        "aws-kcl": "AWS Kinesis Client Library 2.x, workers taking and stealing shard leases",
    }
)
"""The systems a strategy can run on, with what they are. A strategy declares its own; one whose
plan ignores `previous` can run client-side."""

VENDORS: tuple[str, ...] = ("kafka", "rocketmq", "rabbitmq", "pulsar", "event-hubs", "kcl")
"""Whose systems SYSTEMS names: the keys of Strategy.native, and each system declaration's vendor
(rebalancing.evaluation.decision.systems)."""

_WHERE_A_FUNCTION_RUNS = frozenset({"kafka-eager", "kafka-cooperative", "rocketmq-broker"})
"""Not kafka-consumer: under KIP-848 the broker assigns, with the Java assignors configured in
`group.consumer.assignors` (ConsumerGroupPartitionAssignor), and a client has no assignor to
plug in; only Kafka's own server-side assignors, transcribed here, run there."""


@dataclass(frozen=True)
class Strategy:
    """A strategy as the registry and the scoring core see it.

    `assign` is the stateless contract function; `open_session`, for protocol strategies only,
    starts a new group's session: `open_session(seed=...)` with the scenario's seed, for any
    random choice the protocol makes (its `rebalance(queues, consumers)` returns a ProtocolRun).
    `client_side` says that the plan does not depend on `previous`, so each consumer of a group
    can compute it on its own, as classic RocketMQ clients do
    (rebalancing.evaluation.scenarios.views).
    `systems` names where it can run (keys of SYSTEMS): by default, for a plain function, as a
    Kafka assignor under either protocol (the adapters run any plan cooperatively) and on a
    RocketMQ broker, and client-side too when `client_side`; a protocol strategy (one with a
    session) runs only where it says.
    `uses` names the extra inputs `assign` reads, as keyword-only arguments (a subset of
    rebalancing.placement.INPUTS: consumer_zones, queue_zones, weights, capacities); `assign`
    must accept each of them, and is called with only those (`inputs_for`). `promises` names
    what it promises about them (keys of rebalancing.placement.PROMISES), which
    rebalancing.testing.check_strategy checks. Both empty: a strategy of ids alone.
    `native` names, per vendor of SYSTEMS ("kafka", "rocketmq", "rabbitmq", "pulsar",
    "event-hubs", "kcl"), what that system ships that makes the same plan: a class, or the
    setting that picks it (the verdict's how-to-run line says so). `settings` are the keyword
    arguments that make this strategy of its module's session and of the adapter that runs it
    (SAC's release policy: GroupMember(release=...)). `by_default`: scored when the command
    lines are not told which strategies (DEFAULT_STRATEGIES). `compiled_twin`: the scoring
    core's kernel engine runs a compiled copy of `assign` (the same plans) on most steps, and
    `assign` itself, timed, on a seeded sample: its measured time is always `assign`'s.
    `needs`: what running it needs beyond this library, in a phrase (a broker version, the
    adapter in each app); empty when nothing. `baseline_on`: the systems (keys of SYSTEMS) where
    its plan is what a group gets without this library, by the system's default; the verdict
    compares the pick with it there.
    A Strategy is called as its `assign`: `STRATEGIES["sticky"](queues, consumers, previous)`.
    """

    name: str
    assign: AssignFunction
    origin: str
    open_session: Callable[..., StrategySession] | None = None
    client_side: bool = False
    systems: frozenset[str] | None = None
    uses: frozenset[str] = frozenset()
    promises: frozenset[str] = frozenset()
    native: Mapping[str, str] = field(default_factory=dict, hash=False)
    settings: Mapping[str, Any] = field(default_factory=dict, hash=False)
    by_default: bool = True
    compiled_twin: bool = False
    needs: str = ""
    baseline_on: frozenset[str] = frozenset()

    def __call__(
        self,
        queues: Iterable[QueueT],
        consumers: Iterable[ConsumerT],
        previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
        **inputs: Any,
    ) -> dict[ConsumerT, list[QueueT]]:
        """`assign(queues, consumers, previous, **inputs)`: a Strategy stands wherever a
        function does; `inputs` are passed as they are (see `inputs_for` to pick them)."""
        assign: Callable[..., dict[ConsumerT, list[QueueT]]] = self.assign
        return assign(queues, consumers, previous, **inputs)

    def inputs_for(self, available: Mapping[str, Any]) -> dict[str, Any]:
        """The entries of `available` (input name -> value) that this strategy declares in
        `uses` and that are not None: what a caller holding every fact passes it."""
        return {
            name: value
            for name, value in available.items()
            if name in self.uses and value is not None
        }

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"a strategy needs a non-empty name, got {self.name!r}")
        if not callable(self.assign):
            raise TypeError(f"strategy {self.name!r}: assign must be callable")
        if self.open_session is not None and not callable(self.open_session):
            raise TypeError(f"strategy {self.name!r}: open_session must be callable or None")
        if self.systems is None:
            derived = (
                frozenset()
                if self.open_session is not None
                else _WHERE_A_FUNCTION_RUNS | ({"rocketmq-client"} if self.client_side else set())
            )
            object.__setattr__(self, "systems", derived)
        unknown = sorted((set(self.systems or ()) | set(self.baseline_on)) - set(SYSTEMS))
        if unknown:
            raise ValueError(
                f"strategy {self.name!r}: unknown systems {unknown}; known: {', '.join(SYSTEMS)}"
            )
        unknown_vendors = sorted(set(self.native) - set(VENDORS))
        if unknown_vendors:
            raise ValueError(
                f"strategy {self.name!r}: unknown vendors {unknown_vendors} in native; "
                f"known: {', '.join(VENDORS)}"
            )
        object.__setattr__(self, "native", MappingProxyType(dict(self.native)))
        object.__setattr__(self, "settings", MappingProxyType(dict(self.settings)))
        object.__setattr__(self, "uses", frozenset(self.uses))
        object.__setattr__(self, "promises", frozenset(self.promises))
        object.__setattr__(self, "baseline_on", frozenset(self.baseline_on))
        for declared, known, what in (
            (self.uses, INPUTS, "inputs"),
            (self.promises, PROMISES, "promises"),
        ):
            strangers = sorted(declared - set(known))
            if strangers:
                raise ValueError(
                    f"strategy {self.name!r}: unknown {what} {strangers}; "
                    f"known: {', '.join(sorted(known))}"
                )
        not_accepted = sorted(self.uses - _keywords_accepted(self.assign))
        if not_accepted:
            raise ValueError(
                f"strategy {self.name!r} declares {not_accepted} in uses, but its assign "
                "does not accept them as keyword arguments"
            )


def _keywords_accepted(function: Callable[..., Any]) -> frozenset[str]:
    """The input names (rebalancing.placement.INPUTS) `function` accepts by keyword: all of
    them when it takes **keywords or has no signature to read."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return INPUTS
    if any(parameter.kind is inspect.Parameter.VAR_KEYWORD for parameter in parameters):
        return INPUTS
    keyword_kinds = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return frozenset(parameter.name for parameter in parameters if parameter.kind in keyword_kinds)


class UnknownStrategyError(KeyError):
    """A name the registry does not hold: a KeyError (what a Mapping's readers expect) whose
    message lists the known names and suggests the closest one."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""  # KeyError's own would show the repr


class Registry(Mapping[str, Strategy]):
    """The registered strategies by name, read-only, in registration order; a lookup of an
    unknown name raises UnknownStrategyError listing the known ones."""

    def __init__(self, *strategies: Strategy) -> None:
        self._by_name = {strategy.name: strategy for strategy in strategies}

    def __getitem__(self, name: str) -> Strategy:
        try:
            return self._by_name[name]
        except (KeyError, TypeError):  # TypeError: an unhashable name
            hint = known_names_hint(name, self._by_name)
            raise UnknownStrategyError(
                f"unknown strategy {shortened_repr(name)} ({hint})"
            ) from None

    def __contains__(self, name: object) -> bool:
        try:
            return name in self._by_name
        except TypeError:
            return False

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)

    def __repr__(self) -> str:
        return f"Registry({', '.join(self._by_name)})"


def known_names_hint(name: object, known: Iterable[str]) -> str:
    """ "did you mean 'sticky'? known: averagely, ..." for a name the registry lacks: the closest
    known name (difflib), when one is close, then every known name."""
    names = list(known)
    close = difflib.get_close_matches(name, names, n=1) if isinstance(name, str) else []
    suggestion = f"did you mean {close[0]!r}? " if close else ""
    return f"{suggestion}known: {', '.join(names)}"


def _sac(
    name: str, assign: AssignFunction, origin: str, variant: str, release: str, **more: Any
) -> Strategy:
    """A SAC strategy: its session and its group member (rebalancing.adapters.rabbitmq)
    release a queue by the same policy, named once."""
    return Strategy(
        name,
        assign,
        origin,
        open_session=partial(sac.Session, variant=variant, release=release),
        settings={"release": release},
        needs="the group member in each app (rebalancing.adapters.rabbitmq.GroupMember, the "
        "rabbitmq extra) on classic or quorum queues with single active consumer",
        **more,
    )


_ZONES = frozenset({"consumer_zones", "queue_zones"})
_LOADS = frozenset({"weights", "capacities"})
_ROCKETMQ = frozenset({"rocketmq-client", "rocketmq-broker"})
_KAFKA_CONSUMER = frozenset({"kafka-consumer"})  # the broker's Java assignors, only there

STRATEGIES: Mapping[str, Strategy] = Registry(
    Strategy(
        "averagely",
        averagely.assign,
        "RocketMQ AllocateMessageQueueAveragely",
        client_side=True,
        native={
            "kafka": "RangeAssignor (the same plan for one topic)",
            "rocketmq": "AllocateMessageQueueAveragely",
        },
        compiled_twin=True,
        # Kafka's default assignor (RangeAssignor, first in the Java client's and kafka-python's
        # defaults) and RocketMQ's default allocation strategy
        baseline_on=frozenset({"kafka-eager", "rocketmq-client", "rocketmq-broker"}),
    ),
    Strategy(
        "round_robin",
        round_robin.assign,
        "RocketMQ AllocateMessageQueueAveragelyByCircle, Kafka RoundRobinAssignor",
        client_side=True,
        native={
            "kafka": "RoundRobinAssignor",
            "rocketmq": "AllocateMessageQueueAveragelyByCircle",
        },
    ),
    Strategy(
        "sticky",
        sticky.assign,
        "RocketMQ sticky rebalancing report, Kafka StickyAssignor",
        # under the cooperative protocol sticky is cooperative_sticky
        systems=frozenset({"kafka-eager", "rocketmq-broker"}),
        native={"kafka": "StickyAssignor"},
        compiled_twin=True,
    ),
    Strategy(
        "cooperative_sticky",
        cooperative_sticky.assign,
        "Kafka CooperativeStickyAssignor (KIP-429): sticky's plan in two rebalances",
        open_session=cooperative_sticky.Session,
        systems=frozenset({"kafka-cooperative"}),
        native={"kafka": "CooperativeStickyAssignor"},
        baseline_on=frozenset({"kafka-cooperative"}),  # the assignor the protocol comes with
    ),
    Strategy(
        "uniform",
        uniform.assign,
        "Kafka's server-side UniformAssignor (KIP-848), homogeneous builder: quotas, keep, deal",
        systems=_KAFKA_CONSUMER,
        native={"kafka": "uniform"},
        by_default=False,
        baseline_on=_KAFKA_CONSUMER,
    ),
    Strategy(
        "server_range",
        server_range.assign,
        "Kafka's server-side RangeAssignor (KIP-848, rewritten by KAFKA-16944): not sticky",
        systems=_KAFKA_CONSUMER,
        native={"kafka": "range"},
        by_default=False,
    ),
    Strategy(
        "consistent_hash",
        consistent_hash.assign,
        "RocketMQ AllocateMessageQueueConsistentHash",
        client_side=True,
        native={"rocketmq": "AllocateMessageQueueConsistentHash"},
        compiled_twin=True,
    ),
    Strategy(
        "bounded_consistent_hash",
        bounded_consistent_hash.assign,
        "Consistent hashing with bounded loads (Mirrokni, Thorup, Zadimoghaddam 2016), tight",
        client_side=True,
        compiled_twin=True,
    ),
    Strategy(
        "super_stream",
        super_stream.assign,
        "RabbitMQ streams, single active consumer on a super stream (join order)",
        open_session=super_stream.Session,
        systems=frozenset({"rabbitmq-sac"}),
        native={"rabbitmq": "single active consumer on a super stream"},
        needs="streams: RabbitMQ 3.11 or later (Debian 12's rabbitmq-server is 3.10)",
    ),
    Strategy(
        "pulsar_failover",
        pulsar_failover.assign,
        "Apache Pulsar, Failover subscription on a partitioned topic (name order, one level)",
        open_session=pulsar_failover.Session,
        systems=frozenset({"pulsar-failover"}),
        native={"pulsar": "a Failover subscription on a partitioned topic"},
        baseline_on=frozenset({"pulsar-failover"}),
        by_default=False,
    ),
    Strategy(
        "event_hubs_balanced",
        event_hubs.assign_balanced,
        "Azure Event Hubs event processor, balanced load balancing (one claim per 30 s cycle)",
        open_session=partial(event_hubs.Session, "balanced"),
        systems=frozenset({"azure-event-hubs"}),
        native={"event-hubs": "BALANCED"},
        by_default=False,
    ),
    Strategy(
        "event_hubs_greedy",
        event_hubs.assign_greedy,
        "Azure Event Hubs event processor, greedy load balancing (its whole share per cycle)",
        open_session=partial(event_hubs.Session, "greedy"),
        systems=frozenset({"azure-event-hubs"}),
        native={"event-hubs": "GREEDY"},
        baseline_on=frozenset({"azure-event-hubs"}),  # the Python, .NET and Java default
        by_default=False,
    ),
    Strategy(
        "kcl",
        kcl.assign,
        "AWS KCL 2.x lease taker: expired leases up to target, one steal per 20 s run",
        open_session=kcl.Session,
        systems=frozenset({"aws-kcl"}),
        native={"kcl": "every worker's lease taker (LeaseManagementConfig)"},
        baseline_on=frozenset({"aws-kcl"}),
        by_default=False,
    ),
    _sac(
        "sac",
        sac.assign,
        "RabbitMQ single active consumer, leaderless release (ties by start id, releases the "
        "highest queue)",
        variant="id",
        release="highest",
        systems=frozenset({"rabbitmq-sac"}),
    ),
    _sac(
        "sac_spec",
        sac.assign_spec_position,
        "RabbitMQ single active consumer, leaderless release (Position as the spec writes it)",
        variant="spec",
        release="highest",
        by_default=False,
    ),
    _sac(
        "sac_newest",
        sac.assign_newest,
        "RabbitMQ single active consumer, leaderless release (releases the queue it got last)",
        variant="id",
        release="newest",
        systems=frozenset({"rabbitmq-sac"}),
    ),
    _sac(
        "sac_random",
        sac.assign_random,
        "RabbitMQ single active consumer, leaderless release (releases a random queue)",
        variant="id",
        release="random",
        systems=frozenset({"rabbitmq-sac"}),
    ),
    Strategy(
        "rack_aware_range",
        rack_aware_range.assign,
        "Kafka RangeAssignor, rack-aware (KIP-881): per topic, balance, then racks",
        client_side=True,
        uses=_ZONES,
        promises=frozenset({"zone_matching_per_topic"}),
    ),
    Strategy(
        "rack_aware_sticky",
        rack_aware_sticky.assign,
        "Kafka StickyAssignor, rack-aware (KIP-881): balance, then racks, then stickiness",
        uses=_ZONES,
        promises=frozenset({"balanced", "zone_matching"}),
    ),
    Strategy(
        "machine_room_nearby",
        machine_room.Nearby(averagely.assign),
        "RocketMQ AllocateMachineRoomNearby around AllocateMessageQueueAveragely",
        client_side=True,
        native={
            "rocketmq": "AllocateMachineRoomNearby around AllocateMessageQueueAveragely, "
            "whose plans differ where rebalancing.strategies.machine_room says"
        },
        systems=_ROCKETMQ,
        uses=_ZONES,
        promises=frozenset({"zone_matching"}),
    ),
    Strategy(
        "machine_room_nearby_lag",
        machine_room.Nearby(lag_greedy.assign),
        "RocketMQ AllocateMachineRoomNearby around lag_greedy: zones first, then load",
        client_side=True,
        systems=_ROCKETMQ,
        uses=_ZONES | _LOADS,
        promises=frozenset({"zone_matching"}),
    ),
    Strategy(
        "by_machine_room",
        machine_room.ByMachineRoom(),
        "RocketMQ AllocateMessageQueueByMachineRoom (the rooms of the group's consumers first)",
        client_side=True,
        native={
            "rocketmq": "AllocateMessageQueueByMachineRoom, whose plans differ where "
            "rebalancing.strategies.machine_room says"
        },
        systems=_ROCKETMQ,
        uses=_ZONES,
    ),
    Strategy(
        "lag_greedy",
        lag_greedy.assign,
        "Largest weight first to the least-loaded consumer (Graham's LPT, 1969)",
        client_side=True,
        uses=_LOADS,
        promises=frozenset({"bounded_load"}),
    ),
    Strategy(
        "weighted_sticky",
        weighted_sticky.assign,
        "Sticky by load: keep previous queues within a fair share, then LPT",
        uses=_LOADS,
        promises=frozenset({"bounded_load"}),
    ),
    Strategy(
        "largest_differencing",
        largest_differencing.assign,
        "Karmarkar-Karp largest differencing method, m-way (1982)",
        client_side=True,
        uses=frozenset({"weights"}),
        promises=frozenset({"bounded_load"}),
    ),
)


def runs_on(strategy: Strategy, carried: Collection[str]) -> bool:
    """Whether the scenarios of a run, carrying the inputs `carried` (names of INPUTS), give
    `strategy` every input it reads, capacities aside (none is drawn, and without them every
    consumer's capacity is 1, which is what they then mean). A strategy that reads zones or
    weights the scenarios do not carry is a plain strategy again (rack_aware_range is range,
    lag_greedy deals queues round the consumers), so it would only repeat others' rows."""
    return strategy.uses - {"capacities"} <= set(carried)


def default_strategies(carried: Collection[str] = ()) -> tuple[str, ...]:
    """What the command lines score when not told, for scenarios carrying the inputs `carried`:
    DEFAULT_STRATEGIES, and the strategies reading zones or weights that `runs_on` them."""
    return tuple(
        name
        for name, strategy in STRATEGIES.items()
        if strategy.by_default and runs_on(strategy, carried)
    )


DEFAULT_STRATEGIES: tuple[str, ...] = default_strategies()
"""What the command lines score when not told and the scenarios carry neither zones nor
weights: all but `sac_spec`, which under the round
schedule always equals `sac` (releases go in start-id order and are re-checked after each one,
which reproduces the id tie-break), so it would only double the most expensive strategy's cost;
and `pulsar_failover`, whose plan is round_robin's and which only Pulsar runs (`--system
pulsar-failover` scores it, as does naming it); the Event Hubs and KCL protocols likewise
(`--system azure-event-hubs`, `--system aws-kcl`), which only their systems run, and whose
simulated cycles cost far more than a plan; Kafka's server-side `uniform` and `server_range`,
which only the broker runs under the consumer protocol (`--system kafka-consumer`), the latter
with rack_aware_range's plan when there are no zones; and the strategies that read zones or weights
(`uses`), which `default_strategies` adds when the scenarios carry them (`runs_on`)."""


def resolve(name: str) -> Strategy:
    """The strategy a name stands for: a registered name, or `package.module:function` for a
    strategy of your own (an `assign` function, or a Strategy object, importable on this path).

    ValueError says what was tried when the name resolves to nothing.
    """
    if name in STRATEGIES:
        return STRATEGIES[name]
    module_name, colon, attribute = name.partition(":")
    if not colon:
        raise ValueError(
            f"unknown strategy {shortened_repr(name)}: not a registered name "
            f"({known_names_hint(name, STRATEGIES)}) and not of the form package.module:function"
        )
    if not module_name or not attribute or module_name.startswith("."):
        raise ValueError(
            f"strategy {shortened_repr(name)}: expected package.module:function, an absolute "
            "module name "
            "and a function name"
        )
    try:
        module = importlib.import_module(module_name)
    except Exception as error:  # a user's module may fail to import in any way: say how
        hint = ""
        if isinstance(error, ModuleNotFoundError) and error.name == module_name.split(".")[0]:
            hint = (
                "; is the folder that holds it on PYTHONPATH? The installed `rebalancing` "
                "command does not look in the current directory: PYTHONPATH=. does"
            )
        raise ValueError(
            f"strategy {shortened_repr(name)}: could not import module "
            f"{shortened_repr(module_name)} ({type(error).__name__}: {error}){hint}"
        ) from error
    found = getattr(module, attribute, None)
    if isinstance(found, Strategy):
        return found
    if found is None or not callable(found):
        raise ValueError(f"strategy {name!r}: module {module_name!r} has no function {attribute!r}")
    return Strategy(name, found, f"{module_name}:{attribute}")


def select(names: str) -> tuple[Strategy, ...]:
    """Strategies from a comma-separated list of names (see `resolve`); ValueError names the
    ones that resolve to nothing."""
    chosen = tuple(name.strip() for name in names.split(",") if name.strip())
    if not chosen:
        raise ValueError(f"no strategy given; known: {', '.join(STRATEGIES)}")
    resolved: list[Strategy] = []
    problems: list[str] = []
    for name in chosen:
        try:
            resolved.append(resolve(name))
        except ValueError as error:
            problems.append(str(error))
    if problems:
        raise ValueError("; ".join(problems))
    return tuple(resolved)
