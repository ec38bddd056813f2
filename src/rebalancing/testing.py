"""Public conformance checks: does a function keep the contract every strategy promises?

`check_strategy(assign)` runs every check of CHECKS on any function with the signature
`assign(queues, consumers, previous) -> dict[consumer, list[queue]]` and raises AssertionError
naming the promise broken and the smallest input found that shows it, the way scikit-learn's
`check_estimator` checks an estimator. The promises are those of ../DESIGN.md ("The common
interface"): a valid plan with every queue exactly once, the same plan for any input order and in
every process (any PYTHONHASHSEED), inputs never mutated, empty groups, and a TypeError or
ValueError naming the culprit for each kind of bad input.

It needs nothing beyond the standard library: the property checks run on a fixed, seeded list of
groups, smallest first (ints, strings and (topic, broker, queue) tuples as ids; previous plans
that name departed consumers and removed queues), and a failing group is shrunk greedily (drop a
queue, a consumer, a previous entry) while it still fails. The project's own suite also feeds the
same properties (PROPERTIES) with hypothesis-generated groups.

A strategy that reads zones, weights or capacities (rebalancing.placement: `uses`) and promises
something about them (`promises`) gets more checks, chosen by `placement_checks(uses,
promises)`: every property again on groups that carry those inputs (`*_with_placement`), the
errors for bad ones (`rejects_bad_*`), entries of departed ids ignored, zones that cannot matter
changing nothing, and each declared promise (`promise_balanced`, `promise_zone_matching`,
`promise_zone_matching_per_topic`, `promise_bounded_load`, as rebalancing.placement.PROMISES
states them; the zone promises on groups of one topic and of several). `check_strategy` reads
`uses` and `promises` from a registered Strategy, or takes them as arguments.

Kept in one module: it is the conformance suite a user reads to know what their strategy must
do, every check beside the groups it runs on, as scikit-learn keeps `check_estimator`'s checks.
"""

from __future__ import annotations

import base64
import copy
import json
import math
import os
import pickle
import random
import subprocess
import sys
import warnings
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from rebalancing.contract import AssignFunction, PreviousMismatchWarning
from rebalancing.placement import INPUTS, PROMISES, ZONE_INPUTS, PlacementMismatchWarning

Plan = dict[Any, list[Any]]


class BrokenPromiseError(AssertionError):
    """A strategy broke a promise of the contract; the message names it and the input."""


@dataclass(frozen=True)
class Case:
    """One rebalance's inputs, as a caller passes them: the three arguments, and the extra
    inputs of rebalancing.placement (None: not passed)."""

    queues: list[Any]
    consumers: list[Any]
    previous: dict[Any, list[Any]] | None = None
    consumer_zones: dict[Any, Any] | None = None
    queue_zones: dict[Any, list[Any]] | None = None
    weights: dict[Any, float] | None = None
    capacities: dict[Any, float] | None = None

    def extras(self) -> dict[str, Any]:
        """The extra inputs given, by keyword."""
        return {
            name: getattr(self, name) for name in _INPUT_ORDER if getattr(self, name) is not None
        }

    def __str__(self) -> str:
        extras = "".join(f", {name}={value!r}" for name, value in self.extras().items())
        return f"assign({self.queues!r}, {self.consumers!r}, {self.previous!r}{extras})"


_INPUT_ORDER = ("consumer_zones", "queue_zones", "weights", "capacities")


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise BrokenPromiseError(message)


def _call(assign: AssignFunction, case: Case) -> Plan:
    call: Callable[..., Plan] = assign
    return call(case.queues, case.consumers, case.previous, **case.extras())


# --- properties of one valid input (each raises BrokenPromiseError) ----------------------------


def valid_plan(assign: AssignFunction, case: Case) -> None:
    """Every consumer is a key, no other key; each value a sorted list of known queues."""
    plan = _call(assign, case)
    _require(isinstance(plan, dict), f"returned {type(plan).__name__}, not a dict")
    if not case.consumers:
        _require(plan == {}, f"no consumers, yet the plan is {plan!r}, not {{}}")
        return
    _require(set(plan) == set(case.consumers), f"plan keys {list(plan)!r} are not the consumers")
    known = set(case.queues)
    for consumer, owned in plan.items():
        _require(isinstance(owned, list), f"{consumer!r} got a {type(owned).__name__}, not a list")
        _require(owned == sorted(owned), f"{consumer!r}'s queues {owned!r} are not sorted")
        unknown = [queue for queue in owned if queue not in known]
        _require(not unknown, f"{consumer!r} got queues that are not in the group: {unknown!r}")


def exactly_once(assign: AssignFunction, case: Case) -> None:
    """With at least one consumer, every queue is in exactly one consumer's list."""
    if not case.consumers:
        return
    handed_out = [queue for owned in _call(assign, case).values() for queue in owned]
    missing = [queue for queue in case.queues if queue not in handed_out]
    twice = sorted({repr(queue) for queue in handed_out if handed_out.count(queue) > 1})
    _require(not missing, f"queues without a consumer: {missing!r}")
    _require(not twice, f"queues given more than once: {', '.join(twice)}")


def deterministic(assign: AssignFunction, case: Case) -> None:
    """The same inputs give the same plan, call after call."""
    first, second = _call(assign, case), _call(assign, case)
    _require(first == second, f"two calls gave {first!r} and {second!r}")


def _shuffled(case: Case, rng: random.Random) -> Case:
    previous = None
    if case.previous is not None:
        owners = rng.sample(list(case.previous), len(case.previous))
        previous = {
            owner: rng.sample(case.previous[owner], len(case.previous[owner])) for owner in owners
        }
    extras = {
        name: dict(rng.sample(list(given.items()), len(given)))
        for name, given in case.extras().items()
    }
    return Case(
        rng.sample(case.queues, len(case.queues)),
        rng.sample(case.consumers, len(case.consumers)),
        previous,
        **extras,
    )


