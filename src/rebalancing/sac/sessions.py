"""A SAC group's protocol state carried across rebalances, on the reference model.

`ReferenceEngine` holds the spec's variables (rebalancing.sac.model.SacState) and the release
policy's memory (rebalancing.sac.schedulers.ReleaseChoice) between rebalances; `change` applies a
membership change the way the broker sees it, `settle` runs the round schedule to quiescence.
rebalancing.sac.kernel.KernelEngine is the same over integer arrays, compiled; the refinement
test holds the two equal. rebalancing.strategies.sac.Session is the public face of both.
Runtime complexity of `change`: O((departed apps + changed queues) x |Q| + |Q| log |Q|).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from rebalancing.contract import ProtocolRun
from rebalancing.sac.model import (
    PositionVariant,
    SacState,
    add_app,
    add_queue,
    remove_app,
    remove_queue,
)
from rebalancing.sac.schedulers import ReleaseChoice, ReleasePolicy, run_rounds


class ReferenceEngine:
    """One group's protocol state on the reference model (see the module docstring)."""

    def __init__(self, policy: ReleasePolicy = "highest", seed: int = 0) -> None:
        self.choice = ReleaseChoice(policy, seed)
        self.state = SacState.initial([], [])

    def change(self, queues: list[Any], apps: list[Any]) -> None:
        """The group is now `queues` x `apps` (sorted, distinct).

        Departed apps leave every FIFO and lose their active queues (RabbitMQ does the same for a
        consumer that cancels, closes its channel, or whose connection the broker finds dead: only
        the moment differs, which a rebalance does not model); removed queues vanish with their
        FIFO; new queues start with an empty FIFO and new apps stopped: `settle` starts them and
        subscribes every started app to every queue it is not on, in start-id order.
        """
        state = self.state
        present_apps, present_queues = set(apps), set(queues)
        for app in [app for app in state.apps if app not in present_apps]:
            remove_app(state, app)
        for queue in [queue for queue in state.queues if queue not in present_queues]:
            remove_queue(state, queue)
            self.choice.forget(queue)
        known_queues, known_apps = set(state.queues), set(state.apps)
        for queue in queues:
            if queue not in known_queues:
                add_queue(state, queue)
        for app in apps:
            if app not in known_apps:
                add_app(state, app)

    def load_owners(
        self, queues: list[Any], apps: list[Any], owner: dict[Any, Any], existing: list[Any]
    ) -> None:
        """Rebuild a state from active owners alone (what `assign` has): the apps `existing`
        get start ids 1, 2, ... in that order and wait on every queue they are not active on, in
        that order; `owner` maps a queue to its active app; the other apps are stopped; the
        promotion clock ranks the active queues in queue order."""
        state = SacState.initial(queues, apps)
        for start_id, app in enumerate(existing, start=1):
            state.start_id[app] = start_id
        state.next_id = len(existing) + 1
        for queue in state.queues:
            fifo = OrderedDict.fromkeys(existing)
            if queue in owner:
                state.active[queue] = owner[queue]
                fifo.pop(owner[queue], None)
                self.choice.became_active(queue)
            state.waiting[queue] = fifo
        state.recompute_derived()
        self.state = state

    def snapshot(self) -> tuple[Any, ...]:
        """(queues, apps, FIFOs, active app or None per queue, start ids, next id): the spec's
        variables in plain tuples, for comparing engines."""
        state = self.state
        return (
            tuple(state.queues),
            tuple(state.apps),
            tuple(tuple(state.waiting[queue]) for queue in state.queues),
            tuple(state.active.get(queue) for queue in state.queues),
            tuple(state.start_id[app] for app in state.apps),
            state.next_id,
        )

    def settle(self, variant: PositionVariant, bound: int) -> ProtocolRun:
        """Run the round schedule to quiescence, or until `bound` steps."""
        return run_rounds(self.state, variant, bound, self.choice)
