"""How far a comparison has got, on standard error when it is a terminal (never in a pipe or a
log): one line rewritten in place (scenarios scored, time spent, time left), erased at the end;
and, once the pace is known, a line that stays when what is left will take minutes, so that a
long run says so before the user has waited through it.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TextIO, TypeVar

REFRESH_SECONDS = 0.2
"""The progress line is redrawn at most this often."""

MINUTES = 60.0
"""A batch whose scenarios left are expected to take this long or more gets an estimate line."""

PACE_AFTER = (3, 2.0)
"""Scenarios and seconds of a batch after which (both) its pace is trusted for an estimate (when
no earlier batch gave one)."""

Item = TypeVar("Item")


def duration(seconds: float) -> str:
    """`seconds` as a person says it: 12 s, 4 min 10 s, 1 h 5 min."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        minutes, rest = divmod(round(seconds), 60)
        return f"{minutes} min {rest} s" if rest and minutes < 10 else f"{minutes} min"
    hours, rest = divmod(round(seconds / 60), 60)
    return f"{hours} h {rest} min" if rest else f"{hours} h"


class Progress:
    """The progress of one run, batch by batch (a fixed run is one batch). Writes nothing unless
    `stream` is a terminal."""

    def __init__(self, stream: TextIO | None = None, clock: Callable[[], float] = time.monotonic):
        self.stream = sys.stderr if stream is None else stream
        self.shown = self.stream.isatty()
        self.clock = clock
        self.started = clock()
        self.scored = 0
        self.seconds_per_scenario: float | None = None  # the pace of the batches finished
        self.batch_end = 0
        self.batch_scored = 0
        self.batch_started = self.started
        self.batch_label = ""
        self.then = ""
        self.estimated = False
        self.drawn_at = -math.inf
        self.width = 0

    def batch(self, start: int, end: int, label: str = "", then: str = "") -> None:
        """Scenarios `start` to `end` (exclusive) are about to be scored; `label` names the batch
        on the progress line (e.g. "batch 3 of at most 7"), `then` says, in an estimate line,
        what happens after it."""
        self.scored = start
        self.batch_end = end
        self.batch_scored = 0
        self.batch_started = self.clock()
        self.batch_label = label
        self.then = then
        self.estimated = False
        if self.seconds_per_scenario is not None:
            self._estimate(self.seconds_per_scenario)

    def scenario_done(self) -> None:
        """One more scenario of the batch is scored."""
        self.scored += 1
        self.batch_scored += 1
        now = self.clock()
        spent = now - self.batch_started
        least_scenarios, least_seconds = PACE_AFTER
        if not self.estimated and self.batch_scored >= least_scenarios and spent >= least_seconds:
            self._estimate(spent / self.batch_scored)
        if now - self.drawn_at >= REFRESH_SECONDS or self.scored == self.batch_end:
            self._draw(now)

    def batch_done(self) -> None:
        """The batch is scored: its pace becomes the estimate of the next one's."""
        if self.batch_scored:
            self.seconds_per_scenario = (self.clock() - self.batch_started) / self.batch_scored

    def finish(self) -> None:
        """Erase the progress line (the verdict follows)."""
        if self.shown:
            self._clear()
            self.stream.flush()

    def scenarios(self, items: Iterable[Item]) -> Iterator[Item]:
        """`items` (the batch's scenarios), counting one done each time the next is asked
        for, and the last when they run out."""
        started = False
        for item in items:
            if started:
                self.scenario_done()
            started = True
            yield item
        if started:
            self.scenario_done()
        self.batch_done()

    def _estimate(self, seconds_per_scenario: float) -> None:
        """The estimate line, when the batch's scenarios left will take MINUTES or more."""
        self.estimated = True
        left = (self.batch_end - self.scored) * seconds_per_scenario
        if left < MINUTES or not self.shown:
            return
        self._clear()
        self.stream.write(
            f"About {duration(left)} for {self.batch_end - self.scored:,} more scenarios "
            f"({seconds_per_scenario:.2f} s each so far){self.then}.\n"
        )
        self.stream.flush()

    def _draw(self, now: float) -> None:
        if not self.shown:
            return
        self.drawn_at = now
        label = f" ({self.batch_label})" if self.batch_label else ""
        line = f"scored {self.scored:,}/{self.batch_end:,} scenarios{label}, " + duration(
            now - self.started
        )
        if self.batch_scored and self.scored < self.batch_end:
            pace = (now - self.batch_started) / self.batch_scored
            line += f", about {duration(pace * (self.batch_end - self.scored))} left"
        self.stream.write("\r" + line.ljust(self.width))
        self.stream.flush()
        self.width = max(self.width, len(line))

    def _clear(self) -> None:
        if self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.width = 0