def order_insensitive(assign: AssignFunction, case: Case) -> None:
    """Queues, consumers, previous (and the extra inputs' maps) in any order give the same
    plan."""
    expected = _call(assign, case)
    rng = random.Random(str(case))  # a str seed is hashed with SHA-512, not hash()
    for _ in range(2):
        shuffled = _shuffled(case, rng)
        got = _call(assign, shuffled)
        _require(
            got == expected, f"reordered as {shuffled} it gave {got!r} instead of {expected!r}"
        )


def accepts_any_iterables(assign: AssignFunction, case: Case) -> None:
    """Generators, tuples, sets and a dict's keys work like lists (sets skip the hash pass)."""
    expected = _call(assign, case)

    def generators() -> dict[Any, Iterator[Any]] | None:
        if case.previous is None:
            return None
        return {owner: (queue for queue in owned) for owner, owned in case.previous.items()}

    call: Callable[..., Plan] = assign
    extras = case.extras()
    got = call((queue for queue in case.queues), tuple(case.consumers), generators(), **extras)
    _require(got == expected, f"a generator and a tuple gave {got!r} instead of {expected!r}")
    got = call(set(case.queues), dict.fromkeys(case.consumers).keys(), generators(), **extras)
    _require(got == expected, f"a set and a dict's keys gave {got!r} instead of {expected!r}")


def inputs_not_mutated(assign: AssignFunction, case: Case) -> None:
    """The caller's lists and previous plan are left as they were, and not shared."""
    before = copy.deepcopy(case)
    plan = _call(assign, case)
    _require(case == before, f"the inputs were changed from {before} to {case}")
    for consumer, owned in plan.items():
        shared = case.previous is not None and owned is case.previous.get(consumer)
        _require(not shared, f"the plan's list for {consumer!r} is the caller's previous list")
        _require(
            owned is not case.queues, f"the plan's list for {consumer!r} is the caller's queues"
        )


PROPERTIES: Mapping[str, Callable[[AssignFunction, Case], None]] = {
    "valid_plan": valid_plan,
    "exactly_once": exactly_once,
    "deterministic": deterministic,
    "order_insensitive": order_insensitive,
    "accepts_any_iterables": accepts_any_iterables,
    "inputs_not_mutated": inputs_not_mutated,
}
"""The promises a strategy keeps on every valid input: name -> property of one Case."""


# --- the groups the properties run on, smallest first, and shrinking ----------------------------

_FIXED_CASES = [
    Case([], []),
    Case(["q1"], []),
    Case([], ["c1"]),
    Case(["q1"], ["c1"]),
    Case(["q1", "q2"], [None]),  # None is an id like any other (alone, it is ordered)
    Case([None], ["c1", "c2"], {"c2": [None]}),
    Case([0, 1, 2], ["c1", "c2"], {"c1": [0, 1, 2]}),
    Case(["q1", "q2", "q3"], ["a", "b"], {"gone": ["q1"], "b": ["q2", "removed"]}),
]


def groups(count: int = 160, seed: int = 2026) -> list[Case]:
    """`count` groups from `seed`, smallest first after a few fixed edge cases."""
    rng = random.Random(seed)
    cases = copy.deepcopy(_FIXED_CASES)  # a strategy that mutates its inputs spoils no one else
    for number in range(count):
        size = 1 + number // 10
        kind = number % 3
        queue_ids: list[Any] = rng.sample(range(10 * size + 10), rng.randint(0, 2 * size + 2))
        if kind == 1:
            queue_ids = [f"q{identifier}" for identifier in queue_ids]
        elif kind == 2:
            queue_ids = [("orders", identifier % 4, identifier) for identifier in queue_ids]
        consumers = [
            f"consumer-{identifier}"
            for identifier in rng.sample(range(99), rng.randint(0, size + 1))
        ]
        previous: dict[Any, list[Any]] | None = None
        if rng.random() < 0.85:
            departed = [f"gone-{identifier}" for identifier in range(rng.randint(0, 2))]
            removed = _fresh_like(queue_ids, kind, rng.randint(0, 2))
            owners = consumers + departed
            previous = {owner: [] for owner in owners}
            for queue in [*queue_ids, *removed]:
                if owners and rng.random() < 0.8:
                    previous[rng.choice(owners)].append(queue)
        cases.append(Case(queue_ids, consumers, previous))
    return cases


def _fresh_like(queue_ids: list[Any], kind: int, count: int) -> list[Any]:
    """`count` queue ids of the same kind as `queue_ids` that are not among them."""
    numbers = [1_000_000 + offset for offset in range(count)]
    if kind == 1:
        return [f"q{number}" for number in numbers]
    if kind == 2:
        return [("orders", 0, number) for number in numbers]
    return numbers


def _smaller(case: Case) -> Iterator[Case]:
    """Cases one step smaller than `case`: a previous plan fewer, a queue or consumer fewer."""
    if case.previous is not None:
        yield replace(case, previous=None)
        for owner in case.previous:
            yield replace(
                case, previous={key: value for key, value in case.previous.items() if key != owner}
            )
        for owner, owned in case.previous.items():
            for position in range(len(owned)):
                yield replace(
                    case,
                    previous={**case.previous, owner: owned[:position] + owned[position + 1 :]},
                )
    for position, queue in enumerate(case.queues):
        yield replace(
            case,
            queues=case.queues[:position] + case.queues[position + 1 :],
            previous=_without_queue(case.previous, queue),
        )
    for position in range(len(case.consumers)):
        yield replace(case, consumers=case.consumers[:position] + case.consumers[position + 1 :])


