"""The harness's parameters, checked before Spark starts so that a bad one fails fast."""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rebalancing.evaluation.scenarios import CHANGE_KINDS, ScenarioSettings
from rebalancing.evaluation.views import ViewSettings, add_view_arguments, view_settings_from
from rebalancing.strategies import DEFAULT_STRATEGIES, select


@dataclass(frozen=True)
class HarnessOptions:
    """One run of the harness."""

    scenarios: int = 1000
    seed: int = 1
    # As given: registered names or package.module:function, resolved again on the executors.
    strategies: tuple[str, ...] = DEFAULT_STRATEGIES
    partitions: int | None = None  # None: job.default_partitions
    master: str | None = None  # None: spark-submit's, or local[*] when run embedded
    remote: str | None = None  # sc://host:port: run through a Spark Connect server instead
    out: Path = Path("out/harness")
    raw: bool = False
    scenarios_per_batch: int = 32
    settings: ScenarioSettings = field(default_factory=ScenarioSettings)
    # broker: one view, computed once; client: each consumer rebalances on its own view
    views: str = "broker"
    view_settings: ViewSettings = field(default_factory=ViewSettings)


class ParameterError(ValueError):
    """A parameter is out of range; the message names it."""


def _range(name: str, text: str) -> tuple[int, int]:
    try:
        low, high = (int(part) for part in text.split(":"))
    except ValueError:
        raise ParameterError(f"{name}: expected LOW:HIGH with integers, got {text!r}") from None
    if not 1 <= low <= high:
        raise ParameterError(f"{name}: need 1 <= LOW <= HIGH, got {text!r}")
    return low, high


def _mix(text: str) -> dict[str, float]:
    weights: dict[str, float] = {}
    for item in text.split(","):
        kind, _, weight = item.partition("=")
        kind = kind.strip()
        if kind not in CHANGE_KINDS:
            raise ParameterError(
                f"--mix: unknown change kind {kind!r}; known: {', '.join(CHANGE_KINDS)}"
            )
        try:
            weights[kind] = float(weight) if weight else 1.0
        except ValueError:
            raise ParameterError(f"--mix: weight of {kind!r} is not a number: {weight!r}") from None
        if weights[kind] < 0:
            raise ParameterError(f"--mix: weight of {kind!r} must be >= 0")
    if not any(weights.values()):
        raise ParameterError("--mix: give at least one change kind a positive weight")
    return weights


def _check_writable(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".probe-"):
            pass
    except OSError as error:
        raise ParameterError(f"--out: cannot write to {str(out)!r}: {error.strerror}") from None


def _strategy_specs(text: str) -> tuple[str, ...]:
    """The strategies as given, once each, after checking on the driver that each resolves and
    that no two label their rows alike (a user's Strategy object keeps its own name)."""
    specs = tuple(dict.fromkeys(name.strip() for name in text.split(",") if name.strip()))
    try:
        resolved = select(",".join(specs))
    except ValueError as error:
        raise ParameterError(f"--strategies: {error}") from None
    labels: dict[str, str] = {}
    for spec, strategy in zip(specs, resolved, strict=True):
        if strategy.name in labels:
            raise ParameterError(
                f"--strategies: {labels[strategy.name]!r} and {spec!r} are both named "
                f"{strategy.name!r}; their rows could not be told apart"
            )
        labels[strategy.name] = spec
    return specs


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m rebalancing.harness",
        description=(
            "Score queue-assignment strategies on randomised membership-change scenarios with "
            "Spark, and write per-strategy, per-change aggregates."
        ),
    )
    parser.add_argument("--scenarios", type=int, default=1000, help="number of scenarios")
    parser.add_argument("--seed", type=int, default=1, help="base seed of the scenarios")
    parser.add_argument(
        "--strategies",
        default=",".join(DEFAULT_STRATEGIES),
        help="comma-separated strategies: registered names, or package.module:function for one "
        "of your own (shipped to the executors with the job); default: "
        + ", ".join(DEFAULT_STRATEGIES)
        + " (sac_spec is registered too: under the round schedule it always equals sac)",
    )
    parser.add_argument(
        "--partitions",
        type=int,
        help="Spark partitions of the scenario range (default: twice the cores, "
        "and at most 10,000 scenarios per partition)",
    )
    parser.add_argument("--master", help="Spark master URL (default: local[*] when embedded)")
    parser.add_argument(
        "--remote",
        help="Spark Connect server, sc://HOST:PORT, to run the job through (not --master)",
    )
    parser.add_argument("--out", default="out/harness", help="output directory")
    parser.add_argument("--raw", action="store_true", help="also write every score row (Parquet)")
    parser.add_argument("--queues", default="1:4096", help="queue count range LOW:HIGH")
    parser.add_argument("--consumers", default="1:256", help="consumer count range LOW:HIGH")
    parser.add_argument("--changes", default="1:6", help="changes per scenario LOW:HIGH")
    parser.add_argument(
        "--mix", help="change-kind weights, e.g. join=2,leave=1,crash=1 (default: all equal)"
    )
    parser.add_argument(
        "--scenarios-per-batch", type=int, default=32, help="scenarios scored per Arrow batch"
    )
    add_view_arguments(parser)
    return parser


def parse_options(arguments: Sequence[str] | None = None) -> HarnessOptions:
    """Parse and check the command line; ParameterError names the culprit."""
    namespace = build_parser().parse_args(arguments)
    if namespace.scenarios <= 0:
        raise ParameterError(f"--scenarios must be positive, got {namespace.scenarios}")
    if namespace.partitions is not None and namespace.partitions <= 0:
        raise ParameterError(f"--partitions must be positive, got {namespace.partitions}")
    if namespace.scenarios_per_batch <= 0:
        raise ParameterError("--scenarios-per-batch must be positive")
    if namespace.master and namespace.remote:
        raise ParameterError("--remote and --master exclude each other: give one of them")
    if namespace.remote is not None and not namespace.remote.startswith("sc://"):
        raise ParameterError(f"--remote: expected sc://HOST:PORT, got {namespace.remote!r}")
    specs = _strategy_specs(namespace.strategies)
    settings = ScenarioSettings(
        queue_range=_range("--queues", namespace.queues),
        consumer_range=_range("--consumers", namespace.consumers),
        change_count_range=_range("--changes", namespace.changes),
        change_weights=_mix(namespace.mix) if namespace.mix else dict.fromkeys(CHANGE_KINDS, 1.0),
    )
    try:
        view_settings = view_settings_from(namespace)
    except (TypeError, ValueError) as error:
        raise ParameterError(f"views: {error}") from None
    out = Path(os.path.expanduser(namespace.out))
    _check_writable(out)
    return HarnessOptions(
        scenarios=namespace.scenarios,
        seed=namespace.seed,
        strategies=specs,
        partitions=namespace.partitions,
        master=namespace.master,
        remote=namespace.remote,
        out=out,
        raw=namespace.raw,
        scenarios_per_batch=namespace.scenarios_per_batch,
        settings=settings,
        views=namespace.views,
        view_settings=view_settings,
    )
