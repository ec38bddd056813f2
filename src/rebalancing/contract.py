"""The contract every strategy shares: id types, input checks, the shape of a plan and of a
protocol run.

Every strategy starts from the same normalised inputs so that the rules of ../DESIGN.md hold once
for all of them: ids are distinct, hashable and mutually orderable; the result never depends on
the order the caller gave them in (they are sorted here); `previous` is read as queue -> owner,
keeping only queues and consumers that still exist, and a queue with two owners is an error.
A `CheckedPlan` is a `previous` already checked: strategies take it without checking it again,
which lets the scoring core check and invert each plan once however many readers it has.
The same inputs with the queues as ranks (`prepare_ranked`, for strategies whose cost is the
ids' own) are made in rebalancing.ranking, on these checks.
Runtime complexity: O(|Q| log |Q| + |C| log |C| + size of previous), without the last term
for a CheckedPlan.

Kept in one module: it is the interface, read as one by consumer code and every strategy: the
id types, the checks whose errors name the culprit, and the shapes of a plan and a protocol run
that those checks produce.
"""

from __future__ import annotations

import operator
import sys
import warnings
from bisect import bisect_left
from collections.abc import (
    Hashable,
    ItemsView,
    Iterable,
    Iterator,
    KeysView,
    Mapping,
    Sequence,
    ValuesView,
)
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from functools import cached_property
from itertools import (
    chain,
    islice,
    pairwise,
    repeat,
)
from typing import Any, Generic, NoReturn, Protocol, TypeVar, runtime_checkable

LONGEST_SHOWN = 160
"""The most characters of one value's repr an error message shows (see `shortened_repr`)."""


def shortened_repr(value: Any) -> str:
    """repr(value) for an error message: as it is up to LONGEST_SHOWN characters, else its
    start, its length and its end, so that a huge id (a 1 MB string) stays identifiable
    without making the message as long as the id. Every message of the contract that names a
    caller's value goes through here."""
    text = repr(value)
    if len(text) <= LONGEST_SHOWN:
        return text
    kept = (LONGEST_SHOWN - 40) // 2
    return f"{text[:kept]}...<repr of {len(text):,} characters>...{text[-kept:]}"


class Id(Hashable, Protocol):
    """A queue or consumer id: hashable and orderable against ids of the same kind."""

    def __lt__(self, other: Any, /) -> bool: ...


QueueT = TypeVar("QueueT", bound=Id)
ConsumerT = TypeVar("ConsumerT", bound=Id)

Plan = dict[ConsumerT, list[QueueT]]
"""consumer -> sorted list of its queues; every consumer is a key, every queue appears once."""


class AssignFunction(Protocol):
    """The signature every strategy module's `assign` has."""

    def __call__(
        self,
        queues: Iterable[QueueT],
        consumers: Iterable[ConsumerT],
        previous: Mapping[ConsumerT, Iterable[QueueT]] | None = None,
    ) -> dict[ConsumerT, list[QueueT]]: ...


@dataclass(frozen=True, kw_only=True)
class ProtocolRun:
    """What one rebalance of a protocol strategy ended with and what the protocol cost.

    `owners` is the plan (consumer -> sorted queues); `releases`, `steps` (actions taken) and
    `rounds` are the protocol's own counts; `converged` is False when a step bound cut it short;
    `queues_paused` counts the queues that a consumer still in the group was reading before the
    change and that had no reader at some moment of it (None: the protocol does not say).
    `positions`, from an engine that holds the plan as arrays, is `owners` again as two int64
    arrays: each consumer's queues as positions in the rebalance's sorted queues, consumer
    after consumer in sorted order, and where each consumer's run of them starts (|C| + 1
    entries); the scoring core reads these rather than `owners` back (None: read `owners`). It
    must be exactly `owners`: the scoring core compares only the consumers and their counts,
    not the queues, so whatever replaces `owners` (dataclasses.replace) must reset it.
    Time, from a protocol that models it with its system's own intervals (None otherwise):
    `claims` and `steals`, the ownership writes that took an unowned (or expired) queue and
    one another member held; `seconds_to_balance`, from the change until the last change of who
    processes what (the group is quiet from then on); `queue_seconds_unowned`, the time each
    queue had no member processing it, summed over the queues; `queue_seconds_doubly_owned`,
    the time each queue had two or more members that both believed they owned it, summed;
    `queue_seconds_paused`, the part of the unowned time that followed a revocation from a
    member still in the group (the queue was read, given up on purpose, and not yet read again);
    `heartbeats`, the heartbeat requests the members sent from the change until quiet, for a
    protocol whose rebalance runs on heartbeats (Kafka's consumer protocol, KIP-848).
    """

    owners: dict[Any, list[Any]]
    releases: int
    steps: int
    rounds: int
    converged: bool
    queues_paused: int | None = None
    positions: tuple[Any, Any] | None = field(default=None, compare=False, repr=False)
    claims: int | None = None
    steals: int | None = None
    seconds_to_balance: float | None = None
    queue_seconds_unowned: float | None = None
    queue_seconds_doubly_owned: float | None = None
    queue_seconds_paused: float | None = None
    heartbeats: int | None = None


