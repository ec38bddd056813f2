"""The harness's parameters: the group profile (rebalancing.evaluation.command.profile, shared with
`rebalancing compare`) and the Spark ones, checked before Spark starts so that a bad one fails
fast."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rebalancing.evaluation.command.profile import (
    ParameterError,
    Profile,
    add_profile_arguments,
    new_parser,
    profile_from,
)
from rebalancing.evaluation.decision.systems import ANY_SYSTEM, SYSTEM_VERDICTS, kafka_only
from rebalancing.evaluation.scenarios.changes import ScenarioSettings
from rebalancing.evaluation.scenarios.views import ViewSettings
from rebalancing.strategies import DEFAULT_STRATEGIES

__all__ = ["HarnessOptions", "ParameterError", "build_parser", "parse_options"]


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
    system: str = ANY_SYSTEM  # where the group runs: the verdict's candidates and costs
    current: str | None = None  # --from: the PROTOCOL:ASSIGNOR a Kafka group runs today
    # --static-membership: Kafka's consumers set group.instance.id (KIP-345); the executors
    # build each candidate's protocol session with static members (columns.score_index_batches)
    static_membership: bool = False

    def __post_init__(self) -> None:
        """Refuse here, on the driver, what the executors would fail on: static membership on
        a system that is not Kafka's (or not a bool)."""
        if type(self.static_membership) is not bool:
            raise TypeError(f"static_membership must be a bool, not {self.static_membership!r}")
        system = SYSTEM_VERDICTS.get(self.system)
        if self.static_membership and (system is None or system.vendor != "kafka"):
            raise ParameterError(f"--static-membership: {kafka_only(self.system)}")

    @classmethod
    def from_profile(cls, profile: Profile, **spark: Any) -> HarnessOptions:
        """The run of `profile` (whose `out` must be set), with Spark options `spark`."""
        if profile.out is None:
            raise ValueError("the harness writes its outputs: the profile needs an out directory")
        shared = {name: getattr(profile, name) for name in _PROFILE_FIELDS}
        return cls(**shared, out=profile.out, **spark)

    @property
    def profile(self) -> Profile:
        """The group profile of this run (for the verdict and the report)."""
        return Profile(**{name: getattr(self, name) for name in _PROFILE_FIELDS}, out=self.out)


_PROFILE_FIELDS = (
    "system",
    "scenarios",
    "seed",
    "strategies",
    "settings",
    "views",
    "view_settings",
    "current",
    "static_membership",
)
"""The fields a run shares with its group profile, by the same names (and `out`, optional in a
profile but not here)."""


def build_parser() -> argparse.ArgumentParser:
    parser = new_parser(
        "python -m rebalancing.harness",
        "Score queue-assignment strategies on randomised membership-change scenarios with "
        "Spark, write per-strategy, per-change aggregates and report.html, and print the "
        "verdict: which strategy for this group.",
    )
    add_profile_arguments(parser, scenarios=1000, out="out/harness")
    spark = parser.add_argument_group("Spark")
    spark.add_argument(
        "--partitions",
        type=int,
        help="Spark partitions of the scenario range (default: twice the cores, "
        "and at most 10,000 scenarios per partition)",
    )
    spark.add_argument("--master", help="Spark master URL (default: local[*] when embedded)")
    spark.add_argument(
        "--remote",
        help="Spark Connect server, sc://HOST:PORT, to run the job through (not --master)",
    )
    spark.add_argument("--raw", action="store_true", help="also write every score row (Parquet)")
    spark.add_argument(
        "--scenarios-per-batch", type=int, default=32, help="scenarios scored per Arrow batch"
    )
    return parser


def parse_options(arguments: Sequence[str] | None = None) -> HarnessOptions:
    """Parse and check the command line; ParameterError names the culprit."""
    parser = build_parser()
    namespace = parser.parse_args(arguments)
    if namespace.partitions is not None and namespace.partitions <= 0:
        raise ParameterError(f"--partitions must be positive, got {namespace.partitions}")
    if namespace.scenarios_per_batch <= 0:
        raise ParameterError("--scenarios-per-batch must be positive")
    if namespace.master and namespace.remote:
        raise ParameterError("--remote and --master exclude each other: give one of them")
    if namespace.remote is not None and not namespace.remote.startswith("sc://"):
        raise ParameterError(f"--remote: expected sc://HOST:PORT, got {namespace.remote!r}")
    return HarnessOptions.from_profile(
        profile_from(namespace),
        partitions=namespace.partitions,
        master=namespace.master,
        remote=namespace.remote,
        raw=namespace.raw,
        scenarios_per_batch=namespace.scenarios_per_batch,
    )
