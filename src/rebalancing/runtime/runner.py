"""A pool of worker threads over a ChannelScheduler: items of one channel never run at once and
never overtake each other; ready channels are served in FIFO order (fair).

A failed item (the handler raised) is tried again up to `max_attempts` times while its channel
stays in progress, so nothing of that channel overtakes it; after the last attempt it is
reported in `failures` and the channel goes on. On a rebalance, `update_assignment` adds the
newly assigned channels and revokes the others: drained first, or their pending work handed back.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any

from rebalancing.runtime.channels import ChannelScheduler


@dataclass(frozen=True)
class Failure:
    """An item whose every attempt raised."""

    channel: Hashable
    work: Any
    error: BaseException
    attempts: int


class ChannelRunner:
    """`workers` threads calling `handler(channel, work)` for every delivered item."""

    def __init__(
        self,
        handler: Callable[[Hashable, Any], None],
        workers: int = 4,
        channels: Iterable[Hashable] = (),
        max_attempts: int = 1,
    ) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {max_attempts}")
        self._handler = handler
        self._max_attempts = max_attempts
        self._scheduler = ChannelScheduler(channels)
        self._changed = threading.Condition()
        self._closing = False
        self.failures: list[Failure] = []
        self.processed = 0
        self.peak_pending = 0
        self._threads = [
            threading.Thread(target=self._work, name=f"channel-worker-{number}", daemon=True)
            for number in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    # --- feeding ---------------------------------------------------------------------------

    def submit(self, channel: Hashable, work: Any) -> None:
        """Deliver one item to an assigned channel (ValueError for an unknown channel)."""
        with self._changed:
            if self._closing:
                raise RuntimeError("submit: the runner is closed")
            self._scheduler.deliver(channel, work)
            self.peak_pending = max(self.peak_pending, self._pending())
            self._changed.notify()

    def pending(self) -> int:
        """Items delivered and not yet finished (waiting or being worked on)."""
        with self._changed:
            return self._pending()

    def _pending(self) -> int:
        return len(self._scheduler) + len(self._scheduler.in_progress)

    def wait_until_pending_at_most(self, count: int, timeout: float | None = None) -> bool:
        """Block (no busy loop) until at most `count` items are pending; False on timeout."""
        with self._changed:
            return self._changed.wait_for(lambda: self._pending() <= count, timeout)

    def join(self, timeout: float | None = None) -> bool:
        """Wait until every delivered item is finished; False on timeout."""
        return self.wait_until_pending_at_most(0, timeout)

    # --- assignment ------------------------------------------------------------------------

    def channels(self) -> set[Hashable]:
        with self._changed:
            return set(self._scheduler.pool)

    def update_assignment(
        self, assigned: Iterable[Hashable], drain: bool = True
    ) -> dict[Hashable, list[Any]]:
        """Serve exactly `assigned` from now on. Newly assigned channels are added; each revoked
        one is first drained (drain=True) or stopped after its current item, and removed. Returns
        revoked channel -> the work it still had (empty lists when drained)."""
        wanted = set(assigned)
        with self._changed:
            for channel in wanted - set(self._scheduler.pool):
                self._scheduler.add_channel(channel)
            revoked = set(self._scheduler.pool) - wanted
            handed_back: dict[Hashable, list[Any]] = {}
            for channel in revoked:
                withdrawn = [] if drain else self._scheduler.withdraw(channel)
                self._changed.wait_for(self._revocable(channel, drain))
                handed_back[channel] = withdrawn + self._scheduler.remove_channel(channel)
            self._changed.notify_all()
            return handed_back

    def _revocable(self, channel: Hashable, drain: bool) -> Callable[[], bool]:
        def revocable() -> bool:
            if channel in self._scheduler.in_progress:
                return False
            return not (drain and self._scheduler.pool[channel])

        return revocable

    # --- workers ---------------------------------------------------------------------------

    def close(self, drain: bool = True, timeout: float | None = None) -> None:
        """Stop the workers: after every pending item (drain) or after their current ones."""
        if drain:
            self.join(timeout)
        with self._changed:
            self._closing = True
            self._changed.notify_all()
        for thread in self._threads:
            thread.join(timeout)

    def __enter__(self) -> ChannelRunner:
        return self

    def __exit__(self, *exception: object) -> None:
        self.close()

    def _work(self) -> None:
        while True:
            with self._changed:
                started = self._scheduler.start_work()
                while started is None and not self._closing:
                    self._changed.wait()
                    started = self._scheduler.start_work()
                if started is None:
                    return
            channel, work = started
            failure = self._run(channel, work)
            with self._changed:
                if failure is not None:
                    self.failures.append(failure)
                self.processed += 1
                self._scheduler.end_work(channel)
                self._changed.notify_all()

    def _run(self, channel: Hashable, work: Any) -> Failure | None:
        for attempt in range(1, self._max_attempts + 1):
            try:
                self._handler(channel, work)
                return None
            except Exception as error:  # reported in `failures`, never swallowed
                if attempt == self._max_attempts:
                    return Failure(channel, work, error, attempt)
        return None
