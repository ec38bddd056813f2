"""Throttled polled reception: pull messages only as fast as they can be processed
(after an xtUML project analysis note on throttling polled reception from a broker).

A consumer that comes online to a large backlog must not take it all in at once. This loop
polls its source only while the pending work of the runner is below a high-water mark; above
it, it pauses (blocking on the runner's condition, no busy loop, waking every `idle_wait` to
look at `stop`) until the pending work has fallen to the low-water mark, then resumes. Pending
work therefore never exceeds the mark (unless a rebalance gives a channel it assigns again
the work an earlier one withdrew: ChannelRunner.update_assignment). Once `stop` is set, no
more messages are polled.

A message the runner refuses because its channel is being revoked by a rebalance or is no longer
assigned (ChannelRevokedError) is neither dropped nor fatal: it is kept, in order, in `refused`
(and counted in `stats.refused`) for the caller to return to the broker (nack and requeue, or
seek back), e.g. with `take_refused()` after each rebalance. A message refused because the
runner is closed (RunnerClosedError) is kept there too, and ends the run: polling more would
only move messages from the broker to `refused`. So every polled message is either in the
runner or there.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from rebalancing.runtime.runner import ChannelRevokedError, ChannelRunner, RunnerClosedError

Message = tuple[Hashable, Any]
"""(channel, work)."""


@dataclass
class ReceptionStats:
    """What one run of the loop did: `received` counts every message polled, `refused` those
    of them that the runner refused (kept in ThrottledReception.refused), so received - refused
    went to the runner."""

    received: int = 0
    refused: int = 0
    pauses: int = 0
    paused_seconds: float = 0.0


class ThrottledReception:
    """Polls `poll()` (a message, or None when there is none now) into `runner`."""

    def __init__(
        self,
        poll: Callable[[], Message | None],
        runner: ChannelRunner,
        high_water: int,
        low_water: int | None = None,
    ) -> None:
        low = high_water // 2 if low_water is None else low_water
        if high_water < 1:
            raise ValueError(f"high_water must be at least 1, got {high_water}")
        if not 0 <= low < high_water:
            raise ValueError(f"low_water must be in [0, high_water), got {low}")
        self._poll = poll
        self._runner = runner
        self.high_water = high_water
        self.low_water = low
        self.stats = ReceptionStats()
        # Messages the runner refused (their channel was revoked), oldest first: not processed,
        # for the caller to return to the broker. stats.refused counts them all, taken or not.
        self.refused: list[Message] = []
        self._refused_lock = threading.Lock()

    def run(
        self,
        stop: threading.Event | None = None,
        idle_wait: float = 0.05,
        stop_when_empty: bool = False,
    ) -> ReceptionStats:
        """Receive until `stop` is set (or, with stop_when_empty, the source has nothing, or the
        runner is closed). `idle_wait`: how long to wait before polling an empty source again,
        and how often a pause looks at `stop` (an Event cannot wake the runner's condition)."""
        stopping = stop or threading.Event()
        while not stopping.is_set():
            if self._runner.pending() >= self.high_water:
                self._pause(stopping, idle_wait)
                continue  # `stop` may have been set meanwhile: look again before polling
            message = self._poll()
            if message is None:
                if stop_when_empty:
                    break
                stopping.wait(idle_wait)
                continue
            self.stats.received += 1
            try:
                self._runner.submit(*message)
            except ChannelRevokedError:
                self._keep_refused(message)
            except RunnerClosedError:
                self._keep_refused(message)
                break
        return self.stats

    def _pause(self, stopping: threading.Event, idle_wait: float) -> None:
        """Wait until pending work is at the low-water mark or `stopping` is set."""
        self.stats.pauses += 1
        paused = time.perf_counter()
        while not stopping.is_set():
            if self._runner.wait_until_pending_at_most(self.low_water, timeout=idle_wait):
                break
        self.stats.paused_seconds += time.perf_counter() - paused

    def _keep_refused(self, message: Message) -> None:
        with self._refused_lock:
            self.refused.append(message)
            self.stats.refused += 1

    def take_refused(self) -> list[Message]:
        """The refused messages so far, oldest first, and forget them (safe while `run` runs in
        another thread): what the caller must return to the broker."""
        with self._refused_lock:
            taken, self.refused = self.refused, []
            return taken
