"""A comparison's batches scored in forked processes give the rows one process gives, in the
same order (the assign calls' measured microseconds aside), for plain strategies and for
strategies inside a protocol session, batch after batch in the same processes; a small batch is
scored by the reference engine, a large one by the kernels, with the same rows; a strategy
defined here (not importable by a child) is scored too; a bad number of workers is refused
naming it; an interrupted batch leaves no process and does not score what no process had
started; a platform that cannot fork scores in its one process."""

from __future__ import annotations

import io
import multiprocessing
import os
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from rebalancing.contract import Id
from rebalancing.evaluation.command import compare as compare_module
from rebalancing.evaluation.command.compare import (
    KERNEL_FROM,
    PARALLEL_FROM,
    ScenarioScoring,
    batch_engine,
    compare,
)
from rebalancing.evaluation.command.profile import Profile
from rebalancing.evaluation.command.progress import Progress
from rebalancing.evaluation.scenarios.changes import ScenarioSettings
from rebalancing.evaluation.scoring.rows import ScoreRow
from rebalancing.strategies import Strategy

SMALL = ScenarioSettings(queue_range=(4, 24), consumer_range=(1, 6), change_count_range=(1, 4))

MEASURED = {"assign_micros"}
"""Row fields that are a clock's reading, not a score: they differ between any two runs."""


def scored(row: ScoreRow) -> dict[str, Any]:
    fields = row.__slots__ if hasattr(row, "__slots__") else tuple(vars(row))
    return {name: getattr(row, name) for name in fields if name not in MEASURED}


@pytest.mark.parametrize("system", ["kafka-cooperative", "rocketmq-client", "rabbitmq-sac"])
def test_forked_batches_give_the_rows_of_one_process_in_its_order(system: str) -> None:
    profile = Profile(system=system, scenarios=PARALLEL_FROM, seed=11, settings=SMALL)
    with (
        ScenarioScoring(profile, workers=1) as alone,
        ScenarioScoring(profile, workers=2) as forked,
    ):
        alone.score_to(profile.scenarios)
        forked.score_to(profile.scenarios)
    assert len(forked.rows) == len(alone.rows) > profile.scenarios
    assert [scored(row) for row in forked.rows] == [scored(row) for row in alone.rows]
    assert forked.scenario_means() == alone.scenario_means()


def first_consumer_takes_all(
    queues: list[Id], consumers: list[Id], previous: object
) -> dict[Id, list[Id]]:
    """A deliberately bad strategy defined in a test module: everything to the first."""
    plan: dict[Id, list[Id]] = {consumer: [] for consumer in consumers}
    if consumers:
        plan[sorted(consumers)[0]] = sorted(queues)
    return plan


def test_a_strategy_defined_in_the_callers_module_is_scored_in_the_children() -> None:
    mine = Strategy("first_takes_all", first_consumer_takes_all, "a test")
    profile = Profile(system="any", scenarios=PARALLEL_FROM, seed=5, settings=SMALL)
    with ScenarioScoring(profile, workers=2) as scoring:
        scoring.strategies = {"first_takes_all": mine}
        scoring.score_to(profile.scenarios)
    assert {row.strategy for row in scoring.rows} == {"first_takes_all"}
    assert any(row.balance_degree for row in scoring.rows)  # its plans, not another's


def test_later_batches_are_scored_in_the_processes_the_first_forked() -> None:
    profile = Profile(system="kafka-eager", scenarios=3 * PARALLEL_FROM, seed=3, settings=SMALL)
    with ScenarioScoring(profile, workers=1) as alone:
        alone.score_to(profile.scenarios)
    with ScenarioScoring(profile, workers=2) as forked:
        forked.score_to(PARALLEL_FROM)
        assert forked._pool is not None
        first = set(forked._pool._processes or {})
        forked.score_to(profile.scenarios)
        assert set(forked._pool._processes or {}) == first
        assert len(first) == 2
    assert forked._pool is None  # closed with the scoring
    assert [scored(row) for row in forked.rows] == [scored(row) for row in alone.rows]
    assert forked.scenario_means() == alone.scenario_means()


