"""A group profile: the one set of command-line options that describes "my group" (queue and
consumer counts or ranges, the churn mix, changes per scenario, zones and weights, scenarios, seed,
the system it runs on, the strategies, where to write), shared by `rebalancing compare`, `python -m
rebalancing.evaluation` and the Spark harness, and checked before anything runs: a bad value is a
ParameterError naming the option.
"""

from __future__ import annotations

import argparse
import difflib
import math
import os
import re
import shutil
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from rebalancing.evaluation.decision.differences import CONFIDENCE, ScenarioMeans
from rebalancing.evaluation.decision.migration import kafka_pair
from rebalancing.evaluation.decision.stopping import DEFAULT_MAX_SCENARIOS
from rebalancing.evaluation.decision.systems import ANY_SYSTEM, SYSTEM_VERDICTS, kafka_only
from rebalancing.evaluation.decision.verdict import Verdict, decide
from rebalancing.evaluation.report.tables import scores_help
from rebalancing.evaluation.scenarios.changes import (
    CHANGE_KINDS,
    MAX_CHANGES,
    MAX_CONSUMERS,
    MAX_QUEUES,
    WEIGHT_KINDS,
    ZONE_KINDS,
    ScenarioSettings,
)
from rebalancing.evaluation.scenarios.placement import (
    HOT_WEIGHT,
    WEIGHT_DISTRIBUTIONS,
    ZIPF_EXPONENT,
    ZONE_NAMES,
)
from rebalancing.evaluation.scenarios.views import (
    ViewSettings,
    add_view_arguments,
    view_settings_from,
)
from rebalancing.evaluation.scoring.aggregates import Summary
from rebalancing.strategies import DEFAULT_STRATEGIES, STRATEGIES, select

MAX_SCENARIOS = 2**62
"""Scenario indices are 64-bit integers in Spark and in the seeds; more is refused up front."""


AUTO = "auto"
"""`--scenarios auto`: draw scenarios until the verdict is decided (rebalancing.evaluation.decision
.stopping), at most --max-scenarios."""


RUN_MARKERS = ("run.json", "report.html")
"""Files every run writes: `--replace` empties a directory only when it holds one of them."""


class ParameterError(ValueError):
    """A parameter is out of range; the message names it."""


class CommandsOwnFolder(str):
    """The default --out, the command's own folder (out/compare, out/harness): each run there
    replaces the one before, where a folder the user names is refused without --replace. A
    str subclass, so that the parsed options tell it from the same path typed by the user."""

    __slots__ = ()


