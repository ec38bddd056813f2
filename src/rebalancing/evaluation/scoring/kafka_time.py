"""Kafka's group protocols in seconds: one event (a join, a crash, a rolling restart with and
without static membership, partitions added) on a settled group, per protocol and assignor and
group size, over seeded runs; the numbers of benchmarks/kafka_protocols.py, the docs' "Kafka's
protocols in seconds" and the comparison notebook.

Each run opens the protocol's session (rebalancing.protocols: eager or cooperative classic
groups, or the consumer protocol of KIP-848) over a registered assignor, with Kafka 4.x's
default timers and heartbeat phases drawn from the seed, settles a cold start of the group (not
counted), and then applies the event through the session's public API (`change`, `restart`), so
the time scores are the session's own (ProtocolRun.seconds_to_balance, queue_seconds_unowned,
queue_seconds_paused, heartbeats); nothing is simulated here.

- A join: a member whose name sorts at a place drawn from the seed (the names matter to range)
  joins a group of n. A slow join: the same, while a member drawn from the seed has its poll
  loop busy for SLOW_SECONDS from the join on (the classic barrier waits for it; the consumer
  protocol waits for it only for what it must give up).
- A crash: a member drawn from the seed dies without a word; the coordinator learns it when its
  session times out.
- A rolling restart: every member stops and starts again `down_seconds` later under its id, a
  quarter of the group (rounded up) at a time in an order drawn from the seed, the next batch
  once the group is quiet; dynamic members leave and rejoin (two rebalances a batch), static
  members (KIP-345) are back within the session timeout and take their partitions back.
- Partitions added: the topic grows by a quarter (rounded up); the classic leader sees it at
  its next metadata refresh, the consumer protocol's coordinator at the next heartbeat.

An event's cost: `seconds_to_balance` from the event's start to the last change of who consumes
what after it (a restart's batches run back to back, so this is the whole restart); the
partition-seconds unowned and paused, the heartbeats (the consumer protocol only), rounds and
releases summed over the event's rebalances.
Runtime complexity: the session's own: per classic round the assignor plus O(|Q| + |C|); under
the consumer protocol a few heartbeats a member per change, each O(|C|) to check the group
settled, and the assignor on each new group epoch (the cold start computes |C| targets).
"""

from __future__ import annotations

import copy
import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from rebalancing.contract import ProtocolRun
from rebalancing.evaluation.scenarios.changes import scenario_seed
from rebalancing.evaluation.scoring import event_costs
from rebalancing.evaluation.scoring.event_costs import (
    CostSummary,
    median_lines,
    positive_integer,
    seeded_names,
    summarise_costs,
)
from rebalancing.protocols import ClassicSession, ConsumerSession
from rebalancing.protocols.kafka_common import HeartbeatPhases, KafkaGroupSession
from rebalancing.strategies import STRATEGIES

if TYPE_CHECKING:
    from matplotlib.figure import Figure

Session = ClassicSession | ConsumerSession
ProtocolName = Literal["eager", "cooperative", "consumer"]

SETUPS: Mapping[str, tuple[ProtocolName, str]] = {
    "eager_range": ("eager", "averagely"),
    "eager_sticky": ("eager", "sticky"),
    "cooperative_sticky": ("cooperative", "cooperative_sticky"),
    "consumer_uniform": ("consumer", "uniform"),
    "consumer_range": ("consumer", "server_range"),
}
"""Each setup measured: (the group protocol, the registered assignor). `averagely` is Kafka's
RangeAssignor for one topic; `uniform` and `server_range` are the consumer protocol's
server-side assignors (`uniform` its default)."""

PROTOCOLS: tuple[str, ...] = (
    "eager_range",
    "cooperative_sticky",
    "consumer_uniform",
    "consumer_range",
)
"""The setups the benchmark measures by default: the classic default (eager range), cooperative
sticky, and the consumer protocol with each server-side assignor. Eager sticky is left out: an
eager group revokes everything whatever the plan, so its times are eager range's."""

EVENTS: tuple[str, ...] = (
    "join",
    "slow_join",
    "crash",
    "rolling_restart",
    "static_rolling_restart",
    "partitions_added",
)
"""The events measured, in the order the tables show them."""

GROUP_SIZES: tuple[tuple[int, int], ...] = ((2, 10), (10, 100), (50, 1250))
"""(members, partitions) of the quick run."""

FULL_GROUP_SIZES: tuple[tuple[int, int], ...] = (
    (2, 10),
    (5, 40),
    (10, 100),
    (20, 300),
    (50, 1250),
    (100, 3500),
    (200, 10_000),
)
"""(members, partitions) of the full run: 2 to 200 members, partitions growing as about
members^1.5 (5 a member at 2, 50 at 200), as larger groups read larger topics."""

