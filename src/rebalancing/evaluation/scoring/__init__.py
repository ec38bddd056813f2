"""Stage 2, scoring: the exact scores of one rebalance (counts, stickiness, placement), the
engines that replay a scenario through a strategy (the reference, and the compiled one with its
twins), the protocols' time, and the aggregates over rows. Takes Scenarios and Strategies; hands
the decision stage ScoreRows and their Summary. Imports only the scenarios stage."""

from rebalancing.evaluation.scoring.aggregates import ALL_CHANGES, Aggregate, Summary, summarise
from rebalancing.evaluation.scoring.definitions import SCORES, Score
from rebalancing.evaluation.scoring.replay import ScoreRow, score_scenario, score_scenarios
from rebalancing.evaluation.scoring.scores import Scores, score

__all__ = [
    "ALL_CHANGES",
    "SCORES",
    "Aggregate",
    "Score",
    "ScoreRow",
    "Scores",
    "Summary",
    "score",
    "score_scenario",
    "score_scenarios",
    "summarise",
]