@dataclass(frozen=True)
class Profile:
    """One group to score: what runs, on what scenarios, on which system, written where.
    `scenarios` is the number to score; with `max_scenarios` set, scenarios are drawn until
    the verdict is decided, at most that many (and `scenarios`, the most, until a run says
    how many it took)."""

    system: str = ANY_SYSTEM
    scenarios: int = 1000
    seed: int = 1
    strategies: tuple[str, ...] = DEFAULT_STRATEGIES
    settings: ScenarioSettings = field(default_factory=ScenarioSettings)
    views: str = "broker"
    view_settings: ViewSettings = field(default_factory=ViewSettings)
    out: Path | None = None
    max_scenarios: int | None = None
    current: str | None = None  # --from: the PROTOCOL:ASSIGNOR a Kafka group runs today
    static_membership: bool = False  # --static-membership: Kafka's consumers set group.instance.id

    def candidates(self) -> tuple[str, ...]:
        """The labels of the profile's strategies that run on its system (a user's Strategy is
        judged by its own `systems`, even under a registered name)."""
        system = SYSTEM_VERDICTS[self.system]
        chosen = system.strategies(self.strategies)
        return tuple(strategy.name for strategy in chosen if system.accepts(strategy))

    def verdict_on(
        self,
        summary: Summary,
        scenario_means: ScenarioMeans | None = None,
        confidence: float = CONFIDENCE,
    ) -> Verdict:
        """The verdict on `summary` for this profile's system and candidates (paired on
        `scenario_means` at `confidence` when given), with a note for each candidate that
        reads a fact (zones, weights) these scenarios do not carry: it ran as the plain
        strategy it is without them, and the option that adds them is named."""
        verdict = decide(
            summary, SYSTEM_VERDICTS[self.system], self.candidates(), scenario_means, confidence
        )
        carried = self.settings.carried_inputs() | {"capacities"}  # no scenario has capacities
        option = {"consumer_zones": "--zones", "queue_zones": "--zones", "weights": "--weights"}
        for strategy in SYSTEM_VERDICTS[self.system].strategies(self.strategies):
            if strategy.name not in verdict.candidates or not strategy.uses - carried:
                continue
            missing = sorted({option[name] for name in strategy.uses - carried})
            verdict.notes.append(
                f"{strategy.name} reads what these scenarios do not carry, so it ran without it; "
                f"add {' and '.join(missing)} to score it as it is meant to run."
            )
        return verdict

    def describe(self) -> str:
        """The profile in one sentence, as the verdict and the report print it."""
        mix = ", ".join(
            f"{kind} {_number(weight)}"
            for kind, weight in self.settings.change_weights.items()
            if weight
        )
        if (
            set(self.settings.change_weights) == set(CHANGE_KINDS)
            and len({weight for weight in self.settings.change_weights.values()}) == 1
        ):
            mix = "every change kind alike"
        views = "" if self.views == "broker" else ", client-side views"
        today = f"; today {self.current}" if self.current else ""
        static = ", static members (group.instance.id)" if self.static_membership else ""
        placement = ""
        if self.settings.zone_range is not None:
            placement += f", {_span(self.settings.zone_range)} zones"
        if self.settings.weights is not None:
            placement += f", {self.settings.weights} weights"
        return (
            f"{_span(self.settings.queue_range)} queues, {_span(self.settings.consumer_range)} "
            f"consumers{placement}, {_span(self.settings.change_count_range)} changes per "
            f"scenario ({mix}){views}{static}{today}; {self.scenarios:,} scenarios{self._drawn()}, "
            f"seed {self.seed}."
        )

    def _drawn(self) -> str:
        if self.max_scenarios is None:
            return ""
        return f" (drawn until decided, at most {self.max_scenarios:,})"


def _span(bounds: tuple[int, int]) -> str:
    low, high = bounds
    return f"{low:,}" if low == high else f"{low:,}-{high:,}"


def _number(weight: float) -> str:
    return f"{weight:g}"


def count_or_range(name: str, text: str, maximum: int) -> tuple[int, int]:
    """`N` or `LOW:HIGH` (integers, 1 <= LOW <= HIGH <= maximum) as (low, high)."""
    parts = text.split(":")
    try:
        if len(parts) == 1:
            low = high = int(parts[0])
        elif len(parts) == 2:
            low, high = int(parts[0]), int(parts[1])
        else:
            raise ValueError(text)
    except ValueError:
        raise ParameterError(
            f"{name}: expected a count N or a range LOW:HIGH of integers, got {text!r}"
        ) from None
    if not 1 <= low <= high:
        raise ParameterError(f"{name}: need 1 <= LOW <= HIGH, got {text!r}")
    if high > maximum:
        raise ParameterError(f"{name}: at most {maximum:,}, got {text!r}")
    return low, high


