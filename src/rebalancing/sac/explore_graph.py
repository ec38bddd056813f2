"""The explorer's state graph as arrays, and the compiled algorithms that measure it.

States are numbered 0..n-1 (0 is where the exploration started). The transitions are compressed
sparse rows: state s's successors are `targets[offsets[s]:offsets[s + 1]]`, and `releases` says
which of those transitions are Releases (1) or not (0). A state without successors is terminal.
Over that: which states can reach a set of states (backwards search over the reversed graph),
the strongly connected components (Tarjan, iterative), and the fewest and most releases on a path
from state 0 to a terminal state. Each algorithm is O(states + transitions) in time and memory
(4 queues x 3 apps from Init: 5.6 million states, 31 million transitions, seconds). Needs numba
(the dev and spark extras); compiled on first use and cached on disk (`cache=True`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from numba import njit


@dataclass
class StateGraph:
    """States and transitions in compressed sparse rows (see the module docstring)."""

    offsets: npt.NDArray[np.int64]  # states + 1 entries, offsets[0] == 0
    targets: npt.NDArray[np.int32]
    releases: npt.NDArray[np.uint8]

    @classmethod
    def from_successors(cls, successors: Sequence[Sequence[tuple[int, int]]]) -> StateGraph:
        """A graph from each state's list of (target, 1 for a release else 0), in state order."""
        offsets = np.zeros(len(successors) + 1, dtype=np.int64)
        offsets[1:] = np.cumsum([len(following) for following in successors])
        pairs = [pair for following in successors for pair in following]
        return cls(
            offsets=offsets,
            targets=np.array([target for target, _ in pairs], dtype=np.int32),
            releases=np.array([released for _, released in pairs], dtype=np.uint8),
        )

    @property
    def state_count(self) -> int:
        return len(self.offsets) - 1

    def terminals(self) -> npt.NDArray[np.int64]:
        """The states without successors, ascending."""
        return np.flatnonzero(self.offsets[1:] == self.offsets[:-1])


@njit(cache=True)
def _group_offsets(keys: Any, group_count: int) -> Any:
    """Where each group starts in a counting sort of `keys` (each in 0..group_count-1): group g
    holds positions offsets[g] to offsets[g + 1] - 1."""
    group_offsets = np.zeros(group_count + 1, np.int64)
    for index in range(keys.shape[0]):
        group_offsets[keys[index] + 1] += 1
    for group in range(group_count):
        group_offsets[group + 1] += group_offsets[group]
    return group_offsets


@njit(cache=True)
def _reached_backwards(offsets: Any, targets: Any, starts: Any) -> Any:
    """Which states reach one of `starts`: the predecessor lists (counting sort over the
    targets), then a depth-first search over them."""
    state_count = offsets.shape[0] - 1
    predecessor_offsets = _group_offsets(targets, state_count)
    filled = predecessor_offsets[:-1].copy()
    predecessors = np.empty(targets.shape[0], np.int32)
    for source in range(state_count):
        for edge in range(offsets[source], offsets[source + 1]):
            target = targets[edge]
            predecessors[filled[target]] = source
            filled[target] += 1
    reached = np.zeros(state_count, np.bool_)
    pending = np.empty(state_count, np.int64)
    pending_count = 0
    for start in starts:
        if not reached[start]:
            reached[start] = True
            pending[pending_count] = start
            pending_count += 1
    while pending_count > 0:
        pending_count -= 1
        state = pending[pending_count]
        for edge in range(predecessor_offsets[state], predecessor_offsets[state + 1]):
            source = predecessors[edge]
            if not reached[source]:
                reached[source] = True
                pending[pending_count] = source
                pending_count += 1
    return reached


def states_reaching(graph: StateGraph, targets: Sequence[int] | npt.NDArray[np.int64]) -> Any:
    """For each state, whether it can reach one of `targets` (a bool array)."""
    return _reached_backwards(graph.offsets, graph.targets, np.asarray(targets, dtype=np.int64))


@njit(cache=True)
def _tarjan(offsets: Any, targets: Any) -> Any:
    state_count = offsets.shape[0] - 1
    order = np.full(state_count, -1, np.int32)
    lowlink = np.empty(state_count, np.int32)
    on_stack = np.zeros(state_count, np.bool_)
    component = np.full(state_count, -1, np.int32)
    stack = np.empty(state_count, np.int32)
    stack_size = 0
    work_state = np.empty(state_count, np.int32)  # the depth-first path, and the next edge of each
    work_edge = np.empty(state_count, np.int64)
    work_size = 0
    counter = 0
    components = 0
    for root in range(state_count):
        if order[root] != -1:
            continue
        order[root] = counter
        lowlink[root] = counter
        counter += 1
        stack[stack_size] = root
        stack_size += 1
        on_stack[root] = True
        work_state[0] = root
        work_edge[0] = offsets[root]
        work_size = 1
        while work_size > 0:
            state = work_state[work_size - 1]
            edge = work_edge[work_size - 1]
            if edge < offsets[state + 1]:
                work_edge[work_size - 1] = edge + 1
                target = targets[edge]
                if order[target] == -1:
                    order[target] = counter
                    lowlink[target] = counter
                    counter += 1
                    stack[stack_size] = target
                    stack_size += 1
                    on_stack[target] = True
                    work_state[work_size] = target
                    work_edge[work_size] = offsets[target]
                    work_size += 1
                elif on_stack[target]:
                    lowlink[state] = min(lowlink[state], order[target])
                continue
            work_size -= 1
            if work_size > 0:
                parent = work_state[work_size - 1]
                lowlink[parent] = min(lowlink[parent], lowlink[state])
            if lowlink[state] == order[state]:
                while True:
                    stack_size -= 1
                    member = stack[stack_size]
                    on_stack[member] = False
                    component[member] = components
                    if member == state:
                        break
                components += 1
    return component


