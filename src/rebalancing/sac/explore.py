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
Runtime and memory: O(states x enabled actions), about 8,000 states a CPU second and 1 kB a
state (4 x 3 from Init: 12 minutes, 5 GB); 3 queues x 3 apps from Init is the practical limit
for the test suite.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import OrderedDict, deque
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from rebalancing.sac.model import (
    NOBODY,
    POSITION_VARIANTS,
    TERMINAL_INVARIANTS,
    PositionVariant,
    SacState,
    apply,
    enabled_actions,
    start,
    state_invariant_violations,
    subscribe,
    terminal_invariant_violations,
)

StateKey = tuple[tuple[tuple[str, ...], ...], tuple[Any, ...], tuple[int, ...], int]

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


def state_from_key(queues: list[str], apps: list[str], key: Hashable) -> SacState:
    """Rebuild the model state whose `key()` is `key`."""
    fifos, actives, start_ids, next_id = cast(StateKey, key)
    state = SacState.initial(queues, apps)
    for queue, fifo, active in zip(queues, fifos, actives, strict=True):
        state.waiting[queue] = OrderedDict.fromkeys(fifo)
        if active is not NOBODY:
            state.active[queue] = active
    state.start_id = dict(zip(apps, start_ids, strict=True))
    state.next_id = next_id
    state.recompute_derived()
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


@dataclass
class StateGraph:
    """Every reachable state as a number (0 is the start), its transitions, which are releases."""

    successors: list[list[int]]
    release_flags: list[bytes]  # release_flags[s][i] is 1 when successors[s][i] is a release
    terminals: list[int]


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

    keys: list[Hashable] = [starting_state(queues, apps, starting_point).key()]
    index = {keys[0]: 0}
    depth = [0]
    fewest_releases = [0]  # over the shortest paths from the start to each state
    most_releases = [0]
    graph = StateGraph(successors=[], release_flags=[], terminals=[])
    frontier = deque([0])
    while frontier:
        current = frontier.popleft()
        state = state_from_key(queues, apps, keys[current])
        # rebuilt from its key, so its derived fields agree with its variables by construction
        for name in state_invariant_violations(state, check_derived=False):
            result.state_invariant_violations[name] = (
                result.state_invariant_violations.get(name, 0) + 1
            )
        targets: list[int] = []
        flags: list[int] = []
        for action in list(enabled_actions(state, variant)):
            following = state.copy()
            apply(following, action, variant)
            key = following.key()
            released = int(action[0] == "release")
            target = index.get(key)
            if target is None:
                target = len(keys)
                index[key] = target
                keys.append(key)
                depth.append(depth[current] + 1)
                fewest_releases.append(fewest_releases[current] + released)
                most_releases.append(most_releases[current] + released)
                frontier.append(target)
            elif depth[target] == depth[current] + 1:
                fewest_releases[target] = min(
                    fewest_releases[target], fewest_releases[current] + released
                )
                most_releases[target] = max(
                    most_releases[target], most_releases[current] + released
                )
            targets.append(target)
            flags.append(released)
        graph.successors.append(targets)
        graph.release_flags.append(bytes(flags))
        if not targets:
            graph.terminals.append(current)
            counts = "-".join(str(state.active_count[app]) for app in apps)
            result.terminal_active_counts[counts] = result.terminal_active_counts.get(counts, 0) + 1
            for name in terminal_invariant_violations(state):
                result.terminal_violations[name] += 1

    terminals = graph.terminals
    result.distinct_states = len(keys)
    result.terminal_states = len(terminals)
    result.transitions = sum(len(targets) for targets in graph.successors)
    result.release_transitions = sum(sum(flags) for flags in graph.release_flags)
    result.depth = max(depth)
    if terminals:
        result.fewest_releases_on_shortest_paths = min(fewest_releases[t] for t in terminals)
        result.most_releases_on_shortest_paths = max(most_releases[t] for t in terminals)
    can_terminate = states_reaching(graph.successors, terminals)
    result.states_unable_to_terminate = len(keys) - sum(can_terminate)
    result.all_can_terminate = result.states_unable_to_terminate == 0
    component = strongly_connected_components(graph.successors)
    result.states_on_cycles = states_on_cycles(component)
    result.fewest_releases_to_terminal = fewest_releases_to_terminal(graph)
    result.releases_to_terminal_unbounded = releases_to_terminal_unbounded(
        graph, component, can_terminate
    )
    if not result.releases_to_terminal_unbounded:
        result.most_releases_to_terminal = most_releases_to_terminal(graph, component)
    result.seconds = round(time.perf_counter() - started, 3)
    return result