class StrategySession(Protocol):
    """A protocol strategy's state carried from one rebalance of a group to the next."""

    def rebalance(self, queues: Iterable[Any], consumers: Iterable[Any]) -> ProtocolRun:
        """Apply a membership change (the group is now `queues`, `consumers`) and settle."""
        ...


@runtime_checkable
class ChangeAwareSession(StrategySession, Protocol):
    """A session whose protocol treats changes differently by how they happen (a crash is
    noticed by a timeout, a graceful leave at once, a restarted member comes back under its
    id). The scoring core calls `apply_change` instead of `rebalance` when a session has it."""

    def apply_change(
        self, queues: Iterable[Any], consumers: Iterable[Any], kind: str
    ) -> ProtocolRun:
        """Apply a membership change of `kind` (a change kind of the scenarios: "crash": the
        members gone crashed; "rolling_restart": the members gone are restarting and come back
        under their ids at a later change of that kind; any other kind: they left gracefully)
        and settle; the group is now `queues`, `consumers`."""
        ...


class CheckedPlan(Mapping[ConsumerT, tuple[QueueT, ...]], Generic[QueueT, ConsumerT]):
    """A `previous` plan (consumer -> queues) that has passed every check `assign` makes of one.

    Building it runs the checks (a mapping of iterables of hashable queue ids, no queue held
    twice: `previous_owners` says which errors) and keeps the inversion, `owner` (queue ->
    consumer). It holds its own tuples, so nothing can change it afterwards and the check stays
    true: strategies take it as `previous` without checking or inverting it again, and return
    the plan they return for the mapping it was built from. The scoring core builds one from
    every plan a strategy returns and passes it as the next step's `previous`: one check and at
    most one inversion per plan, however many read it (`of_checked_lists`: checked elsewhere,
    inverted on first use, and `within` the set of the group's queues, which tells a strategy
    of the next step with that very set that no queue of the plan has gone).
    Runtime complexity: O(size of the plan) to build; reading it is a dict's.
    """

    __slots__ = ("_owner", "_queues_of", "within")

    _owner: dict[QueueT, ConsumerT] | None  # None: not inverted yet (see `of_checked_lists`)
    within: AbstractSet[QueueT] | None
    """A set that holds every queue of the plan, when its maker knows one (else None)."""

    def __init__(self, plan: Mapping[ConsumerT, Iterable[QueueT]] | None) -> None:
        self._queues_of, self._owner = _checked_inversion(plan)
        self.within = None

    @classmethod
    def of_checked_lists(
        cls,
        plan: Mapping[ConsumerT, Sequence[QueueT]],
        within: AbstractSet[QueueT] | None = None,
    ) -> CheckedPlan[QueueT, ConsumerT]:
        """A CheckedPlan of `plan` for a caller that has made the checks itself, by other
        means: every queue hashable, none held twice and, with `within`, each one in that set.
        Not for strategies or their callers: nothing is checked here, and a plan that holds a
        queue twice would make a CheckedPlan that lies. The scoring core's compiled path proves
        all three for integer queue ids without a dict (`within`: the group's queue set), from
        the plan's lists or from its protocol run's `positions`, which are the same plan; the
        inversion, which a strategy that ignores `previous` never reads, is then made only when
        `owner` is first read."""
        checked: CheckedPlan[QueueT, ConsumerT] = cls.__new__(cls)
        checked._queues_of = dict(zip(plan, map(tuple, plan.values()), strict=True))
        checked._owner = None
        checked.within = within
        return checked

    @property
    def owner(self) -> Mapping[QueueT, ConsumerT]:
        """queue -> the consumer holding it (to be read, never changed)."""
        if self._owner is None:
            self._owner = _owner_of(self._queues_of)
        return self._owner

    def __getitem__(self, consumer: ConsumerT) -> tuple[QueueT, ...]:
        return self._queues_of[consumer]

    def __iter__(self) -> Iterator[ConsumerT]:
        return iter(self._queues_of)

    def __len__(self) -> int:
        return len(self._queues_of)

    def __contains__(self, consumer: object) -> bool:
        return consumer in self._queues_of

    def get(self, consumer: ConsumerT, default: Any = None) -> Any:
        return self._queues_of.get(consumer, default)

    def keys(self) -> KeysView[ConsumerT]:
        return self._queues_of.keys()

    def values(self) -> ValuesView[tuple[QueueT, ...]]:
        return self._queues_of.values()

    def items(self) -> ItemsView[ConsumerT, tuple[QueueT, ...]]:
        return self._queues_of.items()

    def __repr__(self) -> str:
        return f"CheckedPlan({self._queues_of!r})"