def change_mix(text: str) -> dict[str, float]:
    """`kind=weight,kind=weight` (a bare kind weighs 1) as relative weights of change kinds:
    finite, non-negative, at least one positive, each kind once."""
    if not text.strip():
        raise ParameterError(
            f"--mix: empty; give kind=weight pairs, e.g. rolling_restart=3,crash=1 (kinds: "
            f"{', '.join(CHANGE_KINDS)}), or leave --mix out for all alike"
        )
    weights: dict[str, float] = {}
    for item in text.split(","):
        kind, _, weight = item.partition("=")
        kind = kind.strip()
        if kind in weights:
            raise ParameterError(f"--mix: {kind!r} is given twice; give each kind once")
        if kind not in CHANGE_KINDS:
            raise ParameterError(
                f"--mix: unknown change kind {kind!r}; known: {', '.join(CHANGE_KINDS)}"
            )
        try:
            value = float(weight) if weight.strip() else 1.0
        except ValueError:
            raise ParameterError(f"--mix: weight of {kind!r} is not a number: {weight!r}") from None
        if not math.isfinite(value) or value < 0:
            raise ParameterError(
                f"--mix: weight of {kind!r} must be a finite number >= 0, got {weight!r}"
            )
        weights[kind] = value
    if not any(weights.values()):
        raise ParameterError("--mix: give at least one change kind a positive weight")
    return weights


def strategy_specs(text: str) -> tuple[str, ...]:
    """The strategies as given, once each, after checking that each resolves and that no two
    label their rows alike (a user's Strategy object keeps its own name, which may be one the
    registry has)."""
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


