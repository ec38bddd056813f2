"""The compiled kernel refines the reference model: on thousands of seeded sessions (joins,
bursts, leaves, crashes, queues added and removed, rolling restarts; both Position readings;
every release policy; step bounds that cut runs short; queues inserted anywhere in the order
and removed ones coming back) both engines give the same owners, releases, steps, rounds,
convergence and the same protocol state after every rebalance, and the kernel's FIFOs hold
together link by link."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rebalancing.sac.kernel import ABSENT, NO_APP, SENTINEL, KernelEngine, _columns_from
from rebalancing.sac.model import POSITION_VARIANTS, PositionVariant
from rebalancing.sac.schedulers import RELEASE_POLICIES, ReleasePolicy, default_step_bound
from rebalancing.sac.sessions import ReferenceEngine
from rebalancing.strategies import sac

SESSIONS = 2400


def _memberships(rng: random.Random) -> Iterator[tuple[list[Any], list[str]]]:
    """A group's successive (queues, apps), drawn from `rng`: a starting group, then changes."""
    next_queue, next_app = 0, 0

    def new_queues(count: int) -> list[Any]:
        nonlocal next_queue
        made = [f"q{next_queue + offset:03d}" for offset in range(count)]
        next_queue += count
        return made

    def new_apps(count: int) -> list[str]:
        nonlocal next_app
        # names from both ends of the alphabet, so that newcomers sort before and after others
        made = [f"{rng.choice('az')}{next_app + offset:03d}" for offset in range(count)]
        next_app += count
        return made

    queues = new_queues(rng.randint(0, 14))
    apps = new_apps(rng.randint(0, 7))
    yield queues, apps
    for _ in range(rng.randint(2, 7)):
        kind = rng.choice(
            ["join", "burst", "leave", "crash", "queues_added", "queues_removed", "restart"]
        )
        if kind == "join":
            apps = apps + new_apps(1)
        elif kind == "burst":
            apps = apps + new_apps(rng.randint(2, 4))
        elif kind in ("leave", "crash") and apps:
            apps = [app for app in apps if app != rng.choice(apps)]
        elif kind == "queues_added":
            queues = queues + new_queues(rng.randint(1, 5))
        elif kind == "queues_removed" and queues:
            removed = set(rng.sample(queues, rng.randint(1, len(queues))))
            queues = [queue for queue in queues if queue not in removed]
        elif kind == "restart":  # every app leaves and rejoins under its own id, in turn
            for app in list(apps):
                yield queues, [other for other in apps if other != app]
                yield queues, apps
            continue
        yield queues, apps


def _session_parameters(seed: int) -> tuple[str, str, int | None]:
    rng = random.Random(seed)
    variant = rng.choice(POSITION_VARIANTS)
    policy = rng.choice(RELEASE_POLICIES)
    max_steps = rng.choice([None] * 9 + [rng.randint(0, 60)])
    return variant, policy, max_steps


@pytest.mark.parametrize("block", range(8))
def test_both_engines_agree_after_every_rebalance_of_seeded_sessions(block: int) -> None:
    for seed in range(block, SESSIONS, 8):
        variant, policy, max_steps = _session_parameters(seed)
        kernel = sac.Session(variant, policy, "kernel", seed=seed, max_steps=max_steps)
        reference = sac.Session(variant, policy, "reference", seed=seed, max_steps=max_steps)
        for step, (queues, apps) in enumerate(_memberships(random.Random(seed))):
            where = f"seed {seed} step {step} ({variant}, {policy}, max_steps={max_steps})"
            assert kernel.rebalance(queues, apps) == reference.rebalance(queues, apps), where
            assert kernel.snapshot() == reference.snapshot(), where


