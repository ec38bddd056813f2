"""The explicit-state explorer over the spec-faithful model (what TLC does for the TLA+ spec)."""

from __future__ import annotations

import json
from collections import deque
from typing import NamedTuple

import pytest

from rebalancing.sac import model
from rebalancing.sac.explore import StartingPoint, explore, main, starting_state
from rebalancing.sac.explore_graph import (
    StateGraph,
    fewest_releases_to_terminal,
    most_releases_to_terminal,
    releases_to_terminal_unbounded,
    states_reaching,
    strongly_connected_components,
)
from rebalancing.sac.explore_states import (
    StateLayout,
    Words,
    compiled_broken_invariants,
    compiled_successors,
    decode,
    encode,
    search_states,
    state_fields,
    state_of_fields,
)
from rebalancing.sac.model import TERMINAL_INVARIANTS, PositionVariant, SacState


class Figures(NamedTuple):
    """The counts of an exploration the tests pin (named as in `Exploration`)."""

    distinct_states: int
    terminal_states: int
    transitions: int
    release_transitions: int
    states_on_cycles: int
    depth: int
    most_releases_to_terminal: int | None


# (queues, apps, starting point) -> the figures of either Position reading: below 4 queues x 3
# apps they are the same (they differ only where two apps tie one queue over their ideal and
# there is a remainder). TLC on specs/sac_leaderless.tla prints the same distinct states, and
# "states generated" one more than the transitions (it counts the initial state). These are the
# figures of the explorer before it was compiled (a breadth-first search over the Python model).
FIGURES = {
    (1, 3, "init"): Figures(250, 36, 393, 0, 0, 7, 0),
    (3, 1, "init"): Figures(28, 1, 55, 0, 0, 7, 0),
    (2, 2, "init"): Figures(181, 4, 436, 32, 44, 8, None),
    (3, 2, "init"): Figures(1513, 12, 5120, 96, 124, 11, None),
    (2, 3, "init"): Figures(6280, 144, 18_279, 996, 654, 11, None),
    (4, 2, "init"): Figures(13_285, 12, 61_860, 2944, 3180, 14, None),
    (3, 3, "init"): Figures(183_202, 288, 823_035, 77_238, 49_314, 15, None),
    (2, 2, "subscribed"): Figures(12, 2, 14, 2, 0, 5, 1),
    (3, 3, "started"): Figures(29_791, 48, 133_911, 12_825, 8157, 12, None),
    (3, 3, "subscribed"): Figures(212, 12, 441, 57, 0, 12, 3),
}


@pytest.mark.parametrize("variant", ["spec", "id"])
@pytest.mark.parametrize(("queues", "apps", "starting_point"), sorted(FIGURES))
def test_every_reachable_state_keeps_the_invariants_and_can_terminate(
    queues: int, apps: int, starting_point: StartingPoint, variant: PositionVariant
) -> None:
    result = explore(queues, apps, variant, starting_point)
    assert (
        Figures(*(getattr(result, name) for name in Figures._fields))
        == FIGURES[(queues, apps, starting_point)]
    )
    assert result.state_invariant_violations == {}
    assert result.terminal_violations == dict.fromkeys(TERMINAL_INVARIANTS, 0)
    assert result.all_can_terminate
    assert result.states_unable_to_terminate == 0
    assert result.releases_to_terminal_unbounded == (result.most_releases_to_terminal is None)
    if starting_point == "init":
        # from Init no terminal state needs a release on a shortest path, nor on some path
        assert result.fewest_releases_on_shortest_paths == 0
        assert result.most_releases_on_shortest_paths == 0
        assert result.fewest_releases_to_terminal == 0
        # with two or more apps: release, re-subscribe, re-activate loops
        assert result.releases_to_terminal_unbounded == (apps > 1 and queues > 1)


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
    # every state the spec reading reaches, which includes all the id one does
    reached = search_states(starting_state(queues, apps, "subscribed"), "spec")
    disagreements: dict[tuple[tuple[int, ...], tuple[str, ...], tuple[str, ...]], int] = {}
    for words in reached.keys:
        state = decode(words, queues, apps)
        spec_releasing, id_releasing = _releasing_apps(state, "spec"), _releasing_apps(state, "id")
        if spec_releasing != id_releasing:
            counts = tuple(state.active_count[app] for app in apps)
            found = (counts, tuple(spec_releasing), tuple(id_releasing))
            disagreements[found] = disagreements.get(found, 0) + 1
    assert len(reached.keys) == TIED_START_FIGURES["spec"]["distinct_states"]
    assert disagreements == {((2, 2, 0), ("a1", "a2"), ("a1",)): 24}


# From every app started in name order, nothing subscribed: 31^4 states in both readings (each
# queue's FIFO and active app: 16 FIFOs without an active app, 5 with each of the 3), where the
# spec reading has more release transitions and more states on cycles than the id reading.
STARTED_FIGURES = {
    "spec": Figures(923_521, 576, 5_174_388, 169_500, 107_907, 16, None),
    "id": Figures(923_521, 576, 5_151_888, 147_000, 89_595, 16, None),
}


@pytest.mark.parametrize("variant", ["spec", "id"])
def test_the_two_position_readings_explore_differently_from_every_app_started(
    variant: PositionVariant,
) -> None:
    result = explore(4, 3, variant, starting_point="started")
    assert Figures(*(getattr(result, name) for name in Figures._fields)) == STARTED_FIGURES[variant]
    assert result.state_invariant_violations == {}
    assert result.terminal_violations == dict.fromkeys(TERMINAL_INVARIANTS, 0)
    assert result.all_can_terminate
    assert result.releases_to_terminal_unbounded


