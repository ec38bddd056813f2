"""Explicit-state exploration of the SAC protocol model, as TLC explores the TLA+ spec.

`python -m rebalancing.sac.explore --queues 3 --apps 2 --position spec` visits every state reachable
from the spec's Init (breadth first), checks the state invariants in each and the terminal
invariants in each terminal state (no action enabled), and prints one JSON object: distinct
states, terminal states, transitions and how many of them are releases, violations per invariant,
whether every reachable state can still reach a terminal state, how many states lie on cycles
(livelock potential), and how many releases a path from the start to a terminal state holds:
over the shortest paths only, and over all paths, where the most is unbounded as soon as a
release lies on a cycle from which a terminal state stays reachable. A state is exactly the
spec's variables (FIFOs, active consumers, app ids, id counter), so the counts compare with
TLC's on specs/sac_leaderless.tla (specs/README.md has both sets of figures).

`--from started` or `--from subscribed` explores from a later state instead of Init (every app
started; or also waiting on every queue in app order), reached through the spec's own actions.
At 4 queues x 3 apps, the smallest size where the two Position readings differ, Init gives
5,580,736 states per reading, while `--from subscribed` gives 1,024 (spec) and 784 (id) and
still holds the states where the readings differ (specs/README.md has the figures).

The search is compiled: rebalancing.sac.explore_states packs each state into 64-bit words and
runs the breadth-first search over a hash set of them, with the transitions in CSR arrays;
rebalancing.sac.explore_graph measures that graph (reachability, strongly connected components,
release bounds) with array algorithms. The Python model stays the definition: the compiled
successor function is checked against `model.enabled_actions` and `model.apply` on every state
of small models (tests/sac/test_explore.py), and terminal states are judged by the model itself.
Needs numba (the dev and spark extras): there is no pure-Python fallback, and nothing imported
with `rebalancing.sac` imports this module.
Runtime and memory: O(states + transitions) in both. 4 x 3 from Init (31 million transitions
a reading) takes 34 to 38 s wall, 18 to 20 s CPU and 675 MiB peak RSS on the project's 2-core
machine under a load of about 5 (benchmarks/results/sac_explore_4x3.md; the search over Python
objects took 12 to 23 minutes, 630 to 800 s CPU and 5.1 GiB); 3 x 3 from Init 1.5 s CPU and
160 MiB, mostly importing numba. The first run after the compiled modules change compiles them
(about 18 s CPU); numba caches that on disk.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from rebalancing.sac.explore_graph import (
    fewest_releases_to_terminal,
    most_releases_to_terminal,
    releases_to_terminal_unbounded,
    states_on_cycles,
    states_reaching,
    strongly_connected_components,
)
from rebalancing.sac.explore_states import decode, search_states
from rebalancing.sac.model import (
    POSITION_VARIANTS,
    TERMINAL_INVARIANTS,
    PositionVariant,
    SacState,
    start,
    subscribe,
    terminal_invariant_violations,
)

StartingPoint = Literal["init", "started", "subscribed"]
"""Where an exploration begins: `init`, the spec's Init (every app stopped); `started`, every app
started in name order (ids 1, 2, ...), nothing subscribed; `subscribed`, also every app in every
FIFO in name order, no queue active yet."""

STARTING_POINTS: tuple[StartingPoint, ...] = ("init", "started", "subscribed")


def starting_state(queues: list[str], apps: list[str], starting_point: StartingPoint) -> SacState:
    """The state an exploration begins in, reached from Init through the spec's own actions."""
    state = SacState.initial(queues, apps)
    if starting_point in ("started", "subscribed"):
        for app in apps:
            start(state, app)
    if starting_point == "subscribed":
        for queue in queues:
            for app in apps:
                subscribe(state, app, queue)
    return state