SLOW_SECONDS = 30.0
"""How late the slow member of a slow join polls (seconds from the join on)."""

RESTART_DOWN_SECONDS = 10.0
"""How long a restarted member is away (its process stops, starts and joins again)."""

RESTART_BATCHES = 4
"""A rolling restart takes ceil(n / RESTART_BATCHES) members down at a time."""

ADDED_FRACTION = 0.25
"""Partitions added: ceil(ADDED_FRACTION * partitions) new partitions."""

SCORES: tuple[str, ...] = (
    "seconds_to_balance",
    "queue_seconds_unowned",
    "queue_seconds_paused",
    "heartbeats",
)
"""What an event costs (KafkaEventCost's fields), in the order the tables show them."""

BASE_SEED = 42
"""The base seed of the runs: run k is seeded with scenario_seed(BASE_SEED, k)."""


def open_session(
    setup: str,
    *,
    seed: int,
    static_membership: bool = False,
    heartbeat_phases: HeartbeatPhases = "random",
) -> Session:
    """A new group's session under `setup` (a key of SETUPS) with Kafka 4.x's default timers."""
    if setup not in SETUPS:
        raise ValueError(f"unknown setup {setup!r}; known: {', '.join(SETUPS)}")
    protocol, assignor = SETUPS[setup]
    options: dict[str, Any] = {
        "seed": seed,
        "static_membership": static_membership,
        "heartbeat_phases": heartbeat_phases,
    }
    if protocol == "consumer":
        return ConsumerSession(STRATEGIES[assignor], **options)
    return ClassicSession(STRATEGIES[assignor], protocol=protocol, **options)


@dataclass(frozen=True)
class EventPlan:
    """A group and what happens to it, drawn from a seed: the members (sorted), the partitions
    before and after the event, the member that joins, crashes or polls late (None otherwise)
    and a rolling restart's batches (empty otherwise)."""

    event: str
    members: tuple[str, ...]
    partitions: int
    partitions_after: int
    newcomer: str | None
    crashed: str | None
    slow: str | None
    batches: tuple[tuple[str, ...], ...]


def event_plan(event: str, members: int, partitions: int, seed: int) -> EventPlan:
    """The group of `members` x `partitions` and `event`'s part in it (module docstring), drawn
    from `seed`."""
    if event not in EVENTS:
        raise ValueError(f"unknown event {event!r}; known: {', '.join(EVENTS)}")
    positive_integer("members", members)
    positive_integer("partitions", partitions)
    rng = random.Random(seed)
    names = seeded_names(rng, members + 1, "member")
    group = tuple(sorted(names[:members]))
    newcomer = names[members] if event in ("join", "slow_join") else None
    crashed = rng.choice(group) if event == "crash" else None
    slow = rng.choice(group) if event == "slow_join" else None
    batches: tuple[tuple[str, ...], ...] = ()
    if event in ("rolling_restart", "static_rolling_restart"):
        order = list(group)
        rng.shuffle(order)
        size = math.ceil(members / RESTART_BATCHES)
        batches = tuple(tuple(order[i : i + size]) for i in range(0, members, size))
    after = partitions
    if event == "partitions_added":
        after += math.ceil(ADDED_FRACTION * partitions)
    return EventPlan(event, group, partitions, after, newcomer, crashed, slow, batches)


@dataclass(frozen=True)
class KafkaEventCost:
    """What one event cost one setup in one seeded run (the module docstring says how it is
    summed); `heartbeats` is None under the classic protocol (it counts rounds); `changes`, the
    session calls the event took (a restart batch, its leave and rejoin, is one); `converged`,
    whether every rebalance settled."""

    protocol: str
    event: str
    members: int
    partitions: int
    seed: int
    seconds_to_balance: float
    queue_seconds_unowned: float
    queue_seconds_paused: float
    queues_paused: int
    heartbeats: int | None
    rounds: int
    releases: int
    changes: int
    converged: bool


def apply_event(
    session: KafkaGroupSession[Any], plan: EventPlan, down_seconds: float = RESTART_DOWN_SECONDS
) -> list[tuple[float, ProtocolRun]]:
    """Apply `plan`'s event to `session`, settled on `plan`'s group: each rebalance's run with
    the seconds from the event's start to its own start (restart batches back to back)."""
    start = session.now
    members = list(plan.members)
    if plan.newcomer is not None:
        late = {plan.slow: SLOW_SECONDS} if plan.slow is not None else None
        joined = [*members, plan.newcomer]
        return [(0.0, session.change(range(plan.partitions), joined, slow=late))]
    if plan.crashed is not None:
        remaining = [member for member in members if member != plan.crashed]
        return [(0.0, session.change(range(plan.partitions), remaining, crashed=[plan.crashed]))]
    if plan.batches:
        runs = []
        for batch in plan.batches:
            began = session.now - start
            runs.append((began, session.restart(batch, down_seconds)))
        return runs
    return [(0.0, session.change(range(plan.partitions_after), members))]


