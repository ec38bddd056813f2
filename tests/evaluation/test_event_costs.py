"""What the event-cost benchmarks share (rebalancing.evaluation.scoring.event_costs): runs
summarised per protocol, event and group size in the order they first appear, with the median
and 95th percentile of each score, the largest spread measured and the runs unsettled; the
seeded names of a group; bad counts refused naming them."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from rebalancing.evaluation.scoring.aggregates import aggregate
from rebalancing.evaluation.scoring.event_costs import (
    markdown_table,
    positive_integer,
    seeded_names,
    summarise_costs,
)


@dataclass(frozen=True)
class Run:
    """A run as a benchmark's cost gives it: its group under names of its own."""

    protocol: str
    event: str
    members: int
    partitions: int
    seconds: float | None
    spread: int | None
    converged: bool = True


def test_runs_are_summarised_per_protocol_event_and_size_in_the_order_they_appear() -> None:
    runs = [
        Run("b", "join", 4, 40, 1.0, None),
        Run("a", "join", 2, 20, 5.0, 1),
        Run("b", "join", 4, 40, 3.0, 2, converged=False),
        Run("a", "join", 2, 20, 9.0, None),
        Run("b", "join", 4, 40, 2.0, None),
        Run("a", "crash", 2, 20, None, None),
    ]
    summaries = summarise_costs(
        runs, ("seconds",), consumers="members", queues="partitions", spread="spread"
    )
    assert [(s.protocol, s.event, s.consumers, s.queues, s.runs) for s in summaries] == [
        ("b", "join", 4, 40, 3),
        ("a", "join", 2, 20, 2),
        ("a", "crash", 2, 20, 1),
    ]
    b_join = aggregate([1.0, 3.0, 2.0])
    assert summaries[0].median == {"seconds": b_join.p50}
    assert summaries[0].p95 == {"seconds": b_join.p95}
    assert [s.spread_max for s in summaries] == [2, 1, None]  # the largest measured
    assert [s.unsettled for s in summaries] == [1, 0, 0]
    assert summaries[2].median == {"seconds": None}  # not counted by that protocol
    unmeasured = summarise_costs(runs, ("seconds",), consumers="members", queues="partitions")
    assert {s.spread_max for s in unmeasured} == {None}
    table = markdown_table(summaries, "join", "seconds").splitlines()
    assert table[0] == "| protocol | 2 x 20 | 4 x 40 |"
    assert table[2].startswith("| `b` |  | 2 (")
    assert table[2].endswith("(1 unsettled) |")


def test_seeded_names_are_distinct_the_seeds_and_sort_by_their_number() -> None:
    names = seeded_names(random.Random(7), 12, "member")
    assert names == seeded_names(random.Random(7), 12, "member")
    assert len(set(names)) == 12
    assert all(name.startswith("member-") and len(name) == len("member-0000") for name in names)
    assert sorted(names) == sorted(names, key=lambda name: int(name.split("-")[1]))
    assert names != seeded_names(random.Random(8), 12, "member")


@pytest.mark.parametrize("value", [0, -3, 1.5, "2", True, None])
def test_a_count_that_is_not_a_positive_integer_is_refused_naming_it(value: object) -> None:
    with pytest.raises(ValueError, match="seeds must be a positive integer"):
        positive_integer("seeds", value)
    assert positive_integer("seeds", 3) == 3
