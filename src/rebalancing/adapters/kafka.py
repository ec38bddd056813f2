"""Plug any strategy into a Kafka consumer group: partition assignors for kafka-python and
aiokafka.

    consumer = KafkaConsumer("orders", group_id="workers",
                             partition_assignment_strategy=[kafka_python_assignor("sticky")])
    consumer = AIOKafkaConsumer("orders", group_id="workers",
                                partition_assignment_strategy=(aiokafka_assignor("sticky"),))

`strategy` is a registered name or `package.module:function` (rebalancing.strategies.resolve);
the queues it sees are `(topic, partition)` pairs and the consumers are member ids, or for a
static member (kafka-python's `group_instance_id`, KIP-345) its group.instance.id, which its
consumer keeps across restarts while the broker gives it a new member id each time (aiokafka
0.14 does not hand instance ids to its assignors: there every member is planned under its
member id). The group's
leader runs it with the previous plan, which every member sends in its subscription's user data
the way Kafka's StickyAssignor does (owned partitions and generation, StickyAssignorUserData
v1); stale members own nothing. Members with different subscriptions are planned per topic.
The rules are in rebalancing.adapters.kafka_plan; the clients' interfaces, and how they
differ, in rebalancing.adapters.kafka_python and rebalancing.adapters.kafka_aiokafka. A protocol
strategy (sac, sac_spec) runs through its stateless `assign`: what a Kafka group carries from
one generation to the next is the owners, not the protocol's session state (its FIFOs).

Zones and weights (KIP-881; rebalancing.placement), for a strategy that declares it reads them
(`Strategy.uses`): with kafka-python, each member's `client_rack` (give the assignor the
consumer's own) reaches the leader in its subscription (version 3, rack_id) and becomes its
zone, and the partitions' replica racks come from the cluster metadata; aiokafka 0.14 carries
neither (rebalancing.adapters.kafka_aiokafka), so there a zone strategy plans without zones, with
a warning when its assignor is made. Weights (lag, bytes/s) come from the user, through a hook
`weights=lambda partitions: {...}` the leader calls at each rebalance with the partitions it
assigns (sorted `(topic, partition)` pairs); what it returns is checked by placement's rules
(a finite weight >= 0 for every partition, errors naming the partition). A hook for a strategy
that reads no weights is refused (it would be ignored). Capacities are not passed: a member's
capacity has no field in Kafka's protocol.

Each client is imported only when its assignor is made, so this module imports with neither
installed (they come with the `kafka` extra). Every member of a group must use the same
strategy under the same protocol name: the default name is `rebalancing-<strategy>` (the
cooperative variant: `rebalancing-cooperative-<strategy>`), distinct from kafka-python's own
"sticky", so a group that mixes them picks one protocol all members support, or refuses.
`cooperative_sticky`, named after Kafka's CooperativeStickyAssignor, is sticky under the
cooperative protocol: the same assignor and name as `("sticky", cooperative=True)`; aiokafka,
eager only, refuses it rather than run it eagerly.
Runtime complexity: resolving the strategy, O(1) otherwise.
"""

from __future__ import annotations

import warnings
from typing import Any

from rebalancing.adapters.kafka_plan import WeightsHook, as_strategy
from rebalancing.placement import ZONE_INPUTS
from rebalancing.strategies import STRATEGIES, Strategy

COOPERATIVE_PROTOCOLS = {"cooperative_sticky": "sticky"}
"""Registered strategies that are Kafka's cooperative protocol (KIP-429) over another one's
plans -> that other one: `cooperative_sticky` is Kafka's CooperativeStickyAssignor, sticky's
plan reached in two rebalances. In a Kafka group the client runs the protocol, so the name
stands for the plain strategy under the client's cooperative protocol."""


def kafka_python_assignor(
    strategy: str | Strategy = "sticky",
    *,
    cooperative: bool | None = None,
    name: str | None = None,
    client_rack: str | None = None,
    weights: WeightsHook | None = None,
) -> Any:
    """A kafka-python AbstractPartitionAssignor instance running `strategy`, one per consumer.

    `cooperative=True` gives the variant for kafka-python's COOPERATIVE protocol (KIP-429): a
    partition that moves is first revoked by its owner and assigned in the next rebalance. The
    consumer then rebalances cooperatively, so all its assignors must support it. A cooperative
    protocol strategy (`cooperative_sticky`) is that variant of its plain strategy, the same
    assignor under the same protocol name as `("sticky", cooperative=True)`; asking for it with
    `cooperative=False` is a ValueError that names the eager call. ValueError also when
    `strategy` does not resolve (the message says what was tried).

    `client_rack`: this member's rack, the value given to its KafkaConsumer's own
    `client_rack` (kafka-python does not show an assignor its consumer's config); "" for none
    (None, the default, is none too, with a UserWarning when the strategy reads zones: most
    likely forgotten). `weights`: a hook the leader calls with the partitions to assign,
    returning each one's weight (module docstring); ValueError when the strategy reads no
    weights; without it a strategy that reads weights weighs every partition 1, with a
    UserWarning.
    """
    from rebalancing.adapters import kafka_python  # kafka-python is optional

    chosen = as_strategy(strategy)
    _refuse_unread_weights(chosen, weights)
    _warn_unsupplied_facts(chosen, client_rack, weights)
    plain = _plain_strategy_of(chosen)
    if plain is not None:
        if cooperative is False:
            raise ValueError(
                f"strategy {chosen.name!r} is Kafka's cooperative protocol and cannot run "
                f"eagerly: for the same plans under the eager protocol, use "
                f"kafka_python_assignor({plain.name!r})"
            )
        chosen, cooperative = plain, True
    cooperative = bool(cooperative)
    default = f"rebalancing-{'cooperative-' if cooperative else ''}{chosen.name}"
    return kafka_python.StrategyAssignor(
        chosen,
        name=name or default,
        cooperative=cooperative,
        client_rack=client_rack,
        weights=weights,
    )