@pytest.mark.parametrize("policy", RELEASE_POLICIES)
@pytest.mark.parametrize("variant", POSITION_VARIANTS)
def test_both_engines_agree_on_runs_reconstructed_from_owners(variant: str, policy: str) -> None:
    for seed in range(150):
        rng = random.Random(seed)
        queues = [f"q{number}" for number in range(rng.randint(0, 16))]
        apps = [f"a{number}" for number in range(rng.randint(0, 7))]
        previous: dict[str, list[str]] = {}
        for queue in queues:  # a previous plan of any shape, with departed apps and queues
            owner = rng.choice([*apps, "gone", None])
            if owner is not None:
                previous.setdefault(owner, []).append(queue)
        for app in rng.sample(apps, len(apps) // 2):
            previous.setdefault(app, [])
        previous.setdefault("gone", []).append("removed queue")
        runs = [
            sac.run(queues, apps, previous, variant, release=policy, engine=engine, seed=seed)
            for engine in sac.ENGINES
        ]
        assert runs[0] == runs[1], f"seed {seed}"


def test_both_engines_agree_on_larger_cold_starts_and_changes() -> None:
    for queue_count, app_count in [(64, 9), (130, 17), (257, 31)]:
        for policy in RELEASE_POLICIES:
            sessions = [sac.Session("id", policy, engine, seed=7) for engine in sac.ENGINES]
            apps = [f"a{number:03d}" for number in range(app_count)]
            queues = list(range(queue_count))
            for group in [(queues, apps), (queues, apps[1:]), (queues[3:], [*apps, "new"])]:
                runs = [session.rebalance(*group) for session in sessions]
                assert runs[0] == runs[1]
                assert runs[0].converged


def test_under_the_round_schedule_the_two_position_readings_end_alike() -> None:
    """Why sac_spec is not scored by default: releases in start-id order, each guard re-checked
    after every release, reproduce the id tie-break, so both readings give the same runs."""
    for seed in range(600):
        policy = RELEASE_POLICIES[seed % len(RELEASE_POLICIES)]
        by_id = sac.Session("id", policy, "kernel", seed=seed)
        as_written = sac.Session("spec", policy, "kernel", seed=seed)
        for step, (queues, apps) in enumerate(_memberships(random.Random(seed))):
            assert by_id.rebalance(queues, apps) == as_written.rebalance(queues, apps), (seed, step)


def _scattered_memberships(rng: random.Random) -> Iterator[tuple[list[int], list[str]]]:
    """A group's successive (queues, apps), sorted, where new queues land anywhere in the
    queue order (ids drawn from a wide range), removed queues come back under their old id
    (a new queue then: empty FIFO), and apps join and leave in groups large enough to make the
    kernel's rows grow and its freed slots be reused."""
    queues = set(rng.sample(range(10_000), rng.randint(0, 20)))
    apps = {f"app{rng.randrange(100_000):05d}" for _ in range(rng.randint(0, 9))}
    removed: set[int] = set()
    yield sorted(queues), sorted(apps)
    for _ in range(rng.randint(3, 9)):
        kind = rng.choice(["queues_added", "queues_removed", "queues_back", "join", "leave"])
        if kind == "queues_added":
            queues |= set(rng.sample(range(10_000), rng.randint(1, 12)))
        elif kind == "queues_removed" and queues:
            gone = set(rng.sample(sorted(queues), rng.randint(1, len(queues))))
            queues -= gone
            removed |= gone
        elif kind == "queues_back" and removed:
            queues |= set(rng.sample(sorted(removed), rng.randint(1, len(removed))))
        elif kind == "join":
            apps |= {f"app{rng.randrange(100_000):05d}" for _ in range(rng.randint(1, 20))}
        elif kind == "leave" and apps:
            apps -= set(rng.sample(sorted(apps), rng.randint(1, len(apps))))
        yield sorted(queues), sorted(apps)


def _assert_fifo_links_consistent(engine: KernelEngine) -> None:
    """The kernel's FIFOs as linked lists: walking each from the sentinel, every app's
    `fifo_prev` names the app before it and the sentinel's names the last; exactly the apps
    met on the walk wait on the queue; slots no present app holds wait on nothing."""
    fifo_next, fifo_prev = engine.fifo_next, engine.fifo_prev
    present_slots = set(engine.members.tolist())
    for queue in range(len(engine.queues)):
        line, before, app = [], SENTINEL, int(fifo_next[SENTINEL, queue])
        while app != SENTINEL:
            assert app in present_slots, (queue, app)
            assert fifo_prev[app, queue] == before, (queue, app)
            line.append(app)
            assert len(line) < fifo_next.shape[0], queue  # a cycle missing the sentinel
            before, app = app, int(fifo_next[app, queue])
        assert fifo_prev[SENTINEL, queue] == before, queue
        waiting = {
            slot for slot in range(1, fifo_next.shape[0]) if fifo_next[slot, queue] != ABSENT
        }
        assert waiting == set(line), queue
        assert len(line) == len(waiting), queue


@pytest.mark.parametrize("policy", RELEASE_POLICIES)
@pytest.mark.parametrize("variant", POSITION_VARIANTS)
def test_both_engines_agree_when_queues_come_and_go_anywhere_in_the_order(
    variant: PositionVariant, policy: ReleasePolicy
) -> None:
    """The kernel keeps queues in sorted order and apps in reusable slots: queues inserted
    between others, removed ones coming back, many apps at once joining and leaving."""
    for seed in range(120):
        kernel, reference = KernelEngine(policy, seed), ReferenceEngine(policy, seed)
        for step, (queues, apps) in enumerate(_scattered_memberships(random.Random(seed))):
            where = f"seed {seed} step {step}"
            bound = default_step_bound(len(queues), len(apps))
            kernel.change(queues, apps)
            reference.change(queues, apps)
            assert kernel.settle(variant, bound) == reference.settle(variant, bound), where
            assert kernel.snapshot() == reference.snapshot(), where
            _assert_fifo_links_consistent(kernel)


def _wide_memberships(rng: random.Random) -> Iterator[tuple[list[int], list[str]]]:
    """A group's successive (queues, apps), sorted, wide enough that the kernel's bitsets span
    several 64-bit words (over 64 apps; apps holding queues more than 64 apart), with changes
    where apps join and leave at once (a departed app's slot taken by a newcomer in the same
    change) and queues are added after all the others or anywhere, or removed."""
    next_queue = rng.randint(60, 200)
    queues = set(range(next_queue))
    apps = {f"app{rng.randrange(10_000):04d}" for _ in range(rng.randint(1, 110))}
    yield sorted(queues), sorted(apps)
    for _ in range(rng.randint(2, 5)):
        kind = rng.choice(["swap", "queues_appended", "queues_anywhere", "queues_removed"])
        if kind == "swap" and apps:
            apps -= set(rng.sample(sorted(apps), rng.randint(0, min(len(apps), 40))))
            apps |= {f"app{rng.randrange(10_000):04d}" for _ in range(rng.randint(0, 40))}
        elif kind == "queues_appended":
            count = rng.randint(1, 70)
            queues |= set(range(next_queue, next_queue + count))
            next_queue += count
        elif kind == "queues_anywhere":
            queues |= set(rng.sample(range(next_queue), rng.randint(1, 30)))
        elif kind == "queues_removed" and queues:
            queues -= set(rng.sample(sorted(queues), rng.randint(1, len(queues) // 2 + 1)))
        yield sorted(queues), sorted(apps)


@pytest.mark.parametrize("policy", RELEASE_POLICIES)
@pytest.mark.parametrize("variant", POSITION_VARIANTS)
def test_both_engines_agree_on_wide_groups_with_simultaneous_joins_and_leaves(
    variant: PositionVariant, policy: ReleasePolicy
) -> None:
    """Sizes where the kernel's per-app bitsets of active queues (the `random` policy's k-th
    smallest among them) and its start-rank bitsets of the Position support span several
    words, and changes that take apps out of and into `members` at once."""
    for seed in range(6):
        kernel, reference = KernelEngine(policy, seed), ReferenceEngine(policy, seed)
        rng = random.Random(1000 + seed)
        for step, (queues, apps) in enumerate(_wide_memberships(rng)):
            where = f"seed {seed} step {step}"
            bound = rng.choice([default_step_bound(len(queues), len(apps))] * 3 + [500])
            kernel.change(queues, apps)
            reference.change(queues, apps)
            assert kernel.settle(variant, bound) == reference.settle(variant, bound), where
            assert kernel.snapshot() == reference.snapshot(), where
            assert kernel.members.tolist() == [kernel.slot_of[app] for app in apps], where
            _assert_fifo_links_consistent(kernel)


class _ComparedOnlyWithOthers(str):
    """An id the contract accepts, though comparing it with itself raises (as None's `<` does):
    the contract compares only distinct ids, and so must an engine."""

    def __lt__(self, other: object) -> bool:
        if other is self:
            raise TypeError("compared with itself")
        return str.__lt__(self, other)  # type: ignore[operator]


@pytest.mark.parametrize("policy", RELEASE_POLICIES)
@pytest.mark.parametrize("variant", POSITION_VARIANTS)
def test_both_engines_take_ids_that_cannot_be_compared_with_themselves(
    variant: str, policy: str
) -> None:
    odd = [_ComparedOnlyWithOthers(name) for name in ("m", "b", "x")]
    groups: list[tuple[list[Any], list[Any]]] = [
        (["q1", "q2", "q3"], [None]),
        (["q1", "q2"], []),
        (["q1", "q2", "q3"], [None]),  # None back, as a new app
        ([None], ["c1"]),
        ([None], ["c1", "c2"]),
        ([None], odd[:1]),
        (["q1", "q2", "q3"], odd),
        (["q1", "q2", "q3"], odd[1:]),
    ]
    sessions = [sac.Session(variant, policy, engine, seed=3) for engine in sac.ENGINES]
    for step, group in enumerate(groups):
        kernel_run, reference_run = (session.rebalance(*group) for session in sessions)
        assert kernel_run == reference_run, f"step {step}"
        assert sessions[0].snapshot() == sessions[1].snapshot(), f"step {step}"
    assert sac.Session(variant, policy, "kernel").rebalance(["q1", "q2", "q3"], [None]).owners == {
        None: ["q1", "q2", "q3"]
    }


def _columns_by_definition(source: Any, fifo: Any, empty_sentinel: int) -> Any:
    """New column n is old column source[n], or an empty FIFO's (-1) - numpy, no kernel."""
    new = np.full((fifo.shape[0], len(source)), ABSENT, dtype=np.int32)
    new[SENTINEL, :] = empty_sentinel
    kept = source >= 0
    new[:, kept] = fifo[:, source[kept]]
    return new


@settings(max_examples=300, deadline=None)
@given(
    slots=st.integers(1, 12),
    old_queue_count=st.integers(0, 700),
    choices=st.data(),
)
def test_queue_change_moves_every_fifo_column_with_its_queue_however_the_runs_fall(
    slots: int, old_queue_count: int, choices: st.DataObject
) -> None:
    """`_columns_from`, row by row in runs (few long runs) or entry by entry (many short
    ones), gives each new queue its old queue's FIFO column, and a new queue an empty one."""
    kept = sorted(choices.draw(st.sets(st.integers(0, max(old_queue_count - 1, 0)))))
    kept = [queue for queue in kept if queue < old_queue_count]
    added = choices.draw(st.lists(st.integers(0, len(kept)), max_size=60))
    source_list: list[int] = list(kept)
    for place in sorted(added, reverse=True):  # new queues (-1) anywhere between kept ones
        source_list.insert(place, -1)
    source = np.array(source_list, dtype=np.int64)
    rng = np.random.default_rng(old_queue_count * 13 + slots)
    fifo_next = rng.integers(-1, slots, (slots, old_queue_count)).astype(np.int32)
    fifo_prev = rng.integers(-1, slots, (slots, old_queue_count)).astype(np.int32)
    active = rng.integers(-1, slots, old_queue_count)
    activated = rng.integers(-1, 50, old_queue_count)
    fresh = rng.random(old_queue_count) < 0.5
    new_active, new_next, new_prev, new_activated, new_fresh = _columns_from(
        source, active, fifo_next, fifo_prev, activated, fresh
    )
    assert np.array_equal(new_next, _columns_by_definition(source, fifo_next, SENTINEL))
    assert np.array_equal(new_prev, _columns_by_definition(source, fifo_prev, SENTINEL))
    kept_mask = source >= 0
    assert np.array_equal(new_active[kept_mask], active[source[kept_mask]])
    assert (new_active[~kept_mask] == NO_APP).all()
    assert np.array_equal(new_activated[kept_mask], activated[source[kept_mask]])
    assert (new_activated[~kept_mask] == -1).all()
    assert np.array_equal(new_fresh[kept_mask], fresh[source[kept_mask]])
    assert new_fresh[~kept_mask].all()
