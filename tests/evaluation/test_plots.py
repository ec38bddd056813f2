"""The report's figures: drawn from the exact aggregates, never beyond a metric's range."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from rebalancing.evaluation import plots
from rebalancing.evaluation.aggregates import summarise
from rebalancing.evaluation.replay import score_scenarios
from rebalancing.evaluation.scenarios import ScenarioSettings, generate_scenarios
from rebalancing.strategies import STRATEGIES

SMALL = ScenarioSettings(queue_range=(1, 120), consumer_range=(1, 16))
CHOSEN = {name: STRATEGIES[name] for name in ("averagely", "sticky", "sac", "consistent_hash")}
ROWS = list(score_scenarios(generate_scenarios(4, range(25), SMALL), CHOSEN))
SUMMARY = summarise(ROWS)


def _drawn_values(figure: matplotlib.figure.Figure) -> list[float]:
    values: list[float] = []
    for artist in figure.axes[0].get_children():
        if isinstance(artist, Rectangle) and artist.get_width() > 0 and artist.get_height() > 0:
            values += [artist.get_y(), artist.get_y() + artist.get_height()]
        elif isinstance(artist, Line2D):
            values += [float(value) for value in artist.get_ydata()]
    return values


def test_stickiness_bands_stay_between_0_and_1_and_show_every_strategy() -> None:
    figure = plots.stickiness(SUMMARY)
    drawn = _drawn_values(figure)
    assert drawn
    assert all(0.0 <= value <= 1.0 for value in drawn)
    legend = [text.get_text() for text in figure.axes[0].get_legend().get_texts()]
    assert legend == sorted(CHOSEN)


def test_moves_bands_are_never_negative_and_reach_the_largest_value() -> None:
    figure = plots.moves(SUMMARY)
    drawn = _drawn_values(figure)
    assert min(drawn) >= 0
    assert max(drawn) == max(row.moves for row in ROWS)


def test_the_size_profiles_draw_one_line_per_strategy() -> None:
    timing = plots.assign_time_by_queue_count(ROWS)
    assert {line.get_label() for line in timing.axes[0].get_lines()} == set(CHOSEN)
    protocol = plots.releases_by_group_size(ROWS)
    assert protocol is not None
    assert {line.get_label() for line in protocol.axes[0].get_lines()} == {"sac"}
    assert plots.releases_by_group_size([row for row in ROWS if row.strategy == "sticky"]) is None
