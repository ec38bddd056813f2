"""Kafka's group protocols as sessions in seconds: classic eager and cooperative (KIP-429) and
the consumer protocol (KIP-848), over any assignor function of the contract."""

from rebalancing.protocols.kafka_classic import ClassicSession, cooperative_session, eager_session
from rebalancing.protocols.kafka_consumer import ConsumerSession
from rebalancing.protocols.kafka_timers import ClassicTimers, ConsumerTimers

__all__ = [
    "ClassicSession",
    "ClassicTimers",
    "ConsumerSession",
    "ConsumerTimers",
    "cooperative_session",
    "eager_session",
]
