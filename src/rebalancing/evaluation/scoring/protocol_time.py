"""The leaderless protocols in seconds: one event (a join, a crash, a rolling restart) on a
settled group, per protocol and group size, over seeded runs; the numbers of
benchmarks/protocol_time.py, the docs' "Leaderless protocols in seconds" and the comparison
notebook.

Each run is a scenario of fixed steps (`event_steps`: the starting group, then the event's
rebalances) replayed through the protocol's registered session by the scoring core
(rebalancing.evaluation.scoring.replay.score_scenario), so the time scores are the sessions' own
(claims, steals, seconds_to_balance, queue_seconds_unowned, queue_seconds_doubly_owned of
rebalancing.contract.ProtocolRun, with each system's default intervals) and the moves the
scores' own; nothing is measured here twice. An event's cost is the sum over its rebalances
(a rolling restart has two per batch: the batch leaves, the batch rejoins, the next batch
starting once the group is quiet again), and the step 0 that settles the starting group is
not counted.

- A join: a consumer whose name sorts at a place drawn from the seed (the names matter to
  Pulsar's name order) joins a group of n.
- A crash: one consumer drawn from the seed goes without a word. Event Hubs' processors then
  hold its records until they expire (`departures="crash"`); a graceful leave releases them
  at once. KCL's workers never release (a stop and a crash are the same there). A SAC broker
  hands the crashed app's queues on once its heartbeat check declares the connection dead,
  2 to 3 intervals of RabbitMQ's default 60 s heartbeat after the crash (the SAC session's
  `apply_change`, told the step's kind "crash" by the scoring core, as in `compare`): those
  queues are unread until then and the releases follow. A Pulsar broker removes the crashed
  consumer once its keep-alive closes the silent connection, 1 to 2 intervals of the default
  30 s after the crash, then hands its partitions on after the failover delay (1 s); a super
  stream broker reacts to the closed connection as to a cancel, and models no time.
- A rolling restart: every consumer leaves and rejoins under its id, a quarter of the group at
  a time in an order drawn from the seed, as the scenarios module's `rolling_restart` makes
  it (the very generator is called), each restart a graceful close.

The queues are QUEUES_PER_CONSUMER times the consumers unless a count is given. Pulsar's
failover counts each partition whose active consumer changes unread for the broker's failover
delay (rebalancing.strategies.pulsar_failover); super_stream switches partitions inside the
broker in one pass and models no time (its time scores are None: `moves` is what it costs).
Runtime complexity: one run is the protocol's own cost on the starting group (a cold start)
plus the event's; Event Hubs and KCL simulate every member cycle, about |Q| / |C| cycles of
each member for a cold start under Event Hubs' balanced strategy.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any

from rebalancing.contract import SortedIds
from rebalancing.evaluation.scenarios.changes import (
    INITIAL,
    Scenario,
    ScenarioSettings,
    Step,
    _Generator,
    scenario_seed,
)
from rebalancing.evaluation.scoring import event_costs
from rebalancing.evaluation.scoring.event_costs import (
    CostSummary,
    markdown_table,
    median_lines,
    number,
    positive_integer,
    seeded_names,
    summarise_costs,
)
from rebalancing.evaluation.scoring.replay import score_scenario
from rebalancing.strategies import STRATEGIES, Strategy, event_hubs

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [  # CostSummary, markdown_table and number are event_costs', public here since 0.1.0
    "BASE_SEED",
    "EVENTS",
    "EVENT_TITLES",
    "GROUP_SIZES",
    "LABELS",
    "ORDERINGS",
    "PROTOCOLS",
    "QUEUES_PER_CONSUMER",
    "SCORES",
    "TIMED",
    "CostSummary",
    "EventCost",
    "event_steps",
    "figure",
    "markdown_table",
    "markdown_tables",
    "measure",
    "measure_all",
    "number",
    "orderings_figure",
    "protocol_strategy",
    "queue_seconds_figure",
    "summarise",
    "time_figure",
]

EVENTS: tuple[str, ...] = ("join", "crash", "rolling_restart")
"""The events measured, in the order the tables show them."""

PROTOCOLS: tuple[str, ...] = (
    "sac",
    "sac_newest",
    "sac_random",
    "event_hubs_balanced",
    "event_hubs_greedy",
    "kcl",
    "pulsar_failover",
    "super_stream",
)
"""The registered protocol strategies measured: SAC with each release policy (`sac` releases
the highest queue), Event Hubs' two load-balancing strategies, KCL's lease taker, and i mod n in
name order (Pulsar) and in join order (RabbitMQ's super stream)."""

TIMED: tuple[str, ...] = PROTOCOLS[:7]
"""The protocols that model time (super_stream's time scores are None)."""

ORDERINGS: tuple[str, ...] = ("pulsar_failover", "super_stream")
"""i mod n in name order and in join order."""

GROUP_SIZES: tuple[int, ...] = (2, 4, 8, 16, 32, 64)
"""The consumer counts of the benchmark."""

QUEUES_PER_CONSUMER = 4
"""Queues per consumer when no queue count is given."""

SCORES: tuple[str, ...] = (
    "seconds_to_balance",
    "queue_seconds_unowned",
    "queue_seconds_doubly_owned",
    "moves",
)
"""What an event costs, summed over its rebalances (EventCost's fields)."""

BASE_SEED = 34
"""The base seed of the runs: run k is seeded with scenario_seed(BASE_SEED, k)."""


@dataclass(frozen=True)
class EventCost:
    """What one event cost one protocol in one seeded run, summed over the event's rebalances;
    a time score is None for a protocol that models no time. `spread` is the largest count
    less the smallest once the event is over; `converged`, whether every rebalance settled."""

    protocol: str
    event: str
    consumers: int
    queues: int
    seed: int
    seconds_to_balance: float | None
    queue_seconds_unowned: float | None
    queue_seconds_doubly_owned: float | None
    moves: int
    claims: int | None
    steals: int | None
    releases: int
    rounds: int
    rebalances: int
    spread: int | None
    converged: bool


@dataclass(frozen=True)
class _FixedScenario(Scenario):
    """A scenario whose steps are given, not drawn (the scoring core reads only `steps()` and
    the seeds)."""

    given: tuple[Step, ...] = field(default=())

    def steps(self) -> Iterator[Step]:
        return iter(self.given)


def event_steps(event: str, consumers: int, queues: int, seed: int) -> tuple[Step, ...]:
    """The starting group of `consumers` x `queues`, then the rebalances of `event` (see the
    module docstring), drawn from `seed`."""
    if event not in EVENTS:
        raise ValueError(f"unknown event {event!r}; known: {', '.join(EVENTS)}")
    positive_integer("consumers", consumers)
    positive_integer("queues", queues)
    rng = random.Random(seed)
    names = seeded_names(rng, consumers + 1, "consumer")
    group = SortedIds(names[:consumers], "consumer")
    queue_ids = SortedIds(range(queues), "queue")
    start = Step(0, INITIAL, queue_ids, group)
    if event == "join":
        joined = SortedIds(names, "consumer")
        return start, Step(1, "join", queue_ids, joined, joined=1)
    if event == "crash":
        crashed = names[rng.randrange(consumers)]
        remaining = SortedIds([name for name in group if name != crashed], "consumer")
        return start, Step(1, "crash", queue_ids, remaining, departed=1)
    restart = _Generator(rng, ScenarioSettings()).rolling_restart(1, queue_ids, group)
    return (start, *restart)


_CRASHING: Mapping[str, Strategy] = {
    "event_hubs_balanced": replace(
        STRATEGIES["event_hubs_balanced"],
        open_session=partial(event_hubs.Session, "balanced", departures="crash"),
    ),
    "event_hubs_greedy": replace(
        STRATEGIES["event_hubs_greedy"],
        open_session=partial(event_hubs.Session, "greedy", departures="crash"),
    ),
}
"""Event Hubs' registered strategies with processors that crash rather than close."""


def protocol_strategy(protocol: str, event: str) -> Strategy:
    """The registered strategy `protocol` as it runs through `event`: Event Hubs' processors
    crash without releasing their records on a crash, and close gracefully otherwise."""
    if event == "crash" and protocol in _CRASHING:
        return _CRASHING[protocol]
    return STRATEGIES[protocol]


def measure(
    protocol: str, event: str, consumers: int, seed: int, queues: int | None = None
) -> EventCost:
    """What `event` costs `protocol` on a settled group of `consumers` (and `queues`, by
    default QUEUES_PER_CONSUMER times as many), in run `seed`."""
    queue_count = QUEUES_PER_CONSUMER * consumers if queues is None else queues
    run_seed = scenario_seed(BASE_SEED, seed)
    steps = event_steps(event, consumers, queue_count, run_seed)
    scenario = _FixedScenario(BASE_SEED, seed, given=steps)
    strategy = protocol_strategy(protocol, event)
    rows = list(
        score_scenario(
            scenario, {protocol: strategy}, engine="reference", stability_every=len(steps) + 1
        )
    )[1:]
    failed = [row.error for row in rows if row.failed]
    if failed:
        raise RuntimeError(f"{protocol} failed on {event}: {failed[0]}")

    def total(values: Iterable[float | None]) -> float | None:
        given = list(values)
        return None if None in given else sum(value or 0.0 for value in given)

    return EventCost(
        protocol=protocol,
        event=event,
        consumers=consumers,
        queues=queue_count,
        seed=seed,
        seconds_to_balance=total(row.seconds_to_balance for row in rows),
        queue_seconds_unowned=total(row.queue_seconds_unowned for row in rows),
        queue_seconds_doubly_owned=total(row.queue_seconds_doubly_owned for row in rows),
        moves=sum(row.moves for row in rows),
        claims=_int_total(row.claims for row in rows),
        steals=_int_total(row.steals for row in rows),
        releases=sum(row.releases or 0 for row in rows),
        rounds=sum(row.rounds or 0 for row in rows),
        rebalances=len(rows),
        spread=rows[-1].spread,
        converged=all(row.converged is not False for row in rows),
    )


def _int_total(values: Iterable[int | None]) -> int | None:
    given = list(values)
    return None if None in given else sum(value or 0 for value in given)


def measure_all(
    protocols: Sequence[str] = PROTOCOLS,
    events: Sequence[str] = EVENTS,
    sizes: Sequence[int] = GROUP_SIZES,
    seeds: int = 20,
    queues: int | None = None,
) -> list[EventCost]:
    """`measure` for every protocol, event, group size and seed 0..seeds-1 (in that nesting,
    seeds innermost)."""
    positive_integer("seeds", seeds)
    return [
        measure(protocol, event, size, seed, queues)
        for protocol in protocols
        for event in events
        for size in sizes
        for seed in range(seeds)
    ]


def summarise(costs: Iterable[EventCost]) -> list[CostSummary]:
    """The CostSummary of each (protocol, event, consumers) among `costs`, in the order they
    first appear."""
    return summarise_costs(costs, SCORES, consumers="consumers", queues="queues", spread="spread")


LABELS: Mapping[str, str] = {
    "seconds_to_balance": "seconds to balance",
    "queue_seconds_unowned": "queue-seconds unowned",
    "queue_seconds_doubly_owned": "queue-seconds doubly owned",
    "moves": "queues moved",
}
"""What the tables and figures call each of SCORES."""

EVENT_TITLES: Mapping[str, str] = {
    "join": "one consumer joins",
    "crash": "one consumer crashes",
    "rolling_restart": "rolling restart (a quarter at a time)",
}


def markdown_tables(
    summaries: Sequence[CostSummary],
    *,
    titles: Mapping[str, str] = EVENT_TITLES,
    labels: Mapping[str, str] = LABELS,
    columns: str = "consumers x queues",
    counted_only: bool = False,
) -> str:
    """Every event's tables (event_costs.markdown_tables), by default this module's events and
    scores."""
    return event_costs.markdown_tables(
        summaries, titles=titles, labels=labels, columns=columns, counted_only=counted_only
    )


_STYLES: Mapping[str, tuple[str, str]] = {
    "sac": ("tab:blue", "-"),
    "sac_newest": ("tab:cyan", "--"),
    "sac_random": ("tab:purple", ":"),
    "event_hubs_balanced": ("tab:orange", "-"),
    "event_hubs_greedy": ("tab:red", "--"),
    "kcl": ("tab:green", "-"),
    "pulsar_failover": ("tab:brown", "-"),
    "super_stream": ("tab:gray", "--"),
}
"""Colour and line style per protocol: a family in one hue, its variants dashed or dotted."""


def _draw(
    axes: Any, summaries: Sequence[CostSummary], event: str, score: str, protocols: Sequence[str]
) -> None:
    """On `axes`: per protocol, the median of `score` on `event` against group size as a line,
    the band up to the 95th percentile shaded."""
    median_lines(axes, summaries, event, score, protocols, _STYLES)
    axes.set_xscale("log", base=2)
    every_size = sorted({summary.consumers for summary in summaries})
    axes.set_xticks(every_size, [str(size) for size in every_size])
    axes.minorticks_off()
    axes.set_xlabel("consumers (queues: 4 per consumer)")
    axes.set_title(EVENT_TITLES[event])
    axes.grid(True, alpha=0.3)


def figure(
    summaries: Sequence[CostSummary],
    scores: Sequence[str],
    protocols: Sequence[str],
    logarithmic: bool = True,
) -> Figure:
    """A grid of panels, a row per score of `scores` and a column per event: each protocol's
    median against group size, shaded up to its 95th percentile. `logarithmic`: the value axis
    is symmetric-logarithmic (linear below 1 ms), so that milliseconds and minutes both show."""
    import matplotlib.pyplot as plt

    events = list(dict.fromkeys(summary.event for summary in summaries))
    drawn, grid = plt.subplots(
        len(scores), len(events), figsize=(4.2 * len(events), 3.4 * len(scores)), squeeze=False
    )
    for row, score in enumerate(scores):
        for column, event in enumerate(events):
            axes = grid[row][column]
            _draw(axes, summaries, event, score, protocols)
            if logarithmic:
                axes.set_yscale("symlog", linthresh=1e-3)
            axes.set_ylim(bottom=0)
            if column == 0:
                axes.set_ylabel(LABELS[score])
    handles, labels = grid[0][0].get_legend_handles_labels()
    drawn.legend(handles, labels, loc="lower center", ncol=min(len(labels), 6), frameon=False)
    drawn.tight_layout(rect=(0, 0.08 if len(scores) == 1 else 0.05, 1, 1))
    return drawn


def time_figure(summaries: Sequence[CostSummary]) -> Figure:
    """Seconds to balance after each event, the protocols that model time."""
    return figure(summaries, ("seconds_to_balance",), TIMED)


def queue_seconds_figure(summaries: Sequence[CostSummary]) -> Figure:
    """Queue-seconds unowned and doubly owned after each event, the protocols that model time."""
    return figure(summaries, ("queue_seconds_unowned", "queue_seconds_doubly_owned"), TIMED)


def orderings_figure(summaries: Sequence[CostSummary]) -> Figure:
    """Queues moved by i mod n in name order (Pulsar) and join order (super stream)."""
    return figure(summaries, ("moves",), ORDERINGS, logarithmic=False)
