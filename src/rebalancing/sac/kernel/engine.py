"""One group's protocol state carried across rebalances: mirrors sessions.ReferenceEngine.

`KernelEngine` keeps the arrays of state.py between rebalances, with each app's slot, the queue
id -> number map and the queues as an object array, and calls the compiled parts: change.py
for a membership change, settle.py for the round schedule and the plan. The refinement test
(tests/sac/test_kernel_refinement.py) holds it equal to ReferenceEngine, snapshot by snapshot.
Runtime complexity of a change: O(|A|) to find who joined and left (set algebra), O(|A|) more
when apps join (their places among the present ones: no id is ever compared, as the contract
compares only distinct ids, and None < None raises), O(|Q|) per departed app, O(1) per joining
app (amortised: the rows double when they run out), O(|Q| x rows) when the queues change (one
copy of the FIFO columns). Memory: O(|Q| x |A|) (the FIFOs, as in the protocol itself).
"""

from __future__ import annotations

from itertools import repeat
from typing import Any

import numpy as np

from rebalancing.contract import ProtocolRun
from rebalancing.sac.kernel.change import _columns_from, _leave, _members_after
from rebalancing.sac.kernel.release_choice import POLICY_CODES
from rebalancing.sac.kernel.settle import _grouped_by_owner, _settle_and_group
from rebalancing.sac.kernel.state import ABSENT, NO_APP, SENTINEL, _empty_fifos, _fifos_of

_NO_SLOTS = np.zeros(0, dtype=np.int64)

_FEWEST_SLOTS_ADDED = 8
"""Slot rows added at least when they run out: each growth copies every row, and most groups
are small (a few slots cost |Q| int32 entries each in two arrays)."""


def _slot_array(numbers: list[int]) -> Any:
    """`numbers` as an int64 array (most changes have no departed or no joined apps: the
    empty one is shared, never written)."""
    return np.array(numbers, dtype=np.int64) if numbers else _NO_SLOTS


def _numbering(ids: list[Any]) -> dict[Any, int]:
    """id -> its position in `ids` (built at C speed)."""
    return dict(zip(ids, range(len(ids)), strict=True))


def _numbers_or_minus_one(numbering: dict[Any, int], ids: list[Any]) -> Any:
    """Each id's number in `numbering`, -1 for an id it lacks, as an int64 array (looked up at
    C speed)."""
    return np.array(list(map(numbering.get, ids, repeat(-1))), dtype=np.int64)


def _object_array(ids: list[Any]) -> Any:
    """`ids` as a 1-d object array (ids that are tuples stay single elements), for taking the
    queues of a plan in one fancy-indexing step."""
    return np.fromiter(ids, dtype=object, count=len(ids))


