"""The SAC model's states packed into integers, and the compiled breadth-first search over them.

Kept in one module: the packing (field offsets and widths), the compiled successor function and
the search share one layout of a state's words, which must change together.

The explorer (rebalancing.sac.explore) needs every reachable state of the spec once, with its
transitions; as Python objects that cost about 1 kB and 125 microseconds a state. Here a state is
a row of small integers, the *fields*, which are exactly the spec's variables:

- per queue q (`queue_stride` = apps + 1 fields from `q * queue_stride`): the active app + 1
  (0: none), then the FIFO, one app + 1 per slot from its head, 0 after its end;
- per app a (from `start_ids_at`): its start id (0 while stopped);
- last (`next_id_at`): the id counter less one.

Queues and apps are numbered in the model's order (`SacState.queues` and `.apps`, sorted). Each
field takes `field_width` bits, enough for 0..apps, and the fields are packed into as many
63-bit words as they need (one up to 6 queues x 3 apps); a state is a row of int64 words.

`successor_fields` is the spec's Next over the fields: the same actions as
`model.enabled_actions`, in the same order, each applied as `model.apply` applies it (Position is
counted from its literal definition here, where the model uses a binary search over its ranking).
tests/sac/test_explore.py checks it against the model on every state of small models: same
successors, same release flags. `search_states` runs the breadth-first search with it: an
open-addressing hash set of the packed states (linear probing, at most half full), the transitions
in compressed sparse rows (CSR), and per state its depth and the fewest and most releases over the
shortest paths to it. The state numbers are the order of discovery, as in a search over the model.
Runtime: O(transitions x fields); memory O(states x words + transitions): 4 queues x 3 apps
from Init, 5,580,736 states and 31 million transitions, searches in about 12 CPU seconds and
675 MiB peak RSS with the interpreter and numba. Needs numba (the dev and spark extras); compiled
on first use and cached on disk (`cache=True`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from numba import njit

from rebalancing.sac.explore_graph import StateGraph
from rebalancing.sac.model import PositionVariant, SacState

WORD_BITS = 63
"""Bits of a packed word that hold fields: int64 words stay non-negative."""

STATE_INVARIANTS = ("type_ok", "active_not_waiting", "no_duplicate_waiter")
"""The spec's state invariants (specs/sac_leaderless.tla: TypeOK, NotActiveAndWaiting,
NoDuplicateWaiter), in the order of the bits `broken_invariants` sets. The model names the first
two alike; the third holds there by construction (a FIFO is an OrderedDict), not in the fields."""

Words = tuple[int, ...]
"""A packed state as plain ints (what tests compare)."""


@dataclass(frozen=True)
class StateLayout:
    """Where each of the spec's variables sits in the fields, and how fields pack into words."""

    queue_count: int
    app_count: int

    @property
    def queue_stride(self) -> int:
        """Fields per queue: its active app and a FIFO slot per app."""
        return self.app_count + 1

    @property
    def start_ids_at(self) -> int:
        return self.queue_count * self.queue_stride

    @property
    def next_id_at(self) -> int:
        return self.start_ids_at + self.app_count

    @property
    def field_count(self) -> int:
        return self.next_id_at + 1

    @property
    def field_width(self) -> int:
        """Bits of a field: enough for 0..apps (app + 1, start ids, the id counter less one)."""
        return self.app_count.bit_length()

    @property
    def fields_per_word(self) -> int:
        return WORD_BITS // self.field_width

    @property
    def word_count(self) -> int:
        return -(-self.field_count // self.fields_per_word)

    @property
    def most_successors(self) -> int:
        """The most actions a state can enable: every Start, every Subscribe, a Release and a
        MakeActive per queue."""
        return self.app_count + self.app_count * self.queue_count + 2 * self.queue_count


# --- between the model and the packed form (plain Python) -----------------------------------


def state_fields(state: SacState) -> list[int]:
    """The fields of a model state (see the module docstring)."""
    app_number = {app: number for number, app in enumerate(state.apps)}
    fields: list[int] = []
    for queue in state.queues:
        fields.append(app_number[state.active[queue]] + 1 if queue in state.active else 0)
        fifo = [app_number[app] + 1 for app in state.waiting[queue]]
        fields.extend(fifo + [0] * (len(state.apps) - len(fifo)))
    fields.extend(state.start_id[app] for app in state.apps)
    fields.append(state.next_id - 1)
    return fields


def state_of_fields(fields: Sequence[int], queues: list[Any], apps: list[Any]) -> SacState:
    """The model state whose fields are `fields`, with its derived fields recomputed.

    `queues` and `apps` are the model's (sorted) lists. Fields that name no app cannot be shown
    in a model state, so they raise IndexError; an app twice in one FIFO shows once.
    """
    layout = StateLayout(len(queues), len(apps))
    state = SacState.initial(queues, apps)
    for number, queue in enumerate(state.queues):
        at = number * layout.queue_stride
        if fields[at]:
            state.active[queue] = state.apps[fields[at] - 1]
        fifo = [
            state.apps[value - 1] for value in fields[at + 1 : at + layout.queue_stride] if value
        ]
        state.waiting[queue] = OrderedDict.fromkeys(fifo)
    for number, app in enumerate(state.apps):
        state.start_id[app] = fields[layout.start_ids_at + number]
    state.next_id = fields[layout.next_id_at] + 1
    state.recompute_derived()
    return state


def pack(fields: Sequence[int], layout: StateLayout) -> Words:
    """The words of `fields` (written apart from the compiled packing, which tests compare)."""
    words = [0] * layout.word_count
    for number, value in enumerate(fields):
        word, slot = divmod(number, layout.fields_per_word)
        words[word] |= value << (slot * layout.field_width)
    return tuple(words)


def unpack(words: Sequence[int], layout: StateLayout) -> list[int]:
    """The fields packed in `words`."""
    mask = (1 << layout.field_width) - 1
    fields = []
    for number in range(layout.field_count):
        word, slot = divmod(number, layout.fields_per_word)
        fields.append((int(words[word]) >> (slot * layout.field_width)) & mask)
    return fields


def encode(state: SacState) -> Words:
    """The packed form of a model state."""
    return pack(state_fields(state), StateLayout(len(state.queues), len(state.apps)))


def decode(words: Sequence[int], queues: list[Any], apps: list[Any]) -> SacState:
    """The model state packed in `words`."""
    return state_of_fields(unpack(words, StateLayout(len(queues), len(apps))), queues, apps)


# --- compiled: the fields, the spec's Next, the search ---------------------------------------


@njit(cache=True)
def _pack(fields: Any, field_width: int, fields_per_word: int, words: Any) -> None:
    """Pack `fields` into `words`, `fields_per_word` to a word from its low bits."""
    word = 0
    shift = 0
    packed = 0
    for number in range(fields.shape[0]):
        packed |= fields[number] << shift
        shift += field_width
        if shift == fields_per_word * field_width:
            words[word] = packed
            word += 1
            shift = 0
            packed = 0
    if word < words.shape[0]:
        words[word] = packed


@njit(cache=True)
def _unpack(words: Any, field_width: int, fields_per_word: int, fields: Any) -> None:
    """The inverse of _pack."""
    mask = (1 << field_width) - 1
    word = 0
    shift = 0
    for number in range(fields.shape[0]):
        fields[number] = (words[word] >> shift) & mask
        shift += field_width
        if shift == fields_per_word * field_width:
            word += 1
            shift = 0


@njit(cache=True)
def _release_enabled(
    fields: Any,
    app: int,
    active_count: Any,
    started_count: int,
    queue_count: int,
    app_count: int,
    spec_reading: bool,
) -> bool:
    """The spec's Release guard for a started `app`: more active queues than IdealNumber.

    Position is counted as written: the other started apps with active queues that are ahead,
    i.e. with at least as many (`spec` reading) or with more, or as many and a larger start id
    (`id` reading).
    """
    start_ids_at = queue_count * (app_count + 1)
    mine = active_count[app]
    if mine == 0:
        return False
    position = 0
    for other in range(app_count):
        theirs = active_count[other]
        if other == app or fields[start_ids_at + other] == 0 or theirs == 0:
            continue
        larger_id = fields[start_ids_at + app] < fields[start_ids_at + other]
        if spec_reading:
            ahead = theirs >= mine or (theirs == mine and larger_id)
        else:
            ahead = theirs > mine or (theirs == mine and larger_id)
        if ahead:
            position += 1
    ideal = queue_count // started_count
    remainder = queue_count % started_count
    if remainder != 0 and remainder >= position + 1:
        ideal += 1
    return bool(mine > ideal)


@njit(cache=True)
def _copy_without(fields: Any, successor: Any, fifo_at: int, app_count: int, removed: int) -> None:
    """Write the FIFO at `fifo_at` into `successor` without `removed` (the spec's SelectSeq)."""
    written = fifo_at
    for slot in range(fifo_at, fifo_at + app_count):
        if fields[slot] != removed:
            successor[written] = fields[slot]
            written += 1
    for slot in range(written, fifo_at + app_count):
        successor[slot] = 0


@njit(cache=True)
def successor_fields(
    fields: Any,
    queue_count: int,
    app_count: int,
    spec_reading: bool,
    active_count: Any,
    successors: Any,
    releases: Any,
) -> int:
    """Write the successors of the state `fields` into the rows of `successors` (1 in
    `releases` for a Release) and return how many: Start per stopped app; per started app
    Subscribe per queue it neither holds nor waits for, then, when its Release guard holds,
    Release per queue it holds; MakeActive per queue without an active app and with a waiter.
    That is model.enabled_actions' order. `active_count` is scratch, one entry per app."""
    stride = app_count + 1
    start_ids_at = queue_count * stride
    next_id_at = start_ids_at + app_count
    produced = 0
    started_count = 0
    for app in range(app_count):
        if fields[start_ids_at + app] == 0:
            successors[produced, :] = fields
            successors[produced, start_ids_at + app] = fields[next_id_at] + 1
            successors[produced, next_id_at] = fields[next_id_at] + 1
            releases[produced] = 0
            produced += 1
        else:
            started_count += 1
        active_count[app] = 0
    for queue in range(queue_count):
        if fields[queue * stride] != 0:
            active_count[fields[queue * stride] - 1] += 1
    for app in range(app_count):
        if fields[start_ids_at + app] == 0:
            continue
        marker = app + 1
        for queue in range(queue_count):
            at = queue * stride
            if fields[at] == marker:
                continue
            length = 0
            waiting = False
            while length < app_count and fields[at + 1 + length] != 0:
                waiting = waiting or fields[at + 1 + length] == marker
                length += 1
            # A full FIFO holds every app, this one too, unless it holds one twice (which
            # breaks NoDuplicateWaiter and is counted): there is no slot to append to.
            if waiting or length == app_count:
                continue
            successors[produced, :] = fields
            successors[produced, at + 1 + length] = marker
            releases[produced] = 0
            produced += 1
        if _release_enabled(
            fields, app, active_count, started_count, queue_count, app_count, spec_reading
        ):
            for queue in range(queue_count):
                at = queue * stride
                if fields[at] != marker:
                    continue
                successors[produced, :] = fields
                successors[produced, at] = 0
                _copy_without(fields, successors[produced], at + 1, app_count, marker)
                releases[produced] = 1
                produced += 1
    for queue in range(queue_count):
        at = queue * stride
        if fields[at] == 0 and fields[at + 1] != 0:
            head = fields[at + 1]
            successors[produced, :] = fields
            successors[produced, at] = head
            _copy_without(fields, successors[produced], at + 1, app_count, head)
            releases[produced] = 0
            produced += 1
    return produced


@njit(cache=True)
def broken_invariants(fields: Any, queue_count: int, app_count: int) -> int:
    """Bit i set when the state `fields` breaks STATE_INVARIANTS[i]: a FIFO entry or an active
    app that names no app, or a FIFO with a gap (type_ok); a queue's active app also in its
    FIFO (active_not_waiting); an app twice in one FIFO (no_duplicate_waiter)."""
    stride = app_count + 1
    broken = 0
    for queue in range(queue_count):
        at = queue * stride
        active = fields[at]
        if active > app_count:
            broken |= 1
        ended = False
        for slot in range(at + 1, at + stride):
            value = fields[slot]
            if value == 0:
                ended = True
                continue
            if ended or value > app_count:
                broken |= 1
            if value == active:
                broken |= 2
            for earlier in range(at + 1, slot):
                if fields[earlier] == value:
                    broken |= 4
    return broken


# splitmix64's finalizer; every constant a uint64 (numba: uint64 mixed with int64 is float64)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2 = np.uint64(0x94D049BB133111EB)
_SHIFT_1 = np.uint64(1)
_SHIFT_30 = np.uint64(30)
_SHIFT_27 = np.uint64(27)
_SHIFT_31 = np.uint64(31)


@njit(cache=True)
def _hash(words: Any) -> np.int64:
    """A well-mixed non-negative hash of a packed state."""
    mixed = _GOLDEN
    for word in words:
        mixed = mixed ^ np.uint64(word)
        mixed = (mixed ^ (mixed >> _SHIFT_30)) * _MIX_1
        mixed = (mixed ^ (mixed >> _SHIFT_27)) * _MIX_2
        mixed = mixed ^ (mixed >> _SHIFT_31)
    return np.int64(mixed >> _SHIFT_1)


@njit(cache=True)
def _find(table: Any, mask: int, words: Any) -> tuple[np.int64, int]:
    """The slot of `words` in the hash set `table` and its state number, or the free slot where
    it belongs and -1. A row of `table` is a packed state and its number (-1: a free slot), so a
    probe reads one cache line."""
    word_count = words.shape[0]
    slot = _hash(words) & mask
    while True:
        number = table[slot, word_count]
        if number == -1:
            return slot, -1
        same = True
        for word in range(word_count):
            if table[slot, word] != words[word]:
                same = False
                break
        if same:
            return slot, number
        slot = (slot + 1) & mask


@njit(cache=True)
def _insert(table: Any, slot: np.int64, words: Any, number: int) -> None:
    word_count = words.shape[0]
    for word in range(word_count):
        table[slot, word] = words[word]
    table[slot, word_count] = number


@njit(cache=True)
def _grown(array: Any, capacity: int, kept: int) -> Any:
    """A new 1-D array of `capacity` elements of `array`'s type, holding its first `kept`."""
    grown = np.empty(capacity, array.dtype)
    grown[:kept] = array[:kept]
    return grown


@njit(cache=True)
def _search(
    start: Any, queue_count: int, app_count: int, field_width: int, spec_reading: bool
) -> tuple[Any, Any, Any, Any, Any, Any, Any, Any]:
    """Breadth-first search from the packed state `start` (see search_states)."""
    word_count = start.shape[0]
    fields_per_word = 63 // field_width
    field_count = queue_count * (app_count + 1) + app_count + 1
    most_successors = app_count + app_count * queue_count + 2 * queue_count

    state_capacity = 1024
    keys = np.empty((state_capacity, word_count), np.int64)
    fewest = np.empty(state_capacity, np.int32)
    most = np.empty(state_capacity, np.int32)
    offsets = np.empty(state_capacity + 1, np.int64)
    edge_capacity = 4096
    targets = np.empty(edge_capacity, np.int32)
    releases = np.empty(edge_capacity, np.uint8)
    mask = 2047
    table = np.full((mask + 1, word_count + 1), -1, np.int64)

    fields = np.empty(field_count, np.int64)
    successors = np.empty((most_successors, field_count), np.int64)
    successor_releases = np.empty(most_successors, np.uint8)
    active_count = np.empty(app_count, np.int64)
    candidate = np.empty(word_count, np.int64)
    violations = np.zeros(3, np.int64)

    keys[0] = start
    fewest[0] = 0
    most[0] = 0
    offsets[0] = 0
    slot, _ = _find(table, mask, start)
    _insert(table, slot, start, 0)
    state_count = 1
    edge_count = 0
    # Breadth first, so each depth is a run of state numbers: `current` is in the run of
    # `depth`, which ends at `level_end`, and a target of `current` is one step deeper exactly
    # when its number is `level_end` or more.
    depth = 0
    level_end = 1
    current = 0
    while current < state_count:
        if current == level_end:
            depth += 1
            level_end = state_count
        _unpack(keys[current], field_width, fields_per_word, fields)
        broken = broken_invariants(fields, queue_count, app_count)
        for bit in range(3):
            violations[bit] += (broken >> bit) & 1
        produced = successor_fields(
            fields,
            queue_count,
            app_count,
            spec_reading,
            active_count,
            successors,
            successor_releases,
        )
        if edge_count + produced > edge_capacity:
            edge_capacity *= 2
            targets = _grown(targets, edge_capacity, edge_count)
            releases = _grown(releases, edge_capacity, edge_count)
        for index in range(produced):
            _pack(successors[index], field_width, fields_per_word, candidate)
            released = successor_releases[index]
            slot, target = _find(table, mask, candidate)
            if target == -1:
                if state_count == state_capacity:
                    if state_capacity >= 2**30:
                        raise ValueError("over 2**31 states: transitions hold int32 numbers")
                    state_capacity *= 2
                    grown_keys = np.empty((state_capacity, word_count), np.int64)
                    grown_keys[:state_count] = keys[:state_count]
                    keys = grown_keys
                    fewest = _grown(fewest, state_capacity, state_count)
                    most = _grown(most, state_capacity, state_count)
                    offsets = _grown(offsets, state_capacity + 1, current + 1)
                target = state_count
                keys[target] = candidate
                fewest[target] = fewest[current] + released
                most[target] = most[current] + released
                _insert(table, slot, candidate, target)
                state_count += 1
                if 2 * state_count > mask + 1:
                    mask = 2 * mask + 1
                    table = np.full((mask + 1, word_count + 1), -1, np.int64)
                    for number in range(state_count):
                        free, _ = _find(table, mask, keys[number])
                        _insert(table, free, keys[number], number)
            elif target >= level_end:
                fewest[target] = min(fewest[target], fewest[current] + released)
                most[target] = max(most[target], most[current] + released)
            targets[edge_count] = target
            releases[edge_count] = released
            edge_count += 1
        offsets[current + 1] = edge_count
        current += 1
    return (
        keys[:state_count].copy(),
        offsets[: state_count + 1].copy(),
        targets[:edge_count].copy(),
        releases[:edge_count].copy(),
        depth,
        fewest[:state_count].copy(),
        most[:state_count].copy(),
        violations,
    )


# --- what the explorer and the tests call ----------------------------------------------------


@dataclass
class ReachableStates:
    """Every state reachable from a start, numbered in breadth-first order of discovery (0 is
    the start), with its transitions and what the search learnt on the way.

    `depth` is the most steps from the start to a state on a shortest path;
    `fewest_releases_on_shortest_paths[s]` and `most_...[s]` count releases over the paths of
    fewest steps from the start to s; `state_invariant_violations` maps each name of
    STATE_INVARIANTS that some state breaks to how many states break it.
    """

    layout: StateLayout
    keys: npt.NDArray[np.int64]  # (states, words): the packed states
    graph: StateGraph
    depth: int
    fewest_releases_on_shortest_paths: npt.NDArray[np.int32]
    most_releases_on_shortest_paths: npt.NDArray[np.int32]
    state_invariant_violations: dict[str, int]


def search_states(start: SacState, variant: PositionVariant) -> ReachableStates:
    """Every state reachable from `start` under the spec's Next, with Position read as
    `variant` says."""
    layout = StateLayout(len(start.queues), len(start.apps))
    keys, offsets, targets, releases, depth, fewest, most, violations = _search(
        np.array(encode(start), dtype=np.int64),
        layout.queue_count,
        layout.app_count,
        layout.field_width,
        variant == "spec",
    )
    return ReachableStates(
        layout=layout,
        keys=keys,
        graph=StateGraph(offsets, targets, releases),
        depth=int(depth),
        fewest_releases_on_shortest_paths=fewest,
        most_releases_on_shortest_paths=most,
        state_invariant_violations={
            name: int(count)
            for name, count in zip(STATE_INVARIANTS, violations, strict=True)
            if count
        },
    )


def compiled_successors(state: SacState, variant: PositionVariant) -> list[tuple[Words, bool]]:
    """The packed successors of a model state by `successor_fields`, each with whether it is a
    Release, in the order produced (what the tests compare with the model's actions)."""
    layout = StateLayout(len(state.queues), len(state.apps))
    fields = np.array(state_fields(state), dtype=np.int64)
    successors = np.empty((layout.most_successors, layout.field_count), dtype=np.int64)
    releases = np.empty(layout.most_successors, dtype=np.uint8)
    active_count = np.empty(layout.app_count, dtype=np.int64)
    produced = successor_fields(
        fields,
        layout.queue_count,
        layout.app_count,
        variant == "spec",
        active_count,
        successors,
        releases,
    )
    words = np.empty(layout.word_count, dtype=np.int64)
    found: list[tuple[Words, bool]] = []
    for index in range(produced):
        _pack(successors[index], layout.field_width, layout.fields_per_word, words)
        found.append((tuple(int(word) for word in words), bool(releases[index])))
    return found


def compiled_broken_invariants(fields: Sequence[int], layout: StateLayout) -> list[str]:
    """The names of the state invariants `broken_invariants` finds broken in `fields`."""
    broken = broken_invariants(
        np.array(fields, dtype=np.int64), layout.queue_count, layout.app_count
    )
    return [name for bit, name in enumerate(STATE_INVARIANTS) if (broken >> bit) & 1]
