"""What moving a live Kafka group from the protocol and assignor it runs today (`--from
PROTOCOL:ASSIGNOR`) to the verdict's pick costs, as Kafka documents it: the verdict's last lines
under `--system kafka`; and the spellings of a pair that `--from` and `--strategies` take there
(kafka_pair: Kafka's own names, the Java and kafka-python classes, group.protocol's values).

- Within a classic protocol (an assignor for another): the consumer config
  partition.assignment.strategy takes a list, and the coordinator picks an assignor every
  member lists, so one rolling restart lists both (the new one first) and a second drops the
  old one.
- From eager to a cooperative assignor (KIP-429): the same two rolling restarts, which the Java
  client documents for this upgrade; kafka-python refuses a consumer that lists assignors of
  both protocols, so there the group stops once (every consumer stopped, then started with the
  cooperative assignor). Back from cooperative to eager: the two restarts in reverse order.
- To the consumer protocol (KIP-848): Kafka 4's online upgrade. Read from apache/kafka at
  commit 1eb7644349cb07139d6a3c1ad1986979647cac99 (the commit rebalancing.protocols.kafka_timers
  cites), group-coordinator: GroupCoordinatorConfig defines `group.consumer.migration.policy`
  (an internal broker config there) with the default BIDIRECTIONAL, and
  GroupMetadataManager.validateOnlineUpgrade converts a non-empty classic group into a consumer
  group when a member's first ConsumerGroupHeartbeat reaches it, if the policy allows upgrades,
  the group uses the consumer embedded protocol (a plain consumer group, not Connect's) and it
  fits group.consumer.max.size; the classic members stay in the converted group until they are
  restarted. The way back (validateOnlineDowngradeWithFencedMember): the group converts back
  once its last consumer-protocol member leaves and the others all use the classic protocol.
- Between the consumer protocol's server-side assignors: the broker plans with the assignor
  most members name in group.remote.assignor (ConsumerGroup.computePreferredServerAssignor),
  so one rolling restart moves the group, which switches half-way through.
"""

from __future__ import annotations

from collections.abc import Mapping

KAFKA_NAMES: Mapping[str, str] = {
    "averagely": "RangeAssignor",
    "round_robin": "RoundRobinAssignor",
    "sticky": "StickyAssignor",
    "cooperative_sticky": "CooperativeStickyAssignor",
    "uniform": "uniform",
    "server_range": "range",
}
"""A registered strategy -> the name a Kafka consumer's configuration gives the same assignor
(partition.assignment.strategy's class, or group.remote.assignor's value)."""

CLASSIC = ("eager", "cooperative")
"""The classic group protocol's two rebalance protocols."""

CLIENTS = "org.apache.kafka.clients.consumer."
SERVER = "org.apache.kafka.coordinator.group.assignor."
KAFKA_PYTHON = "kafka.coordinator.assignors."

ASSIGNOR_SPELLINGS: Mapping[str, tuple[str, ...]] = {
    "eager:range": (
        "range",
        "RangeAssignor",
        f"{CLIENTS}RangeAssignor",
        "RangePartitionAssignor",
        f"{KAFKA_PYTHON}range.RangePartitionAssignor",
        "averagely",
    ),
    "eager:round_robin": (
        "round_robin",
        "roundrobin",
        "RoundRobinAssignor",
        f"{CLIENTS}RoundRobinAssignor",
        "RoundRobinPartitionAssignor",
        f"{KAFKA_PYTHON}roundrobin.RoundRobinPartitionAssignor",
    ),
    "eager:sticky": (
        "sticky",
        "StickyAssignor",
        f"{CLIENTS}StickyAssignor",
        "StickyPartitionAssignor",
        f"{KAFKA_PYTHON}sticky.sticky_assignor.StickyPartitionAssignor",
    ),
    "cooperative:cooperative_sticky": (
        "cooperative_sticky",
        "cooperative-sticky",
        "CooperativeStickyAssignor",
        f"{CLIENTS}CooperativeStickyAssignor",
        f"{KAFKA_PYTHON}cooperative_sticky.CooperativeStickyAssignor",
    ),
    "consumer:uniform": ("uniform", "UniformAssignor", f"{SERVER}UniformAssignor"),
    "consumer:server_range": ("server_range", f"{SERVER}RangeAssignor"),
}
"""Each `--system kafka` pair -> the names its assignor goes by, alone or after a protocol:
ours, Kafka's name() (librdkafka's partition.assignment.strategy values are the same), the Java
class, kafka-python's class (its name attribute is Kafka's). Read from apache/kafka at commit
1eb7644349cb07139d6a3c1ad1986979647cac99 (clients' and group-coordinator's assignors) and
dpkp/kafka-python (kafka/coordinator/assignors). The server-side RangeAssignor shares the
client's names `range` and `RangeAssignor`, so those mean it only after `consumer:`; alone
they are the client's, as a consumer's group.protocol is classic unless set."""

UNDER_CONSUMER = {"range": "consumer:server_range", "rangeassignor": "consumer:server_range"}
"""Spellings that mean a server-side assignor after `consumer:` and another assignor alone."""

GROUP_PROTOCOLS = {"classic": "eager:range", "consumer": "consumer:uniform"}
"""group.protocol's values alone: the pair a group gets with no assignor set (the Java client's
partition.assignment.strategy default lists RangeAssignor first, which every member lists;
the broker's group.consumer.assignors default puts uniform first)."""


def _protocols_of(label: str) -> tuple[str, ...]:
    """The protocol names a pair's assignor may follow: its own, and `classic` for the classic
    protocol's two (group.protocol=classic)."""
    protocol = label.partition(":")[0]
    return (protocol, "classic") if protocol in CLASSIC else (protocol,)


