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
keeps polling cannot hold a drain open. Of overlapping calls, the latest wins.

`close(drain=False)` stops the workers after their current items and returns the pending work,
never dropping it; a closed runner refuses work with RunnerClosedError (which carries it back).
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


class RunnerClosedError(RuntimeError):
    """`submit` refused: the runner is closed. `.work` carries the work back to the caller."""

    def __init__(self, channel: Hashable, work: Any) -> None:
        super().__init__("submit: the runner is closed; its work was refused")
        self.channel = channel
        self.work = work


class _Revocation:
    """One update_assignment call's hold on a channel it revokes, with the work it withdrew from
    it (drain=False). Compared by identity: a later call that assigns the channel again cancels
    the hold, and one that revokes it again takes a new one, so the first call leaves it alone."""

    def __init__(self, withdrawn: list[Any]) -> None:
        self.withdrawn = withdrawn


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
        self._revocations: dict[Hashable, _Revocation] = {}
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
        broker. RunnerClosedError (a RuntimeError, carrying the work too) once the runner is
        closed."""
        with self._changed:
            if self._closing:
                raise RunnerClosedError(channel, work)
            try:
                revoking, known = channel in self._revocations, channel in self._scheduler.pool
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
        had (empty lists when drained). Blocks until every revoked channel is removed.

        Overlapping calls: the latest wins. A channel that an earlier call is still revoking
        and that this one assigns is served again at once, the work that call withdrew first,
        in order; the earlier call leaves it out of its result. A channel that an earlier call
        is revoking and this one does not assign is left to that call. If this call is
        interrupted, the channels it had not removed yet are served again the same way.
        RuntimeError once the runner is closed."""
        wanted = set(assigned)
        with self._changed:
            if self._closing:
                raise RuntimeError("update_assignment: the runner is closed")
            for channel in wanted & self._revocations.keys():
                self._cancel_revocation(channel)
            for channel in wanted - set(self._scheduler.pool):
                self._scheduler.add_channel(channel)
            revoked = set(self._scheduler.pool) - wanted - self._revocations.keys()
            mine = {channel: _Revocation([]) for channel in revoked}
            try:
                self._revocations.update(mine)
                if not drain:
                    for channel, revocation in mine.items():
                        revocation.withdrawn = self._scheduler.withdraw(channel)
                    self._changed.notify_all()  # pending work fell
                handed_back: dict[Hashable, list[Any]] = {}
                for channel, revocation in mine.items():
                    self._changed.wait_for(self._revocable(channel, revocation, drain))
                    if self._revocations.get(channel) is not revocation:
                        continue  # a later call assigned it again (or revokes it itself)
                    del self._revocations[channel]
                    removed = self._scheduler.remove_channel(channel)
                    handed_back[channel] = revocation.withdrawn + removed
                return handed_back
            finally:
                for channel, revocation in mine.items():
                    if self._revocations.get(channel) is revocation:  # interrupted
                        self._cancel_revocation(channel)
                self._changed.notify_all()

    def _revocable(
        self, channel: Hashable, revocation: _Revocation, drain: bool
    ) -> Callable[[], bool]:
        """Whether the revocation can end: its channel not in progress and, for a drain,
        without work; or the revocation is no longer this call's."""

        def revocable() -> bool:
            if self._revocations.get(channel) is not revocation:
                return True
            if channel in self._scheduler.in_progress:
                return False
            return not (drain and self._scheduler.pool[channel])

        return revocable

    def _cancel_revocation(self, channel: Hashable) -> None:
        """Serve a channel being revoked again: it takes work at once, the work its revocation
        withdrew first. The channel had no work left (a revoked channel takes none), so
        delivering that work again keeps the channel's order."""
        for work in self._revocations.pop(channel).withdrawn:
            self._scheduler.deliver(channel, work)
        self.peak_pending = max(self.peak_pending, self._pending())
        self._changed.notify_all()

    # --- workers ---------------------------------------------------------------------------

    def close(self, drain: bool = True, timeout: float | None = None) -> dict[Hashable, list[Any]]:
        """Stop the workers and refuse work from now on (see `submit`). drain=True: after every
        pending item (waiting at most `timeout` for them: past it the workers go on with them
        in the background); returns {}. drain=False: after their current items; the pending
        items are not run but returned, channel -> its items in order (the channels that had
        some), for the caller to give back to the broker: no work is dropped silently.
        Then waits at most `timeout` for each worker to end."""
        if drain:
            self.join(timeout)
        with self._changed:
            self._closing = True
            not_run = {} if drain else self._scheduler.withdraw_all()
            self._changed.notify_all()
        for thread in self._threads:
            thread.join(timeout)
        return not_run

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
