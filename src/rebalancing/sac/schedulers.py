"""Schedulers that run the SAC protocol model to quiescence and report what it cost.

- `run_rounds`: the deterministic schedule `assign` and sessions use. Stopped apps start (sorted
  id order), every started app subscribes to every queue (start-id order, queues sorted), then
  rounds: the broker promotes the head of every queue's FIFO that has no active consumer; every
  app whose Release is enabled (start-id order, re-checked before each release) releases queues
  one at a time while it stays enabled, and re-subscribes to them at the back of their FIFOs.
  Which queue an app releases is its release policy (`ReleaseChoice`): the spec allows any of
  its active queues. It stops when no release is enabled (quiescence: no action is enabled).
- `run_random`: a seeded random interleaving, like a TLC simulation: at each step one enabled
  action is chosen uniformly, until none is enabled.

Every action goes through the model's guarded functions, so each run is a behaviour of the spec.
Both report releases, steps (actions taken), rounds (maximal runs of releases ended by a
promotion) and whether quiescence came within the step bound; run_rounds also the queues paused
(released at least once: a released queue has no reader until the broker promotes the next).
Hitting the bound is reported in `converged`, never raised. run_rounds checks the bound
between rounds, so it may overshoot by one round. Runtime complexity: O(|Q| x |A|) to
subscribe, then per round O((releases + enabled apps) x log |A| + releases x log |Q|).
"""

from __future__ import annotations

import random
from bisect import insort
from collections import Counter
from itertools import chain
from typing import Any, Literal

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

ReleasePolicy = Literal["highest", "lowest", "newest", "random"]
"""Which active queue an app over its ideal number releases: the highest or the lowest queue id,
the queue it became active on most recently (ties, which only hand-built states have: the highest
queue), or one drawn uniformly from a seeded SplitMix64 stream."""

RELEASE_POLICIES: tuple[ReleasePolicy, ...] = ("highest", "lowest", "newest", "random")

_MASK_64 = (1 << 64) - 1


class SplitMix64:
    """Steele, Lea and Flood's SplitMix64 generator (OOPSLA 2014), 64-bit state.

    Chosen over `random.Random` because the compiled kernel computes the same stream with plain
    integer arithmetic, so both engines draw the same releases from the same seed.
    """

    def __init__(self, seed: int) -> None:
        self.state = seed & _MASK_64

    def next(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & _MASK_64
        mixed = self.state
        mixed = ((mixed ^ (mixed >> 30)) * 0xBF58476D1CE4E5B9) & _MASK_64
        mixed = ((mixed ^ (mixed >> 27)) * 0x94D049BB133111EB) & _MASK_64
        return mixed ^ (mixed >> 31)

    def below(self, bound: int) -> int:
        """A number in [0, bound): the next output modulo `bound` (bias below 2^-50 here)."""
        return self.next() % bound


class ReleaseChoice:
    """A release policy and what it remembers from one rebalance to the next: when each queue
    became active on its current owner (a clock of promotions) and the random stream."""

    def __init__(self, policy: ReleasePolicy = "highest", seed: int = 0) -> None:
        if policy not in RELEASE_POLICIES:
            raise ValueError(
                f"unknown release policy {policy!r}; known: {', '.join(RELEASE_POLICIES)}"
            )
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise TypeError(f"the release seed must be an int, not {type(seed).__name__}")
        self.policy: ReleasePolicy = policy
        self.activated: dict[Any, int] = {}
        self.clock = 0
        self.random = SplitMix64(seed)

    def became_active(self, queue: Any) -> None:
        self.activated[queue] = self.clock
        self.clock += 1

    def forget(self, queue: Any) -> None:
        self.activated.pop(queue, None)

    def take(self, owned: list[Any]) -> Any:
        """Remove from `owned` (an app's active queues, ascending) the queue it releases."""
        if self.policy == "highest":
            return owned.pop()
        if self.policy == "lowest":
            return owned.pop(0)
        if self.policy == "newest":
            activated = self.activated
            newest = max(range(len(owned)), key=lambda at: (activated.get(owned[at], -1), at))
            return owned.pop(newest)
        return owned.pop(self.random.below(len(owned)))


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
    state: SacState,
    variant: PositionVariant,
    max_steps: int | None = None,
    choice: ReleaseChoice | None = None,
) -> ProtocolRun:
    """Run the deterministic schedule on `state` (mutated) until quiescence or the bound;
    `choice` (mutated too; by default a fresh `highest`) picks each released queue."""
    choice = choice or ReleaseChoice()
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
    paused: set[Any] = set()  # queues released at least once: each waits for its next consumer
    unpromoted = list(state.queues)  # the queues that may lack an active consumer
    while True:
        for queue in unpromoted:
            if state.waiting[queue] and queue not in state.active:
                head = next(iter(state.waiting[queue]))
                make_active(state, queue)
                insort(owned[head], queue)
                choice.became_active(queue)
                tally.record("make_active")
        # Releases only lower counts, which never enables another Release: the apps enabled
        # now are the only ones that can release in this round.
        releasing = release_enabled_start_ids(state, variant)
        if not releasing or tally.steps >= bound:
            return ProtocolRun(
                owners=state.owners(),
                releases=tally.releases,
                steps=tally.steps,
                rounds=tally.rounds,
                converged=not releasing,
                queues_paused=len(paused),
            )
        released: list[tuple[Any, Any]] = []
        for start_id in releasing:
            app = app_by_start_id[start_id]
            while release_enabled(state, app, variant):
                queue = choice.take(owned[app])
                release(state, app, queue, variant)
                paused.add(queue)
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
            break
        action = rng.choice(actions)
        apply(state, action, variant)
        tally.record(action[0])
    converged = next(enabled_actions(state, variant), None) is None
    return ProtocolRun(
        owners=state.owners(),
        releases=tally.releases,
        steps=tally.steps,
        rounds=tally.rounds,
        converged=converged,
    )
