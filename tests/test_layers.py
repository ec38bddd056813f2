"""The layout keeps its layers: imports point down only, the library layer imports nothing heavy,
and every package's __init__.py only re-exports."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[1] / "src" / "rebalancing"

# What each part of the package may import from the package (besides itself).
ALLOWED = {
    "contract": {"ranking"},  # re-exports the queues as ranks, which are built on it
    "ranking": {"contract"},  # prepare's checks and results with the queues as ranks
    "placement": {"contract"},  # zones, weights, capacities: checked like the contract's ids
    "strategies": {"contract", "placement", "sac"},
    "testing": {"contract", "placement"},
    "sac": {"contract"},
    "evaluation": {"contract", "placement", "strategies", "sac"},
    "harness": {"contract", "placement", "strategies", "sac", "evaluation"},
    "runtime": set(),
    "adapters": {"contract", "placement", "strategies", "sac", "runtime", "machine"},
    "machine": set(),  # packages and processes of the machine: the standard library only
    "cli": {"evaluation", "harness"},  # the `rebalancing` command, above every layer
    "__main__": {"cli"},
}


def _part(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def _imported_parts(source: str, package: list[str]) -> set[str]:
    """The parts of the package that `source`, a module of `package` (its dotted path as a list),
    imports: absolute (`rebalancing.x`, `from rebalancing import x`), relative (`from ..x import y`)
    and `importlib.import_module("...")`."""
    modules: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[: len(package) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            modules += [f"{base}.{alias.name}" for alias in node.names]
        elif (
            isinstance(node, ast.Call)
            and ast.unparse(node.func).endswith("import_module")
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            modules.append(str(node.args[0].value))
    return {name.split(".")[1] for name in modules if name.startswith("rebalancing.")}


def _imported_parts_of(path: Path) -> set[str]:
    package = ["rebalancing", *path.relative_to(PACKAGE).parts[:-1]]
    return _imported_parts(path.read_text(encoding="utf-8"), package)


def test_the_import_reader_sees_every_form_of_import() -> None:
    source = (
        "from rebalancing import evaluation\n"
        "from ..harness import job\n"
        "import rebalancing.runtime.runner\n"
        "importlib.import_module('rebalancing.sac.model')\n"
    )
    expected = {"evaluation", "harness", "runtime", "sac"}
    assert _imported_parts(source, ["rebalancing", "strategies"]) == expected
    assert _imported_parts("from . import model\n", ["rebalancing", "sac"]) == {"sac"}
    assert _imported_parts("import numpy\nfrom os import path\n", ["rebalancing"]) == set()


MODULES = sorted(path for path in PACKAGE.rglob("*.py") if _part(path) in ALLOWED)


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(PACKAGE)) for p in MODULES])
def test_imports_point_down_the_layers_only(path: Path) -> None:
    part = _part(path)
    assert _imported_parts_of(path) - {part} <= ALLOWED[part]


def test_every_module_of_the_package_is_in_a_layer() -> None:
    top_level = {_part(path) for path in PACKAGE.rglob("*.py")} - {"__init__"}
    assert top_level <= set(ALLOWED)


INITS = sorted(PACKAGE.rglob("__init__.py"))


@pytest.mark.parametrize("path", INITS, ids=[str(p.relative_to(PACKAGE)) for p in INITS])
def test_init_files_only_re_export(path: Path) -> None:
    for statement in ast.parse(path.read_text(encoding="utf-8")).body:
        docstring = isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
        exported = isinstance(statement, ast.Assign) and [
            target.id for target in statement.targets if isinstance(target, ast.Name)
        ] == ["__all__"]
        assert docstring or exported or isinstance(statement, ast.Import | ast.ImportFrom), (
            f"{path.name} line {statement.lineno} does more than re-export"
        )


def test_the_library_layer_imports_nothing_heavy_and_nothing_of_the_evaluation() -> None:
    program = (
        "import json, sys; import rebalancing, rebalancing.strategies, rebalancing.testing; "
        "print(json.dumps(sorted(sys.modules)))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True
    )
    loaded = json.loads(completed.stdout)
    heavy = ("numpy", "pandas", "pyarrow", "pyspark", "matplotlib", "hypothesis", "numba")
    assert [name for name in loaded if name.split(".")[0] in heavy] == []
    outside = ("rebalancing.evaluation", "rebalancing.harness", "rebalancing.runtime")
    assert [name for name in loaded if name.startswith(outside)] == []
