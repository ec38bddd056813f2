"""rebalancing.placement: the extra inputs (zones, replica zones, weights, capacities) are checked
by one set of rules for every strategy, with errors that name the culprit, and entries for ids
outside the group ignored (or warned about when none is in the group)."""

from __future__ import annotations

import math
import warnings
from typing import Any

import pytest

from rebalancing.contract import prepare
from rebalancing.placement import Placement, PlacementMismatchWarning, check_placement

GROUP = prepare(["q1", "q2", "q3"], ["c1", "c2"], None)


def checked(**inputs: Any) -> Placement[Any, Any]:
    return check_placement(GROUP, **inputs)


def test_nothing_given_means_no_zone_weight_one_capacity_one() -> None:
    placement = checked()
    assert placement.zone_of("c1") is None
    assert placement.zones_of("q1") == frozenset()
    assert placement.weight("q1") == 1.0
    assert placement.capacity("c2") == 1.0
    assert placement.zones == ()


def test_a_member_missing_from_consumer_zones_or_mapped_to_none_has_no_zone() -> None:
    placement = checked(consumer_zones={"c1": "zone-b", "c2": None})
    assert placement.consumer_zone == {"c1": "zone-b"}
    assert placement.zone_of("c2") is None
    assert checked(consumer_zones={"c2": "zone-a"}).zone_of("c1") is None


def test_entries_for_ids_outside_the_group_are_ignored() -> None:
    placement = checked(
        consumer_zones={"c1": "a", "gone": "b"},
        queue_zones={"q1": ["a", None], "removed": ["c"]},
        weights={"q1": 1, "q2": 2, "q3": 0, "removed": -5},
        capacities={"c1": 1, "c2": 2, "gone": 0},
    )
    assert placement.consumer_zone == {"c1": "a"}
    assert placement.queue_zones == {"q1": frozenset({"a"})}
    assert placement.weights == {"q1": 1.0, "q2": 2.0, "q3": 0.0}
    assert placement.capacities == {"c1": 1.0, "c2": 2.0}
    assert placement.zones == ("a",)


@pytest.mark.parametrize(
    ("inputs", "error", "message"),
    [
        ({"weights": {"q1": 1, "q2": 2}}, ValueError, "weights has no weight for queue 'q3'"),
        ({"weights": {"q1": 1, "q2": -2, "q3": 0}}, ValueError, r"weights\['q2'\] is -2"),
        ({"weights": {"q1": math.nan, "q2": 1, "q3": 0}}, ValueError, r"weights\['q1'\] is nan"),
        ({"weights": {"q1": math.inf, "q2": 1, "q3": 0}}, ValueError, r"weights\['q1'\] is inf"),
        ({"weights": {"q1": "9", "q2": 1, "q3": 0}}, TypeError, r"weights\['q1'\] is '9' \(str\)"),
        ({"weights": {"q1": False, "q2": 1, "q3": 0}}, TypeError, r"weights\['q1'\] is False"),
        ({"weights": [1, 2, 3]}, TypeError, "weights must be a mapping"),
        ({"capacities": {"c1": 1}}, ValueError, "capacities has no capacity for consumer 'c2'"),
        ({"capacities": {"c1": 0, "c2": 1}}, ValueError, r"capacities\['c1'\] is 0: .* > 0"),
        ({"capacities": {"c1": 1, "c2": -1.5}}, ValueError, r"capacities\['c2'\] is -1.5"),
        ({"consumer_zones": {"c1": ["a"]}}, TypeError, r"consumer_zones\['c1'\] is \['a'\]"),
        ({"consumer_zones": {"c1": "a", "c2": 3}}, TypeError, "zone ids cannot be ordered"),
        ({"consumer_zones": "a"}, TypeError, "consumer_zones must be a mapping"),
        (
            {"queue_zones": {"q1": "a"}},
            TypeError,
            r"queue_zones\['q1'\] must be a collection.*\['a'\]",
        ),
        ({"queue_zones": {"q2": 7}}, TypeError, r"queue_zones\['q2'\] must be a collection"),
        ({"queue_zones": {"q3": [{}]}}, TypeError, r"a zone in queue_zones\['q3'\] is \{\}"),
    ],
)
def test_bad_inputs_are_errors_naming_the_culprit(
    inputs: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        checked(**inputs)


def test_more_than_one_missing_weight_says_how_many_more() -> None:
    with pytest.raises(ValueError, match=r"queue 'q2' \(and 1 more\)"):
        checked(weights={"q1": 1})


@pytest.mark.parametrize(
    "inputs",
    [
        {"consumer_zones": {"consumer-1": "a"}},
        {"queue_zones": {"orders-1": ["a"]}},
    ],
)
def test_a_map_sharing_no_id_with_the_group_warns_at_the_caller(inputs: dict[str, Any]) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        checked(**inputs)
    assert [str(w.message) for w in caught if w.category is PlacementMismatchWarning]
    assert caught[0].filename == __file__
    assert "ids of another form?" in str(caught[0].message)


def test_a_map_sharing_an_id_or_an_empty_one_does_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", PlacementMismatchWarning)
        checked(consumer_zones={"c1": "a", "gone": "b"}, queue_zones={})
        check_placement(prepare([], [], None), queue_zones={"q1": ["a"]})