@dataclass(frozen=True)
class Group(Generic[QueueT, ConsumerT]):
    """Validated inputs of one rebalance.

    `queues` and `consumers` are sorted and distinct; `previous` is the checked previous plan
    (consumer -> queues), departed queues and consumers included; `previous_owner` its
    inversion (queue -> consumer). Strategies read them and change none of them.
    """

    queues: list[QueueT]
    consumers: list[ConsumerT]
    previous: CheckedPlan[QueueT, ConsumerT]
    given_queues: SortedIds | None = field(default=None, repr=False, compare=False, kw_only=True)
    """The queues as the caller gave them, when that was as SortedIds (see `queue_set`): set by
    `prepare`, and then the same ids as `queues`."""

    @cached_property
    def queue_set(self) -> AbstractSet[QueueT]:
        """The queues as a set: the one their SortedIds holds when they came so (the scoring
        core makes it once per step for every strategy), else made here on first use."""
        if self.given_queues is not None:
            return self.given_queues.as_set
        return frozenset(self.queues)

    @property
    def previous_owner(self) -> Mapping[QueueT, ConsumerT]:
        """queue -> its previous consumer, departed queues and consumers included."""
        return self.previous.owner

    @cached_property
    def kept_owner(self) -> dict[QueueT, ConsumerT]:
        """Each queue that still exists -> its previous consumer, if that one is still here.

        Computed on first use: strategies that ignore `previous` never pay for it.
        """
        kept: dict[QueueT, ConsumerT] = {}
        for consumer, owned in self.kept_queues.items():
            kept.update(zip(owned, repeat(consumer)))
        return kept

    @cached_property
    def kept_queues(self) -> Mapping[ConsumerT, Sequence[QueueT]]:
        """Each consumer still here that `previous` names -> those of its previous queues that
        still exist, in the order `previous` gives them: `kept_owner` grouped by consumer.

        Computed on first use, in passes at C speed; when every queue and every consumer of
        `previous` is still here (a join, a rolling restart's return), it is `previous` as a
        dict. That every queue is still here is known without a pass when `previous.within` is
        this group's own queue set (the scoring core's steps that leave the queues alone).
        """
        previous = self.previous
        if not previous:
            return {}
        present_consumers = set(self.consumers)
        queue_set = self.queue_set  # not previous.owner: a CheckedPlan may not be inverted yet
        if previous.within is queue_set:
            every_queue_still_there = True
        else:
            previous_queues = chain.from_iterable(previous.values())
            still_there = operator.countOf(map(queue_set.__contains__, previous_queues), True)
            every_queue_still_there = still_there == sum(map(len, previous.values()))
        if every_queue_still_there:
            if present_consumers.issuperset(previous.keys()):
                return dict(previous.items())
            return {
                consumer: owned
                for consumer, owned in previous.items()
                if consumer in present_consumers
            }
        return {
            consumer: tuple(filter(queue_set.__contains__, owned))
            for consumer, owned in previous.items()
            if consumer in present_consumers
        }


