"""Azure Event Hubs' event processor load balancing: the rules of OwnershipManager, in time."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rebalancing.strategies import STRATEGIES, event_hubs
from rebalancing.strategies.event_hubs import (
    CYCLE_JITTER,
    LOAD_BALANCING_INTERVAL,
    PARTITION_OWNERSHIP_EXPIRATION_INTERVAL,
    SDK_TIMERS,
    Session,
)
from tests.groups import membership_changes

LONGEST_CYCLE = LOAD_BALANCING_INTERVAL * (1 + CYCLE_JITTER)


def test_the_timers_default_to_the_python_sdks_and_the_other_sdks_are_presets() -> None:
    assert (LOAD_BALANCING_INTERVAL, PARTITION_OWNERSHIP_EXPIRATION_INTERVAL) == (30.0, 180.0)
    presets = {
        name: (timers.load_balancing_interval, timers.partition_ownership_expiration_interval)
        for name, timers in SDK_TIMERS.items()
    }
    assert presets == {
        "python": (30.0, 180.0),
        "dotnet": (30.0, 120.0),
        "java": (30.0, 120.0),
        "javascript": (10.0, 60.0),
    }
    session = Session()
    assert (session.interval, session.expiration, session.sdk) == (30.0, 180.0, "python")
    javascript = Session("greedy", sdk="javascript")
    assert (javascript.interval, javascript.expiration) == (10.0, 60.0)
    # the Python SDK's expiry follows an interval given (six of them); the others' stay put
    assert Session(load_balancing_interval=20.0).expiration == 120.0
    assert Session(load_balancing_interval=20.0, sdk="dotnet").expiration == 120.0
    assert Session(load_balancing_interval=5.0, sdk="dotnet").expiration == 120.0
    with pytest.raises(ValueError, match="unknown sdk 'go'"):
        Session(sdk="go")  # type: ignore[arg-type]


@pytest.mark.parametrize("sdk", ["python", "javascript"])
def test_a_crash_waits_for_the_sdks_own_expiry(sdk: str) -> None:
    timers = SDK_TIMERS[sdk]
    longest = timers.load_balancing_interval * (1 + CYCLE_JITTER)
    session = Session("greedy", seed=5, departures="crash", sdk=sdk)  # type: ignore[arg-type]
    session.rebalance(range(4), ["p1", "p2"])
    run = session.rebalance(range(4), ["p1"])
    # the crashed processor's two partitions expire `expiry` after its last cycle, at most a
    # cycle before the crash, and wait for p1's next cycle after that
    expiry = timers.partition_ownership_expiration_interval
    assert run.seconds_to_balance is not None
    assert expiry - longest <= run.seconds_to_balance <= expiry + longest


def test_balanced_a_lone_new_processor_takes_32_cycles_for_32_partitions() -> None:
    # The troubleshooting guide's example: balanced claims one partition per cycle.
    run = Session("balanced", seed=7).rebalance(range(32), ["p1"])
    assert run.owners == {"p1": list(range(32))}
    assert (run.claims, run.steals, run.rounds) == (32, 0, 32)
    assert run.seconds_to_balance is not None
    # the first cycle runs at the start: 31 waits of one interval plus up to 20% (30 to 36 s
    # with the Python SDK's 30 s) until the last claim
    assert 31 * LOAD_BALANCING_INTERVAL <= run.seconds_to_balance <= 31 * LONGEST_CYCLE
    # partition k waits k cycles: 0 + 1 + ... + 31 of them, unowned
    assert run.queue_seconds_unowned is not None
    assert sum(range(32)) * LOAD_BALANCING_INTERVAL <= run.queue_seconds_unowned
    assert run.queue_seconds_unowned <= sum(range(32)) * LONGEST_CYCLE


def test_greedy_a_lone_new_processor_claims_its_whole_share_in_its_first_cycle() -> None:
    run = Session("greedy", seed=7).rebalance(range(32), ["p1"])
    assert run.owners == {"p1": list(range(32))}
    assert (run.claims, run.rounds, run.seconds_to_balance, run.queue_seconds_unowned) == (
        32,
        1,
        0.0,
        0.0,
    )


def test_a_processor_at_its_expected_share_never_steals_so_balance_may_stay_uneven() -> None:
    # 10 partitions, 4 processors: expected 2, max 3. Holding 4-2-2-2, nobody is below its
    # expected share and nothing is claimable: the Python SDK's rule takes no step.
    previous = {"a": [0, 1, 2, 3], "b": [4, 5], "c": [6, 7], "d": [8, 9]}
    for strategy in ("balanced", "greedy"):
        run = event_hubs.run(range(10), ["a", "b", "c", "d"], previous, strategy)  # type: ignore[arg-type]
        assert run.owners == previous
        assert run.steps == 0


def test_of_two_claims_on_one_partition_one_wins() -> None:
    # Two processors that start together read the same empty table and each claims all eight
    # partitions (neither sees the other yet): the conditional writes let one claim per
    # partition through, then the one holding fewer than its share steals.
    run = Session("greedy", seed=3).rebalance(range(8), ["p1", "p2"])
    assert run.claims == 8
    assert sorted(len(owned) for owned in run.owners.values()) == [4, 4]
    assert sorted(q for owned in run.owners.values() for q in owned) == list(range(8))


def test_a_stolen_partition_is_processed_twice_until_its_old_owner_s_next_cycle() -> None:
    session = Session("greedy", seed=11)
    session.rebalance(range(8), ["p1"])
    run = session.rebalance(range(8), ["p1", "p2"])  # nothing claimable: p2 steals, one a cycle
    assert (run.claims, run.steals) == (0, 4)
    assert sorted(len(owned) for owned in run.owners.values()) == [4, 4]
    assert run.queue_seconds_unowned == 0.0
    assert run.queue_seconds_doubly_owned is not None
    assert 0 < run.queue_seconds_doubly_owned <= 4 * LONGEST_CYCLE


def test_a_graceful_leave_releases_its_partitions_for_the_next_cycle_of_another() -> None:
    session = Session("balanced", seed=5)
    session.rebalance(range(4), ["p1", "p2"])
    run = session.rebalance(range(4), ["p1"])
    assert run.owners == {"p1": [0, 1, 2, 3]}
    assert (run.releases, run.claims) == (2, 2)
    assert run.queue_seconds_unowned is not None
    # one released partition claimed at p1's next cycle, the other a cycle later
    assert run.queue_seconds_unowned <= 3 * LONGEST_CYCLE


def test_a_crashed_processor_s_partitions_wait_for_their_ownership_to_expire() -> None:
    session = Session("greedy", seed=5, departures="crash")
    session.rebalance(range(4), ["p1", "p2"])
    run = session.rebalance(range(4), ["p1"])
    assert run.owners == {"p1": [0, 1, 2, 3]}
    assert run.releases == 0
    assert run.queue_seconds_unowned is not None
    # expired 180 s (the Python SDK's default) after the crashed processor's last cycle (at
    # most one cycle before the crash), then claimed at p1's next cycle
    expiring = PARTITION_OWNERSHIP_EXPIRATION_INTERVAL - LONGEST_CYCLE
    assert 2 * expiring <= run.queue_seconds_unowned
    assert run.queue_seconds_unowned <= 2 * (
        PARTITION_OWNERSHIP_EXPIRATION_INTERVAL + LONGEST_CYCLE
    )


@pytest.mark.parametrize("strategy", ["balanced", "greedy"])
def test_a_crashed_processor_back_under_its_id_writes_its_records_again_without_a_wait(
    strategy: str,
) -> None:
    """Its first cycle writes every record it still owns (`_balance_ownership` starts from the
    owner's own active records), so nothing waits for them to expire, even after the group
    emptied."""
    session = Session(strategy, seed=2, departures="crash")  # type: ignore[arg-type]
    session.rebalance(range(4), ["p1"])
    assert session.rebalance(range(4), []).owners == {}
    back = session.rebalance(range(4), ["p1"])
    assert back.converged
    assert back.owners == {"p1": [0, 1, 2, 3]}
    assert (back.claims, back.steals, back.seconds_to_balance) == (0, 0, 0.0)
    assert back.queue_seconds_unowned == 0.0


@pytest.mark.parametrize("strategy", ["balanced", "greedy"])
def test_a_quiet_group_takes_no_step_when_nothing_changed(strategy: str) -> None:
    session = Session(strategy, seed=2)  # type: ignore[arg-type]
    first = session.rebalance(range(10), ["a", "b", "c"])
    again = session.rebalance(range(10), ["a", "b", "c"])
    assert again.owners == first.owners
    assert (again.steps, again.rounds, again.seconds_to_balance) == (0, 0, 0.0)


@pytest.mark.parametrize("strategy", ["balanced", "greedy"])
def test_every_partition_ends_owned_nobody_below_p_div_n_nobody_above_by_more_than_p_mod_n(
    strategy: str,
) -> None:
    @settings(max_examples=60, deadline=None)
    @given(membership_changes, st.integers(0, 2**32), st.sampled_from(["graceful", "crash"]))
    def holds(steps: list[tuple[int, set[str]]], seed: int, departures: str) -> None:
        session = Session(strategy, seed=seed, departures=departures)  # type: ignore[arg-type]
        for count, consumers in steps:
            run = session.rebalance(range(count), consumers)
            assert run.converged
            assert session.rule_violations() == []
            if not consumers:  # the group emptied: nobody owns anything
                assert run.owners == {}
                continue
            assert sorted(q for owned in run.owners.values() for q in owned) == list(range(count))
            counts = [len(owned) for owned in run.owners.values()]
            assert min(counts) >= count // len(consumers)
            # it steals only below P // n, so the spread is at most P mod n, not 1
            assert max(counts) - count // len(consumers) <= count % len(consumers)
            assert run.steps == run.claims + run.steals  # type: ignore[operator]

    holds()


def test_the_stateless_assign_keeps_what_the_present_processors_hold() -> None:
    previous = {"a": [0, 1, 2], "b": [3, 4, 5]}
    plan = event_hubs.assign_greedy(range(6), ["a", "b"], previous)
    assert plan == previous
    joined = event_hubs.assign_balanced(range(6), ["a", "b", "c"], previous)
    assert sorted(len(owned) for owned in joined.values()) == [2, 2, 2]


def test_both_run_on_azure_event_hubs_only() -> None:
    for name in ("event_hubs_balanced", "event_hubs_greedy"):
        assert STRATEGIES[name].systems == frozenset({"azure-event-hubs"})


def test_settings_that_would_expire_a_live_processor_are_refused() -> None:
    with pytest.raises(ValueError, match="partition_ownership_expiration_interval"):
        Session(partition_ownership_expiration_interval=36.0)
    with pytest.raises(ValueError, match="strategy 'eager'"):
        Session("eager")  # type: ignore[arg-type]