def _without_queue(
    previous: dict[Any, list[Any]] | None, queue: Any
) -> dict[Any, list[Any]] | None:
    if previous is None:
        return None
    return {owner: [held for held in owned if held != queue] for owner, owned in previous.items()}


def _failure(
    prop: Callable[[AssignFunction, Case], None], assign: AssignFunction, case: Case
) -> str | None:
    """Why `prop` fails on `case`, or None when it holds. The groups name previous plans whose
    queues are all gone on purpose: the warning that such a plan may hold ids of another form
    (PreviousMismatchWarning) is not shown for them."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PreviousMismatchWarning)
            warnings.simplefilter("ignore", PlacementMismatchWarning)
            prop(assign, copy.deepcopy(case))  # each try on fresh inputs, whatever assign does
    except BrokenPromiseError as broken:
        return str(broken)
    except Exception as error:  # a valid input must give a plan, not an exception
        return f"valid input raised {type(error).__name__}: {error}"
    return None


def shrink(
    prop: Callable[[AssignFunction, Case], None], assign: AssignFunction, case: Case
) -> tuple[Case, str]:
    """The smallest case reachable from failing `case` by single steps that still fails."""
    reason = _failure(prop, assign, case)
    if reason is None:
        raise ValueError(f"{case} does not fail {prop.__name__}: nothing to shrink")
    progress = True
    while progress:
        progress = False
        for smaller in _smaller(case):
            smaller_reason = _failure(prop, assign, smaller)
            if smaller_reason is not None:
                case, reason, progress = smaller, smaller_reason, True
                break
    return case, reason


def _first_failure(
    name: str,
    prop: Callable[[AssignFunction, Case], None],
    assign: AssignFunction,
    cases: Iterable[Case],
) -> None:
    """Raise BrokenPromiseError for the first case of `cases` on which `prop` fails, shrunk."""
    for case in cases:
        reason = _failure(prop, assign, case)
        if reason is None:
            continue
        try:
            smallest, reason = shrink(prop, assign, case)
        except ValueError:  # it held on a second try: the strategy is not deterministic
            smallest = case
            reason += " (and not on a second call with the same input)"
        raise BrokenPromiseError(f"{name}: {reason}\n  smallest input found: {smallest}")


def _property_check(name: str) -> Callable[[AssignFunction], None]:
    prop = PROPERTIES[name]

    def check(assign: AssignFunction) -> None:
        _first_failure(name, prop, assign, groups())

    check.__name__ = check.__qualname__ = f"check_{name}"
    check.__doc__ = prop.__doc__
    return check


# --- empty groups and bad input ----------------------------------------------------------------


def _expect(
    assign: Callable[..., Any],
    promise: str,
    error: type[Exception],
    naming: Collection[str],
    *arguments: Any,
    shown: str | None = None,
) -> None:
    """`assign(*arguments)` must raise `error` with a message containing every text of `naming`."""
    shown = shown or f"assign({', '.join(map(repr, arguments))})"
    try:
        assign(*arguments)
    except error as raised:
        missing = [text for text in naming if text not in str(raised)]
        _require(
            not missing,
            f"{promise}: {shown} raised {error.__name__}({str(raised)!r}), "
            f"which does not name {', '.join(missing)}",
        )
        return
    except Exception as other:
        raise BrokenPromiseError(
            f"{promise}: {shown} raised {type(other).__name__}({other}), not {error.__name__}"
        ) from None
    raise BrokenPromiseError(
        f"{promise}: {shown} returned a plan instead of raising {error.__name__}"
    )


def check_empty_groups(assign: AssignFunction) -> None:
    """No consumers: {}. No queues: every consumer with an empty list."""
    for arguments, expected in (
        ((["q1", "q2"], [], {"gone": ["q1"]}), {}),
        (([], ["c1", "c2"], {"c1": ["removed"]}), {"c1": [], "c2": []}),
    ):
        got = assign(*arguments)
        shown = f"assign({', '.join(map(repr, arguments))})"
        _require(got == expected, f"empty_groups: {shown} gave {got!r}, not {expected!r}")


def check_rejects_duplicate_ids(assign: AssignFunction) -> None:
    """A repeated queue or consumer id is a ValueError naming it."""
    promise = "rejects_duplicate_ids"
    _expect(assign, promise, ValueError, ["'q2'"], ["q1", "q2", "q3", "q2"], ["c1"])
    _expect(assign, promise, ValueError, ["'c1'"], ["q1"], ["c1", "c2", "c1"])


def check_rejects_queue_owned_twice(assign: AssignFunction) -> None:
    """A queue under two consumers (or twice under one) in previous is a ValueError naming it."""
    promise = "rejects_queue_owned_twice"
    both = {"c1": ["q3"], "c2": ["q1", "q3"]}
    _expect(assign, promise, ValueError, ["'q3'", "'c1'", "'c2'"], ["q1", "q3"], ["c1", "c2"], both)
    _expect(assign, promise, ValueError, ["'q3'"], ["q1", "q3"], ["c1"], {"c1": ["q3", "q3"]})
    generators = {"c1": (q for q in ["q1"]), "c2": (q for q in ["q2", "q1"])}
    shown = "assign(['q1', 'q2'], ['c1', 'c2'], {'c1': <'q1'>, 'c2': <'q2', 'q1'>}) (generators)"
    _expect(
        assign, promise, ValueError, ["'q1'"], ["q1", "q2"], ["c1", "c2"], generators, shown=shown
    )


def check_rejects_unorderable_ids(assign: AssignFunction) -> None:
    """Ids that cannot be compared, or sort without forming a total order (NaN, frozensets),
    are a TypeError naming two of them: otherwise the plan would depend on the input order."""
    promise = "rejects_unorderable_ids"
    _expect(assign, promise, TypeError, ["1", "'q2'"], [1, "q2"], ["c1"])
    _expect(assign, promise, TypeError, ["'c1'", "2"], ["q1"], ["c1", 2])
    for given in ([math.nan, 1.0, 0.5], [0.5, math.nan, 1.0], [1.0, 0.5, math.nan]):
        _expect(assign, promise, TypeError, ["nan"], given, ["c1"])
    sets = [frozenset({1}), frozenset({2}), frozenset({1, 2})]
    _expect(assign, promise, TypeError, ["frozenset"], ["q1"], sets)


class _KeysOfAnyKind(Mapping[Any, None]):
    """A Mapping that is not a dict: its `keys()`, a KeysView, yields whatever it was given."""

    def __init__(self, keys: list[Any]) -> None:
        self._keys = keys

    def __getitem__(self, key: Any) -> None:
        return None

    def __iter__(self) -> Iterator[Any]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)


def check_rejects_unhashable_ids(assign: AssignFunction) -> None:
    """An unhashable id, in the ids (whatever iterable holds them, a KeysView included) or in
    previous, is a TypeError naming it."""
    promise = "rejects_unhashable_ids"
    _expect(assign, promise, TypeError, ["['q1']"], [["q1"]], ["c1"])
    _expect(assign, promise, TypeError, ["{}"], ["q1"], [{}])
    keys = _KeysOfAnyKind(["q1", ["q2"]]).keys()
    shown = "assign(<a non-dict Mapping's keys(): 'q1', ['q2']>, ['c1'])"
    _expect(assign, promise, TypeError, ["['q2']"], keys, ["c1"], shown=shown)
    _expect(assign, promise, TypeError, ["['q1']"], ["q1"], ["c1"], {"c1": [["q1"]]})


def check_rejects_malformed_previous(assign: AssignFunction) -> None:
    """previous must be None or a mapping of consumer -> iterable of queue ids (not a string,
    nor one queue id where a list of them belongs: ("orders", 3) is not "orders" and 3)."""
    promise = "rejects_malformed_previous"
    _expect(assign, promise, TypeError, ["previous"], ["q1"], ["c1"], [("c1", ["q1"])])
    _expect(assign, promise, TypeError, ["'c1'"], ["q1"], ["c1"], {"c1": 7})
    _expect(assign, promise, TypeError, ["'c1'"], ["q1"], ["c1"], {"c1": "q1"})
    queues = [("orders", 3), ("orders", 4)]
    previous = {"c1": ("orders", 3), "c2": [("orders", 4)]}
    naming = ["'c1'", "('orders', 3)"]
    _expect(assign, promise, TypeError, naming, queues, ["c1", "c2"], previous)


def check_rejects_a_non_iterable_id_list(assign: AssignFunction) -> None:
    """queues and consumers are iterables of ids: a string or a number is a TypeError."""
    promise = "rejects_a_non_iterable_id_list"
    _expect(assign, promise, TypeError, ["queues"], "q1", ["c1"])
    _expect(assign, promise, TypeError, ["consumers"], ["q1"], 3)


# --- the same plan in every process -------------------------------------------------------------

CHILD_VARIABLE = "REBALANCING_CHECK_STRATEGY_CHILD"
"""Set in the fresh processes of the hash-seed check: there, check_strategy does nothing, so that
a script calling it at top level (without a __main__ guard) does not recurse."""

_CHILD = """
import base64, contextlib, json, pickle, runpy, sys
request = json.load(sys.stdin)
with contextlib.redirect_stdout(sys.stderr):  # what the strategy prints stays out of the answer
    if request["pickled"]:
        target = pickle.loads(base64.b64decode(request["pickled"]))
    else:  # a function of the script run as __main__: run the script again, under another name
        namespace = runpy.run_path(request["file"], run_name="__rebalancing_check__")
        target = namespace[request["name"]]
    plans = []
    for queues, consumers, previous in request["cases"]:
        plan = target(set(queues), set(consumers), previous)
        plans.append(sorted([consumer, owned] for consumer, owned in plan.items()))
