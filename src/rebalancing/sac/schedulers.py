"""Schedulers that run the SAC protocol model to quiescence and report what it cost.

- `run_rounds`: the deterministic schedule `assign` uses. Stopped apps start (sorted id order),
  every started app subscribes to every queue (start-id order, queues sorted), then rounds: the
  broker promotes the head of every queue's FIFO that has no active consumer; every app whose
  Release is enabled (start-id order, re-checked before each release) releases its highest
  queues one at a time while it stays enabled, and re-subscribes to them at the back of their
  FIFOs. It stops when no release is enabled (quiescence: no action of the spec is enabled).
- `run_random`: a seeded random interleaving, like a TLC simulation: at each step one enabled
  action is chosen uniformly, until none is enabled.

Every action goes through the model's guarded functions, so each run is a behaviour of the spec.
Both report releases, steps (actions taken), rounds (maximal runs of releases ended by a
promotion) and whether quiescence came within the step bound; hitting the bound is reported in
`converged`, never raised. run_rounds checks the bound between rounds, so it may overshoot by
one round. Runtime complexity: O(|Q| x |A|) to subscribe, then per round
O((releases + enabled apps) x log |A| + releases x log |Q|).
"""

from __future__ import annotations

import random
from bisect import insort
from collections import Counter
from itertools import chain
from typing import Any

from rebalancing.contract import ProtocolRun
from rebalancing.sac.model import (
    Action,
    PositionVariant,
    SacState,
    apply,
    enabled_actions,
    make_active,
    release,
    release_enabled,
    release_enabled_start_ids,
    start,
    subscribe,
    subscribe_enabled,
)


def default_step_bound(queue_count: int, app_count: int) -> int:
    """Room for a cold start's cascade (about 2.5 x |Q| x |A| actions) several times over."""
    return 20 * (queue_count + 1) * (app_count + 1) + 1000


def _step_bound(state: SacState, max_steps: int | None) -> int:
    if max_steps is not None:
        return max_steps
    return default_step_bound(len(state.queues), len(state.apps))


class _Tally:
    """Counts steps, releases and rounds from the actions as they are taken."""

    def __init__(self) -> None:
        self.steps = 0
        self.releases = 0
        self.rounds = 0
        self._in_release_run = False

    def record(self, name: str) -> None:
        self.steps += 1
        if name == "release":
            self.releases += 1
            if not self._in_release_run:
                self.rounds += 1
                self._in_release_run = True
        elif name == "make_active":
            self._in_release_run = False


def run_rounds(
    state: SacState, variant: PositionVariant, max_steps: int | None = None
) -> ProtocolRun:
    """Run the deterministic schedule on `state` (mutated) until quiescence or the bound."""
    bound = _step_bound(state, max_steps)
    tally = _Tally()
    for app in state.apps:
        if state.start_id[app] == 0:
            start(state, app)
            tally.record("start")
    app_by_start_id = {state.start_id[app]: app for app in state.apps}
    # An app waiting on or active on every queue has no Subscribe enabled: skip it (counted at
    # C speed, so a large group that only lost a member does not check |Q| x |A| pairs).
    waiting_count = Counter(chain.from_iterable(state.waiting.values()))
    for start_id in sorted(app_by_start_id):
        app = app_by_start_id[start_id]
        if waiting_count[app] + state.active_count[app] == len(state.queues):
            continue
        for queue in state.queues:
            if subscribe_enabled(state, app, queue):
                subscribe(state, app, queue)
                tally.record("subscribe")
    owned = state.owners()  # kept in step: each app's active queues, ascending
    unpromoted = list(state.queues)  # the queues that may lack an active consumer
    while True:
        for queue in unpromoted:
            if state.waiting[queue] and queue not in state.active:
                head = next(iter(state.waiting[queue]))
                make_active(state, queue)
                insort(owned[head], queue)
                tally.record("make_active")
        # Releases only lower counts, which never enables another Release: the apps enabled
        # now are the only ones that can release in this round.
        releasing = release_enabled_start_ids(state, variant)
        if not releasing or tally.steps >= bound:
            return ProtocolRun(
                state.owners(), tally.releases, tally.steps, tally.rounds, not releasing
            )
        released: list[tuple[Any, Any]] = []
        for start_id in releasing:
            app = app_by_start_id[start_id]
            while release_enabled(state, app, variant):
                queue = owned[app].pop()
                release(state, app, queue, variant)
                tally.record("release")
                released.append((app, queue))
        for app, queue in released:
            subscribe(state, app, queue)
            tally.record("subscribe")
        unpromoted = [queue for _, queue in released]


def run_random(
    state: SacState, variant: PositionVariant, rng: random.Random, max_steps: int | None = None
) -> ProtocolRun:
    """Take uniformly chosen enabled actions on `state` (mutated) until none is enabled."""
    bound = _step_bound(state, max_steps)
    tally = _Tally()
    while tally.steps < bound:
        actions: list[Action] = list(enabled_actions(state, variant))
        if not actions:
            return ProtocolRun(state.owners(), tally.releases, tally.steps, tally.rounds, True)
        action = rng.choice(actions)
        apply(state, action, variant)
        tally.record(action[0])
    converged = next(enabled_actions(state, variant), None) is None
    return ProtocolRun(state.owners(), tally.releases, tally.steps, tally.rounds, converged)
