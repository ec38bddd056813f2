"""Run notebooks with nbclient: every notebook here in place, so the committed outputs are fresh
(`make notebooks`), or one notebook with other parameters, as papermill would, without papermill:

    python notebooks/execute.py notebooks/compare_strategies.ipynb \\
        --set SYSTEM=kafka-eager --set QUEUES=64 --set CONSUMERS=4:12 \\
        --set MIX=rolling_restart=3,crash=1 --output /tmp/kafka.ipynb

`--set NAME=VALUE` puts a cell tagged "injected-parameters" right after the cell tagged
"parameters", which assigns the new values (replacing an earlier injected cell; a run without
--set removes it, so the parameters cell's own values apply). A value reads as on papermill's
command line: None, True, False, an integer, a float, otherwise the text as it is. Without
--output the notebook is rewritten in place, and only when every cell ran.

The kernel imports the library from this checkout's src (put first on its PYTHONPATH), so the
outputs show this checkout's code whether or not it is the installed one. It talks to this
process over Unix sockets in a private temporary folder (ZeroMQ's ipc transport), not TCP: no
port is opened, and ipykernel's warning about plain-text TCP does not apply.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import nbclient
import nbformat
from nbclient.exceptions import CellExecutionError
from traitlets.config import Config

HERE = Path(__file__).parent
SOURCES = HERE.parent / "src"
PARAMETERS_TAG = "parameters"
INJECTED_TAG = "injected-parameters"


def parameter_value(text: str) -> Any:
    """`text` as papermill's `-p NAME VALUE` reads it: None, a bool, an int, a float, or text."""
    constants = {"None": None, "True": True, "False": False}
    if text in constants:
        return constants[text]
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parameter_names(notebook: nbformat.NotebookNode) -> tuple[int, list[str]]:
    """The index of the cell tagged "parameters" and the names it assigns."""
    for index, cell in enumerate(notebook.cells):
        if PARAMETERS_TAG in cell.metadata.get("tags", []):
            names = [
                target.id
                for statement in ast.parse(cell.source).body
                if isinstance(statement, ast.Assign | ast.AnnAssign)
                for target in (
                    statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                )
                if isinstance(target, ast.Name)
            ]
            return index, names
    raise ValueError("the notebook has no cell tagged 'parameters' to follow with new values")


def inject(notebook: nbformat.NotebookNode, parameters: Mapping[str, Any]) -> None:
    """Drop an earlier injected cell, then, when there are `parameters`, assign them in a new
    cell right after the parameters cell; a name that cell does not assign is refused."""
    notebook.cells = [
        cell for cell in notebook.cells if INJECTED_TAG not in cell.metadata.get("tags", [])
    ]
    if not parameters:
        return
    index, names = parameter_names(notebook)
    for name in parameters:
        if name not in names:
            raise ValueError(f"unknown parameter {name!r}; the notebook's: {', '.join(names)}")
    lines = [f"{name} = {value!r}" for name, value in parameters.items()]
    cell = nbformat.v4.new_code_cell("\n".join(["# Parameters", *lines]))
    cell.metadata["tags"] = [INJECTED_TAG]
    notebook.cells.insert(index + 1, cell)


def kernel_environment() -> dict[str, str]:
    """This process's environment with this checkout's src first on PYTHONPATH."""
    paths = [str(SOURCES), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def unix_socket_kernel(folder: Path) -> Config:
    """Configuration for a kernel reached over Unix sockets named after `folder`/kernel."""
    return Config({"KernelManager": {"transport": "ipc", "ip": str(folder / "kernel")}})


def execute(path: Path, parameters: Mapping[str, Any], output: Path) -> None:
    """Run the notebook at `path` with `parameters` (from its own folder, as Jupyter would) and
    write it to `output`; in place, it is written only when every cell ran."""
    notebook = nbformat.read(path, as_version=4)
    inject(notebook, parameters)
    with tempfile.TemporaryDirectory(prefix="rebalancing-kernel-") as sockets:
        client = nbclient.NotebookClient(
            notebook,
            timeout=600,
            kernel_name="python3",
            resources={"metadata": {"path": str(path.resolve().parent)}},
            config=unix_socket_kernel(Path(sockets)),
        )
        try:
            client.execute(env=kernel_environment())
        except CellExecutionError:
            if output.resolve() != path.resolve():
                nbformat.write(notebook, output)
            raise
    nbformat.write(notebook, output)


def assignment(text: str) -> tuple[str, Any]:
    """`NAME=VALUE` as (name, value)."""
    name, equals, value = text.partition("=")
    if not equals or not name.isidentifier():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, parameter_value(value)


def main(arguments: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "notebooks", nargs="*", type=Path, help="default: every notebook in this folder"
    )
    parser.add_argument(
        "--set",
        dest="parameters",
        metavar="NAME=VALUE",
        type=assignment,
        action="append",
        default=[],
        help="a parameter's new value (repeat for several)",
    )
    parser.add_argument("--output", type=Path, help="where to write the executed notebook")
    options = parser.parse_args(arguments)
    paths = options.notebooks or sorted(HERE.glob("*.ipynb"))
    if options.output is not None and len(paths) != 1:
        parser.error("--output takes one notebook")
    parameters = dict(options.parameters)
    for path in paths:
        try:
            inject(nbformat.read(path, as_version=4), parameters)  # fails before a kernel starts
        except ValueError as error:
            parser.error(f"{path}: {error}")
    for path in paths:
        output = options.output or path
        try:
            execute(path, parameters, output)
        except CellExecutionError as error:
            kept = "" if output == path else f" (the notebook with its traceback: {output})"
            print(f"{path}: {error.ename}: {error.evalue}{kept}", file=sys.stderr)
            return 1
        print(f"executed {path} -> {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