print(json.dumps(plans))
"""

_STRING_CASES = [  # smallest first, so that the first difference shown is a small one
    (["q1", "q2", "q3"], ["c1", "c2"], None),
    ([f"q{n}" for n in range(9)], ["x", "y", "z"], {"y": ["q1", "q2", "q3", "q4"], "z": ["q5"]}),
    ([f"q{n}" for n in range(17)], [f"c{n}" for n in range(5)], None),
    (
        [f"orders-{n}" for n in range(40)] + ["audit", "billing", "zeta"],
        ["host-b@11", "host-a@7", "host-c@3", "host-a@9"],
        {
            "host-a@7": [f"orders-{n}" for n in range(20)],
            "host-gone@1": [f"orders-{n}" for n in range(20, 35)],
            "host-c@3": ["ghost"],
        },
    ),
]


def _where(assign: AssignFunction) -> dict[str, str | None]:
    """How a fresh process gets `assign`: pickled (a module's function, a bound method of a
    picklable object), or by name from the script run as __main__."""
    cannot = (
        f"deterministic_across_hash_seeds: {assign!r} cannot be found by module and name in a "
        "fresh process (define it at a module's top level, or skip this check by name)"
    )
    if getattr(assign, "__module__", None) == "__main__":
        path = getattr(sys.modules["__main__"], "__file__", None)
        name = getattr(assign, "__qualname__", "")
        if path is None:
            raise BrokenPromiseError(
                f"deterministic_across_hash_seeds: {assign!r} lives in an interactive session "
                "(a REPL or a notebook); define it in a module, or skip this check by name"
            )
        if not name.isidentifier():
            raise BrokenPromiseError(cannot)
        return {"pickled": None, "file": path, "name": name}
    try:
        pickled = pickle.dumps(assign)
    except (pickle.PicklingError, AttributeError, TypeError):
        raise BrokenPromiseError(cannot) from None
    return {"pickled": base64.b64encode(pickled).decode(), "file": None, "name": None}


def check_deterministic_across_hash_seeds(assign: AssignFunction) -> None:
    """The plan is the same in processes with different PYTHONHASHSEED values (ids given as sets
    of strings, whose iteration order follows the hash seed)."""
    request = json.dumps({**_where(assign), "cases": _STRING_CASES})
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(path for path in sys.path if path),
        CHILD_VARIABLE: "1",
    }
    outputs = {}
    for hash_seed in ("0", "1", "4242"):
        completed = subprocess.run(
            [sys.executable, "-c", _CHILD],
            input=request,
            capture_output=True,
            text=True,
            env={**environment, "PYTHONHASHSEED": hash_seed},
            check=False,
        )
        if completed.returncode != 0:
            raise BrokenPromiseError(
                f"deterministic_across_hash_seeds: could not run {assign!r} in a fresh process "
                f"(PYTHONHASHSEED={hash_seed}):\n{completed.stderr[-2000:]}"
            )
        outputs[hash_seed] = json.loads(completed.stdout)
    for number, (queues, consumers, previous) in enumerate(_STRING_CASES):
        expected = sorted(
            [consumer, owned] for consumer, owned in assign(queues, consumers, previous).items()
        )
        for hash_seed, plans in outputs.items():
            _require(
                plans[number] == expected,
                f"deterministic_across_hash_seeds: with PYTHONHASHSEED={hash_seed}, "
                f"assign({set(queues)!r}, {set(consumers)!r}, {previous!r}) "
                f"gave {plans[number]!r}, in this process {expected!r}",
            )


CHECKS: Mapping[str, Callable[[AssignFunction], None]] = {
    **{name: _property_check(name) for name in PROPERTIES},
    "empty_groups": check_empty_groups,
    "rejects_duplicate_ids": check_rejects_duplicate_ids,
    "rejects_queue_owned_twice": check_rejects_queue_owned_twice,
    "rejects_unorderable_ids": check_rejects_unorderable_ids,
    "rejects_unhashable_ids": check_rejects_unhashable_ids,
    "rejects_malformed_previous": check_rejects_malformed_previous,
    "rejects_a_non_iterable_id_list": check_rejects_a_non_iterable_id_list,
    "deterministic_across_hash_seeds": check_deterministic_across_hash_seeds,
}
"""Every check of the contract: name (the promise) -> check(assign), raising BrokenPromiseError."""


# --- zones, weights and capacities (rebalancing.placement) --------------------------------------

_ZONE_NAMES = ["zone-a", "zone-b", "zone-c"]


def _with_placement(case: Case, uses: frozenset[str], rng: random.Random) -> Case:
    """`case` with the inputs of `uses` drawn from `rng`: zones for most consumers and queues
    (some have none, some are missing from the map), a weight for every queue (zeros, ints and
    floats) and a capacity for every consumer, and each map with an entry for an id that is
    not in the group."""
    extras: dict[str, Any] = {}
    if "consumer_zones" in uses:
        zones: dict[Any, Any] = {}
        for consumer in case.consumers:
            draw = rng.random()
            if draw < 0.85:
                zones[consumer] = rng.choice(_ZONE_NAMES)
            elif draw < 0.92:
                zones[consumer] = None
        zones["departed-consumer"] = "zone-a"
        extras["consumer_zones"] = zones
    if "queue_zones" in uses:
        replicas: dict[Any, list[Any]] = {
            queue: rng.sample(_ZONE_NAMES, rng.randint(0, 2))
            for queue in case.queues
            if rng.random() < 0.9
        }
        extras["queue_zones"] = {**replicas, ("removed", "queue"): ["zone-b"]}
    if "weights" in uses:
        weights: dict[Any, float] = {
            queue: rng.choice([0, 1, 2.5, rng.randint(0, 100), rng.random() * 1000])
            for queue in case.queues
        }
        extras["weights"] = {**weights, ("removed", "queue"): 7}
    if "capacities" in uses:
        capacities: dict[Any, float] = {
            consumer: rng.choice([1, 2, 0.5, rng.randint(1, 8)]) for consumer in case.consumers
        }
        extras["capacities"] = {**capacities, "departed-consumer": 3}
    return replace(case, **extras)


def placement_groups(uses: Collection[str], count: int = 120, seed: int = 2033) -> list[Case]:
    """`count` groups of `groups()` carrying the inputs of `uses`, drawn from `seed`."""
    rng = random.Random(seed)
    return [_with_placement(case, frozenset(uses), rng) for case in groups(count, seed)]


def exact_fit_groups(count: int = 60, seed: int = 2034) -> list[Case]:
    """Groups where every zone holds k consumers and k x m queues, each queue in one zone and
    every consumer in a zone: a balanced plan can read every queue in its zone. A quarter are
    of several topics ((topic, n) ids), spread over the zones without regard to topic."""
    rng = random.Random(seed)
    cases: list[Case] = []
    for number in range(count):
        zones = _ZONE_NAMES[: rng.randint(1, 3)]
        per_zone, per_consumer = rng.randint(1, 3), rng.randint(0, 3)
        consumers = [f"consumer-{index}" for index in rng.sample(range(99), per_zone * len(zones))]
        queue_count = per_zone * per_consumer * len(zones)
        kind = number % 4
        numbers = rng.sample(range(10 * queue_count + 10), queue_count)
        queues: list[Any] = (
            numbers
            if kind == 0
            else [f"q{value}" for value in numbers]
            if kind == 1
            else [("orders", value) for value in numbers]
            if kind == 2
            else [(f"topic-{value % 3}", value) for value in numbers]
        )
        zone_of_queue = [zone for zone in zones for _ in range(per_zone * per_consumer)]
        rng.shuffle(zone_of_queue)
        consumer_zones = dict(
            zip(consumers, [z for z in zones for _ in range(per_zone)], strict=True)
        )
        previous = _some_previous(rng, consumers, queues)
        queue_zones = {queue: [zone] for queue, zone in zip(queues, zone_of_queue, strict=True)}
        cases.append(Case(queues, consumers, previous, consumer_zones, queue_zones))
    return cases


def exact_fit_topic_groups(count: int = 60, seed: int = 2035) -> list[Case]:
    """Groups of one to three topics ((topic, partition) ids) where every zone holds k consumers
    and, of each topic, k x m queues (m per topic), topics of as many partitions laid out alike
    (partition p of each in one zone), every consumer in a zone: a plan balanced topic by topic
    can read every queue in its zone (promise `zone_matching_per_topic`)."""
    rng = random.Random(seed)
    cases: list[Case] = []
    for _ in range(count):
        zones = _ZONE_NAMES[: rng.randint(1, 3)]
        per_zone = rng.randint(1, 3)
        consumers = [f"consumer-{index}" for index in rng.sample(range(99), per_zone * len(zones))]
        consumer_zones = dict(
            zip(consumers, [z for z in zones for _ in range(per_zone)], strict=True)
        )
        layouts: dict[int, list[str]] = {}  # partition count -> the zone of each partition
        queue_zones: dict[Any, list[Any]] = {}
        for topic in rng.sample(range(10), rng.randint(1, 3)):
            per_consumer = rng.randint(0, 3)
            size = per_zone * per_consumer * len(zones)
            if size not in layouts:
                layouts[size] = [zone for zone in zones for _ in range(per_zone * per_consumer)]
                rng.shuffle(layouts[size])
            for partition, zone in enumerate(layouts[size]):
                queue_zones[(f"topic-{topic}", partition)] = [zone]
        queues = list(queue_zones)
        rng.shuffle(queues)
        previous = _some_previous(rng, consumers, queues)
        cases.append(Case(queues, consumers, previous, consumer_zones, queue_zones))
    return cases


def _some_previous(
    rng: random.Random, consumers: list[Any], queues: list[Any]
) -> dict[Any, list[Any]] | None:
    """Most times a previous plan holding most queues, each with a consumer drawn from `rng`."""
    if rng.random() >= 0.7:
        return None
    previous: dict[Any, list[Any]] = {consumer: [] for consumer in consumers}
    for queue in queues:
        if rng.random() < 0.8:
            previous[rng.choice(consumers)].append(queue)
    return previous


def _counts(plan: Plan) -> list[int]:
    return [len(owned) for owned in plan.values()]


def balanced(assign: AssignFunction, case: Case) -> None:
    """Promise `balanced`: queue counts differ by at most one."""
    counts = _counts(_call(assign, case))
    _require(
        not counts or max(counts) - min(counts) <= 1,
        f"queue counts {counts} differ by more than one",
    )


def zone_matching(assign: AssignFunction, case: Case) -> None:
    """Promise `zone_matching`: on an exact-fit group every queue is read in its zone (a group
    that is not one, as shrinking may make, promises nothing)."""
    if _exact_fit(case, per_topic=False):
        _reads_every_queue_in_its_zone(assign, case)


def zone_matching_per_topic(assign: AssignFunction, case: Case) -> None:
    """Promise `zone_matching_per_topic`: on a group that fits exactly topic by topic (topics of
    as many queues laid out alike) every queue is read in its zone."""
    if _exact_fit(case, per_topic=True):
        _reads_every_queue_in_its_zone(assign, case)


def _reads_every_queue_in_its_zone(assign: AssignFunction, case: Case) -> None:
    plan = _call(assign, case)
    zones = case.consumer_zones or {}
    replicas = case.queue_zones or {}
    away = sorted(
        (repr(queue), repr(consumer))
        for consumer, owned in plan.items()
        for queue in owned
        if zones.get(consumer) not in replicas.get(queue, ())
    )
    _require(not away, f"queues read outside their zone (queue, consumer): {away}")


def _exact_fit(case: Case, *, per_topic: bool) -> bool:
    """Whether `case` is a group a zone promise speaks of: every consumer in a zone, k in each,
    every queue in one of those zones, and each zone holding k x m queues (with `per_topic`, of
    each topic, topics of as many queues with their p-th queues in one zone)."""
    zone_of = case.consumer_zones or {}
    members = Counter(zone_of.get(consumer) for consumer in case.consumers)
    if None in members or len(set(members.values())) > 1:
        return False
    home: dict[Any, Any] = {}
    for queue in case.queues:
        held = {zone for zone in (case.queue_zones or {}).get(queue, ()) if zone is not None}
        if len(held) != 1 or not held <= members.keys():
            return False
        (home[queue],) = held
    topics: dict[Any, list[Any]] = {}
    for queue in case.queues:
        topic = queue[0] if per_topic and type(queue) is tuple and len(queue) >= 2 else None
        topics.setdefault(topic, []).append(queue)
    layouts: dict[int, list[Any]] = {}
    for queues in topics.values():
        in_zone = Counter(home[queue] for queue in queues)
        counts = {in_zone[zone] for zone in members}
        if len(counts) > 1 or counts.pop() % next(iter(members.values())):
            return False
        layout = [home[queue] for queue in sorted(queues)]
        if per_topic and layouts.setdefault(len(queues), layout) != layout:
            return False
    return True


def bounded_load(assign: AssignFunction, case: Case) -> None:
    """Promise `bounded_load`: max load / capacity <= total weight / total capacity + heaviest
    weight / smallest capacity (weights 1 and capacities 1 when not given)."""
    plan = _call(assign, case)
    if not plan or not case.queues:
        return
    weights = case.weights or dict.fromkeys(case.queues, 1.0)
    capacities = case.capacities or dict.fromkeys(case.consumers, 1.0)
    total = sum(weights[queue] for queue in case.queues)
    bound = total / sum(capacities[consumer] for consumer in case.consumers) + max(
        weights[queue] for queue in case.queues
    ) / min(capacities[consumer] for consumer in case.consumers)
    loads = {
        consumer: sum(weights[queue] for queue in owned) / capacities[consumer]
        for consumer, owned in plan.items()
    }
    worst = max(loads, key=loads.__getitem__)
    _require(
        loads[worst] <= bound * (1 + 1e-9) + 1e-12,
        f"{worst!r} carries load / capacity {loads[worst]}, over the bound {bound}",
    )


def zones_that_cannot_matter_change_nothing(assign: AssignFunction, case: Case) -> None:
    """Every consumer in a zone and every queue with replicas in all of them: the plan is the
    plan without zones."""
    call: Callable[..., Plan] = assign
    extras = {name: value for name, value in case.extras().items() if name not in ZONE_INPUTS}
    without = call(case.queues, case.consumers, case.previous, **extras)
    everywhere = {consumer: _ZONE_NAMES[index % 2] for index, consumer in enumerate(case.consumers)}
    uniform = dict.fromkeys(case.queues, _ZONE_NAMES[:2])
    got = call(
        case.queues,
        case.consumers,
        case.previous,
        consumer_zones=everywhere,
        queue_zones=uniform,
        **extras,
    )
    _require(got == without, f"with uninformative zones it gave {got!r} instead of {without!r}")


def departed_ids_in_the_maps_change_nothing(assign: AssignFunction, case: Case) -> None:
    """Entries of the extra inputs' maps for ids outside the group are ignored."""
    call: Callable[..., Plan] = assign
    expected = _call(assign, case)
    padded: dict[str, Any] = {}
    for name, given in case.extras().items():
        if name == "queue_zones":
            padded[name] = {**given, ("not", "a", "queue"): ["zone-c"]}
        elif name == "weights":
            padded[name] = {**given, ("not", "a", "queue"): 1e9}
        elif name == "capacities":
            padded[name] = {**given, ("not", "a", "consumer"): 1e-9}
        else:
            padded[name] = {**given, ("not", "a", "consumer"): "zone-c"}
    got = call(case.queues, case.consumers, case.previous, **padded)
    _require(
        got == expected, f"entries for unknown ids changed the plan to {got!r} from {expected!r}"
    )