def test_a_small_batch_is_scored_by_the_reference_and_a_large_one_by_the_kernels() -> None:
    assert batch_engine(1) == batch_engine(KERNEL_FROM - 1) == "reference"
    assert batch_engine(KERNEL_FROM) is None  # the default: the kernels, numba being installed
    # the two engines give the same rows: scenarios 0..KERNEL_FROM-1 in one large batch, and
    # the same scenarios in small batches
    profile = Profile(system="rocketmq-broker", scenarios=KERNEL_FROM, seed=8, settings=SMALL)
    with ScenarioScoring(profile, workers=1) as large, ScenarioScoring(profile, workers=1) as small:
        large.score_to(KERNEL_FROM)
        for end in range(KERNEL_FROM // 4, KERNEL_FROM + 1, KERNEL_FROM // 4):
            small.score_to(end)
    assert [scored(row) for row in small.rows] == [scored(row) for row in large.rows]


@pytest.mark.parametrize("workers", [0, -1, 1.5, "2"])
def test_a_bad_number_of_workers_is_refused_naming_it(workers: Any) -> None:
    profile = Profile(system="any", scenarios=4, settings=SMALL)
    with pytest.raises(ValueError, match="workers must be a positive integer"):
        ScenarioScoring(profile, workers=workers)
    with pytest.raises(ValueError, match="workers"):
        compare(profile, workers=workers)


def test_a_platform_that_cannot_fork_scores_here_and_refuses_more_workers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # as on Windows: no fork start method, and its context cannot be had
    get_context = multiprocessing.get_context

    def without_fork(method: str | None = None) -> Any:
        if method == "fork":
            raise ValueError("cannot find context for 'fork'")
        return get_context(method)

    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    monkeypatch.setattr(multiprocessing, "get_context", without_fork)
    monkeypatch.setattr(compare_module, "usable_cores", lambda: 4)
    profile = Profile(
        system="any", scenarios=PARALLEL_FROM, seed=11, settings=SMALL, strategies=("sticky",)
    )
    here, alone = ScenarioScoring(profile), ScenarioScoring(profile, workers=1)
    here.score_to(profile.scenarios)
    alone.score_to(profile.scenarios)
    assert here.workers == 1
    assert [scored(row) for row in here.rows] == [scored(row) for row in alone.rows]
    with pytest.raises(ValueError, match=r"workers=2: .* cannot"):
        ScenarioScoring(profile, workers=2)


class _InterruptedAsRowsComeBack(Progress):
    """A progress line whose first scenario done is a Ctrl-C in the parent."""

    def scenario_done(self) -> None:
        raise KeyboardInterrupt


class _InterruptedAsRowsAreFiled:
    """Deciding scores whose reading, for the first row the parent files, is a Ctrl-C."""

    def __iter__(self) -> Iterator[str]:
        raise KeyboardInterrupt


def _slow_recorded(
    record: Path, queues: list[Id], consumers: list[Id], previous: object
) -> dict[Id, list[Id]]:
    """first_consumer_takes_all, 5 ms late (asleep, no CPU), each call a file in `record`."""
    time.sleep(0.005)
    (record / f"{os.getpid()}-{time.perf_counter_ns()}").touch()
    return first_consumer_takes_all(queues, consumers, previous)


def _slow_scoring(profile: Profile, record: Path, progress: Progress | None) -> ScenarioScoring:
    """A scoring of `profile` in two processes, of _slow_recorded alone."""
    scoring = ScenarioScoring(profile, progress, workers=2)
    scoring.strategies = {"slow": Strategy("slow", partial(_slow_recorded, record), "a test")}
    return scoring


@pytest.mark.parametrize("where", ["as rows come back", "as rows are filed"])
def test_an_interrupted_batch_leaves_no_process_scoring(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 32 chunks of one scenario. Interrupted when the first comes back, the processes have
    # started at most the two they run and the three queued to them: the rest are dropped
    # (a shutdown that does not cancel them scores them all first). Interrupted while the
    # parent files the rows, no process is left scoring either (a pool left open in a
    # suspended generator scores on until the batch is done)
    monkeypatch.setattr(compare_module, "CHUNK_MOST", 1)
    profile = Profile(system="any", scenarios=32, seed=5, settings=SMALL)
    interrupted, whole = tmp_path / "interrupted", tmp_path / "whole"
    interrupted.mkdir()
    whole.mkdir()
    if where == "as rows come back":
        scoring = _slow_scoring(profile, interrupted, _InterruptedAsRowsComeBack(io.StringIO()))
    else:
        scoring = _slow_scoring(profile, interrupted, None)
        monkeypatch.setattr(scoring, "metrics", _InterruptedAsRowsAreFiled())
    with pytest.raises(KeyboardInterrupt) as raised:
        scoring.score_to(profile.scenarios)
    # `raised` holds the traceback, as the interpreter does once it has printed it
    # (sys.last_traceback), and with it the frames of score_to
    assert raised.traceback
    assert multiprocessing.active_children() == []
    assert compare_module._FORKED_SCORING is None
    if where == "as rows come back":
        calls = len(list(interrupted.iterdir()))
        with _slow_scoring(profile, whole, None) as every:
            every.score_to(profile.scenarios)
        every_call = len(list(whole.iterdir()))
        assert 0 < calls < every_call / 3, (calls, every_call)
