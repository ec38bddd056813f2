"""The timers of Kafka's group protocols, with Kafka 4.x's defaults, in milliseconds as Kafka
names them.

Read from apache/kafka at commit 1eb7644349cb07139d6a3c1ad1986979647cac99 (trunk of
2024-10-25, version 4.0.0-SNAPSHOT: the newest 4.x source in the snapshot read, which has no
4.x release tag, so these are the defaults of the 4.0 line as of that commit):

- clients/.../consumer/ConsumerConfig.java: `session.timeout.ms` 45000, `heartbeat.interval.ms`
  3000, `max.poll.interval.ms` 300000 (the Java client sends it as its rebalance timeout, in
  JoinGroup and in ConsumerGroupHeartbeat), `metadata.max.age.ms` 5 * 60 * 1000 (how late a
  classic group's leader can see partitions added);
- group-coordinator/.../GroupCoordinatorConfig.java: `group.initial.rebalance.delay.ms` 3000
  (GROUP_INITIAL_REBALANCE_DELAY_MS_DEFAULT), `group.consumer.heartbeat.interval.ms` 5000 and
  `group.consumer.session.timeout.ms` 45000 (CONSUMER_GROUP_HEARTBEAT_INTERVAL_MS_DEFAULT,
  CONSUMER_GROUP_SESSION_TIMEOUT_MS_DEFAULT): under the consumer protocol the broker, not the
  client, sets the heartbeat interval and the session timeout.

Each dataclass checks what the protocol needs of them (a heartbeat within the session timeout,
a member that is late by less than the rebalance timeout) and gives them in seconds (computed
once: the sessions read them at every heartbeat).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cached_property

SESSION_TIMEOUT_MS = 45_000
"""ConsumerConfig `session.timeout.ms` (classic protocol)."""

HEARTBEAT_INTERVAL_MS = 3_000
"""ConsumerConfig `heartbeat.interval.ms` (classic protocol)."""

MAX_POLL_INTERVAL_MS = 300_000
"""ConsumerConfig `max.poll.interval.ms`: the Java client's rebalance timeout."""

METADATA_MAX_AGE_MS = 300_000
"""ConsumerConfig `metadata.max.age.ms`: the client's metadata refresh period."""

GROUP_INITIAL_REBALANCE_DELAY_MS = 3_000
"""GroupCoordinatorConfig `group.initial.rebalance.delay.ms` (classic groups)."""

GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS = 5_000
"""GroupCoordinatorConfig `group.consumer.heartbeat.interval.ms` (consumer protocol)."""

GROUP_CONSUMER_SESSION_TIMEOUT_MS = 45_000
"""GroupCoordinatorConfig `group.consumer.session.timeout.ms` (consumer protocol)."""


def _check_positive_ints(timers: ClassicTimers | ConsumerTimers) -> None:
    """TypeError or ValueError naming the first timer that is not a positive int of ms."""
    for timer in fields(timers):
        value = getattr(timers, timer.name)
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{timer.name} must be an int of milliseconds, not {value!r}")
        if value <= 0:
            raise ValueError(f"{timer.name} must be positive, not {value!r}")


@dataclass(frozen=True, kw_only=True)
class ClassicTimers:
    """The classic protocol's timers (eager and cooperative alike)."""

    session_timeout_ms: int = SESSION_TIMEOUT_MS
    heartbeat_interval_ms: int = HEARTBEAT_INTERVAL_MS
    max_poll_interval_ms: int = MAX_POLL_INTERVAL_MS
    group_initial_rebalance_delay_ms: int = GROUP_INITIAL_REBALANCE_DELAY_MS
    metadata_max_age_ms: int = METADATA_MAX_AGE_MS

    def __post_init__(self) -> None:
        _check_positive_ints(self)
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ValueError(
                f"heartbeat_interval_ms ({self.heartbeat_interval_ms}) must be below "
                f"session_timeout_ms ({self.session_timeout_ms})"
            )

    @cached_property
    def session_timeout(self) -> float:
        return self.session_timeout_ms / 1000

    @cached_property
    def heartbeat_interval(self) -> float:
        return self.heartbeat_interval_ms / 1000

    @cached_property
    def rebalance_timeout(self) -> float:
        return self.max_poll_interval_ms / 1000

    @cached_property
    def initial_rebalance_delay(self) -> float:
        return self.group_initial_rebalance_delay_ms / 1000

    @cached_property
    def metadata_max_age(self) -> float:
        return self.metadata_max_age_ms / 1000


@dataclass(frozen=True, kw_only=True)
class ConsumerTimers:
    """The consumer protocol's timers (KIP-848): the broker's heartbeat interval and session
    timeout, and the client's rebalance timeout (`max.poll.interval.ms`)."""

    group_consumer_heartbeat_interval_ms: int = GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS
    group_consumer_session_timeout_ms: int = GROUP_CONSUMER_SESSION_TIMEOUT_MS
    max_poll_interval_ms: int = MAX_POLL_INTERVAL_MS

    def __post_init__(self) -> None:
        _check_positive_ints(self)
        if self.group_consumer_heartbeat_interval_ms >= self.group_consumer_session_timeout_ms:
            raise ValueError(
                "group_consumer_heartbeat_interval_ms "
                f"({self.group_consumer_heartbeat_interval_ms}) must be below "
                f"group_consumer_session_timeout_ms ({self.group_consumer_session_timeout_ms})"
            )

    @cached_property
    def session_timeout(self) -> float:
        return self.group_consumer_session_timeout_ms / 1000

    @cached_property
    def heartbeat_interval(self) -> float:
        return self.group_consumer_heartbeat_interval_ms / 1000

    @cached_property
    def rebalance_timeout(self) -> float:
        return self.max_poll_interval_ms / 1000
