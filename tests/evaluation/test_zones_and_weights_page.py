"""The zones-and-load page's measurements (benchmarks/zones_and_weights.py): its tables cover
every strategy `rebalancing compare` scores by default on such groups, and its figures name every
strategy once, each name inside the axes and clear of the others."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import matplotlib
import pytest

from rebalancing.strategies.registry import default_strategies

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "zones_and_weights.py"
RESULTS = ROOT / "benchmarks" / "results" / "zones_and_weights.md"


@pytest.fixture(scope="module")
def script() -> ModuleType:
    """The benchmark script as a module, with its folder on the path (for its shared.py)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(SCRIPT.parent))
        spec = importlib.util.spec_from_file_location("zones_and_weights", SCRIPT)
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        patch.setitem(sys.modules, spec.name, module)  # its dataclasses look themselves up there
        spec.loader.exec_module(module)
    return module


def _sections(page: str) -> dict[str, str]:
    """The page's tables by their heading."""
    parts = page.split("\n### ")[1:]
    return {part.splitlines()[0]: part for part in parts}


def test_results_have_a_row_for_every_strategy_compare_scores_by_default(
    script: ModuleType,
) -> None:
    sections = _sections(RESULTS.read_text(encoding="utf-8"))
    for setting in script.SETTINGS:
        carried = {"consumer_zones", "queue_zones"}
        if "--weights" in setting.options:
            carried.add("weights")
        lines = sections[setting.title].splitlines()
        rows = {line.split("`")[1] for line in lines if line.startswith("| `")}
        assert rows == set(default_strategies(carried)), setting.title


def _label_boxes(figure: Any) -> list[list[Any]]:
    renderer = figure.canvas.get_renderer()
    return [
        [(text.get_text(), text.get_window_extent(renderer)) for text in axes.texts]
        for axes in figure.axes
    ]


def test_every_strategy_is_named_once_inside_the_axes_and_no_two_names_overlap(
    script: ModuleType,
) -> None:
    zones, _ = script.run(script.SETTINGS[0], 3)
    weighted, _ = script.run(script.SETTINGS[1], 3)
    figures = (script.cross_zone_figure(zones), script.load_figure({"one": weighted}))
    for figure, summary in zip(figures, (zones, weighted), strict=True):
        figure.canvas.draw()
        for axes, labels in zip(figure.axes, _label_boxes(figure), strict=True):
            inside = axes.get_window_extent()
            names = [
                name
                for text, _ in labels
                for name in text.split(", ")
                if name in script.strategies_of(summary)
            ]
            assert sorted(names) == script.strategies_of(summary)
            boxes = [box for _, box in labels]
            for index, box in enumerate(boxes):
                assert inside.contains(box.x0, box.y0), labels[index][0]
                assert inside.contains(box.x1, box.y1), labels[index][0]
                for other in boxes[index + 1 :]:
                    assert not box.overlaps(other), (labels[index][0], labels)