def _spellings() -> dict[str, str]:
    """Every accepted spelling, lower-cased -> the pair's label; ValueError on a spelling that
    would name two pairs (ambiguous: refused here rather than resolved either way)."""
    accepted: dict[str, str] = dict(GROUP_PROTOCOLS)
    for label, names in ASSIGNOR_SPELLINGS.items():
        forms = [label] + [
            f"{protocol}:{name}" if protocol else name
            for name in names
            for protocol in ("", *_protocols_of(label))
        ]
        for form in forms:
            if accepted.setdefault(form.lower(), label) != label:
                raise ValueError(f"{form!r} would name {accepted[form.lower()]} and {label}")
    for name, label in UNDER_CONSUMER.items():
        if accepted.setdefault(f"consumer:{name}", label) != label:
            raise ValueError(f"'consumer:{name}' would name two pairs")
    return accepted


SPELLINGS: Mapping[str, str] = _spellings()
"""`--from` and `--strategies` (under `--system kafka`): a spelling, lower-cased -> its pair."""


def accepted_spellings() -> str:
    """The accepted spellings in one line, for an error message and the docs."""
    pairs = ", ".join(
        f"{label} ({', '.join(name for name in names if '.' not in name)})"
        for label, names in ASSIGNOR_SPELLINGS.items()
    )
    return (
        f"{pairs}; each name in any case, alone or after its protocol (or classic: for the "
        "classic protocol's), the full Java and kafka-python class names too; consumer:range "
        "and consumer:RangeAssignor for the server-side range; or a group.protocol alone: "
        f"classic ({GROUP_PROTOCOLS['classic']}), consumer ({GROUP_PROTOCOLS['consumer']})"
    )


def kafka_pair(text: str) -> str:
    """The `--system kafka` pair (PROTOCOL:ASSIGNOR, one of KAFKA_PAIRS) that `text` names in
    any accepted spelling (SPELLINGS, case-insensitive); ValueError naming `text`, the part of
    it that is unknown, and the accepted spellings, otherwise."""
    given = text.strip()
    label = SPELLINGS.get(given.lower())
    if label is not None:
        return label
    protocol, colon, assignor = given.partition(":")
    protocols = dict.fromkeys(name for pair in ASSIGNOR_SPELLINGS for name in _protocols_of(pair))
    if not colon:
        alone = [pair for pair in ASSIGNOR_SPELLINGS if given.lower() in _protocols_of(pair)]
        culprit = f"expected PROTOCOL:ASSIGNOR, or a name Kafka gives an assignor, got {given!r}"
        if alone:
            culprit += f" (a protocol alone names no assignor: {', '.join(alone)})"
    elif protocol.lower() not in protocols:
        culprit = f"unknown protocol {protocol!r} in {given!r} (known: {', '.join(protocols)})"
    else:
        there = [pair for pair in ASSIGNOR_SPELLINGS if protocol.lower() in _protocols_of(pair)]
        culprit = (
            f"unknown assignor {assignor!r} under the {protocol} protocol (known there: "
            f"{', '.join(there)})"
        )
    raise ValueError(f"{culprit}; accepted: {accepted_spellings()}")


def _protocol_and_name(pair: tuple[str, str], label: str) -> tuple[str, str]:
    """(the protocol of `label`, PROTOCOL:ASSIGNOR, and its assignor's Kafka name)."""
    protocol = label.partition(":")[0]
    return protocol, KAFKA_NAMES.get(pair[1], pair[1])


def migration_lines(current: str, pick: str, pairs: Mapping[str, tuple[str, str]]) -> list[str]:
    """What moving a group from the pair `current` to the pair `pick` costs, in sentences
    (`pairs`: System.pairs, label -> (its protocol's system, its registered strategy))."""
    if current == pick:
        return [f"The group runs {pick} already: nothing to change."]
    before, old = _protocol_and_name(pairs[current], current)
    after, new = _protocol_and_name(pairs[pick], pick)
    move = f"From {current} to {pick}:"
    if before in CLASSIC and after in CLASSIC:
        both = (
            f"one rolling restart with partition.assignment.strategy=[{new}, {old}] (the "
            f"coordinator picks an assignor every member lists), then a second with {new} alone"
        )
        if before == after:
            return [f"{move} {both}."]
        which = "the KIP-429 upgrade in reverse" if after == "eager" else "KIP-429's upgrade"
        return [
            f"{move} in the Java client, {both}: {which}; kafka-python "
            "refuses a consumer listing assignors of both protocols, so there the group stops "
            f"once: every consumer stopped, then started with {new}."
        ]
    if before in CLASSIC:
        return [
            f"{move} Kafka 4's online upgrade, one rolling restart of the consumers with "
            f"group.protocol=consumer and group.remote.assignor={new}: the first one's heartbeat "
            "converts the group into a consumer group, the classic members in it until their "
            "restart, where the broker's group.consumer.migration.policy allows it "
            "(bidirectional, its default) and the group is a plain consumer group within "
            "group.consumer.max.size. It needs the Java client 4.0 or later and brokers 4.0 or "
            "later (kafka-python and aiokafka have no consumer protocol)."
        ]
    if after in CLASSIC:
        return [
            f"{move} the online downgrade, one rolling restart of the consumers with "
            f"group.protocol=classic and partition.assignment.strategy=[{new}]: the group "
            "converts back to a classic group when its last consumer-protocol member leaves "
            "(group.consumer.migration.policy bidirectional, its default, or downgrade)."
        ]
    return [
        f"{move} one rolling restart with group.remote.assignor={new}: the broker plans with "
        "the assignor most members name, so the group switches half-way through (the "
        "broker's group.consumer.assignors must list it)."
    ]
