"""The Kafka sessions' runs on a fixed script of changes, exactly as the sessions gave them
before they were made faster (kafka_session_golden.json, written by this module run as a
script on the sessions of that time): any change of what the sessions compute, in any bit of
any score, shows here. Regenerate it only for a change of the protocols' model:
`PYTHONPATH=src python tests/protocols/test_kafka_session_golden.py`."""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from rebalancing.protocols import ClassicSession, ConsumerSession

GOLDEN = Path(__file__).with_name("kafka_session_golden.json")
NAMES = [f"m{index}" for index in range(7)]

CONFIGS: list[tuple[str, dict[str, Any]]] = [
    ("eager", {}),
    ("cooperative", {}),
    ("consumer", {}),
    ("eager", {"static_membership": True, "heartbeat_phases": "synced"}),
    ("cooperative", {"departures": "crash", "restart_seconds": 50.0}),
    ("consumer", {"static_membership": True, "departures": "crash"}),
    ("consumer", {"heartbeat_phases": "synced", "restart_seconds": 4.0}),
]
"""(protocol, session options): each runs the same script of changes."""


def balanced_sticky(
    queues: Iterable[Any],
    consumers: Iterable[Any],
    previous: Mapping[Any, Iterable[Any]] | None = None,
) -> dict[Any, list[Any]]:
    """An assignor of our own (so that the golden does not follow the strategies): each
    consumer keeps what it had up to its share, the rest go in order to the emptiest."""
    queue_list, members = sorted(queues), sorted(consumers)
    share, extra = divmod(len(queue_list), len(members))
    quota = {member: share + (index < extra) for index, member in enumerate(members)}
    plan: dict[Any, list[Any]] = {member: [] for member in members}
    free = set(queue_list)
    for member in members:
        for queue in sorted((previous or {}).get(member, ())):
            if queue in free and len(plan[member]) < quota[member]:
                plan[member].append(queue)
                free.discard(queue)
    for queue in sorted(free):
        member = min(members, key=lambda m: (len(plan[m]) - quota[m], m))
        plan[member].append(queue)
    return plan


def session_of(protocol: str, seed: int, options: dict[str, Any]) -> Any:
    if protocol == "consumer":
        return ConsumerSession(balanced_sticky, seed=seed, **options)
    return ClassicSession(balanced_sticky, protocol=protocol, seed=seed, **options)  # type: ignore[arg-type]


def script_runs(protocol: str, options: dict[str, Any], seed: int) -> list[dict[str, Any]]:
    """The session's runs on a script drawn from `seed`: changes of every kind the sessions
    take (apply_change's kinds, rebalance, change with crashes and slow members, restart)."""
    draw = random.Random(seed)
    session = session_of(protocol, seed, options)
    members = sorted(draw.sample(NAMES, 3))
    partitions = 12
    runs = []
    for _ in range(18):
        action = draw.choice(["join", "leave", "crash", "restart", "queues", "slow", "static"])
        if action == "join" and len(members) < len(NAMES):
            members = sorted([*members, draw.choice([n for n in NAMES if n not in members])])
            run = session.apply_change(range(partitions), members, "join")
        elif action in ("leave", "crash") and len(members) > 1:
            members = sorted(m for m in members if m != draw.choice(members))
            run = session.apply_change(range(partitions), members, action)
        elif action == "restart":
            gone = draw.choice(members)
            rest = [m for m in members if m != gone]
            run = session.apply_change(range(partitions), rest, "rolling_restart")
            runs.append(_fields(run))
            run = session.apply_change(range(partitions), members, "rolling_restart")
        elif action == "queues":
            partitions = max(1, partitions + draw.choice([-5, -2, 3, 7]))
            run = session.rebalance(range(partitions), members)
        elif action == "slow":
            late = {draw.choice(members): draw.choice([0.5, 4.25, 13.0])}
            run = session.change(range(partitions), members, slow=late)
        else:
            run = session.restart(draw.sample(members, 1), draw.choice([2.5, 20.0, 60.0]))
        runs.append(_fields(run))
    return runs


def _fields(run: Any) -> dict[str, Any]:
    """A run's fields as JSON gives them back (floats exactly: JSON writes their repr)."""
    loaded: dict[str, Any] = json.loads(json.dumps(dataclasses.asdict(run)))
    return loaded


def all_runs() -> dict[str, list[dict[str, Any]]]:
    return {
        f"{protocol} {json.dumps(options, sort_keys=True)} seed {seed}": script_runs(
            protocol, options, seed
        )
        for protocol, options in CONFIGS
        for seed in (3, 1234567)
    }


def test_the_sessions_give_the_golden_runs_exactly() -> None:
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    runs = all_runs()
    assert set(runs) == set(golden)
    for name, expected in golden.items():
        assert runs[name] == expected, name


if __name__ == "__main__":
    GOLDEN.write_text(json.dumps(all_runs(), sort_keys=True) + "\n", encoding="utf-8")
