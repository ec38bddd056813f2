"""The evaluation that scores strategies, in the stages a scenario goes through, each a
sub-package that imports only the stages before it:

- `scenarios`: a group and its membership changes drawn from the seed, stale views, placement;
- `scoring`: the scores of one rebalance, the engines that replay scenarios, aggregates;
- `decision`: the systems as declarations and the verdict on a summary;
- `report`: the verdict and the tables as text, the figures, report.html and the run's files;
- `command`: the profile read from the command line, driving the four (`rebalancing compare`).

Pure Python, no Spark. The names below are the ones users import from here.
"""

from rebalancing.evaluation import moved  # noqa: F401  (old module paths, deprecated)
from rebalancing.evaluation.report.tables import markdown_table
from rebalancing.evaluation.scenarios.changes import Scenario, ScenarioSettings, generate_scenarios
from rebalancing.evaluation.scoring.aggregates import Aggregate, summarise
from rebalancing.evaluation.scoring.replay import ScoreRow, score_scenario, score_scenarios
from rebalancing.evaluation.scoring.scores import Scores, score

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