def event_cost(
    setup: str, plan: EventPlan, seed: int, runs: Sequence[tuple[float, ProtocolRun]]
) -> KafkaEventCost:
    """The KafkaEventCost of `runs` (apply_event's) of `plan` under `setup`."""
    changed = [(began, run) for began, run in runs if run.seconds_to_balance]
    last_began, last = changed[-1] if changed else (0.0, runs[-1][1])
    heartbeats = [run.heartbeats for _, run in runs]
    return KafkaEventCost(
        protocol=setup,
        event=plan.event,
        members=len(plan.members),
        partitions=plan.partitions,
        seed=seed,
        seconds_to_balance=last_began + (last.seconds_to_balance or 0.0),
        queue_seconds_unowned=sum(run.queue_seconds_unowned or 0.0 for _, run in runs),
        queue_seconds_paused=sum(run.queue_seconds_paused or 0.0 for _, run in runs),
        queues_paused=sum(run.queues_paused or 0 for _, run in runs),
        heartbeats=None if None in heartbeats else sum(beats or 0 for beats in heartbeats),
        rounds=sum(run.rounds for _, run in runs),
        releases=sum(run.releases for _, run in runs),
        changes=len(runs),
        converged=all(run.converged for _, run in runs),
    )


def measure_group(
    setup: str,
    members: int,
    partitions: int,
    seed: int,
    events: Sequence[str] = EVENTS,
    *,
    heartbeat_phases: HeartbeatPhases = "random",
    down_seconds: float = RESTART_DOWN_SECONDS,
) -> list[KafkaEventCost]:
    """What each of `events` costs `setup` on a settled group of `members` x `partitions` in run
    `seed`: the group is settled once (once more with static members for a static restart) and
    each event applied to a copy of it."""
    if setup not in SETUPS:
        raise ValueError(f"unknown setup {setup!r}; known: {', '.join(SETUPS)}")
    unknown = [event for event in events if event not in EVENTS]
    if unknown:
        raise ValueError(f"unknown event {unknown[0]!r}; known: {', '.join(EVENTS)}")
    run_seed = scenario_seed(BASE_SEED, seed)
    settled: dict[bool, Session] = {}
    costs = []
    for event in events:
        plan = event_plan(event, members, partitions, run_seed)
        static = event == "static_rolling_restart"
        if static not in settled:
            session = open_session(
                setup, seed=run_seed, static_membership=static, heartbeat_phases=heartbeat_phases
            )
            cold = session.rebalance(range(partitions), plan.members)
            if not cold.converged:
                raise RuntimeError(f"{setup}'s cold start of {members} members did not settle")
            settled[static] = session
        template = settled[static]
        # the assignor (a registered Strategy) is shared, not copied
        session = copy.deepcopy(template, {id(template.assignor): template.assignor})
        runs = apply_event(session, plan, down_seconds)
        costs.append(event_cost(setup, plan, seed, runs))
    return costs


def measure(
    setup: str,
    event: str,
    members: int,
    partitions: int,
    seed: int,
    *,
    heartbeat_phases: HeartbeatPhases = "random",
    down_seconds: float = RESTART_DOWN_SECONDS,
) -> KafkaEventCost:
    """What `event` costs `setup` on a settled group of `members` x `partitions` in run `seed`."""
    return measure_group(
        setup,
        members,
        partitions,
        seed,
        (event,),
        heartbeat_phases=heartbeat_phases,
        down_seconds=down_seconds,
    )[0]


def measure_all(
    setups: Sequence[str] = PROTOCOLS,
    events: Sequence[str] = EVENTS,
    sizes: Sequence[tuple[int, int]] = GROUP_SIZES,
    seeds: int = 5,
) -> list[KafkaEventCost]:
    """Every event's cost for every setup, group size and seed 0..seeds-1 (setups outermost,
    then sizes, seeds, events)."""
    positive_integer("seeds", seeds)
    for size in sizes:
        if not (isinstance(size, tuple) and len(size) == 2):
            raise ValueError(f"a group size must be (members, partitions), not {size!r}")
    return [
        cost
        for setup in setups
        for members, partitions in sizes
        for seed in range(seeds)
        for cost in measure_group(setup, members, partitions, seed, events)
    ]


def parse_sizes(text: str) -> tuple[tuple[int, int], ...]:
    """ "2x10,10x100" as ((2, 10), (10, 100)), with the culprit named if a size is not one."""
    sizes = []
    for part in text.split(","):
        members, _, partitions = part.strip().partition("x")
        if not (members.isdigit() and partitions.isdigit()):
            raise ValueError(f"a group size is MEMBERSxPARTITIONS (e.g. 10x100), not {part!r}")
        sizes.append(
            (
                positive_integer("members", int(members)),
                positive_integer("partitions", int(partitions)),
            )
        )
    return tuple(sizes)


