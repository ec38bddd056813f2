"""What the job ships to the executors: the rebalancing package and the modules of a user's own
strategies (`package.module:function`), as files for addPyFile (or Spark Connect's addArtifacts).

A cluster's executors need not have the project installed, nor share a filesystem with the
driver: every pure-Python file they import from the package or from a user's strategy module goes
with the job. Compiled code cannot be imported from a zip, so a module with extension modules
(and the dependencies: pyarrow, numpy, numba, pandas) must be installed on the executors or come
in a packed environment; `ShippingPlan.not_shipped` names each module left out and why, and
run.json records it. Archives are byte-for-byte the same for the same sources (fixed timestamps,
sorted entries), so shipping them again to a long-lived session is not a conflict.
No pyspark here.
"""

from __future__ import annotations

import atexit
import functools
import importlib
import shutil
import sysconfig
import tempfile
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import rebalancing
from rebalancing.strategies import STRATEGIES

EXTENSION_SUFFIXES = (".so", ".pyd", ".dylib", ".dll")
"""Files zipimport cannot load: a package holding one is not shipped (it would shadow an
installed copy on the executors and then fail to import)."""

_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


@dataclass(frozen=True)
class ShippingPlan:
    """The files to add to the executors' Python path, and the modules deliberately left out
    (module name -> reason)."""

    files: tuple[Path, ...]
    not_shipped: dict[str, str] = field(default_factory=dict)


@functools.cache
def shipping_directory() -> Path:
    """One directory per driver process for the archives, removed when the process exits.

    The same path every run: Spark refuses a file name registered twice with different paths.
    """
    directory = Path(tempfile.mkdtemp(prefix="rebalancing-ship-"))
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    return directory


def _package_files(roots: Iterable[Path], top_level: str) -> Iterator[tuple[Path, str]]:
    """(file, name inside the archive) for every file of a package, `__pycache__` left out."""
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                yield path, f"{top_level}/{path.relative_to(root).as_posix()}"


def write_archive(entries: Iterable[tuple[Path, str]], archive: Path) -> Path:
    """Zip `entries` (file, name inside) into `archive` with fixed timestamps, in name order."""
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        for path, name in sorted(entries, key=lambda entry: entry[1]):
            info = zipfile.ZipInfo(name, date_time=_ZIP_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            bundle.writestr(info, path.read_bytes())
    return archive


def package_archive(directory: Path) -> Path:
    """`directory`/rebalancing.zip: the whole rebalancing package, importable from the zip."""
    package_dir = Path(rebalancing.__file__).parent
    return write_archive(
        _package_files([package_dir], "rebalancing"), directory / "rebalancing.zip"
    )


def _is_standard_library(path: Path) -> bool:
    paths = sysconfig.get_paths()
    library = Path(paths["stdlib"]).resolve()
    site = {Path(paths["purelib"]).resolve(), Path(paths["platlib"]).resolve()}
    resolved = path.resolve()
    return resolved.is_relative_to(library) and not any(resolved.is_relative_to(s) for s in site)


def user_module_names(strategy_specs: Iterable[str]) -> list[str]:
    """The top-level modules behind the `package.module:function` strategies, in order, once
    each; registered names, a system's PROTOCOL:ASSIGNOR candidates (System.pairs) and the
    rebalancing package itself need nothing more."""
    from rebalancing.evaluation.decision.systems import SYSTEM_VERDICTS

    paired = {label for system in SYSTEM_VERDICTS.values() for label in system.pairs}
    names: list[str] = []
    for spec in strategy_specs:
        if spec in STRATEGIES or spec in paired or ":" not in spec:
            continue
        top_level = spec.partition(":")[0].split(".")[0]
        if top_level != "rebalancing" and top_level not in names:
            names.append(top_level)
    return names


def _ship_module(module: ModuleType, directory: Path) -> Path | str:
    """The file that carries `module` (a top-level module or package) to the executors, or the
    reason it cannot be carried."""
    name = module.__name__
    search_path = getattr(module, "__path__", None)
    if search_path is not None:  # a package, perhaps a namespace package with several roots
        roots = [Path(root) for root in search_path]
        if any(_is_standard_library(root) for root in roots):
            return "standard library: already on every executor"
        entries = list(_package_files(roots, name))
        compiled = [inside for _, inside in entries if inside.endswith(EXTENSION_SUFFIXES)]
        if compiled:
            return f"holds compiled modules ({', '.join(compiled)}): install it on the executors"
        return write_archive(entries, directory / f"{name}.zip")
    file = getattr(module, "__file__", None)
    if file is None:
        return "built into the interpreter: already on every executor"
    source = Path(file)
    if _is_standard_library(source):
        return "standard library: already on every executor"
    if source.suffix != ".py":
        return f"a compiled module ({source.name}): install it on the executors"
    return source


def is_this_package(origin: str | None) -> bool:
    """Whether `origin` (where an executor's Python finds the rebalancing package, its
    `__init__.py`; None when it finds none) is the very file this process imported it from."""
    return bool(origin) and Path(str(origin)).resolve() == Path(rebalancing.__file__).resolve()


def plan_shipping(
    strategy_specs: Iterable[str], directory: Path | None = None, ship_package: bool = True
) -> ShippingPlan:
    """The package archive (unless `ship_package` is false: the executors import the driver's
    own copy), then one file per user strategy module (a zip of its top-level package, or the
    module's own .py), written into `directory` (default: shipping_directory).

    The modules are imported here (the driver has resolved them already, so this costs nothing).
    """
    target = directory or shipping_directory()
    target.mkdir(parents=True, exist_ok=True)
    files = [package_archive(target)] if ship_package else []
    not_shipped: dict[str, str] = {}
    if not ship_package:
        not_shipped["rebalancing"] = (
            "the local workers import the driver's own copy "
            f"({Path(rebalancing.__file__).parent}), and numba's compiled kernels with it"
        )
    for name in user_module_names(strategy_specs):
        shipped = _ship_module(importlib.import_module(name), target)
        if isinstance(shipped, Path):
            files.append(shipped)
        else:
            not_shipped[name] = shipped
    return ShippingPlan(tuple(files), not_shipped)