class SortedIds(tuple[Any, ...]):
    """Ids that have passed `sorted_distinct_ids`: distinct, hashable, strictly increasing.

    Building one runs the check (only `of_sorted`, for a producer that makes its ids so by
    construction, skips it, and `sorted_distinct_ids` trusts any SortedIds); being a tuple,
    nothing can change its ids afterwards, so the check stays true and `prepare` takes it
    without checking or sorting it again (one copy to a list). Its `as_set`, made on first use
    and kept in the instance's dict (a tuple subclass can have no slots), is not to be set.
    The scoring core checks each step's queues and consumers once this way, for every strategy
    it runs on them, and shares their one frozenset (`as_set`). `kind` ("queue" or
    "consumer") names the ids in error messages.
    """

    def __new__(cls, ids: Iterable[Any], kind: str) -> SortedIds:
        return super().__new__(cls, sorted_distinct_ids(ids, kind))

    @classmethod
    def of_sorted(cls, ids: tuple[Any, ...]) -> SortedIds:
        """SortedIds of `ids` for a caller that makes them sorted, distinct and hashable by
        construction (the scenario generator: queue ids from a counter, consumer ids drawn
        until new, then sorted). Not for strategies or their callers: nothing is checked here,
        and ids out of order would make a SortedIds that lies; the generator's tests check its
        steps against `sorted_distinct_ids`."""
        return super().__new__(cls, ids)

    @cached_property
    def as_set(self) -> frozenset[Any]:
        """The ids as a frozenset, made on first use and kept (ids never change): the one set
        that every strategy of a step and the scoring core share."""
        return frozenset(self)

    def __getnewargs__(self) -> tuple[tuple[Any, ...], str]:
        return tuple(self), "id"  # checked again when unpickled

    def __getstate__(self) -> None:
        return None  # the set is made again where it is needed, not pickled


_HASHABLE_BY_CONSTRUCTION: tuple[type, ...] = (set, frozenset, type({}.keys()))
"""Iterables whose items are hashable because the type stores them hashed: the exact types, as
a subclass (or a KeysView of any Mapping) may iterate over anything."""


def sorted_distinct_ids(ids: Iterable[Any], kind: str, *, hashed_next: bool = False) -> list[Any]:
    """Sort `ids`, raising ValueError on a duplicate and TypeError on unusable ids.

    `kind` ("queue" or "consumer") names the ids in error messages. After the sort the ids must
    be strictly increasing: that finds duplicates, and ids that sort without an error but not
    into a total order (NaN, frozensets), which would make the plan depend on the input order.
    Ids already strictly increasing are not sorted (the sort would change nothing): one pass
    instead of two. Ids given as a set, a frozenset or a dict's keys (those exact types) are
    hashable by construction and skip the hash pass; any other iterable,
    `collections.abc.Set`s and a non-dict Mapping's `KeysView` included (their `__iter__` can
    yield anything), is hashed. A range is distinct, and SortedIds are checked already. Every
    pass runs at C speed.

    `hashed_next`: the caller hashes every id of the result right away (a dict of them, see
    `rank_queues`) and names an unhashable one with `_raise_for_first_unhashable`, so the hash
    pass is made here only before a sort, where an unhashable id is named before any problem
    of order, as without `hashed_next`; ids in order come back in the order given.
    """
    if type(ids) is SortedIds:
        return list(ids)
    if type(ids) is not tuple and type(ids) is not list:  # the common cases first
        if isinstance(ids, str | bytes) or not isinstance(ids, Iterable):
            raise TypeError(f"{kind}s must be an iterable of {kind} ids, not {type(ids).__name__}")
        if isinstance(ids, range):  # distinct: only a negative step needs the sort
            return sorted(ids)
    given = list(ids)  # our own copy, sorted in place below
    hash_pass_due = type(ids) not in _HASHABLE_BY_CONSTRUCTION
    if hash_pass_due and not hashed_next:
        _check_hashable(ids, given, kind)
        hash_pass_due = False
    if _strictly_increasing(given):
        return given
    if hash_pass_due:
        _check_hashable(ids, given, kind)
    try:
        given.sort()
    except TypeError as error:
        raise TypeError(_unorderable_message(given, kind, error)) from None
    if not all(map(operator.lt, given, islice(given, 1, None))):
        _raise_for_first_out_of_order(given, kind)
    return given


def _check_hashable(ids: Iterable[Any], given: list[Any], kind: str) -> None:
    """Hash every id of `given` (`ids` as a list), in one C loop; TypeError naming the first
    unhashable one."""
    try:
        hash(ids if type(ids) is tuple else tuple(given))
    except TypeError:
        _raise_for_first_unhashable(given, kind)


