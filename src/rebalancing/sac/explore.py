"""Explicit-state exploration of the SAC protocol model, as TLC explores the TLA+ spec.

`python -m rebalancing.sac.explore --queues 3 --apps 2 --position spec` visits every state reachable
from the spec's Init (breadth first), checks the state invariants in each and the terminal
invariants in each terminal state (no action enabled), and prints one JSON object: distinct
states, terminal states, violations per invariant, whether every reachable state can still
reach a terminal state, how many states lie on cycles (livelock potential), and the fewest and
most releases on shortest paths to terminal states. A state is exactly the spec's variables
(FIFOs, active consumers, app ids, id counter), so the counts compare with TLC's on the spec.
Runtime and memory: O(states x enabled actions); 3 queues x 3 apps is the practical limit.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import OrderedDict, deque
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from rebalancing.sac.model import (
    NOBODY,
    POSITION_VARIANTS,
    TERMINAL_INVARIANTS,
    PositionVariant,
    SacState,
    apply,
    enabled_actions,
    state_invariant_violations,
    terminal_invariant_violations,
)

StateKey = tuple[tuple[tuple[str, ...], ...], tuple[Any, ...], tuple[int, ...], int]


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
    """What the exploration found (see the module docstring)."""

    queues: int
    apps: int
    position: str
    distinct_states: int = 0
    terminal_states: int = 0
    state_invariant_violations: dict[str, int] = field(default_factory=dict)
    terminal_violations: dict[str, int] = field(default_factory=dict)
    all_can_terminate: bool = True
    states_unable_to_terminate: int = 0
    states_on_cycles: int = 0
    min_releases_to_terminal: int | None = None
    max_releases_to_terminal: int | None = None
    depth: int = 0
    seconds: float = 0.0


def explore(queue_count: int, app_count: int, variant: PositionVariant) -> Exploration:
    """Visit every reachable state of the model with `queue_count` queues and `app_count` apps."""
    if queue_count < 1 or app_count < 1:
        raise ValueError(f"need at least one queue and one app, got {queue_count} and {app_count}")
    started = time.perf_counter()
    queues = [f"q{number}" for number in range(1, queue_count + 1)]
    apps = [f"a{number}" for number in range(1, app_count + 1)]
    result = Exploration(queue_count, app_count, variant)
    result.terminal_violations = dict.fromkeys(TERMINAL_INVARIANTS, 0)

    initial = SacState.initial(queues, apps)
    keys: list[Hashable] = [initial.key()]
    index = {keys[0]: 0}
    depth = [0]
    fewest_releases = [0]  # over the shortest paths from Init to each state
    most_releases = [0]
    successors: list[list[int]] = []
    terminals: list[int] = []
    frontier = deque([0])
    while frontier:
        current = frontier.popleft()
        state = state_from_key(queues, apps, keys[current])
        for name in state_invariant_violations(state):
            result.state_invariant_violations[name] = (
                result.state_invariant_violations.get(name, 0) + 1
            )
        targets: list[int] = []
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
        successors.append(targets)
        if not targets:
            terminals.append(current)
            for name in terminal_invariant_violations(state):
                result.terminal_violations[name] += 1

    result.distinct_states = len(keys)
    result.terminal_states = len(terminals)
    result.depth = max(depth)
    if terminals:
        result.min_releases_to_terminal = min(fewest_releases[t] for t in terminals)
        result.max_releases_to_terminal = max(most_releases[t] for t in terminals)
    unable = len(keys) - _count_reaching(successors, terminals)
    result.states_unable_to_terminate = unable
    result.all_can_terminate = unable == 0
    result.states_on_cycles = _states_on_cycles(successors)
    result.seconds = round(time.perf_counter() - started, 3)
    return result


def _count_reaching(successors: list[list[int]], targets: list[int]) -> int:
    """How many states can reach one of `targets` (backwards search)."""
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
    return sum(reached)


def _states_on_cycles(successors: list[list[int]]) -> int:
    """States in strongly connected components of more than one state (Tarjan, iterative).

    No action leaves the state unchanged, so there are no self-loops to count.
    """
    count = len(successors)
    order = [-1] * count
    lowlink = [0] * count
    on_stack = [False] * count
    stack: list[int] = []
    counter = 0
    on_cycles = 0
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
                size = 0
                while True:
                    member = stack.pop()
                    on_stack[member] = False
                    size += 1
                    if member == node:
                        break
                if size > 1:
                    on_cycles += size
    return on_cycles


def main(arguments: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rebalancing.sac.explore",
        description="Explore every reachable state of the SAC leaderless-release model.",
    )
    parser.add_argument("--queues", type=int, required=True)
    parser.add_argument("--apps", type=int, required=True)
    parser.add_argument("--position", choices=POSITION_VARIANTS, default="spec")
    options = parser.parse_args(arguments)
    if options.queues < 1 or options.apps < 1:
        parser.error("--queues and --apps must be at least 1")
    result = explore(options.queues, options.apps, options.position)
    print(json.dumps(result.__dict__, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