def _rejects_bad_numbers(
    assign: AssignFunction, promise: str, keyword: str, cases: list[tuple[Any, type, list[str]]]
) -> None:
    """Each map of `cases` passed as `keyword` must raise its error naming its texts."""
    call: Callable[..., Plan] = assign
    for bad, error, naming in cases:
        shown = f"assign(['q1', 'q2'], ['c1', 'c2'], {keyword}={bad!r})"
        bound = partial(call, **{keyword: bad})
        _expect(bound, promise, error, naming, ["q1", "q2"], ["c1", "c2"], shown=shown)


def check_rejects_bad_weights(assign: AssignFunction) -> None:
    """A weight that is negative, NaN, infinite, past the largest float, not a real number, or
    missing for a queue of the group is an error naming the queue; weights whose sum is past
    the largest float an error naming them."""
    good = {"q1": 1.0, "q2": 2}
    cases: list[tuple[Any, type, list[str]]] = [
        ({**good, "q2": -1}, ValueError, ["'q2'", "-1"]),
        ({**good, "q1": math.nan}, ValueError, ["'q1'", "nan"]),
        ({**good, "q2": math.inf}, ValueError, ["'q2'", "inf"]),
        ({**good, "q1": "heavy"}, TypeError, ["'q1'", "'heavy'"]),
        ({**good, "q1": True}, TypeError, ["'q1'", "True"]),
        ({"q1": 1.0}, ValueError, ["'q2'"]),
        ({**good, "q2": 10**400}, ValueError, ["'q2'"]),  # past the largest float
        ({"q1": 1e308, "q2": 1e308}, ValueError, ["weights", "sum"]),  # each finite, not the sum
    ]
    _rejects_bad_numbers(assign, "rejects_bad_weights", "weights", cases)