@dataclass
class Exploration:
    """What the exploration found (see the module docstring).

    `terminal_active_counts` counts the terminal states by how many queues each app holds, in
    app order ("2-1-1": a1 holds two, a2 and a3 one each). `transitions` counts every enabled
    action of every state (TLC's "states generated" is one more: it counts the initial state).

    Release counts are per path from the starting state to a terminal state. The
    `..._on_shortest_paths` pair looks only at the paths of fewest steps to each terminal state;
    the others at every path. `most_releases_to_terminal` is None when
    `releases_to_terminal_unbounded`: some release lies on a cycle from which a terminal state
    can still be reached, so a path to a terminal state may go round it any number of times.
    """

    queues: int
    apps: int
    position: str
    starting_point: str = "init"
    distinct_states: int = 0
    terminal_states: int = 0
    transitions: int = 0
    release_transitions: int = 0
    state_invariant_violations: dict[str, int] = field(default_factory=dict)
    terminal_violations: dict[str, int] = field(default_factory=dict)
    terminal_active_counts: dict[str, int] = field(default_factory=dict)
    all_can_terminate: bool = True
    states_unable_to_terminate: int = 0
    states_on_cycles: int = 0
    fewest_releases_on_shortest_paths: int | None = None
    most_releases_on_shortest_paths: int | None = None
    fewest_releases_to_terminal: int | None = None
    most_releases_to_terminal: int | None = None
    releases_to_terminal_unbounded: bool = False
    depth: int = 0
    seconds: float = 0.0


def explore(
    queue_count: int,
    app_count: int,
    variant: PositionVariant,
    starting_point: StartingPoint = "init",
) -> Exploration:
    """Visit every state reachable from `starting_point` with `queue_count` queues and
    `app_count` apps, and measure the graph they form."""
    if queue_count < 1 or app_count < 1:
        raise ValueError(f"need at least one queue and one app, got {queue_count} and {app_count}")
    if starting_point not in STARTING_POINTS:
        raise ValueError(f"unknown starting point {starting_point!r}, expected {STARTING_POINTS}")
    started = time.perf_counter()
    queues = [f"q{number}" for number in range(1, queue_count + 1)]
    apps = [f"a{number}" for number in range(1, app_count + 1)]
    result = Exploration(queue_count, app_count, variant, starting_point)
    result.terminal_violations = dict.fromkeys(TERMINAL_INVARIANTS, 0)

    reached = search_states(starting_state(queues, apps, starting_point), variant)
    graph = reached.graph
    terminals = graph.terminals()
    result.distinct_states = graph.state_count
    result.terminal_states = len(terminals)
    result.transitions = len(graph.targets)
    result.release_transitions = int(graph.releases.sum(dtype=np.int64))
    result.state_invariant_violations = reached.state_invariant_violations
    result.depth = reached.depth
    for terminal in terminals:  # in the order of discovery
        state = decode(reached.keys[terminal], queues, apps)
        counts = "-".join(str(state.active_count[app]) for app in apps)
        result.terminal_active_counts[counts] = result.terminal_active_counts.get(counts, 0) + 1
        for name in terminal_invariant_violations(state):
            result.terminal_violations[name] += 1
    if len(terminals):
        result.fewest_releases_on_shortest_paths = int(
            reached.fewest_releases_on_shortest_paths[terminals].min()
        )
        result.most_releases_on_shortest_paths = int(
            reached.most_releases_on_shortest_paths[terminals].max()
        )
    del reached  # the packed states and per-state figures: the graph is all that is left to use

    can_terminate = states_reaching(graph, terminals)
    result.states_unable_to_terminate = graph.state_count - int(can_terminate.sum())
    result.all_can_terminate = result.states_unable_to_terminate == 0
    component = strongly_connected_components(graph)
    result.states_on_cycles = states_on_cycles(component)
    result.fewest_releases_to_terminal = fewest_releases_to_terminal(graph)
    result.releases_to_terminal_unbounded = releases_to_terminal_unbounded(
        graph, component, can_terminate
    )
    if not result.releases_to_terminal_unbounded:
        result.most_releases_to_terminal = most_releases_to_terminal(graph, component)
    result.seconds = round(time.perf_counter() - started, 3)
    return result


def main(arguments: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rebalancing.sac.explore",
        description="Explore every reachable state of the SAC leaderless-release model.",
    )
    parser.add_argument("--queues", type=int, required=True)
    parser.add_argument("--apps", type=int, required=True)
    parser.add_argument("--position", choices=POSITION_VARIANTS, default="spec")
    parser.add_argument(
        "--from",
        dest="starting_point",
        choices=STARTING_POINTS,
        default="init",
        help="init: the spec's Init; started: every app started; subscribed: every app started "
        "and waiting on every queue, in name order (default: init)",
    )
    options = parser.parse_args(arguments)
    if options.queues < 1 or options.apps < 1:
        parser.error("--queues and --apps must be at least 1")
    result = explore(options.queues, options.apps, options.position, options.starting_point)
    print(json.dumps(result.__dict__, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
