"""Group protocols as sessions in seconds, over any assignor function of the contract: Kafka's
classic eager and cooperative (KIP-429) and consumer protocol (KIP-848), and RocketMQ's
client-side and broker-side rebalancing."""

from rebalancing.protocols.kafka_classic import ClassicSession, cooperative_session, eager_session
from rebalancing.protocols.kafka_consumer import ConsumerSession
from rebalancing.protocols.kafka_timers import ClassicTimers, ConsumerTimers
from rebalancing.protocols.rocketmq import (
    RocketMQSession,
    RocketMQTimers,
    broker_session,
    client_session,
)

__all__ = [
    "ClassicSession",
    "ClassicTimers",
    "ConsumerSession",
    "ConsumerTimers",
    "RocketMQSession",
    "RocketMQTimers",
    "broker_session",
    "client_session",
    "cooperative_session",
    "eager_session",
]