def check_rejects_bad_capacities(assign: AssignFunction) -> None:
    """A capacity that is 0, negative, NaN, infinite, past the largest float, so small that a load
    over it is, or missing for a member is an error naming the member; capacities whose sum is
    past the largest float an error naming them."""
    good = {"c1": 1.0, "c2": 2}
    cases: list[tuple[Any, type, list[str]]] = [
        ({**good, "c2": 0}, ValueError, ["'c2'", "0"]),
        ({**good, "c1": -3}, ValueError, ["'c1'", "-3"]),
        ({**good, "c1": math.nan}, ValueError, ["'c1'", "nan"]),
        ({**good, "c2": math.inf}, ValueError, ["'c2'", "inf"]),
        ({"c1": 1.0}, ValueError, ["'c2'"]),
        ({**good, "c1": 10**400}, ValueError, ["'c1'"]),
        ({"c1": 1e308, "c2": 1e308}, ValueError, ["capacities", "sum"]),
        ({**good, "c1": 5e-324}, ValueError, ["'c1'", "5e-324"]),  # a load over it: past a float
    ]
    _rejects_bad_numbers(assign, "rejects_bad_capacities", "capacities", cases)


def check_rejects_bad_zones(assign: AssignFunction, uses: frozenset[str]) -> None:
    """A zone map that is not a mapping, an unhashable zone, a single zone where a collection of
    replica zones belongs, or zones that do not order together are a TypeError naming them."""
    promise = "rejects_bad_zones"
    call: Callable[..., Plan] = assign
    arguments = (["q1", "q2"], ["c1", "c2"])
    bad_inputs: list[tuple[str, Any, list[str]]] = []
    if "consumer_zones" in uses:
        bad_inputs += [
            ("consumer_zones", [("c1", "a")], ["consumer_zones"]),
            ("consumer_zones", {"c1": ["a"]}, ["'c1'", "['a']"]),
            ("consumer_zones", {"c1": "a", "c2": 2}, ["zone", "'a'", "2"]),
        ]
    if "queue_zones" in uses:
        bad_inputs += [
            ("queue_zones", {"q1": "a"}, ["'q1'", "'a'"]),
            ("queue_zones", {"q2": 3}, ["'q2'", "3"]),
            ("queue_zones", {"q1": [["a"]]}, ["'q1'", "['a']"]),
        ]
    for name, bad, naming in bad_inputs:
        _expect(
            partial(call, **{name: bad}),
            promise,
            TypeError,
            naming,
            *arguments,
            shown=f"assign(['q1', 'q2'], ['c1', 'c2'], {name}={bad!r})",
        )