def _some_names(directory: Path, shown: int = 3) -> str:
    """The first `shown` entries of `directory` by name, and how many more, for a message."""
    names = sorted(entry.name for entry in directory.iterdir())
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def prepare_out(out: Path, replace: bool) -> None:
    """Make `out` an empty directory this process can write: a directory holding an earlier
    run's files (RUN_MARKERS) is refused unless `replace`, and then emptied whole, so that no
    file of another run is left beside this one's; a directory holding other files is refused
    whatever `replace` says, naming what is there."""
    if out.exists() and not out.is_dir():
        raise ParameterError(f"--out: {str(out)!r} exists and is not a directory")
    if out.is_dir() and any(out.iterdir()):
        if not any((out / name).exists() for name in RUN_MARKERS):
            raise ParameterError(
                f"--out: {str(out)!r} holds files of no run ({_some_names(out)}; no "
                f"{' or '.join(RUN_MARKERS)}), which this command never deletes; give a new or "
                "empty directory"
            )
        if not replace:
            raise ParameterError(
                f"--out: {str(out)!r} holds an earlier run's files ({_some_names(out)}); give "
                "another --out, or --replace to delete them and write this run there"
            )
        for entry in out.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".probe"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        raise ParameterError(f"--out: cannot write to {str(out)!r}: {error.strerror}") from None


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Every default shown (unless the help says it already, or there is none), and the epilog
    (the scores' glossary) kept as written."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if action.default in (None, False, argparse.SUPPRESS) or "default" in text:
            return text
        return f"{text} (default: %(default)s)"


class OneLineErrorParser(argparse.ArgumentParser):
    """A bad option is one line naming it (and the closest known option for a misspelt one, the
    closest choice for a misspelt value such as --system's), exit 2, instead of the usage block
    and then the error."""

    def error(self, message: str) -> NoReturn:
        hint = ""
        chosen = re.match(r"argument (\S+): invalid choice: '([^']*)'", message)
        if chosen:  # argparse names an option by its option strings joined with "/"
            for action in self._actions:
                if "/".join(action.option_strings) == chosen[1] and action.choices:
                    close = difflib.get_close_matches(chosen[2], list(action.choices), n=1)
                    hint = f" (did you mean {close[0]!r}?)" if close else ""
        if message.startswith("unrecognized arguments:"):
            known = [option for action in self._actions for option in action.option_strings]
            for given in message.split(":", 1)[1].split():
                close = difflib.get_close_matches(given.split("=")[0], known, n=1)
                if given.startswith("-") and close:
                    hint = f" (did you mean {close[0]}?)"
                    break
        self.exit(2, f"error: {message}{hint}; see {self.prog} --help\n")


def new_parser(prog: str, description: str) -> argparse.ArgumentParser:
    """A parser whose --help shows every default and ends with the scores' glossary, and whose
    errors are one line."""
    return OneLineErrorParser(
        prog=prog, description=description, formatter_class=_HelpFormatter, epilog=scores_help()
    )


def add_profile_arguments(
    parser: argparse.ArgumentParser, *, scenarios: int | str, out: str | None
) -> None:
    """The options that describe a group (see the module docstring), with their defaults;
    `scenarios` AUTO lets --scenarios be auto and adds --max-scenarios."""
    group = parser.add_argument_group("the group")
    group.add_argument(
        "--system",
        choices=list(SYSTEM_VERDICTS),
        default=ANY_SYSTEM,
        help="where the group runs: it decides the candidate strategies and which costs count",
    )
    group.add_argument(
        "--from",
        dest="current",
        default=None,
        metavar="PROTOCOL:ASSIGNOR",
        help="with --system kafka: what the group runs today, one of "
        + ", ".join(SYSTEM_VERDICTS["kafka"].pairs)
        + ", or Kafka's names for them (range, RangeAssignor, cooperative-sticky, consumer:range, "
        "classic, ...: docs/reference/command-line.md); the verdict ends with what moving to its "
        "pick costs",
    )
    group.add_argument("--queues", default="1:4096", help="queue count N or range LOW:HIGH")
    group.add_argument("--consumers", default="1:256", help="consumer count N or range LOW:HIGH")
    group.add_argument(
        "--mix",
        default=None,
        help="churn: relative weights of change kinds, e.g. rolling_restart=3,crash=1; kinds: "
        + ", ".join(CHANGE_KINDS)
        + " (default: all alike); rolling_restart and flapping bring consumers back under their "
        "id; on Kafka a restarting batch leaves, then rejoins 30 s later (a rebalance each way; "
        "none with --static-membership); leave and join give dynamic members' new ids",
    )
    group.add_argument("--changes", default="1:6", help="changes per scenario, N or LOW:HIGH")
    group.add_argument(
        "--zones",
        default=None,
        help="zones per group, N or LOW:HIGH (e.g. 2:3), of uneven sizes; each queue's replicas "
        "in 1 to 3 of them; adds the cross-zone scores, the zone_outage and zone_recovery "
        "changes and the zone-aware strategies (default: off, no zones)",
    )
    group.add_argument(
        "--weights",
        default=None,
        choices=list(WEIGHT_DISTRIBUTIONS),
        help="queue weights (load, lag): uniform on [0, 1), zipf (rank r weighs "
        f"1/r^{ZIPF_EXPONENT:g}), or hot (every queue 1, one {HOT_WEIGHT:g}); adds the load "
        "scores, the load_shift change and the load-aware strategies (default: off, every "
        "queue alike)",
    )
    group.add_argument(
        "--static-membership",
        action="store_true",
        help="with a Kafka --system: every consumer sets group.instance.id (KIP-345), so a "
        "rolling_restart batch, back in 30 s (within session.timeout.ms), moves nothing",
    )
    run = parser.add_argument_group("the run")
    if scenarios == AUTO:
        run.add_argument(
            "--scenarios",
            default=AUTO,
            help="number of scenarios N, scored exactly; or auto: drawn in growing batches "
            "(50, 100, 200, ...) until the verdict is settled, at most --max-scenarios "
            "(default: auto)",
        )
        run.add_argument(
            "--max-scenarios",
            type=int,
            default=None,
            help="only with --scenarios auto: the most scenarios it draws; the verdict says "
            f"when it stopped there with candidates still level (default: {DEFAULT_MAX_SCENARIOS})",
        )
    else:
        run.add_argument("--scenarios", type=int, default=scenarios, help="number of scenarios")
    run.add_argument("--seed", type=int, default=1, help="base seed of the scenarios")
    run.add_argument(
        "--strategies",
        default=None,
        help="comma-separated strategies: registered names, or package.module:function for one "
        "of your own (default: the candidates of --system; registered: "
        + ", ".join(STRATEGIES)
        + "; with --system kafka: PROTOCOL:ASSIGNOR pairs, in any spelling --from takes)",
    )
    own = (
        f" (default: {out}, the command's own: each run there replaces the one before)"
        if out is not None
        else ""
    )
    default = None if out is None else CommandsOwnFolder(out)
    run.add_argument("--out", default=default, help="output directory" + own)
    run.add_argument(
        "--replace",
        action="store_true",
        help="let the --out you name hold an earlier run: delete its files first",
    )
    add_view_arguments(run)


def _scenario_settings(namespace: argparse.Namespace) -> ScenarioSettings:
    """The ScenarioSettings of parsed options; ParameterError names the culprit (a --mix kind
    that needs --zones or --weights without it, too)."""
    zones = (
        None
        if namespace.zones is None
        else count_or_range("--zones", namespace.zones, len(ZONE_NAMES))
    )
    weights = namespace.weights
    given_mix = namespace.mix is not None
    mix = change_mix(namespace.mix) if given_mix else dict.fromkeys(CHANGE_KINDS, 1.0)
    if given_mix:
        for kind, weight in mix.items():
            option = "--zones" if kind in ZONE_KINDS else "--weights"
            lacking = zones is None if kind in ZONE_KINDS else weights is None
            if weight and (kind in ZONE_KINDS or kind in WEIGHT_KINDS) and lacking:
                raise ParameterError(f"--mix: {kind} needs {option}, which is not given")
    try:
        return ScenarioSettings(
            queue_range=count_or_range("--queues", namespace.queues, MAX_QUEUES),
            consumer_range=count_or_range("--consumers", namespace.consumers, MAX_CONSUMERS),
            change_count_range=count_or_range("--changes", namespace.changes, MAX_CHANGES),
            change_weights=mix,
            zone_range=zones,
            weights=weights,
        )
    except (TypeError, ValueError) as error:
        if isinstance(error, ParameterError):
            raise
        raise ParameterError(str(error)) from None


def _warn_of_empty_zones(settings: ScenarioSettings) -> None:
    """One line on standard error when every scenario has more zones than consumers: zones
    without a consumer, whose queues every strategy reads from another zone. Allowed (it is a
    group's shape), but rarely what was meant."""
    if settings.zone_range is None:
        return
    zones, consumers = settings.zone_range[0], settings.consumer_range[1]
    if zones > consumers:
        print(
            f"warning: --zones: at least {zones} zones for at most {consumers:,} consumers, so "
            f"every scenario has zones without a consumer, whose queues are read from another "
            "zone whatever the strategy",
            file=sys.stderr,
        )


def profile_from(namespace: argparse.Namespace) -> Profile:
    """The Profile of parsed add_profile_arguments options; ParameterError names the culprit."""
    scenarios, max_scenarios = scenario_count(namespace)
    if not -(2**63) <= namespace.seed < 2**63:
        raise ParameterError(f"--seed must fit in 64 bits, got {namespace.seed}")
    system = SYSTEM_VERDICTS[namespace.system]
    settings = _scenario_settings(namespace)
    current = _current_pair(getattr(namespace, "current", None), system.name)
    static_membership = bool(namespace.static_membership)
    if static_membership and system.vendor != "kafka":
        raise ParameterError(f"--static-membership: {kafka_only(system.name)}")
    if namespace.strategies is None:
        specs = system.candidates(carried=settings.carried_inputs())
    elif system.pairs:  # --system kafka: pairs in the spellings --from accepts
        try:
            specs = tuple(
                dict.fromkeys(
                    kafka_pair(name) for name in namespace.strategies.split(",") if name.strip()
                )
            )
            system.strategies(specs)
        except ValueError as error:
            raise ParameterError(f"--strategies: {error}") from None
        if not specs:
            raise ParameterError(
                f"--strategies: empty; give pairs, e.g. {','.join(system.candidates()[:2])}"
            )
    else:
        specs = strategy_specs(namespace.strategies)
        resolved = select(",".join(specs))
        if not any(system.accepts(strategy) for strategy in resolved):
            raise ParameterError(
                f"--strategies: none of {', '.join(specs)} runs on --system {system.name} "
                f"(its candidates: {', '.join(system.candidates())}); add one of them, or "
                "choose another --system"
            )
    views = namespace.views or system.views
    try:
        view_settings = view_settings_from(namespace)
    except (TypeError, ValueError) as error:
        raise ParameterError(str(error)) from None
    _warn_of_empty_zones(settings)
    out = None
    if namespace.out is not None:
        out = Path(os.path.expanduser(namespace.out))
        # the command's own folder is replaced (unless it holds what is not a run's); one the
        # user names only with --replace
        prepare_out(out, namespace.replace or isinstance(namespace.out, CommandsOwnFolder))
    return Profile(
        system=system.name,
        scenarios=scenarios,
        seed=namespace.seed,
        strategies=specs,
        settings=settings,
        views=views,
        view_settings=view_settings,
        out=out,
        max_scenarios=max_scenarios,
        current=current,
        static_membership=static_membership,
    )


def scenario_count(namespace: argparse.Namespace) -> tuple[int, int | None]:
    """(scenarios, max_scenarios) of parsed options: (N, None) for --scenarios N; (the cap, the
    cap) for --scenarios auto, the cap DEFAULT_MAX_SCENARIOS unless --max-scenarios gives it.
    ParameterError names the option out of range or not a count, and --max-scenarios beside a
    --scenarios N, which scores exactly N (the cap would be ignored without a word)."""
    given = namespace.scenarios
    drawn = hasattr(namespace, "max_scenarios")  # compare's options; not the harness's
    cap = getattr(namespace, "max_scenarios", None)
    if isinstance(given, str) and given.strip().lower() == AUTO:
        if not drawn:
            raise ParameterError("--scenarios: auto is for compare; give a number of scenarios")
        cap = DEFAULT_MAX_SCENARIOS if cap is None else cap
        return _scenarios_within("--max-scenarios", cap), cap
    try:
        count = int(given)
    except ValueError:
        raise ParameterError(
            f"--scenarios: expected a number of scenarios or auto, got {given!r}"
        ) from None
    if cap is not None:
        raise ParameterError(
            f"--max-scenarios: only with --scenarios auto; --scenarios {given} scores exactly "
            f"{count:,}: drop --max-scenarios, or give --scenarios auto to draw until decided"
        )
    return _scenarios_within("--scenarios", count), None


def _scenarios_within(option: str, count: int) -> int:
    """`count`, when between 1 and MAX_SCENARIOS; else ParameterError naming `option`."""
    if not 1 <= count <= MAX_SCENARIOS:
        raise ParameterError(f"{option} must be between 1 and {MAX_SCENARIOS:,}, got {count:,}")
    return count


def _current_pair(text: str | None, system: str) -> str | None:
    """`--from` checked: a pair of `--system kafka` in any spelling migration.kafka_pair
    accepts, as its PROTOCOL:ASSIGNOR label (ParameterError names what is wrong with it and the
    accepted spellings)."""
    if text is None:
        return None
    if system != "kafka":
        raise ParameterError(f"--from: only with --system kafka, not --system {system}")
    try:
        return kafka_pair(text)
    except ValueError as error:
        raise ParameterError(f"--from: {error}") from None


def run_description(profile: Profile) -> dict[str, Any]:
    """The profile's part of run.json."""
    return {
        "system": profile.system,
        "scenarios": profile.scenarios,
        "max_scenarios": profile.max_scenarios,
        "seed": profile.seed,
        "strategies": list(profile.strategies),
        "queue_range": profile.settings.queue_range,
        "consumer_range": profile.settings.consumer_range,
        "change_count_range": profile.settings.change_count_range,
        "change_weights": dict(profile.settings.change_weights),
        "zone_range": profile.settings.zone_range,
        "weights": profile.settings.weights,
        "views": profile.views,
        "view_settings": asdict(profile.view_settings) if profile.views == "client" else None,
        "from": profile.current,
        "static_membership": profile.static_membership,
    }