def summarise(costs: Iterable[KafkaEventCost]) -> list[CostSummary]:
    """Per (setup, event, members): the median and 95th percentile of each of SCORES over the
    seeded runs (None where the protocol does not count it) and how many did not settle, as a
    CostSummary (its `consumers` the members, its `queues` the partitions)."""
    return summarise_costs(costs, SCORES, consumers="members", queues="partitions")


LABELS: Mapping[str, str] = {
    "seconds_to_balance": "seconds to balance",
    "queue_seconds_unowned": "partition-seconds unowned",
    "queue_seconds_paused": "partition-seconds paused",
    "heartbeats": "heartbeats (consumer protocol)",
}
"""What the tables and figures call each of SCORES."""

EVENT_TITLES: Mapping[str, str] = {
    "join": "one member joins",
    "slow_join": f"one joins, one polls {SLOW_SECONDS:g} s late",
    "crash": "one member crashes",
    "rolling_restart": "rolling restart, dynamic members",
    "static_rolling_restart": "rolling restart, static members",
    "partitions_added": "a quarter more partitions",
}


def markdown_tables(summaries: Sequence[CostSummary]) -> str:
    """Every event's tables, one per score that some setup counts, each under a heading."""
    return event_costs.markdown_tables(
        summaries,
        titles=EVENT_TITLES,
        labels=LABELS,
        columns="members x partitions",
        counted_only=True,
    )


COLOURS: Mapping[str, tuple[str, str]] = {
    "eager_range": ("tab:red", "-"),
    "eager_sticky": ("tab:orange", "--"),
    "cooperative_sticky": ("tab:blue", "-"),
    "consumer_uniform": ("tab:green", "-"),
    "consumer_range": ("tab:olive", "--"),
}
"""Colour and line style per setup: eager in warm hues, cooperative blue, consumer green."""


def _panel(axes: Any, summaries: Sequence[CostSummary], event: str, score: str) -> None:
    """Per setup, the median of `score` on `event` against members, shaded to the 95th
    percentile; the ticks name members and partitions."""
    chosen = [s for s in summaries if s.event == event and s.median[score] is not None]
    median_lines(axes, chosen, event, score, dict.fromkeys(s.protocol for s in chosen), COLOURS)
    sizes = sorted({(s.consumers, s.queues) for s in summaries})
    axes.set_xscale("log")
    axes.set_xticks([members for members, _ in sizes], [f"{m}\n{p}" for m, p in sizes])
    axes.minorticks_off()
    axes.set_yscale("symlog", linthresh=1.0)
    highest = max((s.p95[score] or 0.0 for s in chosen), default=0.0)
    axes.set_ylim(0, None if highest > 0 else 1.0)  # all zero: a plain axis up to 1
    axes.set_xlabel("members / partitions")
    axes.set_ylabel(LABELS[score])
    axes.set_title(EVENT_TITLES[event])
    axes.grid(True, alpha=0.3)


def figure(summaries: Sequence[CostSummary], score: str) -> Figure:
    """One panel per event (three to a row) of `score` against group size, a line per setup."""
    import matplotlib.pyplot as plt

    if score not in SCORES:
        raise ValueError(f"unknown score {score!r}; known: {', '.join(SCORES)}")
    events = list(dict.fromkeys(summary.event for summary in summaries))
    if not events:
        raise ValueError("no summaries to draw: summaries is empty")
    columns = min(3, len(events))
    rows = math.ceil(len(events) / columns)
    drawn, grid = plt.subplots(rows, columns, figsize=(4.6 * columns, 3.6 * rows), squeeze=False)
    for index, event in enumerate(events):
        _panel(grid[index // columns][index % columns], summaries, event, score)
    for index in range(len(events), rows * columns):
        grid[index // columns][index % columns].axis("off")
    labels: dict[str, Any] = {}
    for axes in grid.flat:
        for handle, label in zip(*axes.get_legend_handles_labels(), strict=True):
            labels.setdefault(label, handle)
    drawn.legend(
        list(labels.values()), list(labels), loc="lower center", ncol=len(labels), frameon=False
    )
    drawn.tight_layout(rect=(0, 0.06, 1, 1))
    return drawn


FIGURES: tuple[tuple[str, str], ...] = (
    ("kafka_protocols_seconds.png", "seconds_to_balance"),
    ("kafka_protocols_unowned.png", "queue_seconds_unowned"),
    ("kafka_protocols_paused.png", "queue_seconds_paused"),
)
"""The benchmark's figures: (file name, score)."""