class KernelEngine:
    """One group's protocol state as arrays, carried from one rebalance to the next.

    The same interface as rebalancing.sac.sessions.ReferenceEngine: `change` applies a
    membership change, `load_owners` rebuilds a state from active owners alone, `settle` runs
    the round schedule to quiescence. Between rebalances it keeps each app's slot, the queue
    id -> number map and the queues as an object array, so a change pays only for what changed:
    unchanged queues or apps cost one list comparison, an app that joins or leaves one row, and
    the plan is sliced out of one array.
    """

    def __init__(self, policy: str = "highest", seed: int = 0) -> None:
        if policy not in POLICY_CODES:
            raise ValueError(f"unknown release policy {policy!r}; known: {', '.join(POLICY_CODES)}")
        self.policy = POLICY_CODES[policy]
        self.queues: list[Any] = []
        self.apps: list[Any] = []
        self.queue_number: dict[Any, int] | None = {}  # None: not built since the last change
        self.queue_objects = _object_array([])
        self.slot_of: dict[Any, int] = {}  # present app -> its slot
        self.app_set: set[Any] = set()  # the present apps
        self.app_in_slot: list[Any] = [None]  # slot -> app (slot 0, the sentinel, and free: None)
        self.free_slots: list[int] = []
        self.members = np.zeros(0, dtype=np.int64)
        self.active = np.full(0, NO_APP, dtype=np.int64)
        self.fifo_next, self.fifo_prev = _empty_fifos(1, 0)
        self.start_id = np.zeros(1, dtype=np.int64)
        self.activated = np.full(0, -1, dtype=np.int64)
        self.fresh = np.zeros(0, dtype=np.bool_)
        self.scalars = np.array([1, 0], dtype=np.int64)  # next start id, promotion clock
        self.random_state = np.array([seed & ((1 << 64) - 1)], dtype=np.uint64)
        self.counts = np.zeros(5, dtype=np.int64)  # what `settle` reads back from the kernel

    def change(self, queues: list[Any], apps: list[Any]) -> None:
        """The group is now `queues` x `apps` (both sorted and distinct)."""
        if apps != self.apps:
            self._change_apps(apps)
        if queues != self.queues:
            self._change_queues(queues)

    def _change_apps(self, apps: list[Any]) -> None:
        """Departed apps leave (their slots freed, clean); new apps get a free slot, stopped."""
        slot_of = self.slot_of
        present, before = set(apps), self.app_set
        gone = before - present  # set algebra at C speed, one pass over each set
        departed = sorted(map(slot_of.pop, gone))
        departed_slots = _slot_array(departed)
        if departed:
            _leave(
                departed_slots,
                self.active,
                self.fifo_next,
                self.fifo_prev,
                self.start_id,
                self.activated,
            )
            for slot in departed:
                self.app_in_slot[slot] = None
            self.free_slots.extend(departed)
        # in sorted order (reproducible), each with its place among the present apps: taken
        # from `apps`, which is sorted, so that no id is compared (None < None raises)
        joined_places: list[int] = []
        if len(apps) > len(before) - len(gone):
            place_of = _numbering(apps)
            joined_places = sorted(map(place_of.__getitem__, present - before))
        self._reserve_slots(len(joined_places))
        joined_slots = []
        for place in joined_places:
            app = apps[place]
            slot = self.free_slots.pop()
            slot_of[app] = slot
            self.app_in_slot[slot] = app
            joined_slots.append(slot)
        self.members = _members_after(
            self.members,
            departed_slots,
            _slot_array(joined_places),
            _slot_array(joined_slots),
            self.fifo_next.shape[0],
        )
        self.apps, self.app_set = list(apps), present

    def _reserve_slots(self, wanted: int) -> None:
        """At least `wanted` free slots: the rows double when they run out (clean new rows),
        by at least _FEWEST_SLOTS_ADDED, so that a small group does not grow row by row."""
        missing = wanted - len(self.free_slots)
        if missing <= 0:
            return
        slot_count = self.fifo_next.shape[0]
        added = max(missing, slot_count, _FEWEST_SLOTS_ADDED)
        queue_count = len(self.queues)
        extra = np.full((added, queue_count), ABSENT, dtype=np.int32)
        self.fifo_next = np.concatenate([self.fifo_next, extra])
        self.fifo_prev = np.concatenate([self.fifo_prev, extra])
        self.start_id = np.concatenate([self.start_id, np.zeros(added, dtype=np.int64)])
        self.app_in_slot.extend([None] * added)
        # popped from the end: the lowest new slots are used first
        self.free_slots.extend(range(slot_count + added - 1, slot_count - 1, -1))

    def _change_queues(self, queues: list[Any]) -> None:
        """Removed queues vanish with their FIFO; new queues start empty, with no consumer, and
        fresh (every started app subscribes to them in the next settle)."""
        kept = len(self.queues)
        if len(queues) > kept and queues[:kept] == self.queues:  # queues added after the others
            source = np.arange(len(queues), dtype=np.int64)
            source[kept:] = -1
        else:
            source = _numbers_or_minus_one(self._queue_numbering(), queues)
        (
            self.active,
            self.fifo_next,
            self.fifo_prev,
            self.activated,
            self.fresh,
        ) = _columns_from(
            source,
            self.active,
            self.fifo_next,
            self.fifo_prev,
            self.activated,
            self.fresh,
        )
        self.queues = list(queues)
        self.queue_number = None
        self.queue_objects = _object_array(self.queues)

    def _queue_numbering(self) -> dict[Any, int]:
        """Queue id -> number, built when a change first needs it (only a change of the queues
        does: most changes leave them alone)."""
        if self.queue_number is None:
            self.queue_number = _numbering(self.queues)
        return self.queue_number

    def load_owners(
        self, queues: list[Any], apps: list[Any], owner: dict[Any, Any], existing: list[Any]
    ) -> None:
        """Rebuild the state from active owners only: see ReferenceEngine.load_owners."""
        self.queues, self.apps = list(queues), list(apps)
        self.queue_number = None
        self.queue_objects = _object_array(self.queues)
        self.slot_of = {app: slot for slot, app in enumerate(apps, start=1)}
        self.app_set = set(apps)
        self.app_in_slot = [None, *apps]
        self.free_slots = []
        self.members = np.arange(1, len(apps) + 1, dtype=np.int64)
        slot_of = self.slot_of
        self.active = np.array(
            [slot_of[owner[queue]] if queue in owner else NO_APP for queue in queues],
            dtype=np.int64,
        )
        existing_slots = np.array([slot_of[app] for app in existing], dtype=np.int64)
        self.fifo_next, self.fifo_prev = _fifos_of(self.active, existing_slots, len(apps) + 1)
        self.start_id = np.zeros(len(apps) + 1, dtype=np.int64)
        self.start_id[existing_slots] = np.arange(1, len(existing) + 1)
        self.activated = np.where(self.active != NO_APP, np.arange(len(queues)), -1)
        self.fresh = np.zeros(len(queues), dtype=np.bool_)
        self.scalars[:] = (len(existing) + 1, int(np.count_nonzero(self.active != NO_APP)))

    def snapshot(self) -> tuple[Any, ...]:
        """The spec's variables as ReferenceEngine.snapshot gives them (for the refinement test)."""
        app_in_slot = self.app_in_slot
        fifos = []
        for queue_number in range(len(self.queues)):
            line, app = [], int(self.fifo_next[SENTINEL, queue_number])
            while app != SENTINEL:
                line.append(app_in_slot[app])
                app = int(self.fifo_next[app, queue_number])
            fifos.append(tuple(line))
        active = tuple(app_in_slot[app] if app != NO_APP else None for app in self.active.tolist())
        start_ids = tuple(int(self.start_id[self.slot_of[app]]) for app in self.apps)
        return (
            tuple(self.queues),
            tuple(self.apps),
            tuple(fifos),
            active,
            start_ids,
            int(self.scalars[0]),
        )

    def owners(self) -> dict[Any, list[Any]]:
        """app -> the queues it is active on, ascending; every app a key, in sorted order."""
        return self._plan(*_grouped_by_owner(self.active, self.members))

    def _plan(self, grouped: Any, starts: Any) -> dict[Any, list[Any]]:
        """The plan from the queue numbers grouped by app and where each app's group starts:
        the queues come out of the object array in one step, and each app's list is a slice."""
        queues = self.queue_objects[grouped].tolist()
        bounds = starts.tolist()
        return {
            app: queues[start:end]
            for app, start, end in zip(self.apps, bounds, bounds[1:], strict=False)
        }

    def settle(self, variant: str, bound: int) -> ProtocolRun:
        """Run the round schedule to quiescence, or until `bound` steps."""
        counts = self.counts
        grouped, starts = _settle_and_group(
            self.members,
            self.active,
            self.fifo_next,
            self.fifo_prev,
            self.start_id,
            self.activated,
            self.fresh,
            self.scalars,
            self.random_state,
            variant == "spec",
            self.policy,
            bound,
            counts,
        )
        releases, steps, rounds, converged, paused = counts.tolist()
        plan = self._plan(grouped, starts)
        return ProtocolRun(
            owners=plan,
            releases=releases,
            steps=steps,
            rounds=rounds,
            converged=bool(converged),
            queues_paused=paused,
            positions=(grouped, starts),
        )