def aiokafka_assignor(
    strategy: str | Strategy = "sticky",
    *,
    name: str | None = None,
    weights: WeightsHook | None = None,
) -> Any:
    """A new aiokafka AbstractPartitionAssignor class running `strategy`, one per consumer.

    aiokafka calls its assignors' classmethods, so the member's state lives on the class: call
    this once per consumer. ValueError when `strategy` does not resolve, and for a cooperative
    protocol strategy (`cooperative_sticky`): aiokafka 0.14 rebalances eagerly only, and an
    eager assignor under that name would silently stop the world at every rebalance.
    `weights` as for kafka_python_assignor (without it, a strategy that reads weights weighs
    every partition 1, with a UserWarning). A strategy that reads zones plans without them
    here (aiokafka carries no rack: rebalancing.adapters.kafka_aiokafka): a UserWarning says so.
    """
    from rebalancing.adapters import kafka_aiokafka  # aiokafka is optional

    chosen = as_strategy(strategy)
    _refuse_unread_weights(chosen, weights)
    _warn_unsupplied_facts(chosen, "", weights)  # "": zones have their own warning below
    plain = _plain_strategy_of(chosen)
    if plain is not None:
        raise ValueError(
            f"strategy {chosen.name!r} is Kafka's cooperative protocol, and aiokafka 0.14 "
            f"rebalances eagerly only: use aiokafka_assignor({plain.name!r}) for the same "
            f"plans eagerly, or kafka_python_assignor({chosen.name!r}) for the cooperative "
            "protocol"
        )
    if chosen.uses & ZONE_INPUTS:
        warnings.warn(
            f"strategy {chosen.name!r} reads zones, which aiokafka 0.14 cannot give (no rack_id "
            "in its subscription, no replicas in its public cluster metadata): it plans as if no "
            "member and no partition had a rack; kafka_python_assignor passes them",
            UserWarning,
            stacklevel=2,
        )
    return kafka_aiokafka.assignor_class(chosen, name or f"rebalancing-{chosen.name}", weights)


def _warn_unsupplied_facts(
    strategy: Strategy, client_rack: str | None, weights: WeightsHook | None
) -> None:
    """A UserWarning for each fact the strategy reads that the assignor was not given: it would
    plan without it, as the plain strategy would, and nothing else would say so."""
    if "consumer_zones" in strategy.uses and client_rack is None:
        warnings.warn(
            f"strategy {strategy.name!r} reads zones, but this assignor was given no client_rack: "
            "this member has no zone (pass the consumer's own client_rack, or client_rack='' "
            "for a member with none)",
            UserWarning,
            stacklevel=3,
        )
    if "weights" in strategy.uses and weights is None:
        warnings.warn(
            f"strategy {strategy.name!r} reads weights, but this assignor was given no weights "
            "hook: every partition weighs 1 (pass weights=a function of the partitions, e.g. "
            "their lag)",
            UserWarning,
            stacklevel=3,
        )


def _refuse_unread_weights(strategy: Strategy, weights: WeightsHook | None) -> None:
    """TypeError for a weights hook that is not callable, ValueError for one given to a
    strategy that reads no weights (it would be ignored, and nobody would notice)."""
    if weights is None:
        return
    if not callable(weights):
        raise TypeError(
            f"weights must be a callable (partitions -> weight per partition) or None, not "
            f"{type(weights).__name__}"
        )
    if "weights" not in strategy.uses:
        readers = ", ".join(name for name, known in STRATEGIES.items() if "weights" in known.uses)
        raise ValueError(
            f"strategy {strategy.name!r} reads no weights, so the weights hook would be "
            f"ignored; strategies that read them: {readers}"
        )


def _plain_strategy_of(strategy: Strategy) -> Strategy | None:
    """The plain strategy a registered cooperative protocol runs (COOPERATIVE_PROTOCOLS), None
    for any other strategy (a user's own function of the same name included)."""
    plain = COOPERATIVE_PROTOCOLS.get(strategy.name)
    if plain is None or strategy != STRATEGIES.get(strategy.name):
        return None
    return STRATEGIES[plain]
