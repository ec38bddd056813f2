"""The SAC protocol model against its spec: a hypothesis state machine whose rules are the spec's
actions (plus membership changes) and whose invariants are the spec's invariants."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from rebalancing.sac import model
from rebalancing.sac.model import POSITION_VARIANTS, ProtocolError, SacState
from rebalancing.sac.schedulers import run_random, run_rounds


class SacMachine(RuleBasedStateMachine):
    """Random behaviours of the model, checked after every step."""

    def __init__(self) -> None:
        super().__init__()
        self.state = SacState.initial([], [])
        self.variant: model.PositionVariant = "spec"
        self.next_queue = 0
        self.next_app = 0

    @initialize(
        variant=st.sampled_from(POSITION_VARIANTS),
        queue_count=st.integers(1, 6),
        app_count=st.integers(1, 4),
    )
    def setup(self, variant: model.PositionVariant, queue_count: int, app_count: int) -> None:
        self.variant = variant
        self.next_queue, self.next_app = queue_count, app_count
        self.state = SacState.initial(list(range(queue_count)), list(range(app_count)))

    @rule(data=st.data())
    def take_an_enabled_action(self, data: st.DataObject) -> None:
        actions = list(model.enabled_actions(self.state, self.variant))
        if actions:
            model.apply(self.state, data.draw(st.sampled_from(actions)), self.variant)

    @rule(data=st.data())
    def a_disabled_action_is_refused(self, data: st.DataObject) -> None:
        enabled = set(model.enabled_actions(self.state, self.variant))
        candidates: list[Any] = [
            (name, app, queue)
            for name in ("subscribe", "release")
            for app in self.state.apps
            for queue in self.state.queues
        ] + [("start", app, None) for app in self.state.apps]
        refused = [action for action in candidates if action not in enabled]
        if refused:
            with pytest.raises(ProtocolError):
                model.apply(self.state, data.draw(st.sampled_from(refused)), self.variant)

    @rule()
    def an_app_joins(self) -> None:
        model.add_app(self.state, self.next_app)
        self.next_app += 1

    @precondition(lambda self: len(self.state.apps) > 1)
    @rule(data=st.data())
    def an_app_leaves_or_crashes(self, data: st.DataObject) -> None:
        model.remove_app(self.state, data.draw(st.sampled_from(self.state.apps)))

    @rule()
    def a_queue_is_added(self) -> None:
        model.add_queue(self.state, self.next_queue)
        self.next_queue += 1

    @precondition(lambda self: len(self.state.queues) > 1)
    @rule(data=st.data())
    def a_queue_is_removed(self, data: st.DataObject) -> None:
        model.remove_queue(self.state, data.draw(st.sampled_from(self.state.queues)))

    @invariant()
    def the_specs_state_invariants_hold(self) -> None:
        assert model.state_invariant_violations(self.state) == []

    @invariant()
    def the_fast_release_guard_agrees_with_the_spec(self) -> None:
        by_definition = sorted(
            self.state.start_id[app]
            for app in self.state.apps
            if model.release_enabled(self.state, app, self.variant)
        )
        assert model.release_enabled_start_ids(self.state, self.variant) == by_definition

    @invariant()
    def the_release_guard_is_the_specs_ideal_number(self) -> None:
        for app in self.state.started_apps():
            expected = self.state.active_count[app] > model.ideal_number(
                self.state, app, self.variant
            )
            assert model.release_enabled(self.state, app, self.variant) == expected

    @invariant()
    def terminal_states_are_balanced_and_fully_assigned(self) -> None:
        if next(model.enabled_actions(self.state, self.variant), None) is None:
            assert model.terminal_invariant_violations(self.state) == []


TestSacMachine = SacMachine.TestCase


def _position_by_definition(state: SacState, app: Any, variant: str) -> int:
    """The spec's Position, literally: count the started apps with active queues ahead."""
    mine = state.active_count[app]
    if mine == 0:
        return -1
    ahead = 0
    for other in state.started_apps():
        theirs = state.active_count[other]
        if other == app or theirs == 0:
            continue
        tied_and_later = theirs == mine and state.start_id[app] < state.start_id[other]
        strictly = theirs >= mine if variant == "spec" else theirs > mine
        ahead += strictly or tied_and_later
    return ahead


