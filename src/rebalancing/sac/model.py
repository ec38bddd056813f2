"""The state and actions of RabbitMQ single-active-consumer with leaderless release.

A transcription of Jack Vanlightly's TLA+ spec `rabbit_leaderless_rebalancing` (a public gist)
and of specs/sac_leaderless.tla, which restates it with both Position variants and the
membership changes. The variables are exactly the spec's:

- `waiting[q]`: the FIFO of subscribers of queue q that are not active on it (spec:
  subscriber_queue);
- `active[q]`: q's active consumer; a queue without one is absent (spec: active[q] = 0; in
  `key()` it is NOBODY, so that any app id, None and 0 included, stays an app);
- `start_id[a]`: the id app a got when it started, 0 while it has not (spec: app);
- `next_id`: the next id to hand out (spec: id).

Each action checks the spec's enabling condition and raises `ProtocolError` when it does not
hold, so any sequence of calls that succeeds is a behaviour of the spec. Three fields are
derived from the variables and kept up to date, so that Position is a binary search instead of
a count over all apps: `active_count`, `started_count`, and `ranking`, the sorted
(active count, start id) pairs of the apps with active queues.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections import OrderedDict
from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, Literal

PositionVariant = Literal["spec", "id"]
"""`spec`: Position exactly as written (a tied app counts as ahead, so the id tie-break never
applies); `id`: strictly more active queues are ahead, and ties go by the spec's own second
disjunct (the app with the larger start id is ahead)."""

POSITION_VARIANTS: tuple[PositionVariant, ...] = ("spec", "id")

Action = tuple[str, Any, Any]
"""(name, app, queue): ("start", a, None), ("subscribe", a, q), ("release", a, q),
("make_active", head app, q)."""


class _Nobody:
    """The type of NOBODY."""

    def __repr__(self) -> str:
        return "NOBODY"


NOBODY: Any = _Nobody()
"""Stands for "no active consumer" (the spec's 0): distinct from every app id, None and 0 too."""


class ProtocolError(ValueError):
    """An action was applied whose enabling condition does not hold."""


@dataclass
class SacState:
    """The spec's variables over the current queues and apps (see the module docstring)."""

    queues: list[Any]
    apps: list[Any]
    waiting: dict[Any, OrderedDict[Any, None]] = field(default_factory=dict)
    active: dict[Any, Any] = field(default_factory=dict)
    start_id: dict[Any, int] = field(default_factory=dict)
    next_id: int = 1
    active_count: dict[Any, int] = field(default_factory=dict)
    started_count: int = 0
    ranking: list[tuple[int, int]] = field(default_factory=list)

    @classmethod
    def initial(cls, queues: list[Any], apps: list[Any]) -> SacState:
        """The spec's Init: no app started, every FIFO empty, no queue active, id = 1."""
        return cls(
            queues=sorted(queues),
            apps=sorted(apps),
            waiting={queue: OrderedDict() for queue in queues},
            start_id=dict.fromkeys(apps, 0),
            active_count=dict.fromkeys(apps, 0),
        )

    def copy(self) -> SacState:
        return SacState(
            queues=list(self.queues),
            apps=list(self.apps),
            waiting=dict(
                zip(self.waiting, map(OrderedDict.copy, self.waiting.values()), strict=True)
            ),
            active=dict(self.active),
            start_id=dict(self.start_id),
            next_id=self.next_id,
            active_count=dict(self.active_count),
            started_count=self.started_count,
            ranking=list(self.ranking),
        )

    def recompute_derived(self) -> None:
        """Set the derived fields from the spec's variables (after building a state by hand)."""
        self.active_count = dict.fromkeys(self.apps, 0)
        for app in self.active.values():
            self.active_count[app] += 1
        self.started_count = sum(1 for app in self.apps if self.start_id[app] != 0)
        self.ranking = sorted(
            (count, self.start_id[app]) for app, count in self.active_count.items() if count
        )

    def set_active_count(self, app: Any, count: int) -> None:
        """Change `app`'s active count, keeping `ranking` sorted."""
        before = self.active_count[app]
        if before:
            del self.ranking[bisect_left(self.ranking, (before, self.start_id[app]))]
        if count:
            insort(self.ranking, (count, self.start_id[app]))
        self.active_count[app] = count

    def key(self) -> Hashable:
        """The spec's variables as one hashable value (what TLC counts as a distinct state)."""
        queues = self.queues
        return (  # map() rather than generators: the explorer calls this for every transition
            tuple(map(tuple, map(self.waiting.__getitem__, queues))),
            tuple(map(self.active.get, queues, repeat(NOBODY, len(queues)))),
            tuple(map(self.start_id.__getitem__, self.apps)),
            self.next_id,
        )

    def started_apps(self) -> list[Any]:
        return [app for app in self.apps if self.start_id[app] != 0]

    def owners(self) -> dict[Any, list[Any]]:
        """app -> sorted queues it is active on, every app a key."""
        plan: dict[Any, list[Any]] = {app: [] for app in self.apps}
        for queue in self.queues:
            if queue in self.active:
                plan[self.active[queue]].append(queue)
        return plan


# --- definitions -----------------------------------------------------------------------------


def position(state: SacState, app: Any, variant: PositionVariant) -> int:
    """How many started apps with active queues are ahead of `app` (-1 when it has none).

    The spec counts another app a1 as ahead when `a1_active >= a_active`, or when the counts are
    equal and app[a] < app[a1]. Over the ranking (sorted (count, start id) pairs): in the `spec`
    variant, every other pair with count >= mine; in the `id` variant, every pair above mine.
    """
    mine = state.active_count[app]
    if mine == 0:
        return -1
    if variant == "spec":
        return len(state.ranking) - bisect_left(state.ranking, (mine, 0)) - 1
    return len(state.ranking) - bisect_right(state.ranking, (mine, state.start_id[app]))


def ideal_number(state: SacState, app: Any, variant: PositionVariant) -> int:
    """The spec's IdealNumber: |Q| div |started|, plus one for the first |Q| mod |started|."""
    ideal, remainder = divmod(len(state.queues), state.started_count)
    if remainder == 0:
        return ideal
    return ideal + 1 if remainder >= position(state, app, variant) + 1 else ideal


def release_enabled(state: SacState, app: Any, variant: PositionVariant) -> bool:
    """The spec's Release guard for `app`: started and more active queues than its ideal."""
    if state.start_id.get(app, 0) == 0:
        return False
    count = state.active_count[app]
    lowest = len(state.queues) // state.started_count
    if count <= lowest:
        return False  # IdealNumber is never below |Q| div |started|
    if count > lowest + 1:
        return True  # nor above it plus one
    return count > ideal_number(state, app, variant)


def release_enabled_start_ids(state: SacState, variant: PositionVariant) -> list[int]:
    """Start ids of every app whose Release is enabled, ascending, in O(enabled + log |A|).

    Only apps above |Q| div |started| can be enabled. Those two or more above always are; those
    exactly one above are enabled when their Position is at least |Q| mod |started|. Over the
    ranking that is a contiguous run: in the `id` variant the entries below the top `remainder`;
    in the `spec` variant all of them or none, since they share one Position.
    """
    if state.started_count == 0:
        return []
    lowest, remainder = divmod(len(state.queues), state.started_count)
    ranking = state.ranking
    one_over = bisect_left(ranking, (lowest + 1, 0))
    two_over = bisect_left(ranking, (lowest + 2, 0))
    if remainder == 0:
        boundary_end = two_over
    elif variant == "spec":
        shared_position = len(ranking) - one_over - 1
        boundary_end = two_over if shared_position >= remainder else one_over
    else:
        boundary_end = max(one_over, min(two_over, len(ranking) - remainder))
    enabled = ranking[one_over:boundary_end] + ranking[two_over:]
    return sorted(start_id for _, start_id in enabled)


# --- actions (each checks the spec's enabling condition) -------------------------------------


def start(state: SacState, app: Any) -> None:
    """Start: a stopped app gets the next id."""
    if state.start_id.get(app) != 0:
        raise ProtocolError(f"start: app {app!r} is not a stopped app of the group")
    state.start_id[app] = state.next_id
    state.next_id += 1
    state.started_count += 1


def subscribe_enabled(state: SacState, app: Any, queue: Any) -> bool:
    return (
        state.start_id.get(app, 0) != 0
        and queue in state.waiting
        and app not in state.waiting[queue]
        and state.active.get(queue, NOBODY) != app
    )


def subscribe(state: SacState, app: Any, queue: Any) -> None:
    """Subscribe: a started app not active on and not waiting for `queue` joins its FIFO."""
    if not subscribe_enabled(state, app, queue):
        raise ProtocolError(f"subscribe: app {app!r} cannot subscribe to queue {queue!r}")
    state.waiting[queue][app] = None


def release(state: SacState, app: Any, queue: Any, variant: PositionVariant) -> None:
    """Release: an app over its ideal number gives up `queue` (it must subscribe again)."""
    if state.active.get(queue, NOBODY) != app or not release_enabled(state, app, variant):
        raise ProtocolError(f"release: app {app!r} may not release queue {queue!r}")
    state.waiting[queue].pop(app, None)
    del state.active[queue]
    state.set_active_count(app, state.active_count[app] - 1)


def make_active(state: SacState, queue: Any) -> None:
    """MakeActive: the head of a queue's FIFO becomes active when the queue has none."""
    fifo = state.waiting.get(queue)
    if not fifo or queue in state.active:
        raise ProtocolError(f"make_active: queue {queue!r} has an active consumer or no waiter")
    head, _ = fifo.popitem(last=False)
    state.active[queue] = head
    state.set_active_count(head, state.active_count[head] + 1)


# --- membership changes (beyond the spec: what a real group also does) -----------------------


def add_app(state: SacState, app: Any) -> None:
    """A new app appears, stopped (it must Start and Subscribe like any other)."""
    if app in state.start_id:
        raise ProtocolError(f"add_app: app {app!r} is already in the group")
    state.apps.append(app)
    state.apps.sort()
    state.start_id[app] = 0
    state.active_count[app] = 0


def remove_app(state: SacState, app: Any) -> None:
    """An app leaves (gracefully, or the broker detects its crash): it leaves every FIFO and
    the queues it was active on lose their active consumer."""
    if app not in state.start_id:
        raise ProtocolError(f"remove_app: app {app!r} is not in the group")
    state.set_active_count(app, 0)
    for queue in state.queues:
        state.waiting[queue].pop(app, None)
        if state.active.get(queue, NOBODY) == app:
            del state.active[queue]
    state.apps.remove(app)
    state.started_count -= state.start_id.pop(app) != 0
    del state.active_count[app]


def add_queue(state: SacState, queue: Any) -> None:
    """A queue is created: no subscriber, no active consumer (apps must Subscribe)."""
    if queue in state.waiting:
        raise ProtocolError(f"add_queue: queue {queue!r} already exists")
    state.queues.append(queue)
    state.queues.sort()
    state.waiting[queue] = OrderedDict()


def remove_queue(state: SacState, queue: Any) -> None:
    """A queue is deleted with its FIFO; its active consumer loses it."""
    if queue not in state.waiting:
        raise ProtocolError(f"remove_queue: queue {queue!r} does not exist")
    if queue in state.active:
        owner = state.active.pop(queue)
        state.set_active_count(owner, state.active_count[owner] - 1)
    del state.waiting[queue]
    state.queues.remove(queue)


# --- enumeration and invariants --------------------------------------------------------------


def enabled_actions(state: SacState, variant: PositionVariant) -> Iterator[Action]:
    """Every action enabled in `state`, in a fixed order (apps, then queues, sorted)."""
    for app in state.apps:
        if state.start_id[app] == 0:
            yield ("start", app, None)
    for app in state.apps:
        if state.start_id[app] == 0:
            continue
        for queue in state.queues:
            if subscribe_enabled(state, app, queue):
                yield ("subscribe", app, queue)
        if release_enabled(state, app, variant):
            for queue in state.queues:
                if state.active.get(queue, NOBODY) == app:
                    yield ("release", app, queue)
    for queue in state.queues:
        if state.waiting[queue] and queue not in state.active:
            yield ("make_active", next(iter(state.waiting[queue])), queue)


def apply(state: SacState, action: Action, variant: PositionVariant) -> None:
    """Apply one action of `enabled_actions` to `state`."""
    name, app, queue = action
    if name == "start":
        start(state, app)
    elif name == "subscribe":
        subscribe(state, app, queue)
    elif name == "release":
        release(state, app, queue, variant)
    elif name == "make_active":
        make_active(state, queue)
    else:
        raise ProtocolError(f"unknown action {name!r}")


def state_invariant_violations(state: SacState, check_derived: bool = True) -> list[str]:
    """Names of the invariants (specs/sac_leaderless.tla) that `state` breaks, and whether the
    derived fields agree with the variables (skipped with `check_derived=False`, for a state
    whose derived fields were just recomputed from its variables)."""
    broken = []
    apps = set(state.apps)
    type_ok = (
        set(state.waiting) == set(state.queues)
        and all(set(fifo) <= apps for fifo in state.waiting.values())
        and set(state.active) <= set(state.queues)
        and set(state.active.values()) <= apps
        and all(isinstance(ident, int) and ident >= 0 for ident in state.start_id.values())
        and state.next_id >= 1
    )
    if not type_ok:
        broken.append("type_ok")
    if any(state.active.get(queue, NOBODY) in fifo for queue, fifo in state.waiting.items()):
        broken.append("active_not_waiting")
    # The spec's third invariant, no app twice in one FIFO, holds by construction here: a FIFO is
    # an OrderedDict, whose keys are distinct. The explorer's packed states could hold an app
    # twice, so explore_states checks this one ("no_duplicate_waiter") on every state it packs.
    if not check_derived:
        return broken
    derived = state.copy()
    derived.recompute_derived()
    if (derived.active_count, derived.started_count, derived.ranking) != (
        state.active_count,
        state.started_count,
        state.ranking,
    ):
        broken.append("derived_fields_consistent")
    return broken


TERMINAL_INVARIANTS = ("all_started", "all_queues_active", "balanced")


def terminal_invariant_violations(state: SacState) -> list[str]:
    """Names of the terminal invariants that a terminal `state` breaks."""
    broken = []
    if any(state.start_id[app] == 0 for app in state.apps):
        broken.append("all_started")
    if state.apps and len(state.active) != len(state.queues):
        broken.append("all_queues_active")
    counts = list(state.active_count.values())
    if counts and max(counts) - min(counts) > 1:
        broken.append("balanced")
    return broken
