"""One private RabbitMQ broker per test session (installed with apt when missing, started as a
plain child process on 127.0.0.1, stopped at the end), and an empty broker for every test that
asks for one: the queues and exchanges a test declared are deleted after it.

A broker that cannot be installed or started fails the tests that need it, with the reason
(BrokerUnavailableError): it never skips them."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pika
import pytest

from tools.rabbitmq_broker import PrivateBroker

# Seeding closes channels on purpose (a passive declare of a missing marker: 404; the lock taken
# by another member: 405), and pika logs a warning for each: hundreds in a failure report.
logging.getLogger("pika.channel").setLevel(logging.ERROR)


@pytest.fixture(scope="session")
def rabbitmq_session_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateBroker]:
    broker = PrivateBroker.start(tmp_path_factory.mktemp("rabbitmq"))
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def rabbitmq(rabbitmq_session_broker: PrivateBroker) -> Iterator[PrivateBroker]:
    """The session's broker, emptied of what the test declared once the test ends."""
    yield rabbitmq_session_broker
    delete_everything(rabbitmq_session_broker)


def delete_everything(broker: PrivateBroker) -> None:
    """Delete every queue (but the exclusive ones, which go with their connection) and every
    exchange that is not one of the broker's own."""
    queues = [
        row["name"]
        for row in broker.ctl_json("list_queues", "name", "exclusive")
        if not row["exclusive"]
    ]
    exchanges = [
        row["name"]
        for row in broker.ctl_json("list_exchanges", "name")
        if row["name"] and not row["name"].startswith("amq.")
    ]
    connection = pika.BlockingConnection(pika.URLParameters(broker.amqp_url))
    try:
        channel = connection.channel()
        for queue in queues:
            channel.queue_delete(queue)
        for exchange in exchanges:
            channel.exchange_delete(exchange)
    finally:
        connection.close()
