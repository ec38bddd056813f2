"""The evaluation that scores strategies: scenarios, the scores of one rebalance, the scoring
core that replays scenarios through strategies, aggregates and plots. Pure Python, no Spark."""

from rebalancing.evaluation.aggregates import Aggregate, markdown_table, summarise
from rebalancing.evaluation.replay import ScoreRow, score_scenario, score_scenarios
from rebalancing.evaluation.scenarios import Scenario, ScenarioSettings, generate_scenarios
from rebalancing.evaluation.scores import Scores, score

__all__ = [
    "Aggregate",
    "Scenario",
    "ScenarioSettings",
    "ScoreRow",
    "Scores",
    "generate_scenarios",
    "markdown_table",
    "score",
    "score_scenario",
    "score_scenarios",
    "summarise",
]
