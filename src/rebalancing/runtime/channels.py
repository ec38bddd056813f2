"""Serving many channels (queues) with few workers: the scheduler of Powell and Harrop's
"Channeling Work" (a Z specification; restated in
specs/channel_scheduler.md).

Known channels are partitioned into dormant (no work), ready (a FIFO of channels with work)
and in progress (one item being worked on). Work for one channel is never worked on twice at
once and never overtakes earlier work of that channel, however many workers ask for work.
Beyond the spec, as users need: adding and removing channels (a removed channel's pending work
is returned, never dropped) and withdrawing a channel's pending work, or every channel's. Not
thread-safe by itself: rebalancing.runtime.runner holds a lock around it (and reports failed
items there, the channel's order kept).
Runtime complexity: O(1) per operation (amortised, as dict operations are; the returned lists of
`withdraw` and `remove_channel` cost their length), but `withdraw_all`: O(channels with work
+ their items). `ready` is an ordered set (an OrderedDict whose values are None), so a channel
leaves it from anywhere in O(1), not by a scan of a deque.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Hashable, Iterable
from typing import Any


class ChannelScheduler:
    """The Z spec's State: pool, dormant, ready and in progress, with its operations."""

    def __init__(self, channels: Iterable[Hashable] = ()) -> None:
        """InitialState: every given channel dormant, no work."""
        self.pool: dict[Hashable, deque[Any]] = {}
        self.dormant: set[Hashable] = set()
        # The FIFO of channels with work, head first, as an ordered set (the values are None).
        self.ready: OrderedDict[Hashable, None] = OrderedDict()
        self.in_progress: set[Hashable] = set()
        self._pending = 0
        for channel in channels:
            self.add_channel(channel)

    def __len__(self) -> int:
        """Pending items (delivered, not yet started) over all channels."""
        return self._pending

    def _known(self, channel: Hashable, operation: str) -> deque[Any]:
        try:
            return self.pool[channel]
        except KeyError:
            raise ValueError(f"{operation}: unknown channel {channel!r}") from None
        except TypeError:
            raise TypeError(f"{operation}: channel {channel!r} is not hashable") from None

    def deliver(self, channel: Hashable, work: Any) -> None:
        """DeliverWork: append to the channel's work; a dormant channel becomes ready."""
        self._known(channel, "deliver").append(work)
        self._pending += 1
        if channel in self.dormant:
            self.dormant.discard(channel)
            self.ready[channel] = None

    def start_work(self) -> tuple[Hashable, Any] | None:
        """StartWork: the head of ready goes in progress with its first item (None if none)."""
        if not self.ready:
            return None
        channel, _ = self.ready.popitem(last=False)
        self.in_progress.add(channel)
        self._pending -= 1
        return channel, self.pool[channel].popleft()

    def end_work(self, channel: Hashable) -> None:
        """EndWork: back to ready's tail if the channel has more work, else dormant."""
        work = self._known(channel, "end_work")
        if channel not in self.in_progress:
            raise ValueError(f"end_work: channel {channel!r} is not in progress")
        self.in_progress.discard(channel)
        if work:
            self.ready[channel] = None
        else:
            self.dormant.add(channel)

    def add_channel(self, channel: Hashable) -> None:
        """A new channel: known and dormant."""
        try:
            known = channel in self.pool
        except TypeError:
            raise TypeError(f"add_channel: channel {channel!r} is not hashable") from None
        if known:
            raise ValueError(f"add_channel: channel {channel!r} is already known")
        self.pool[channel] = deque()
        self.dormant.add(channel)

    def withdraw(self, channel: Hashable) -> list[Any]:
        """Take back a channel's pending work, in order (a ready channel becomes dormant; one in
        progress stays there, without work, until its current item ends)."""
        work = self._known(channel, "withdraw")
        taken = list(work)
        work.clear()
        self._pending -= len(taken)
        if taken and channel not in self.in_progress:
            del self.ready[channel]
            self.dormant.add(channel)
        return taken

    def withdraw_all(self) -> dict[Hashable, list[Any]]:
        """Take back every channel's pending work: channel -> its work in order, for the channels
        that had some (the ready ones in ready's order, then those in progress). As `withdraw`
        on each: ready channels become dormant, those in progress stay until their item ends."""
        with_work = list(self.ready) + [c for c in self.in_progress if self.pool[c]]
        return {channel: self.withdraw(channel) for channel in with_work}

    def remove_channel(self, channel: Hashable) -> list[Any]:
        """Forget a channel that is not in progress; its pending work is returned, in order."""
        work = self._known(channel, "remove_channel")
        if channel in self.in_progress:
            raise ValueError(f"remove_channel: channel {channel!r} is in progress; end it first")
        if channel in self.dormant:
            self.dormant.discard(channel)
        else:
            del self.ready[channel]
        del self.pool[channel]
        self._pending -= len(work)
        return list(work)

    def invariant_violations(self) -> list[str]:
        """Names of the spec's invariants (and ours) that the state breaks."""
        broken = []
        ready = set(self.ready)  # no repeats: the keys of a dict are distinct
        partitions = (self.dormant, ready, self.in_progress)
        disjoint = sum(len(part) for part in partitions) == len(
            self.dormant | ready | self.in_progress
        )
        if not disjoint or set(self.pool) != (self.dormant | ready | self.in_progress):
            broken.append("partition")
        if any(self.pool[channel] for channel in self.dormant):
            broken.append("dormant_have_no_work")
        if any(not self.pool[channel] for channel in self.ready):
            broken.append("ready_have_work")
        if self._pending != sum(len(work) for work in self.pool.values()):
            broken.append("pending_count")
        return broken
