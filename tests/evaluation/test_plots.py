"""The report's figures: drawn from the exact aggregates, never beyond a metric's range."""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from rebalancing.evaluation.report import plots
from rebalancing.evaluation.report.figure_files import Drawing, DrawingProcess, save_drawings
from rebalancing.evaluation.scenarios.changes import ScenarioSettings, generate_scenarios
from rebalancing.evaluation.scoring.aggregates import summarise
from rebalancing.evaluation.scoring.replay import score_scenarios
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
        elif isinstance(artist, LineCollection):  # whiskers and medians, one artist for many
            values += [float(y) for segment in artist.get_segments() for _, y in segment]
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


def test_save_all_writes_each_figure_with_its_title_and_reading(tmp_path: Path) -> None:
    figures = plots.save_all(SUMMARY, tmp_path)
    drawn = [entry for entry in plots.HARNESS_FIGURES if entry[0] != "client_views.png"]
    assert [figure.path for figure in figures] == [tmp_path / name for name, *_ in drawn]
    assert [(figure.title, figure.reading) for figure in figures] == [
        (title, reading) for _, _, title, reading in drawn
    ]
    assert all(figure.path.read_bytes().startswith(b"\x89PNG") for figure in figures)
    assert all(figure.title and len(figure.reading) > 40 for figure in figures)


def test_save_all_leaves_out_the_protocol_figures_when_no_protocol_was_scored(
    tmp_path: Path,
) -> None:
    plain = {group: metrics for group, metrics in SUMMARY.items() if group[0] != "sac"}
    written = [figure.path.name for figure in plots.save_all(plain, tmp_path)]
    assert written == [
        "stickiness.png",
        "moves.png",
        "queues_paused.png",
        "stickiness_gap.png",
        "assign_time.png",
    ]
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(written)


def test_the_client_views_figure_shows_each_client_side_strategy_and_only_then() -> None:
    assert plots.client_views(SUMMARY) is None  # broker-side: no view ever disagreed
    client_rows = score_scenarios(generate_scenarios(4, range(25), SMALL), CHOSEN, views="client")
    figure = plots.client_views(summarise(client_rows))
    assert figure is not None
    legend = [text.get_text() for text in figure.axes[0].get_legend().get_texts()]
    assert legend == ["averagely", "consistent_hash"]  # sticky and sac stay broker-side
    assert min(_drawn_values(figure)) >= 0


def test_the_harness_size_profiles_draw_the_same_lines_as_rows_of_one_value_each(
    tmp_path: Path,
) -> None:
    profiles = [
        {
            "strategy": "sac",
            "facet": "group_size",
            "bucket": 3,
            "metric": metric,
            "count": 2,
            "p50": value,
        }
        for metric, value in (("releases", 9.0), ("size", 6.0))
    ] + [
        {
            "strategy": "sac",
            "facet": "queue_count",
            "bucket": 2,
            "metric": metric,
            "count": 1,
            "p50": value,
        }
        for metric, value in (("assign_micros", 40.0), ("size", 3.0))
    ]
    assert plots.profile_lines(profiles, "group_size", "releases") == {"sac": [(6.0, 9.0)]}
    written = plots.save_size_profiles(profiles, tmp_path)
    assert [figure.path.name for figure in written] == [
        "releases_by_group_size.png",
        "assign_time_by_queue_count.png",
    ]
    assert plots.save_size_profiles([], tmp_path) == []


