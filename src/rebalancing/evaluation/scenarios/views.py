"""Client-side or broker-side rebalancing: what inconsistent views cost.

The RocketMQ sticky rebalancing report (Summer of Code) starts from this problem: in
classic RocketMQ every consumer rebalances on its own, every 20 s, from a consumer list fetched
from a random broker and a queue list from a random name server. While their views disagree, the
union of their plans reads some queues twice and leaves others unread.

The model, per rebalance (a step of a scenario), in rebalance periods:
- broker-side (`broker`): one view, computed once; nothing can disagree, so no queue-period is
  read twice or left unread, and the group agrees at once (0 periods).
- client-side (`client`): after the change, each consumer's view of the consumer list is stale
  with probability `stale_probability` and of the queue list with `queue_stale_probability`; a
  stale view is the group as it was before the change, and catches up after a delay drawn
  uniformly from 1..`max_delay` periods. In period t each consumer runs the strategy on its own
  view and keeps only its own part (a consumer missing from its own view takes nothing, as
  RocketMQ's allocate does); the effective assignment is the union. `queue_periods_read_twice`
  counts (queue, period) pairs of the current queues read by two or more consumers,
  `queue_periods_unread` those read by none, over the periods before every view is current;
  `periods_to_agree` is that number of periods. The plan the group settles on is scored as usual.

What a client knows: its own previous queues, not the whole previous plan. A strategy runs
client-side only when its plan does not depend on the previous plan (`Strategy.client_side`:
averagely, round_robin, consistent_hash, bounded_consistent_hash); sticky needs the whole previous
plan and the SAC and super stream protocols are the broker's own, so they run broker-side in
either mode and their rows say so (`views` = "broker"). The staleness draws come from the
scenario's seed and the step, so every strategy meets the same views.
Runtime complexity: per step, at most 4 distinct views per period, so at most 4 x `max_delay`
strategy calls plus O(|C| x |Q|) to form the unions.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

VIEW_MODES: tuple[str, ...] = ("broker", "client")


@dataclass(frozen=True)
class ViewSettings:
    """How stale client views get after a change (see the module docstring)."""

    stale_probability: float = 0.3
    queue_stale_probability: float = 0.1
    max_delay: int = 3

    def __post_init__(self) -> None:
        for name in ("stale_probability", "queue_stale_probability"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and 0 <= value <= 1 and math.isfinite(value)):
                raise ValueError(f"{name} must be a probability in [0, 1], got {value!r}")
        if isinstance(self.max_delay, bool) or not isinstance(self.max_delay, int):
            raise TypeError(f"max_delay must be an int, got {self.max_delay!r}")
        if self.max_delay < 1:
            raise ValueError(f"max_delay must be at least 1 period, got {self.max_delay}")


def add_view_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """The command-line options of the view model (the evaluation command's and the harness's):
    --views, --stale-probability, --queue-stale-probability, --max-delay."""
    defaults = ViewSettings()
    parser.add_argument(
        "--views",
        choices=VIEW_MODES,
        default=None,
        help="broker: one view, computed once; client: each consumer rebalances on its own, "
        "possibly stale view (client-side strategies only; the others stay broker-side; no "
        "effect on a system whose candidates run inside its protocol, such as "
        "rocketmq-client, whose clients disagree on their own timers); default: broker",
    )
    parser.add_argument(
        "--stale-probability",
        type=float,
        default=defaults.stale_probability,
        help="client views: chance a consumer's consumer list is stale after a change",
    )
    parser.add_argument(
        "--queue-stale-probability",
        type=float,
        default=defaults.queue_stale_probability,
        help="client views: chance a consumer's queue list is stale after a change",
    )
    parser.add_argument(
        "--max-delay",
        type=int,
        default=defaults.max_delay,
        help="client views: a stale view catches up after 1..MAX_DELAY rebalance periods",
    )


def view_settings_from(namespace: argparse.Namespace) -> ViewSettings:
    """The ViewSettings of parsed add_view_arguments options (ValueError/TypeError naming the
    setting when one is out of range)."""
    return ViewSettings(
        namespace.stale_probability, namespace.queue_stale_probability, namespace.max_delay
    )


@dataclass(frozen=True)
class ViewOutcome:
    """How one client-side rebalance went: the plan it settles on and what disagreeing cost."""

    plan: dict[Any, list[Any]]
    queue_periods_read_twice: int
    queue_periods_unread: int
    periods_to_agree: int


def step_rng(scenario_seed: int, step: int) -> random.Random:
    """The staleness draws of one step: the same for every strategy, from (seed, step) alone."""
    digest = hashlib.blake2b(f"views:{scenario_seed}:{step}".encode(), digest_size=8).digest()
    return random.Random(int.from_bytes(digest, "big"))


def draw_lags(
    consumers: Sequence[Any], settings: ViewSettings, rng: random.Random
) -> dict[Any, tuple[int, int]]:
    """consumer -> (periods its consumer list lags, periods its queue list lags)."""

    def lag(probability: float) -> int:
        return rng.randint(1, settings.max_delay) if rng.random() < probability else 0

    return {
        consumer: (lag(settings.stale_probability), lag(settings.queue_stale_probability))
        for consumer in consumers
    }


def client_side_rebalance(
    assign: Callable[..., dict[Any, list[Any]]],
    queues: Sequence[Any],
    consumers: Sequence[Any],
    queues_before: Sequence[Any],
    consumers_before: Sequence[Any],
    previous: dict[Any, list[Any]] | None,
    lags: dict[Any, tuple[int, int]],
) -> ViewOutcome:
    """Every consumer rebalances on its own view, period by period, until all views are current.

    Each consumer passes the strategy what it knows of the previous plan: its own queues. The
    plans of one view are computed once (a client-side strategy's plan depends on the view only).
    """
    periods_to_agree = max((max(pair) for pair in lags.values()), default=0)
    current_queues = set(queues)
    plans: dict[tuple[bool, bool], dict[Any, list[Any]]] = {}

    def own_part(consumer: Any, period: int) -> list[Any]:
        consumer_lag, queue_lag = lags[consumer]
        view = (period < consumer_lag, period < queue_lag)  # stale consumer list, queue list
        if view not in plans:
            plans[view] = assign(
                queues_before if view[1] else queues,
                consumers_before if view[0] else consumers,
                {consumer: list((previous or {}).get(consumer, []))},
            )
        return plans[view].get(consumer, [])

    read_twice = unread = 0
    for period in range(periods_to_agree):
        readers: dict[Any, int] = {}
        for consumer in consumers:
            for queue in own_part(consumer, period):
                if queue in current_queues:
                    readers[queue] = readers.get(queue, 0) + 1
        read_twice += sum(1 for count in readers.values() if count > 1)
        unread += len(current_queues) - len(readers)
    settled = {consumer: list(own_part(consumer, periods_to_agree)) for consumer in consumers}
    return ViewOutcome(settled, read_twice, unread, periods_to_agree)
