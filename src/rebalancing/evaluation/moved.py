"""The evaluation's module paths before 0.2.0, which now import the modules they moved to with a
DeprecationWarning, for one version (CHANGELOG.md): `rebalancing.evaluation.verdict` was split
into the decision and the report, `glossary` into the score definitions and the report's
tables, and the other modules moved into the stage they belong to. Installed by the package's
__init__; a path that moved to several modules gives one module holding the public names of
all of them. Importing this module puts its finder on sys.meta_path (once).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType

REMOVED_IN = "0.3.0"

MOVED: dict[str, tuple[str, ...]] = {
    f"rebalancing.evaluation.{old}": tuple(f"rebalancing.evaluation.{new}" for new in news)
    for old, news in {
        "views": ("scenarios.views",),
        "scores": ("scoring.scores",),
        "placement_scores": ("scoring.placement_scores",),
        "compiled_scores": ("scoring.compiled_scores",),
        "compiled_strategies": ("scoring.compiled_strategies",),
        "replay": ("scoring.replay", "scoring.placement_step"),
        "protocol_time": ("scoring.protocol_time",),
        "aggregates": ("scoring.aggregates", "report.tables"),
        "glossary": ("scoring.definitions", "report.tables"),
        "verdict": (
            "decision.systems",
            "decision.differences",
            "decision.reasons",
            "decision.verdict",
            "report.verdict_text",
        ),
        "plots": ("report.plots",),
        "report_page": ("report.page",),
        "outputs": ("report.outputs", "command.profile"),
        "profile": ("command.profile",),
        "compare": ("command.compare",),
    }.items()
}
"""Old module path -> the module(s) now holding what it held. Every public name of each old
module is in one of them, but glossary.TIMED_AS_TWINS (the registry's Strategy.compiled_twin
says it now). A union of several modules is a copy of their names: assigning to one of its
attributes changes nothing in the modules."""


class _MovedPaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path of MOVED and loads it as the new module (or a union of several)."""

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        targets = MOVED[spec.name]
        warnings.warn(
            f"{spec.name} moved to {' and '.join(targets)}; the old path goes in {REMOVED_IN}",
            DeprecationWarning,
            stacklevel=2,
        )
        modules = [importlib.import_module(target) for target in targets]
        if len(modules) == 1:
            return modules[0]
        union = ModuleType(spec.name, f"The names of {', '.join(targets)} (moved).")
        for module in modules:
            for name, value in vars(module).items():
                if not name.startswith("__"):
                    setattr(union, name, value)
        return union

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module(s) it stands for ran when imported."""


def install() -> None:
    """Put the finder on sys.meta_path, once."""
    if not any(isinstance(finder, _MovedPaths) for finder in sys.meta_path):
        sys.meta_path.append(_MovedPaths())


install()