def _drawn_together(
    started: Path, parent: int, fails_in_a_child: bool, draw: Callable[[], Figure | None]
) -> Figure | None:
    """`draw()` once two processes have started a drawing (each leaves its id in the folder
    `started`; at most 30 s), failing instead in any process but `parent` if told to."""
    (started / str(os.getpid())).touch()
    deadline = time.monotonic() + 30
    while len(list(started.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    if fails_in_a_child and os.getpid() != parent:
        raise RuntimeError("this child fails")
    return draw()


@pytest.mark.parametrize("children_fail", [False, True], ids=["children tell", "children fail"])
def test_forked_processes_save_the_same_files_in_order_or_this_one_draws_what_they_took(
    tmp_path: Path, children_fail: bool
) -> None:
    started = tmp_path / "started"
    started.mkdir()
    together = partial(_drawn_together, started, os.getpid(), children_fail)
    drawings: list[Drawing] = [
        ("stickiness.png", partial(together, partial(plots.stickiness, SUMMARY)), "S", "s"),
        ("moves.png", partial(together, partial(plots.moves, SUMMARY)), "M", "m"),
        ("nothing.png", partial(together, lambda: None), "N", "n"),
        ("gap.png", partial(together, partial(plots.stickiness_gap, SUMMARY)), "G", "g"),
    ]
    alone, shared = tmp_path / "alone", tmp_path / "shared"
    alone.mkdir()
    shared.mkdir()
    in_three = save_drawings(drawings, shared, processes=3)
    assert len(list(started.iterdir())) >= 2, "no child took a drawing"
    in_one = save_drawings(drawings, alone)
    names = ["stickiness.png", "moves.png", "gap.png"]
    assert [figure.path for figure in in_one] == [alone / name for name in names]
    assert [figure.path for figure in in_three] == [shared / name for name in names]
    assert [figure.title for figure in in_three] == ["S", "M", "G"]
    assert sorted(path.name for path in shared.iterdir()) == sorted(names)
    for name in names:
        assert (shared / name).read_bytes() == (alone / name).read_bytes(), name


def _told_where(record: Path) -> matplotlib.figure.Figure:
    record.write_text(str(os.getpid()))
    return plots.stickiness(SUMMARY)


def drawings_telling_where(record: str) -> list[Drawing]:
    """Two figures, the first writing the id of the process that draws it into `record`: a
    function of a module, which a DrawingProcess is sent by name."""
    return [
        ("stickiness.png", partial(_told_where, Path(record)), "S", "s"),
        ("moves.png", partial(plots.moves, SUMMARY), "M", "m"),
    ]


def test_a_drawing_process_gets_ready_first_then_draws_what_it_is_sent(tmp_path: Path) -> None:
    ready, drawn_in = tmp_path / "ready", tmp_path / "drawn_in"
    drawing = DrawingProcess(lambda: ready.write_text(str(os.getpid())), processes=1)
    try:
        figures = drawing.save(drawings_telling_where, (str(drawn_in),), tmp_path)
    finally:
        drawing.close()
    assert figures is not None
    assert [(figure.path, figure.title) for figure in figures] == [
        (tmp_path / "stickiness.png", "S"),
        (tmp_path / "moves.png", "M"),
    ]
    assert ready.read_text() == drawn_in.read_text() != str(os.getpid())
    here = tmp_path / "here"
    here.mkdir()
    save_drawings(drawings_telling_where(str(drawn_in)), here)
    for figure in figures:
        assert figure.path.read_bytes() == (here / figure.path.name).read_bytes()


def test_a_drawing_process_that_fails_or_is_sent_nothing_leaves(tmp_path: Path) -> None:
    def failing() -> None:
        raise RuntimeError("no matplotlib here")

    broken = DrawingProcess(failing, processes=1)
    child = broken.child
    assert broken.save(drawings_telling_where, (str(tmp_path / "x"),), tmp_path) is None
    broken.close()
    idle = DrawingProcess(lambda: None, processes=1)
    waiting = idle.child
    idle.close()
    for process in (child, waiting):
        assert process is not None
        with pytest.raises(ProcessLookupError):
            os.kill(process, 0)  # reaped, not a zombie
    assert list(tmp_path.iterdir()) == []


def test_a_process_forked_meanwhile_keeps_no_drawing_process_waiting(tmp_path: Path) -> None:
    sent, idle = DrawingProcess(lambda: None, 1), DrawingProcess(lambda: None, 1)
    release, released = os.pipe()
    holder = os.fork()
    if holder == 0:  # holds copies of both processes' pipes, as a scoring worker forked then
        os.read(release, 1)
        os._exit(0)
    saved: list[object] = []
    both = threading.Thread(
        target=lambda: (
            saved.append(sent.save(drawings_telling_where, (str(tmp_path / "d"),), tmp_path)),
            idle.close(),
        )
    )
    children = [child for child in (sent.child, idle.child) if child is not None]
    assert len(children) == 2
    both.start()
    both.join(timeout=60)
    finished_while_held = not both.is_alive()
    os.write(released, b"x")
    os.waitpid(holder, 0)
    if not finished_while_held:  # waiting for each other: end them, so that the test fails
        for child in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
    both.join()
    sent.close()
    assert finished_while_held
    assert saved[0] is not None


def test_a_job_pickle_cannot_send_is_refused_and_the_process_still_leaves() -> None:
    drawing = DrawingProcess(lambda: None, processes=1)
    child = drawing.child
    with pytest.raises((pickle.PicklingError, AttributeError)):
        drawing.save(drawings_telling_where, (lambda: None,), Path("."))
    closing = threading.Thread(target=drawing.close)
    closing.start()
    closing.join(timeout=30)
    closed = not closing.is_alive()
    if not closed:  # close waits for a process still waiting for its job: end it
        assert child is not None
        os.kill(child, signal.SIGKILL)
        closing.join()
    assert closed


def _failing_here(parent: int, started: Path, draw: Callable[[], Figure | None]) -> Figure | None:
    """`draw()` in a forked child, once two processes have started a drawing (each records its
    id in `started`); in `parent`, a drawing that raises."""
    (started / str(os.getpid())).touch()
    if os.getpid() == parent:
        deadline = time.monotonic() + 30
        while len(list(started.iterdir())) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        raise RuntimeError("this drawing fails here")
    return draw()


def test_a_drawing_failing_here_raises_once_the_children_are_reaped(tmp_path: Path) -> None:
    started = tmp_path / "started"
    started.mkdir()
    failing = partial(_failing_here, os.getpid(), started)
    drawings: list[Drawing] = [
        (f"{index}.png", partial(failing, partial(plots.moves, SUMMARY)), "M", "m")
        for index in range(4)
    ]
    with pytest.raises(RuntimeError, match="fails here"):
        save_drawings(drawings, tmp_path, processes=3)
    children = [int(path.name) for path in started.iterdir() if int(path.name) != os.getpid()]
    assert children, "no child took a drawing"
    for child in children:
        with pytest.raises(ProcessLookupError):
            os.kill(child, 0)  # reaped, not a zombie