@pytest.mark.parametrize("variant", POSITION_VARIANTS)
def test_position_is_the_specs_definition_in_random_reachable_states(variant: str) -> None:
    rng = random.Random(5)
    for _ in range(40):
        state = SacState.initial(list(range(rng.randint(1, 9))), list(range(rng.randint(1, 5))))
        for _ in range(rng.randint(0, 60)):
            actions = list(model.enabled_actions(state, variant))  # type: ignore[arg-type]
            if not actions:
                break
            model.apply(state, rng.choice(actions), variant)  # type: ignore[arg-type]
            for app in state.apps:
                assert model.position(state, app, variant) == _position_by_definition(  # type: ignore[arg-type]
                    state, app, variant
                )


def _tied_state() -> SacState:
    """4 queues, 3 started apps: a1 and a2 hold two queues each, a3 none (ideal: 2, 1, 1)."""
    state = SacState.initial(["q1", "q2", "q3", "q4"], ["a1", "a2", "a3"])
    for app in state.apps:
        model.start(state, app)
        for queue in state.queues:
            model.subscribe(state, app, queue)
    for queue in ("q1", "q2"):  # every FIFO is a1, a2, a3
        model.make_active(state, queue)
    for queue in ("q3", "q4"):  # let a2 go first on these
        state.waiting[queue].pop("a1")
        model.make_active(state, queue)
        state.waiting[queue]["a1"] = None
    return state


def test_spec_position_counts_a_tied_app_as_ahead_so_both_tied_apps_release() -> None:
    state = _tied_state()
    assert [state.active_count[app] for app in state.apps] == [2, 2, 0]
    assert model.position(state, "a1", "spec") == model.position(state, "a2", "spec") == 1
    assert model.release_enabled_start_ids(state, "spec") == [1, 2]
    # Once a1 has released one queue, a2 is alone at two and no longer enabled: the round
    # schedule re-checks each guard, so here both variants end alike.
    model.release(state, "a1", "q2", "spec")
    assert model.release_enabled_start_ids(state, "spec") == []


def test_id_position_breaks_the_tie_so_only_one_app_releases() -> None:
    state = _tied_state()
    # The spec's tie disjunct puts the app with the larger start id (a2) ahead.
    assert (model.position(state, "a1", "id"), model.position(state, "a2", "id")) == (1, 0)
    assert model.release_enabled_start_ids(state, "id") == [1]
    run = run_rounds(state, "id")
    # a1 releases q2, whose FIFO head a2 takes it and releases q4 to a3.
    assert (run.converged, run.releases, run.rounds) == (True, 2, 2)
    assert run.owners == {"a1": ["q1"], "a2": ["q2", "q3"], "a3": ["q4"]}


@pytest.mark.parametrize("seed", range(8))
def test_random_interleavings_of_a_large_group_reach_a_balanced_terminal_state(seed: int) -> None:
    state = SacState.initial(list(range(64)), [f"app-{n}" for n in range(8)])
    run = run_random(state, "id", random.Random(seed))
    assert run.converged
    assert model.terminal_invariant_violations(state) == []
    assert next(model.enabled_actions(state, "id"), None) is None
    assert sorted(len(owned) for owned in run.owners.values()) == [8] * 8


def test_hitting_the_step_bound_is_reported_not_raised() -> None:
    state = SacState.initial(list(range(50)), list(range(5)))
    run = run_rounds(state, "id", max_steps=10)
    assert not run.converged
    assert sorted(queue for owned in run.owners.values() for queue in owned) == list(range(50))
    random_run = run_random(
        SacState.initial(list(range(50)), list(range(5))), "id", random.Random(1), 10
    )
    assert (random_run.converged, random_run.steps) == (False, 10)


def test_rounds_count_runs_of_releases_between_promotions() -> None:
    state = SacState.initial(["q1", "q2"], ["a1", "a2"])
    run = run_rounds(state, "id")
    # Start a1, a2; four subscriptions; a1 made active on both; a1 releases q2; a1 subscribes
    # again; a2 made active on q2: the spec's own example, in one round.
    assert (run.steps, run.releases, run.rounds, run.converged) == (11, 1, 1, True)
    assert run.owners == {"a1": ["q1"], "a2": ["q2"]}


def test_app_ids_none_and_0_are_apps_not_the_absence_of_an_active_consumer() -> None:
    for app in (0, None):
        state = SacState.initial(["q1"], [app])
        inactive = state.key()
        assert inactive[1] != (app,), "no active consumer is not the same as app 0"
        model.start(state, app)
        model.subscribe(state, app, "q1")
        waiting = state.key()
        model.make_active(state, "q1")
        assert state.active == {"q1": app}
        assert len({inactive, waiting, state.key()}) == 3
        assert model.state_invariant_violations(state) == []
        assert state.key()[1] == (app,)
        assert model.NOBODY not in state.key()[1]