def _strictly_increasing(ids: list[Any]) -> bool:
    """Whether `ids` are strictly increasing as given; False too when two of them cannot be
    compared (the sort that follows names them, as it always has)."""
    try:
        return all(map(operator.lt, ids, islice(ids, 1, None)))
    except (TypeError, ValueError):
        return False


def _raise_for_first_unhashable(ids: list[Any], kind: str) -> NoReturn:
    """Raise for the first unhashable id, in input order."""
    for identifier in ids:
        try:
            hash(identifier)
        except TypeError:
            raise TypeError(
                f"{kind} id {shortened_repr(identifier)} is not hashable "
                f"({type(identifier).__name__})"
            ) from None
    raise RuntimeError(f"a {kind} id failed to hash, yet each one hashes alone")


def _raise_for_first_out_of_order(sorted_ids: list[Any], kind: str) -> NoReturn:
    """Raise for the first neighbours of the sorted ids that are not strictly increasing."""
    for lower, upper in pairwise(sorted_ids):
        if lower < upper:
            continue
        if lower == upper:
            raise ValueError(f"duplicate {kind} id {shortened_repr(lower)}")
        raise TypeError(
            f"{kind} ids do not sort into a total order: {shortened_repr(lower)} "
            f"({type(lower).__name__}) and {shortened_repr(upper)} ({type(upper).__name__}) "
            "are neither equal nor in increasing order"
        )
    raise RuntimeError(f"the sorted {kind} ids are strictly increasing after all")


def _unorderable_message(ids: list[Any], kind: str, error: TypeError) -> str:
    """Name two ids that cannot be compared, so the caller sees which ones clash."""
    first = ids[0]
    for other in ids[1:]:
        try:
            first < other  # noqa: B015 - only the exception matters
            other < first  # noqa: B015
        except TypeError:
            return (
                f"{kind} ids cannot be ordered together: {shortened_repr(first)} "
                f"({type(first).__name__}) and {shortened_repr(other)} ({type(other).__name__})"
            )
    return f"{kind} ids cannot be ordered together: {error}"


def previous_owners(
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None,
) -> dict[QueueT, ConsumerT]:
    """Invert `previous` (consumer -> queues) into queue -> consumer.

    Raises TypeError when `previous` is not a mapping of iterables, and ValueError when a queue
    is owned twice (by two consumers, or listed twice by one).
    """
    if type(previous) is CheckedPlan:
        return dict(previous.owner)
    return _checked_inversion(previous)[1]


def _checked_inversion(
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None,
) -> tuple[dict[ConsumerT, tuple[QueueT, ...]], dict[QueueT, ConsumerT]]:
    """(consumer -> its queues as a tuple, queue -> consumer) of `previous`, checked as
    `previous_owners` says; each iterable is read once."""
    if previous is None:
        return {}, {}
    if type(previous) is not dict and not isinstance(previous, Mapping):
        raise TypeError(
            f"previous must be a mapping of consumer -> queues or None, "
            f"not {type(previous).__name__}"
        )
    if type(previous) is dict and set(map(type, previous.values())) <= {list, tuple}:
        inverted = _inverted_at_c_speed(previous)
        if inverted is not None:
            return inverted
    queues_of: dict[ConsumerT, tuple[QueueT, ...]] = {}
    owner: dict[QueueT, ConsumerT] = {}
    for consumer, owned in previous.items():  # consumer by consumer, to name the culprit
        if (
            type(owned) is not list  # the common cases first
            and type(owned) is not tuple
            and (isinstance(owned, str | bytes) or not isinstance(owned, Iterable))
        ):
            raise TypeError(
                f"previous[{shortened_repr(consumer)}] must be an iterable of queue ids, "
                f"not {type(owned).__name__}"
            )
        owned_queues = tuple(owned)
        queues_of[consumer] = owned_queues
        expected_size = len(owner) + len(owned_queues)
        try:
            owner.update(zip(owned_queues, repeat(consumer)))  # the common case, at C speed
        except TypeError:
            expected_size = -1
        if len(owner) != expected_size:  # the culprit is among the queues read so far
            _raise_for_first_bad_owner(list(queues_of.items()))
    return queues_of, owner


