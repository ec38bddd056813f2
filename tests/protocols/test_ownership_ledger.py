"""The ownership ledger against a straightforward replay of its definition: the records one
partition at a time in time order (those of one instant in the order they were made), every
partition's consumers as a set, the counts integrated record by record. The ledger replays
batches by set operations; its totals must be these exactly, to the last bit."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from rebalancing.protocols.ownership_ledger import LedgerTotals, OwnershipLedger

QUEUES = list(range(6))
MEMBERS = ["a", "b", "c"]


def reference_totals(
    start: float,
    consuming: dict[Any, set[Any]],
    records: list[tuple[float, bool, Any, list[Any], bool]],
    end: float,
) -> LedgerTotals:
    """The definition: (time, is a stop, member, partitions, revoked) records replayed one
    partition at a time, by time then by the order they were made."""
    holders = {queue: set(members) for queue, members in consuming.items()}
    flat = [
        (time, number, stop, member, queue, revoked)
        for number, (time, stop, member, queues, revoked) in enumerate(records)
        for queue in queues
    ]
    unowned = sum(1 for members in holders.values() if not members)
    doubly = sum(1 for members in holders.values() if len(members) >= 2)
    most = max((len(members) for members in holders.values()), default=0)
    paused: set[Any] = set()
    ever_paused: set[Any] = set()
    unowned_area = doubly_area = paused_area = 0.0
    last_time = last_change = start
    for time, _, stop, member, queue, revoked in sorted(flat, key=lambda r: (r[0], r[1])):
        elapsed = time - last_time
        unowned_area += unowned * elapsed
        doubly_area += doubly * elapsed
        paused_area += len(paused) * elapsed
        last_time = time
        members = holders[queue]
        before = len(members)
        if stop:
            members.discard(member)
        else:
            members.add(member)
            paused.discard(queue)
            most = max(most, len(members))
        after = len(members)
        if after != before:
            last_change = time
        if stop and revoked and before == 1 and after == 0:
            paused.add(queue)
            ever_paused.add(queue)
        unowned += (after == 0) - (before == 0)
        doubly += (after >= 2) - (before >= 2)
    elapsed = max(0.0, end - last_time)
    return LedgerTotals(
        seconds_to_balance=last_change - start,
        queue_seconds_unowned=unowned_area + unowned * elapsed,
        queue_seconds_doubly_owned=doubly_area + doubly * elapsed,
        queue_seconds_paused=paused_area + len(paused) * elapsed,
        queues_paused=len(ever_paused),
        most_consumers=most,
    )


# times on a coarse grid, so that many records share an instant; odd fractions, so that the
# order of the sums shows in the last bits
times = st.integers(0, 12).map(lambda step: 0.7 + step / 3)
record = st.tuples(
    times,
    st.booleans(),  # a stop (else a start)
    st.sampled_from(MEMBERS),
    st.lists(st.sampled_from(QUEUES), unique=True, max_size=len(QUEUES)),
    st.booleans(),  # revoked (a stop only)
)
start_state = st.fixed_dictionaries(
    {queue: st.sets(st.sampled_from(MEMBERS), max_size=2) for queue in QUEUES}
)


@given(start_state, st.lists(record, max_size=14), st.sampled_from([0.7, 3.1, 9.9]))
def test_the_ledger_totals_are_its_definitions_exactly(
    consuming: dict[Any, set[Any]],
    records: list[tuple[float, bool, Any, list[Any], bool]],
    end: float,
) -> None:
    ledger = OwnershipLedger(0.7, consuming)
    for time, stop, member, queues, revoked in records:
        if stop and len(queues) == 1:
            ledger.stop(time, member, queues[0], revoked=revoked)
        elif stop:
            ledger.stop_all(time, member, queues, revoked=revoked)
        elif len(queues) == 1:
            ledger.begin(time, member, queues[0])
        else:
            ledger.begin_all(time, member, queues)
    expected = reference_totals(0.7, consuming, records, end)
    assert ledger.finish(end) == expected
    assert ledger.finish(end) == expected  # finishing again changes nothing


@given(start_state, st.lists(record, max_size=14))
def test_a_ledger_of_holdings_is_the_ledger_of_its_partitions(
    consuming: dict[Any, set[Any]], records: list[tuple[float, bool, Any, list[Any], bool]]
) -> None:
    holdings: dict[Any, set[Any]] = {member: set() for member in MEMBERS}
    for queue, members in consuming.items():
        for member in members:
            holdings[member].add(queue)
    by_partition = OwnershipLedger(0.7, consuming)
    by_member = OwnershipLedger.of_holdings(0.7, QUEUES, holdings)
    for ledger in (by_partition, by_member):
        for time, stop, member, queues, revoked in records:
            if stop:
                ledger.stop_all(time, member, queues, revoked=revoked)
            else:
                ledger.begin_all(time, member, queues)
    assert by_member.finish(5.0) == by_partition.finish(5.0)
