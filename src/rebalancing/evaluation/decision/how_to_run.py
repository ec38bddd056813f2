"""How a candidate runs on each system, in a sentence for the verdict (System.how_to_run): the
adapter to use in kafka-python or RabbitMQ, the broker-side assignor Kafka's consumer protocol
names, RocketMQ's own class or the module to port where the plan is made, or the setting a system
that plans by itself takes."""

from __future__ import annotations

from collections.abc import Callable

from rebalancing.strategies import Strategy


def module_of(strategy: Strategy) -> str:
    """The module of a strategy's code: its function's, or its callable object's class's
    (machine_room_nearby is a machine_room.Nearby)."""
    module = getattr(strategy.assign, "__module__", None) or type(strategy.assign).__module__
    return str(module)


def in_kafka_python(cooperative: bool) -> Callable[[Strategy], str]:
    """How a strategy runs in kafka-python: the adapter's assignor, with the facts it reads
    (client_rack, a weights hook), and Kafka's own class where one makes the same plan."""

    def how(strategy: Strategy) -> str:
        # an assignor that is cooperative by itself (a session, KIP-429) needs no flag
        flag = ", cooperative=True" if cooperative and strategy.open_session is None else ""
        built_in = strategy.native.get("kafka")
        own = f"; Kafka's own {built_in} follows the same rules" if built_in else ""
        given = [
            (argument, meaning)
            for fact, argument, meaning in (
                ("consumer_zones", "client_rack=RACK", "RACK the consumer's own client_rack"),
                ("weights", "weights=LAG", "LAG a function giving each partition's lag"),
            )
            if fact in strategy.uses
        ]
        facts = "".join(f", {argument}" for argument, _ in given)
        where = (
            f", {' and '.join(meaning for _, meaning in given)} (the Kafka guide: Zones and "
            "weights)"
            if given
            else ""
        )
        return (
            "In kafka-python: partition_assignment_strategy=["
            f"kafka_python_assignor({strategy.name!r}{flag}{facts})] "
            f"(rebalancing.adapters.kafka){where}{own}."
        )

    return how


def on_kafka_brokers(strategy: Strategy) -> str | None:
    """The broker's own assignor under the consumer protocol: a client names it; a strategy of
    this library cannot run there (a broker-side assignor is a Java class)."""
    built_in = strategy.native.get("kafka")
    if strategy.open_session is not None or built_in not in ("uniform", "range"):
        return None
    return (
        f"Set group.protocol=consumer and group.remote.assignor={built_in} on the consumers "
        "(the broker's group.consumer.assignors must list it; uniform is its default)."
    )


def in_rocketmq(client_side: bool) -> Callable[[Strategy], str]:
    """RocketMQ's own class, else the module to port, for a plan made on every client
    (`client_side`) or on the broker (apache/rocketmq's QueryAssignmentProcessor: two strategies,
    no previous plan)."""
    if type(client_side) is not bool:
        raise TypeError(f"client_side must be True or False, not {client_side!r}")
    served = ("AllocateMessageQueueAveragely", "AllocateMessageQueueAveragelyByCircle")

    def how(strategy: Strategy) -> str:
        built_in, module = strategy.native.get("rocketmq"), module_of(strategy)
        port = f"port {module} (its docstring gives the algorithm) to an "
        port += "AllocateMessageQueueStrategy"
        if client_side:
            ported = f"RocketMQ has no {strategy.name}: {port} on every client."
            return f"RocketMQ ships it: {built_in}." if built_in else ported
        via = "consumers calling setClientRebalance(false) and setAllocateMessageQueueStrategy with"
        if built_in in served:
            return f"RocketMQ's broker plans with it for {via} {built_in}."
        kept = "" if strategy.client_side else " that keeps the last plan (allocate() gets none)"
        plan = f"use RocketMQ's client-side {built_in}" if built_in else f"{port}{kept}"
        return (
            f"RocketMQ's broker plans only with {' and '.join(served)}, which its "
            "QueryAssignmentProcessor registers by name (no setting adds one): in a build of your "
            f"broker, {plan}, and register it there, for {via} a strategy of the same getName()."
        )

    return how


def in_rabbitmq(strategy: Strategy) -> str | None:
    """The group member with the strategy's release policy, or what RabbitMQ does itself."""
    if "release" in strategy.settings:
        return (
            "In each app: rebalancing.adapters.rabbitmq.GroupMember(..., "
            f"release={strategy.settings['release']!r})."
        )
    if "rabbitmq" in strategy.native:
        return f"RabbitMQ streams do it themselves: {strategy.native['rabbitmq']}."
    return None


def by_the_system(sentence: str, vendor: str) -> Callable[[Strategy], str | None]:
    """A system that makes the plan itself: `sentence` with the strategy's setting there
    (`{native}`, and `{title}`, the same in title case)."""

    def how(strategy: Strategy) -> str | None:
        native = strategy.native.get(vendor)
        return sentence.format(native=native, title=native.title()) if native else None

    return how