def _inverted_at_c_speed(
    previous: dict[ConsumerT, Iterable[QueueT]],
) -> tuple[dict[ConsumerT, tuple[QueueT, ...]], dict[QueueT, ConsumerT]] | None:
    """What `_checked_inversion` returns, for a dict of lists and tuples, in passes at C speed
    (no Python loop over the consumers); None when a queue is unhashable or held twice."""
    queues_of: dict[ConsumerT, tuple[QueueT, ...]] = dict(
        zip(previous, map(tuple, previous.values()), strict=True)
    )
    try:
        owner = _owner_of(queues_of)
    except TypeError:  # an unhashable queue
        return None
    if len(owner) != sum(map(len, queues_of.values())):  # a queue held twice
        return None
    return queues_of, owner


def _owner_of(
    queues_of: Mapping[ConsumerT, tuple[QueueT, ...]],
) -> dict[QueueT, ConsumerT]:
    """queue -> consumer of `queues_of`, at C speed (a queue held twice: its last holder)."""
    holder_of_each = chain.from_iterable(map(repeat, queues_of, map(len, queues_of.values())))
    return dict(zip(chain.from_iterable(queues_of.values()), holder_of_each, strict=True))


def _raise_for_first_bad_owner(read: list[tuple[Any, Iterable[Any]]]) -> NoReturn:
    """Raise for the first unhashable or twice-owned queue of `read`, in input order."""
    owner: dict[Any, Any] = {}
    for consumer, owned in read:
        for queue in owned:
            try:
                earlier = owner.get(queue)
            except TypeError:
                hint = (
                    ": a plan read back from JSON has lists where its ids were tuples; turn "
                    "them back into tuples (tuple(queue)) before passing it as previous"
                    if isinstance(queue, list)
                    else ""
                )
                raise TypeError(
                    f"queue id {shortened_repr(queue)} in previous[{shortened_repr(consumer)}] "
                    f"is not hashable{hint}"
                ) from None
            if queue in owner:
                if earlier == consumer:
                    raise ValueError(
                        f"queue {shortened_repr(queue)} is listed twice for "
                        f"{shortened_repr(consumer)} in previous"
                    )
                raise ValueError(
                    f"queue {shortened_repr(queue)} is owned by both {shortened_repr(earlier)} "
                    f"and {shortened_repr(consumer)} in previous"
                )
            owner[queue] = consumer
    raise RuntimeError("previous did not invert, yet no queue in it is unhashable or repeated")


class PreviousMismatchWarning(UserWarning):
    """`previous` holds queues, yet none of them is one of the queues given: most likely ids of
    another form (strings "orders-4" against tuples ("orders", 4)), which would make every
    queue move. `prepare` (so every strategy) warns once per call, attributed to the line that
    called the strategy.

    A warning rather than an error or a `strict` parameter: a group can legitimately have
    replaced every queue (a topic deleted and created again, a consumer's own view after its
    queues were removed), the three-argument call stays the same for every strategy, and
    `warnings.simplefilter("error", PreviousMismatchWarning)` makes it strict where a caller
    wants that. A CheckedPlan is not looked at: it is how the library passes on the plans it
    made itself (the scoring core, the sessions), whose queues can all be gone legitimately.
    """


def prepare(
    queues: Iterable[QueueT],
    consumers: Iterable[ConsumerT],
    previous: Mapping[ConsumerT, Iterable[QueueT]] | None,
) -> Group[QueueT, ConsumerT]:
    """Check and normalise the inputs of `assign` (see the module docstring); a CheckedPlan as
    `previous` is taken as it is. A mapping of the caller's is checked: a value that is itself
    one of the queue ids is a TypeError (a list of them belongs there), and one holding queues
    none of which is among `queues` a PreviousMismatchWarning."""
    sorted_queues: list[QueueT] = sorted_distinct_ids(queues, "queue")
    sorted_consumers: list[ConsumerT] = sorted_distinct_ids(consumers, "consumer")
    if type(previous) is CheckedPlan:
        checked = previous
    else:
        _refuse_a_queue_id_for_a_list(previous, sorted_queues)
        checked = CheckedPlan(previous)
        if sorted_queues and sorted_consumers and checked:  # else no queue can move
            _warn_if_sharing_no_queue(checked.owner, sorted_queues)
    given_queues = queues if type(queues) is SortedIds else None
    return Group(sorted_queues, sorted_consumers, checked, given_queues=given_queues)