# --- the compiled search against the model -----------------------------------------------------


def _model_successors(
    state: SacState, variant: PositionVariant
) -> list[tuple[Words, bool, SacState]]:
    """Each action the model enables, applied: the packed successor, whether it is a Release,
    and the successor itself."""
    found = []
    for action in model.enabled_actions(state, variant):
        following = state.copy()
        model.apply(following, action, variant)
        found.append((encode(following), action[0] == "release", following))
    return found


SUCCESSOR_CHECKS: list[tuple[int, int, StartingPoint, PositionVariant]] = [
    (2, 2, "init", "spec"),
    (2, 2, "init", "id"),
    (3, 2, "init", "spec"),
    (3, 2, "init", "id"),
    (2, 3, "init", "spec"),
    (2, 3, "init", "id"),
    (3, 3, "subscribed", "spec"),
    (3, 3, "subscribed", "id"),
    (4, 3, "subscribed", "spec"),  # where the readings differ
    (4, 3, "subscribed", "id"),
    (4, 4, "subscribed", "spec"),  # two words a state (see below); 4 mod 4 leaves no tie
]


@pytest.mark.parametrize(("queues", "apps", "starting_point", "variant"), SUCCESSOR_CHECKS)
def test_the_compiled_successors_are_the_models_in_every_reachable_state(
    queues: int, apps: int, starting_point: StartingPoint, variant: PositionVariant
) -> None:
    start = starting_state(
        [f"q{number}" for number in range(1, queues + 1)],
        [f"a{number}" for number in range(1, apps + 1)],
        starting_point,
    )
    seen = {encode(start)}
    pending = deque([start])
    while pending:  # a breadth-first search over the model alone
        state = pending.popleft()
        expected = _model_successors(state, variant)
        assert compiled_successors(state, variant) == [
            (words, released) for words, released, _ in expected
        ], state
        for words, _, following in expected:
            if words not in seen:
                seen.add(words)
                pending.append(following)
    reached = search_states(start, variant)
    assert {tuple(int(word) for word in words) for words in reached.keys} == seen
    assert len(reached.keys) == len(seen)


def test_a_state_takes_as_many_words_as_its_fields_need() -> None:
    # 4 queues x 4 apps: 4 x 5 + 4 + 1 = 25 fields of 3 bits, 21 to a 63-bit word, so the start
    # ids straddle the two words (the successor check above runs over all 12,912 such states)
    layout = StateLayout(4, 4)
    assert (layout.field_count, layout.field_width, layout.fields_per_word) == (25, 3, 21)
    assert layout.word_count == 2
    assert (StateLayout(4, 3).field_count, StateLayout(4, 3).word_count) == (20, 1)
    queues, apps = ["q1", "q2", "q3", "q4"], ["a1", "a2", "a3", "a4"]
    state = starting_state(queues, apps, "subscribed")
    words = encode(state)
    assert len(words) == 2
    assert decode(words, queues, apps).key() == state.key()


def test_packing_a_state_and_unpacking_it_gives_it_back() -> None:
    queues, apps = ["q1", "q2"], ["a1", "a2", "a3"]
    reached = search_states(starting_state(queues, apps, "init"), "spec")
    for words in reached.keys:
        state = decode(words, queues, apps)
        assert encode(state) == tuple(int(word) for word in words)
        assert model.state_invariant_violations(state) == []
    a_state = decode(reached.keys[-1], queues, apps)
    assert state_of_fields(state_fields(a_state), queues, apps).key() == a_state.key()


def test_the_compiled_invariant_check_finds_each_broken_invariant() -> None:
    # 2 queues x 2 apps: per queue [active, FIFO slot 1, FIFO slot 2], then the two start ids and
    # the id counter less one; 2-bit fields, so 3 fits in a field but names no app.
    queues, apps = ["q1", "q2"], ["a1", "a2"]
    layout = StateLayout(2, 2)
    valid = [1, 2, 0, 0, 1, 2, 1, 2, 2]  # q1: a1 active, a2 waits; q2: a1 then a2 wait
    assert compiled_broken_invariants(valid, layout) == []
    assert model.state_invariant_violations(state_of_fields(valid, queues, apps)) == []

    active_and_waiting = [1, 2, 1, 0, 1, 2, 1, 2, 2]  # a1 active on q1 and waiting on it
    assert compiled_broken_invariants(active_and_waiting, layout) == ["active_not_waiting"]
    state = state_of_fields(active_and_waiting, queues, apps)
    assert model.state_invariant_violations(state) == ["active_not_waiting"]

    assert compiled_broken_invariants([1, 2, 0, 0, 2, 2, 1, 2, 2], layout) == [
        "no_duplicate_waiter"  # a2 twice in q2's FIFO (a model state cannot show it)
    ]
    assert compiled_broken_invariants([3, 2, 0, 0, 1, 2, 1, 2, 2], layout) == ["type_ok"]
    assert compiled_broken_invariants([1, 0, 2, 0, 1, 2, 1, 2, 2], layout) == ["type_ok"]  # a gap
    with pytest.raises(IndexError):
        state_of_fields([1, 2, 0, 0, 3, 0, 1, 2, 2], queues, apps)  # 3 names no app


def _graph(edges: dict[int, list[tuple[int, int]]], count: int) -> StateGraph:
    """A hand-made state graph: state -> [(target, 1 if a release else 0)]."""
    return StateGraph.from_successors([edges.get(state, []) for state in range(count)])


def _release_bounds(graph: StateGraph) -> tuple[int | None, int | None, bool]:
    component = strongly_connected_components(graph)
    can_terminate = states_reaching(graph, graph.terminals())
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
