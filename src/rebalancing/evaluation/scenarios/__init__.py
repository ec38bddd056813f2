"""Stage 1, scenarios: a group and its membership changes drawn from (seed, index) alone, the
consumers' stale views of it (client-side systems), and zones and weights where the profile has
them. Takes ScenarioSettings; hands the scoring stage Scenarios (steps of queues, consumers and
the change's kind) and ViewSettings. Imports nothing of the later stages."""

from rebalancing.evaluation.scenarios.changes import (
    CHANGE_KINDS,
    INITIAL,
    Scenario,
    ScenarioSettings,
    Step,
    generate_scenarios,
    scenario_seed,
)
from rebalancing.evaluation.scenarios.placement import WEIGHT_DISTRIBUTIONS
from rebalancing.evaluation.scenarios.views import ViewSettings

__all__ = [
    "CHANGE_KINDS",
    "INITIAL",
    "WEIGHT_DISTRIBUTIONS",
    "Scenario",
    "ScenarioSettings",
    "Step",
    "ViewSettings",
    "generate_scenarios",
    "scenario_seed",
]