def strongly_connected_components(graph: StateGraph) -> npt.NDArray[np.int32]:
    """Each state's strongly connected component (Tarjan, iterative).

    Components are numbered in the order Tarjan completes them, which is a reverse topological
    order of the graph of components: every edge between two components goes from the higher
    number to the lower one.
    """
    component: npt.NDArray[np.int32] = _tarjan(graph.offsets, graph.targets)
    return component


def states_on_cycles(component: npt.NDArray[np.int32]) -> int:
    """States in strongly connected components of more than one state.

    No action leaves the state unchanged, so there are no self-loops to count.
    """
    sizes = np.bincount(component)
    return int(sizes[sizes > 1].sum())


@njit(cache=True)
def _fewest_releases(offsets: Any, targets: Any, releases: Any) -> Any:
    """The fewest releases on a path from state 0 to each state (0-1 breadth-first search over
    a ring buffer: a release costs one and goes to the back, any other step to the front; each
    transition improves its target at most once, so transitions + 1 entries suffice)."""
    state_count = offsets.shape[0] - 1
    unreached = np.iinfo(np.int64).max
    fewest = np.full(state_count, unreached, np.int64)
    done = np.zeros(state_count, np.bool_)
    capacity = targets.shape[0] + 1
    ring = np.empty(capacity, np.int32)
    front = 0
    size = 1
    ring[0] = 0
    fewest[0] = 0
    while size > 0:
        source = ring[front]
        front = (front + 1) % capacity
        size -= 1
        if done[source]:
            continue
        done[source] = True
        for edge in range(offsets[source], offsets[source + 1]):
            target = targets[edge]
            cost = fewest[source] + releases[edge]
            if cost < fewest[target]:
                fewest[target] = cost
                if releases[edge]:
                    ring[(front + size) % capacity] = target
                else:
                    front = front - 1 if front > 0 else capacity - 1
                    ring[front] = target
                size += 1
    return fewest


def fewest_releases_to_terminal(graph: StateGraph) -> int | None:
    """The fewest releases on any path from state 0 to a terminal state; None when no terminal
    state is reachable."""
    fewest = _fewest_releases(graph.offsets, graph.targets, graph.releases)
    reachable = fewest[graph.terminals()]
    reachable = reachable[reachable != np.iinfo(np.int64).max]
    return int(reachable.min()) if len(reachable) else None


@njit(cache=True)
def _release_on_terminating_cycle(
    offsets: Any, targets: Any, releases: Any, component: Any, can_terminate: Any
) -> bool:
    for source in range(offsets.shape[0] - 1):
        if not can_terminate[source]:
            continue
        for edge in range(offsets[source], offsets[source + 1]):
            if releases[edge] and component[targets[edge]] == component[source]:
                return True
    return False


def releases_to_terminal_unbounded(
    graph: StateGraph, component: npt.NDArray[np.int32], can_terminate: npt.NDArray[np.bool_]
) -> bool:
    """Whether some release lies on a cycle (its two ends share a strongly connected component)
    from which a terminal state is reachable; every state of the graph is reachable from state 0,
    so a path from it can go round that cycle any number of times before terminating."""
    return bool(
        _release_on_terminating_cycle(
            graph.offsets, graph.targets, graph.releases, component, can_terminate
        )
    )


@njit(cache=True)
def _most_releases(offsets: Any, targets: Any, releases: Any, component: Any) -> int:
    component_count = 0
    for state in range(component.shape[0]):
        component_count = max(component_count, component[state] + 1)
    member_offsets = _group_offsets(component, component_count)
    filled = member_offsets[:-1].copy()
    members = np.empty(component.shape[0], np.int32)
    for state in range(component.shape[0]):
        members[filled[component[state]]] = state
        filled[component[state]] += 1
    cannot_terminate = -1
    most = np.full(component_count, cannot_terminate, np.int64)
    for number in range(component_count):
        first = members[member_offsets[number]]
        if member_offsets[number + 1] - member_offsets[number] == 1 and (
            offsets[first] == offsets[first + 1]
        ):
            most[number] = 0  # a terminal state
            continue
        for member in range(member_offsets[number], member_offsets[number + 1]):
            source = members[member]
            for edge in range(offsets[source], offsets[source + 1]):
                beyond = most[component[targets[edge]]]
                if component[targets[edge]] != number and beyond != cannot_terminate:
                    most[number] = max(most[number], beyond + releases[edge])
    return int(most[component[0]])


def most_releases_to_terminal(graph: StateGraph, component: npt.NDArray[np.int32]) -> int | None:
    """The most releases on any path from state 0 to a terminal state, when no release lies on
    a cycle that can still terminate (so the count is finite); None when no terminal is reachable.

    The longest path over the graph of strongly connected components, each release weighing one:
    inside a component every edge weighs nothing and every state reaches every other, so a
    component has one value, computed after the components it leads to (lower numbers).
    """
    from_start = int(_most_releases(graph.offsets, graph.targets, graph.releases, component))
    return None if from_start == -1 else from_start
