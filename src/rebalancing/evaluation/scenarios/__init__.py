"""Stage 1, scenarios: a group and its membership changes drawn from (seed, index) alone, the
consumers' stale views of it (client-side systems), and zones and weights where the profile has
them. Takes ScenarioSettings; hands the scoring stage Scenarios (steps of queues, consumers and
the change's kind) and ViewSettings. Imports nothing of the later stages."""

from rebalancing.evaluation.scenarios.changes import (
    CHANGE_KINDS,
    INITIAL,
    KINDS,
    WEIGHT_KINDS,
    ZONE_KINDS,
    ChangeKind,
    IdT,
    Scenario,
    ScenarioSettings,
    Step,
    change_kind,
    generate_scenarios,
    scenario_seed,
)
from rebalancing.evaluation.scenarios.placement import (
    HOT_WEIGHT,
    REPLICATION_FACTOR,
    WEIGHT_DISTRIBUTIONS,
    ZIPF_EXPONENT,
    ZONE_NAMES,
)
from rebalancing.evaluation.scenarios.views import ViewSettings

__all__ = [
    "CHANGE_KINDS",
    "HOT_WEIGHT",
    "INITIAL",
    "KINDS",
    "REPLICATION_FACTOR",
    "WEIGHT_DISTRIBUTIONS",
    "WEIGHT_KINDS",
    "ZIPF_EXPONENT",
    "ZONE_KINDS",
    "ZONE_NAMES",
    "ChangeKind",
    "IdT",
    "Scenario",
    "ScenarioSettings",
    "Step",
    "ViewSettings",
    "change_kind",
    "generate_scenarios",
    "scenario_seed",
]
