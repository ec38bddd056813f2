"""A pool of worker threads over a ChannelScheduler: items of one channel never run at once and
never overtake each other; ready channels are served in FIFO order (fair).

A failed item (the handler raised an Exception) is tried again up to `max_attempts` times while
its channel stays in progress, so nothing of that channel overtakes it; after the last attempt it
is reported in `failures` and the channel goes on. A BaseException that is not an Exception
(SystemExit, a custom stop signal) is reported at once, without retrying: either way the channel
is ended and the worker goes on serving, so no channel stays in progress for ever.

On a rebalance, `update_assignment` adds the newly assigned channels and revokes the others:
drained first, or their pending work handed back. A revoked channel refuses new work at once
(`submit` raises ChannelRevokedError, which carries the work back to the caller), so a feeder that
keeps polling cannot hold a drain open.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any

from rebalancing.runtime.channels import ChannelScheduler


class ChannelRevokedError(ValueError):
    """`submit` refused: the channel is being revoked or is not (or no longer) assigned here.
    The work was not taken; `.work` carries it back so that it can go back to the broker."""

    def __init__(self, channel: Hashable, work: Any, reason: str) -> None:
        super().__init__(f"submit: channel {channel!r} {reason}; its work was refused")
        self.channel = channel
        self.work = work


@dataclass(frozen=True)
class Failure:
    """An item that failed: every attempt raised an Exception, or one raised a BaseException."""

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
        self._revoking: set[Hashable] = set()
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
        """Deliver one item to an assigned channel. ChannelRevokedError (a ValueError, carrying the
        work) for a channel being revoked or not assigned: the caller returns that work to the
        broker. RuntimeError once the runner is closed."""
        with self._changed:
            if self._closing:
                raise RuntimeError("submit: the runner is closed")
            try:
                revoking, known = channel in self._revoking, channel in self._scheduler.pool
            except TypeError:
                raise TypeError(f"submit: channel {channel!r} is not hashable") from None
            if revoking:
                raise ChannelRevokedError(channel, work, "is being revoked")
            if not known:
                raise ChannelRevokedError(channel, work, "is unknown (not assigned, or revoked)")
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
        one refuses new work from this call on (see `submit`), is first drained (drain=True) or
        stopped after its current item, and removed. Returns revoked channel -> the work it still
        had (empty lists when drained). Blocks until every revoked channel is removed."""
        wanted = set(assigned)
        with self._changed:
            for channel in wanted - set(self._scheduler.pool):
                self._scheduler.add_channel(channel)
            revoked = set(self._scheduler.pool) - wanted - self._revoking
            self._revoking |= revoked
            try:
                withdrawn = {
                    channel: [] if drain else self._scheduler.withdraw(channel)
                    for channel in revoked
                }
                handed_back: dict[Hashable, list[Any]] = {}
                for channel in revoked:
                    self._changed.wait_for(self._revocable(channel, drain))
                    removed = self._scheduler.remove_channel(channel)
                    handed_back[channel] = withdrawn[channel] + removed
                    self._revoking.discard(channel)
                return handed_back
            finally:
                self._revoking -= revoked  # if interrupted, unremoved channels take work again
                self._changed.notify_all()

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
            failure = self._run(channel, work)  # never raises: the channel must always end
            with self._changed:
                if failure is not None:
                    self.failures.append(failure)
                self.processed += 1
                self._scheduler.end_work(channel)
                self._changed.notify_all()

    def _run(self, channel: Hashable, work: Any) -> Failure | None:
        """Call the handler, retrying Exceptions; a BaseException (SystemExit, a custom stop)
        ends the item at once: retrying a stop signal would only repeat it, and letting it
        escape would kill this worker and leave the channel in progress for ever."""
        for attempt in range(1, self._max_attempts + 1):
            try:
                self._handler(channel, work)
                return None
            except Exception as error:  # reported in `failures`, never swallowed
                if attempt == self._max_attempts:
                    return Failure(channel, work, error, attempt)
            except BaseException as error:  # reported in `failures`, not retried
                return Failure(channel, work, error, attempt)
        return None