def empty_plan(consumers: list[ConsumerT]) -> dict[ConsumerT, list[QueueT]]:
    """A plan with every consumer as a key and no queues yet, in consumer order.

    Strategies fill these lists (`extend`) rather than store new slices: Python's cyclic garbage
    collector runs every few hundred new containers and scans the young ones, and lists made
    empty are cheap to scan, where fresh slices would have it read every queue reference (at a
    million queues x 2,000 consumers, measured: 4-8 ms to build the plan instead of 10-12 ms).
    """
    return {consumer: [] for consumer in consumers}


def _refuse_a_queue_id_for_a_list(previous: object, sorted_queues: list[Any]) -> None:
    """TypeError when a value of `previous` is itself one of the queue ids (`{"c-a": ("orders",
    3)}` would be read as the two queue ids "orders" and 3). Only values that are not lists
    are looked up, by bisection in the sorted queues: O(log |Q|) for each."""
    if not isinstance(previous, Mapping):
        return  # CheckedPlan refuses it
    for consumer, owned in previous.items():
        if type(owned) is list:
            continue
        try:
            index = bisect_left(sorted_queues, owned)
            is_a_queue = index < len(sorted_queues) and bool(sorted_queues[index] == owned)
        except (TypeError, ValueError):  # not comparable with the queue ids: not one of them
            continue
        if is_a_queue:
            raise TypeError(
                f"previous[{shortened_repr(consumer)}] is the queue id {shortened_repr(owned)} "
                f"itself, where a list of queue ids belongs: wrap it in a list, "
                f"[{shortened_repr(owned)}]"
            )


def _warn_if_sharing_no_queue(owner: Mapping[Any, Any], sorted_queues: list[Any]) -> None:
    """PreviousMismatchWarning when `owner` (queue -> consumer of previous) holds queues and
    none of them is among `sorted_queues` (O(|Q|) at most, at C speed: it stops at the first
    queue shared)."""
    if not owner or not owner.keys().isdisjoint(sorted_queues):
        return
    _warn_sharing_no_queue(len(owner), next(iter(owner)), sorted_queues)


def _warn_sharing_no_queue(held_count: int, held: Any, sorted_queues: list[Any]) -> None:
    """The PreviousMismatchWarning: previous holds `held_count` queues, `held` the first."""
    _warn_outside_package(
        f"previous holds {held_count} queue(s), none of them among the {len(sorted_queues)} "
        f"queues given (previous holds {shortened_repr(held)} ({type(held).__name__}), the "
        f"queues start with {shortened_repr(sorted_queues[0])} "
        f"({type(sorted_queues[0]).__name__})): ids of another form? Every queue is assigned "
        "as if previous were empty.",
        PreviousMismatchWarning,
    )


def _warn_outside_package(message: str, category: type[Warning]) -> None:
    """warnings.warn, attributed to the first frame outside this package: the line that called
    the strategy, however deep inside the package the check runs (Python 3.12's
    `skip_file_prefixes`, by hand)."""
    frame: Any = sys._getframe(1)  # the caller of this function: stacklevel 2
    level = 2
    while frame is not None and _in_this_package(frame.f_globals.get("__name__", "")):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)


def _in_this_package(module_name: str) -> bool:
    package = __name__.partition(".")[0]
    return module_name == package or module_name.startswith(package + ".")


_MOVED_TO_RANKING = frozenset(
    {
        "ROWS_FROM",
        "WHOLE_LISTS_FROM",
        "RankedGroup",
        "RankedQueues",
        "prepare_ranked",
        "rank_queues",
    }
)
"""The queues as ranks and their tuning, in this module before 0.2.0: rebalancing.ranking now."""


def __getattr__(name: str) -> Any:
    """The names that moved to rebalancing.ranking, with a DeprecationWarning, until 0.3.0 (a
    lazy import: ranking is built on this module's checks, so this module cannot import it
    while it loads)."""
    if name in _MOVED_TO_RANKING:
        warnings.warn(
            f"rebalancing.contract.{name} moved to rebalancing.ranking.{name}; the old path "
            "goes in 0.3.0",
            DeprecationWarning,
            stacklevel=2,
        )
        from rebalancing import ranking

        return getattr(ranking, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "LONGEST_SHOWN",
    "AssignFunction",
    "CheckedPlan",
    "ConsumerT",
    "Group",
    "Id",
    "Plan",
    "PreviousMismatchWarning",
    "ProtocolRun",
    "QueueT",
    "SortedIds",
    "StrategySession",
    "empty_plan",
    "prepare",
    "previous_owners",
    "shortened_repr",
    "sorted_distinct_ids",
]
