"""The layout keeps its layers: imports point down only, the library layer imports nothing heavy,
and every package's __init__.py only re-exports. And the installed package holds no test or
experiment machinery: nothing under src/rebalancing starts servers or installs system packages
(that is tools/, never installed), and a wheel built from the sources holds none of it."""

from __future__ import annotations

import ast
import importlib.metadata
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).parents[1]
PACKAGE = REPOSITORY / "src" / "rebalancing"

# What each part of the package may import from the package (besides itself).
ALLOWED = {
    "contract": {"ranking"},  # only its deprecated names of ranking, imported when asked for
    "ranking": {"contract"},  # prepare's checks and results with the queues as ranks
    "placement": {"contract"},  # zones, weights, capacities: checked like the contract's ids
    "strategies": {"contract", "ranking", "placement", "sac"},
    "protocols": {"contract"},  # Kafka's group protocols in seconds, over any assignor
    "testing": {"contract", "placement"},
    "sac": {"contract"},
    "evaluation": {"contract", "placement", "strategies", "sac", "protocols"},
    "harness": {"contract", "placement", "strategies", "sac", "protocols", "evaluation"},
    "runtime": set(),
    "adapters": {"contract", "placement", "strategies", "sac", "runtime"},
    "cli": {"evaluation", "harness", "version"},  # the `rebalancing` command, above every layer
    "version": set(),  # the package's version, read by pyproject.toml
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


# The evaluation's stages, in the order a scenario goes through them: a module may import from its
# own stage and the earlier ones only (the package's own __init__, __main__ and `moved`, the
# deprecated old paths, stand above them all).
STAGES = ("scenarios", "scoring", "decision", "report", "command")
EVALUATION = PACKAGE / "evaluation"
STAGED = sorted(path for path in EVALUATION.rglob("*.py") if path.parent != EVALUATION)


def _stage_of_module(name: str) -> str | None:
    parts = name.split(".")
    if parts[:2] == ["rebalancing", "evaluation"] and len(parts) > 2 and parts[2] in STAGES:
        return parts[2]
    return None


@pytest.mark.parametrize("path", STAGED, ids=[str(p.relative_to(EVALUATION)) for p in STAGED])
def test_evaluation_modules_import_only_their_own_and_earlier_stages(path: Path) -> None:
    stage = path.relative_to(EVALUATION).parts[0]
    assert stage in STAGES, f"{path.relative_to(EVALUATION)} is in no stage"
    later = {
        imported
        for imported in _imported_modules(path)
        if (other := _stage_of_module(imported)) and STAGES.index(other) > STAGES.index(stage)
    }
    assert not later, f"{stage} reaches a later stage: {sorted(later)}"
    outside = {
        imported
        for imported in _imported_modules(path)
        if imported.startswith("rebalancing.evaluation") and _stage_of_module(imported) is None
    }
    assert not outside, f"{stage} reaches above the stages: {sorted(outside)}"


def _module_name(path: Path) -> str:
    parts = ["rebalancing", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULE_NAMES = {_module_name(path): path for path in PACKAGE.rglob("*.py")}


def _imported_modules(path: Path, loading: bool = False) -> set[str]:
    """The package's modules that `path` imports, anywhere in it but under `if TYPE_CHECKING`
    (`loading`: only those it imports while it loads, not inside a function):
    `from P import N` is P.N where that is a module, else P (its __init__)."""
    name = _module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = {
        id(inner)
        for node in ast.walk(tree)
        if (isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING")
        or (loading and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef))
        for inner in ast.walk(node)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[: len(package) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                child = f"{base}.{alias.name}"
                found.add(child if child in MODULE_NAMES else base)
    return {module for module in found if module in MODULE_NAMES}


def test_no_import_circle_anywhere_in_the_package() -> None:
    # the imports a module makes while it loads: a function's own import runs later, once
    # every module is loaded (contract's deprecated names from ranking are such a one)
    graph = {
        name: _imported_modules(path, loading=True) - {name} for name, path in MODULE_NAMES.items()
    }
    circles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for imported in sorted(graph[module]):
            if state.get(imported) == 1:
                circles.append([*path[path.index(imported) :], imported])
            elif imported not in state:
                visit(imported)
        path.pop()
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)
    assert not circles, "import circles: " + "; ".join(" -> ".join(c) for c in circles[:5])


def test_the_circle_finder_sees_a_circle() -> None:
    # the reader above resolves `from P import N` to the module P.N: a package's __init__ that
    # re-exports a child, and the child importing the package, is a circle
    child = EVALUATION / "scoring" / "scores.py"
    assert "rebalancing.evaluation.scoring" not in _imported_modules(child)
    init = EVALUATION / "scoring" / "__init__.py"
    assert "rebalancing.evaluation.scoring.scores" in _imported_modules(init)


LONGEST_MODULE = 600
"""A module longer than this says why it is kept in one piece, in its docstring ("kept in one
module")."""


@pytest.mark.parametrize(
    "path",
    sorted(PACKAGE.rglob("*.py")),
    ids=[str(p.relative_to(PACKAGE)) for p in sorted(PACKAGE.rglob("*.py"))],
)
def test_modules_are_short_or_say_why_not(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    if source.count("\n") < LONGEST_MODULE:
        return
    docstring = ast.get_docstring(ast.parse(source)) or ""
    assert "kept in one module" in " ".join(docstring.split()).lower(), (
        f"{path.relative_to(PACKAGE)} has {source.count(chr(10))} lines and its docstring "
        "does not say why it is kept in one module"
    )


MACHINERY = (
    "rebalancing/machine.py",
    "rebalancing/harness/local_cluster.py",
    "rebalancing/adapters/rabbitmq_broker.py",
    "rebalancing/adapters/rabbitmq_experiment.py",
)
"""Where the test and experiment machinery lived before it moved to tools/ (apt installs, a
Spark standalone cluster, a private RabbitMQ broker, the experiment on it)."""


def _starts_processes_or_installs(source: str) -> list[str]:
    """What in `source` starts a long-lived process or installs a system package: a use of
    `Popen`, a `start_new_session` argument (a daemon's own session), or the word apt-get."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name | ast.Attribute) and "Popen" in (
            node.id if isinstance(node, ast.Name) else node.attr
        ):
            found.append(f"line {node.lineno}: Popen")
        elif isinstance(node, ast.keyword) and node.arg == "start_new_session":
            found.append(f"line {node.lineno}: start_new_session")
        elif isinstance(node, ast.Constant) and "apt-get" in str(node.value):
            found.append(f"line {node.lineno}: apt-get")
    return found


def test_the_reader_of_machinery_sees_each_kind() -> None:
    source = (
        "import subprocess\n"
        "process = subprocess.Popen(['epmd'], start_new_session=True)\n"
        "install = ['apt-get', 'install', '-y', 'chromium']\n"
    )
    assert _starts_processes_or_installs(source) == [
        "line 2: Popen",
        "line 2: start_new_session",
        "line 3: apt-get",
    ]
    assert _starts_processes_or_installs("subprocess.run(['git', 'rev-parse', 'HEAD'])\n") == []


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(PACKAGE)) for p in MODULES])
def test_no_module_of_the_package_starts_servers_or_installs_packages(path: Path) -> None:
    assert _starts_processes_or_installs(path.read_text(encoding="utf-8")) == []


def test_the_machinery_lives_in_tools_and_not_in_the_package() -> None:
    assert [name for name in MACHINERY if (REPOSITORY / "src" / name).exists()] == []
    moved = ["machine.py", "local_cluster.py", "rabbitmq_broker.py", "rabbitmq_experiment.py"]
    assert [name for name in moved if not (REPOSITORY / "tools" / name).exists()] == []


def test_a_wheel_of_the_sources_holds_the_package_and_none_of_the_machinery(
    tmp_path: Path,
) -> None:
    """What `pip install .` installs, built offline with this environment's setuptools (the
    dev extra's setuptools>=77, which knows pyproject's SPDX license) from a copy of the
    sources, so that no build directory is left in the working tree."""
    setuptools = importlib.metadata.version("setuptools")
    assert int(setuptools.split(".")[0]) >= 77, (
        f"setuptools {setuptools} cannot build this pyproject.toml: install the dev extra"
    )
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPOSITORY / name, source / name)
    shutil.copytree(
        REPOSITORY / "src",
        source / "src",
        ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"),
    )
    shutil.copytree(REPOSITORY / "tools", source / "tools")  # beside src, as in a clone
    command = [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps"]
    command += ["--no-build-isolation", "--no-index", "-w", str(tmp_path / "wheel"), "-q"]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    (wheel,) = (tmp_path / "wheel").glob("rebalancing-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "rebalancing/strategies/sticky.py" in names
    assert "rebalancing/adapters/rabbitmq.py" in names
    assert [name for name in names if name in MACHINERY or name.startswith("tools/")] == []