def states_reaching(successors: list[list[int]], targets: list[int]) -> list[bool]:
    """For each state, whether it can reach one of `targets` (backwards search)."""
    predecessors: list[list[int]] = [[] for _ in successors]
    for source, following in enumerate(successors):
        for target in following:
            predecessors[target].append(source)
    reached = [False] * len(successors)
    pending = list(targets)
    for target in targets:
        reached[target] = True
    while pending:
        for source in predecessors[pending.pop()]:
            if not reached[source]:
                reached[source] = True
                pending.append(source)
    return reached


def strongly_connected_components(successors: list[list[int]]) -> list[int]:
    """Each state's strongly connected component (Tarjan, iterative).

    Components are numbered in the order Tarjan completes them, which is a reverse topological
    order of the graph of components: every edge between two components goes from the higher
    number to the lower one.
    """
    count = len(successors)
    order = [-1] * count
    lowlink = [0] * count
    on_stack = [False] * count
    component = [-1] * count
    stack: list[int] = []
    counter = 0
    components = 0
    for root in range(count):
        if order[root] != -1:
            continue
        work = [(root, 0)]
        order[root] = lowlink[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = True
        while work:
            node, next_edge = work[-1]
            if next_edge < len(successors[node]):
                work[-1] = (node, next_edge + 1)
                target = successors[node][next_edge]
                if order[target] == -1:
                    order[target] = lowlink[target] = counter
                    counter += 1
                    stack.append(target)
                    on_stack[target] = True
                    work.append((target, 0))
                elif on_stack[target]:
                    lowlink[node] = min(lowlink[node], order[target])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                lowlink[parent] = min(lowlink[parent], lowlink[node])
            if lowlink[node] == order[node]:
                while True:
                    member = stack.pop()
                    on_stack[member] = False
                    component[member] = components
                    if member == node:
                        break
                components += 1
    return component


def states_on_cycles(component: list[int]) -> int:
    """States in strongly connected components of more than one state.

    No action leaves the state unchanged, so there are no self-loops to count.
    """
    sizes: dict[int, int] = {}
    for number in component:
        sizes[number] = sizes.get(number, 0) + 1
    return sum(size for size in sizes.values() if size > 1)


def fewest_releases_to_terminal(graph: StateGraph) -> int | None:
    """The fewest releases on any path from state 0 to a terminal state (0-1 breadth-first
    search: a release costs one, any other action nothing); None when no terminal is reachable."""
    unreached = len(graph.successors) + 1
    fewest = [unreached] * len(graph.successors)
    fewest[0] = 0
    pending = deque([0])
    while pending:
        source = pending.popleft()
        for target, released in zip(
            graph.successors[source], graph.release_flags[source], strict=True
        ):
            if fewest[source] + released < fewest[target]:
                fewest[target] = fewest[source] + released
                if released:
                    pending.append(target)
                else:
                    pending.appendleft(target)
    reachable = [fewest[terminal] for terminal in graph.terminals if fewest[terminal] < unreached]
    return min(reachable, default=None)


def releases_to_terminal_unbounded(
    graph: StateGraph, component: list[int], can_terminate: list[bool]
) -> bool:
    """Whether some release lies on a cycle (its two ends share a strongly connected component)
    from which a terminal state is reachable; every state of the graph is reachable from state 0,
    so a path from it can go round that cycle any number of times before terminating."""
    for source, targets in enumerate(graph.successors):
        if not can_terminate[source]:
            continue
        for target, released in zip(targets, graph.release_flags[source], strict=True):
            if released and component[target] == component[source]:
                return True
    return False


def most_releases_to_terminal(graph: StateGraph, component: list[int]) -> int | None:
    """The most releases on any path from state 0 to a terminal state, when no release lies on
    a cycle that can still terminate (so the count is finite); None when no terminal is reachable.

    The longest path over the graph of strongly connected components, each release weighing one:
    inside a component every edge weighs nothing and every state reaches every other, so a
    component has one value, computed after the components it leads to (lower numbers).
    """
    members: list[list[int]] = [[] for _ in range(max(component, default=-1) + 1)]
    for state, number in enumerate(component):
        members[number].append(state)
    cannot_terminate = -1
    most = [cannot_terminate] * len(members)
    for number, states in enumerate(members):
        if len(states) == 1 and not graph.successors[states[0]]:
            most[number] = 0  # a terminal state
            continue
        for source in states:
            for target, released in zip(
                graph.successors[source], graph.release_flags[source], strict=True
            ):
                beyond = most[component[target]]
                if component[target] != number and beyond != cannot_terminate:
                    most[number] = max(most[number], beyond + released)
    from_start = most[component[0]]
    return None if from_start == cannot_terminate else from_start


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
