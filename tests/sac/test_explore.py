"""The explicit-state explorer over the spec-faithful model (what TLC does for the TLA+ spec)."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Hashable

import pytest

from rebalancing.sac import model
from rebalancing.sac.explore import (
    StateGraph,
    explore,
    fewest_releases_to_terminal,
    main,
    most_releases_to_terminal,
    releases_to_terminal_unbounded,
    starting_state,
    state_from_key,
    states_reaching,
    strongly_connected_components,
)
from rebalancing.sac.model import TERMINAL_INVARIANTS, PositionVariant, SacState

# Distinct states and transitions of Init + Next (the spec's variables only), the same for both
# variants: they differ only where two apps tie one queue over their ideal and there is a
# remainder, 4 queues x 3 apps and up. TLC on specs/sac_leaderless.tla prints the same distinct
# states, and "states generated" one more than the transitions (it counts the initial state).
EXPECTED_STATES = {(2, 2): 181, (3, 2): 1513, (3, 3): 183_202}
EXPECTED_TRANSITIONS = {(2, 2): 436, (3, 2): 5120, (3, 3): 823_035}


@pytest.mark.parametrize("variant", ["spec", "id"])
@pytest.mark.parametrize(("queues", "apps"), sorted(EXPECTED_STATES))
def test_every_reachable_state_keeps_the_invariants_and_can_terminate(
    queues: int, apps: int, variant: PositionVariant
) -> None:
    result = explore(queues, apps, variant)
    assert result.distinct_states == EXPECTED_STATES[(queues, apps)]
    assert result.transitions == EXPECTED_TRANSITIONS[(queues, apps)]
    assert result.state_invariant_violations == {}
    assert result.terminal_states > 0
    assert result.terminal_violations == dict.fromkeys(TERMINAL_INVARIANTS, 0)
    assert result.all_can_terminate
    assert result.states_on_cycles > 0, "release, re-subscribe, re-activate loops exist"
    assert result.fewest_releases_to_terminal == 0
    assert result.releases_to_terminal_unbounded
    assert result.most_releases_to_terminal is None


def _play(state: SacState, actions: list[model.Action]) -> int:
    """Apply `actions` in the spec variant; return how many were releases."""
    for action in actions:
        assert action in set(model.enabled_actions(state, "spec")), action
        model.apply(state, action, "spec")
    return sum(action[0] == "release" for action in actions)


def test_the_seeds_example_is_a_path_to_a_terminal_state_with_one_release() -> None:
    # The seed's comment, step by step: a1 takes both queues, a2 subscribes to both, a1 is over
    # its ideal (1) and releases q2, a2 is made active on it, a1 subscribes again: deadlock.
    state = SacState.initial(["q1", "q2"], ["a1", "a2"])
    releases = _play(
        state,
        [
            ("start", "a1", None),
            ("subscribe", "a1", "q1"),
            ("make_active", "a1", "q1"),
            ("subscribe", "a1", "q2"),
            ("make_active", "a1", "q2"),
            ("start", "a2", None),
            ("subscribe", "a2", "q1"),
            ("subscribe", "a2", "q2"),
            ("release", "a1", "q2"),
            ("make_active", "a2", "q2"),
            ("subscribe", "a1", "q2"),
        ],
    )
    assert releases == 1
    assert list(model.enabled_actions(state, "spec")) == []
    assert model.terminal_invariant_violations(state) == []
    assert state.owners() == {"a1": ["q1"], "a2": ["q2"]}

    result = explore(2, 2, "spec")
    # Every terminal state has a release-free shortest path, so the shortest paths say 0 ...
    assert result.fewest_releases_on_shortest_paths == 0
    assert result.most_releases_on_shortest_paths == 0
    # ... while over all paths the seed's one release can be repeated without end: a1 releases
    # q2 before a2 subscribes to it, subscribes again, is made active again, and so on.
    assert result.fewest_releases_to_terminal == 0
    assert result.releases_to_terminal_unbounded
    assert result.most_releases_to_terminal is None
    assert result.release_transitions == 32


def test_a_release_is_undone_by_subscribing_again_and_being_made_active_again() -> None:
    state = SacState.initial(["q1", "q2"], ["a1", "a2"])
    _play(
        state,
        [
            ("start", "a1", None),
            ("subscribe", "a1", "q1"),
            ("make_active", "a1", "q1"),
            ("subscribe", "a1", "q2"),
            ("make_active", "a1", "q2"),
            ("start", "a2", None),
        ],
    )
    before = state.key()
    assert _play(state, [("release", "a1", "q2"), ("subscribe", "a1", "q2")]) == 1
    _play(state, [("make_active", "a1", "q2")])
    assert state.key() == before


def test_one_app_never_releases() -> None:
    result = explore(3, 1, "spec")
    assert result.release_transitions == 0
    assert result.states_on_cycles == 0
    assert not result.releases_to_terminal_unbounded
    assert result.most_releases_to_terminal == 0
    assert result.terminal_active_counts == {"3": 1}


# From every app started and waiting on every queue in name order (a1 first everywhere), 4
# queues x 3 apps reaches 24 states where a1 and a2 both hold two queues and a3 none: one over
# the ideal of 1 with a remainder of 1. The spec reading gives both tied apps Position 1, so
# both may release; the id reading puts a2 (the larger id) ahead at Position 0, with an ideal of
# 2, so only a1 may. With the spec reading either of the two can keep its second queue; with the
# id reading it is always a2.
TIED_START_FIGURES = {
    "spec": {
        "distinct_states": 1024,
        "terminal_states": 48,
        "transitions": 2416,
        "release_transitions": 256,
        "terminal_active_counts": {"2-1-1": 24, "1-2-1": 24},
        "fewest_releases_to_terminal": 3,
        "most_releases_to_terminal": 4,
    },
    "id": {
        "distinct_states": 784,
        "terminal_states": 24,
        "transitions": 1936,
        "release_transitions": 208,
        "terminal_active_counts": {"1-2-1": 24},
        "fewest_releases_to_terminal": 4,
        "most_releases_to_terminal": 4,
    },
}


@pytest.mark.parametrize("variant", ["spec", "id"])
def test_the_two_position_readings_explore_differently_from_a_tied_start(
    variant: PositionVariant,
) -> None:
    result = explore(4, 3, variant, starting_point="subscribed")
    figures = {name: getattr(result, name) for name in TIED_START_FIGURES[variant]}
    assert figures == TIED_START_FIGURES[variant]
    assert result.state_invariant_violations == {}
    assert result.terminal_violations == dict.fromkeys(TERMINAL_INVARIANTS, 0)
    assert result.all_can_terminate
    assert result.states_on_cycles == 0
    assert not result.releases_to_terminal_unbounded


def _releasing_apps(state: SacState, variant: PositionVariant) -> list[str]:
    return [app for app in state.apps if model.release_enabled(state, app, variant)]


def test_the_readings_disagree_exactly_in_the_tied_states() -> None:
    queues, apps = ["q1", "q2", "q3", "q4"], ["a1", "a2", "a3"]
    start = starting_state(queues, apps, "subscribed")
    seen: set[Hashable] = {start.key()}
    pending = deque([start.key()])
    disagreements: dict[tuple[tuple[int, ...], tuple[str, ...], tuple[str, ...]], int] = {}
    while pending:  # every state the spec reading reaches, which includes all the id one does
        state = state_from_key(queues, apps, pending.popleft())
        spec_releasing, id_releasing = _releasing_apps(state, "spec"), _releasing_apps(state, "id")
        if spec_releasing != id_releasing:
            counts = tuple(state.active_count[app] for app in apps)
            found = (counts, tuple(spec_releasing), tuple(id_releasing))
            disagreements[found] = disagreements.get(found, 0) + 1
        for action in model.enabled_actions(state, "spec"):
            following = state.copy()
            model.apply(following, action, "spec")
            if following.key() not in seen:
                seen.add(following.key())
                pending.append(following.key())
    assert disagreements == {((2, 2, 0), ("a1", "a2"), ("a1",)): 24}


def _graph(edges: dict[int, list[tuple[int, int]]], count: int) -> StateGraph:
    """A hand-made state graph: state -> [(target, 1 if a release else 0)]."""
    successors = [[target for target, _ in edges.get(state, [])] for state in range(count)]
    flags = [bytes(flag for _, flag in edges.get(state, [])) for state in range(count)]
    terminals = [state for state in range(count) if not successors[state]]
    return StateGraph(successors, flags, terminals)


def _release_bounds(graph: StateGraph) -> tuple[int | None, int | None, bool]:
    component = strongly_connected_components(graph.successors)
    can_terminate = states_reaching(graph.successors, graph.terminals)
    unbounded = releases_to_terminal_unbounded(graph, component, can_terminate)
    most = None if unbounded else most_releases_to_terminal(graph, component)
    return fewest_releases_to_terminal(graph), most, unbounded


def test_without_release_cycles_the_bounds_are_the_fewest_and_most_on_any_path() -> None:
    # 0 -> 1 -> 3 (terminal) with releases on both steps; 0 -> 3 directly without; 1 <-> 2 a
    # cycle of non-releases, 2 -> 3 a release.
    graph = _graph({0: [(1, 1), (3, 0)], 1: [(3, 1), (2, 0)], 2: [(1, 0), (3, 1)]}, 4)
    assert _release_bounds(graph) == (0, 2, False)


def test_a_release_on_a_cycle_that_can_terminate_makes_the_most_releases_unbounded() -> None:
    graph = _graph({0: [(1, 1), (2, 0)], 1: [(0, 0)]}, 3)
    assert _release_bounds(graph) == (0, None, True)


def test_a_release_cycle_that_cannot_terminate_does_not_count() -> None:
    # 0 -> 1 (terminal) with one release, 0 -> 2 <-> 3 a release loop with no way out.
    graph = _graph({0: [(1, 1), (2, 0)], 2: [(3, 1)], 3: [(2, 0)]}, 4)
    assert _release_bounds(graph) == (1, 1, False)


def test_the_command_prints_one_json_object(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--queues", "2", "--apps", "2", "--position", "id"]) == 0
    printed = json.loads(capsys.readouterr().out)
    for key in (
        "distinct_states",
        "terminal_states",
        "transitions",
        "release_transitions",
        "terminal_violations",
        "terminal_active_counts",
        "all_can_terminate",
        "states_on_cycles",
        "fewest_releases_on_shortest_paths",
        "most_releases_on_shortest_paths",
        "fewest_releases_to_terminal",
        "most_releases_to_terminal",
        "releases_to_terminal_unbounded",
    ):
        assert key in printed
    assert printed["position"] == "id"
    assert printed["starting_point"] == "init"
    assert printed["releases_to_terminal_unbounded"] is True
    assert printed["most_releases_to_terminal"] is None


def test_the_command_explores_from_a_later_starting_point(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--queues", "4", "--apps", "3", "--position", "id", "--from", "subscribed"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["starting_point"] == "subscribed"
    assert printed["distinct_states"] == TIED_START_FIGURES["id"]["distinct_states"]


def test_a_group_without_queues_or_apps_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one queue and one app"):
        explore(0, 2, "spec")


def test_an_unknown_starting_point_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown starting point 'halfway'"):
        explore(2, 2, "spec", starting_point="halfway")  # type: ignore[arg-type]
