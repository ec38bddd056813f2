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
    "contract": set(),
    "strategies": {"contract", "sac"},
    "testing": {"contract"},
    "sac": {"contract"},
    "evaluation": {"contract", "strategies", "sac"},
    "harness": {"contract", "strategies", "sac", "evaluation"},
    "runtime": set(),
}


def _part(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def _imported_parts(path: Path) -> set[str]:
    parts = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        for name in names:
            if name.startswith("rebalancing."):
                parts.add(name.split(".")[1])
    return parts


MODULES = sorted(path for path in PACKAGE.rglob("*.py") if _part(path) in ALLOWED)


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(PACKAGE)) for p in MODULES])
def test_imports_point_down_the_layers_only(path: Path) -> None:
    part = _part(path)
    assert _imported_parts(path) - {part} <= ALLOWED[part]


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