PROMISE_PROPERTIES: Mapping[str, Callable[[AssignFunction, Case], None]] = {
    "balanced": balanced,
    "zone_matching": zone_matching,
    "zone_matching_per_topic": zone_matching_per_topic,
    "bounded_load": bounded_load,
}
"""The promise of rebalancing.placement.PROMISES -> its property of one Case."""

_PROMISE_CASES: Mapping[str, Callable[[], list[Case]]] = {
    "zone_matching": exact_fit_groups,
    "zone_matching_per_topic": exact_fit_topic_groups,
}
"""The groups a promise is checked on, where not those of `placement_groups(uses)`."""


def placement_checks(
    uses: Collection[str], promises: Collection[str] = ()
) -> dict[str, Callable[[AssignFunction], None]]:
    """The checks of a strategy that reads `uses` and keeps `promises`: name -> check(assign).
    Empty for a strategy of ids alone."""
    uses, promises = frozenset(uses), frozenset(promises)
    unknown = sorted((uses - INPUTS) | (promises - set(PROMISES)))
    if unknown:
        raise ValueError(f"unknown inputs or promises {unknown}")
    if not uses:
        return {}
    checks: dict[str, Callable[[AssignFunction], None]] = {}

    def on_cases(
        name: str, prop: Callable[[AssignFunction, Case], None], cases: Callable[[], list[Case]]
    ) -> None:
        def check(assign: AssignFunction) -> None:
            _first_failure(name, prop, assign, cases())

        check.__name__ = check.__qualname__ = f"check_{name}"
        check.__doc__ = prop.__doc__
        checks[name] = check

    for name, prop in PROPERTIES.items():
        on_cases(f"{name}_with_placement", prop, partial(placement_groups, uses))
    on_cases(
        "departed_ids_in_the_maps_change_nothing",
        departed_ids_in_the_maps_change_nothing,
        partial(placement_groups, uses, 40),
    )
    if "weights" in uses:
        checks["rejects_bad_weights"] = check_rejects_bad_weights
    if "capacities" in uses:
        checks["rejects_bad_capacities"] = check_rejects_bad_capacities
    if uses & ZONE_INPUTS:
        checks["rejects_bad_zones"] = partial(check_rejects_bad_zones, uses=uses)
    if uses >= ZONE_INPUTS:
        on_cases(
            "zones_that_cannot_matter_change_nothing",
            zones_that_cannot_matter_change_nothing,
            partial(placement_groups, uses - ZONE_INPUTS, 60),
        )
    for promise in sorted(promises):
        cases = _PROMISE_CASES.get(promise, partial(placement_groups, uses))
        on_cases(f"promise_{promise}", PROMISE_PROPERTIES[promise], cases)
    return checks


def check_strategy(
    assign: AssignFunction,
    skip: Iterable[str] = (),
    *,
    uses: Collection[str] | None = None,
    promises: Collection[str] | None = None,
) -> None:
    """Run every check of CHECKS on `assign`, and those of `placement_checks(uses, promises)`;
    the first promise broken raises AssertionError (BrokenPromiseError) naming it and the
    smallest input found. `uses` and `promises` default to the attributes of that name of
    `assign` (a registered Strategy has them), else nothing. `skip` names checks not to run
    (say, "deterministic_across_hash_seeds" for a function a fresh process cannot import)."""
    if os.environ.get(CHILD_VARIABLE):
        return  # inside this check's own fresh process (see CHILD_VARIABLE)
    declared_uses = getattr(assign, "uses", frozenset()) if uses is None else uses
    declared_promises = getattr(assign, "promises", frozenset()) if promises is None else promises
    checks = {**CHECKS, **placement_checks(declared_uses, declared_promises)}
    skipped = set(skip)
    unknown = skipped - set(checks)
    if unknown:
        raise ValueError(f"unknown check {', '.join(sorted(unknown))}; known: {', '.join(checks)}")
    for name, check in checks.items():
        if name not in skipped:
            check(assign)
