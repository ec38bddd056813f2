"""The notebooks run the documented way: `python notebooks/execute.py NOTEBOOK --set NAME=VALUE
--output PATH` injects the values after the cell tagged "parameters" (papermill's convention) and
executes the notebook with nbclient; the comparison notebook ends with the verdict on its own
data, for whichever profile it was given."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import nbformat
import pytest

from rebalancing.evaluation.decision.systems import SYSTEM_VERDICTS

NOTEBOOKS = Path(__file__).parents[2] / "notebooks"
EXECUTE = NOTEBOOKS / "execute.py"
COMPARE = NOTEBOOKS / "compare_strategies.ipynb"
SMALL = ("SCENARIOS=15",)
CONCLUSION = re.compile(r"^(Use [a-z_]+\.|Tie\.) ", re.MULTILINE)
"""The verdict's last paragraph, as render_text prints it."""


def run(
    notebook: Path, output: Path, *assignments: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """notebooks/execute.py on `notebook` with `--set` for each assignment, into `output`."""
    sets = [argument for assignment in assignments for argument in ("--set", assignment)]
    return subprocess.run(
        [sys.executable, str(EXECUTE), str(notebook), *sets, "--output", str(output)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        check=False,
    )


def output_text(cell: Any) -> str:
    """What a code cell showed: its streams, and the text and Markdown of its results."""
    parts = []
    for output in cell.get("outputs", []):
        if "text" in output:
            parts.append(output["text"])
        data = output.get("data", {})
        parts += [data[kind] for kind in ("text/markdown", "text/plain") if kind in data]
    return "\n".join(parts)


def code_cells(path: Path) -> list[Any]:
    return [cell for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code"]


def images(path: Path) -> int:
    return sum(
        "image/png" in output.get("data", {})
        for cell in code_cells(path)
        for output in cell.get("outputs", [])
    )


def load_execute() -> ModuleType:
    specification = importlib.util.spec_from_file_location("execute", EXECUTE)
    assert specification is not None
    assert specification.loader is not None
    module = importlib.util.module_from_spec(specification)
    specification.loader.exec_module(module)
    return module


def test_comparison_notebook_ends_with_the_verdict_on_the_injected_profile(
    tmp_path: Path,
) -> None:
    output = tmp_path / "compare.ipynb"
    completed = run(COMPARE, output, *SMALL)
    assert completed.returncode == 0, completed.stderr
    last = output_text(code_cells(output)[-1])
    assert SYSTEM_VERDICTS["any"].title in last
    assert "15 scenarios, seed 1" in last, "the verdict is on the profile the notebook was given"
    assert CONCLUSION.search(last), last
    assert images(output) >= 5, "the deciding scores and the usual figures are drawn"
    protocols = next(cell for cell in code_cells(output) if "protocol_time" in cell.source)
    assert sum("image/png" in shown.get("data", {}) for shown in protocols.outputs) == 3, (
        "the leaderless protocols' seconds, queue-seconds and i mod n moves are drawn"
    )
    kafka = next(cell for cell in code_cells(output) if "kafka_time" in cell.source)
    assert sum("image/png" in shown.get("data", {}) for shown in kafka.outputs) == 3, (
        "Kafka's protocols' seconds, partition-seconds unowned and paused are drawn"
    )


def test_comparison_notebook_runs_another_system_and_profile_from_the_command_line(
    tmp_path: Path,
) -> None:
    output = tmp_path / "sac.ipynb"
    completed = run(
        COMPARE,
        output,
        *SMALL,
        "SYSTEM=rabbitmq-sac",
        "QUEUES=8:32",
        "CONSUMERS=2:6",
        "MIX=rolling_restart=3,crash=1",
        "ZONES=2",
        "WEIGHTS=zipf",
    )
    assert completed.returncode == 0, completed.stderr
    last = output_text(code_cells(output)[-1])
    system = SYSTEM_VERDICTS["rabbitmq-sac"]
    assert system.title in last
    assert "8-32 queues, 2-6 consumers, 2 zones, zipf weights" in last, "--zones, --weights"
    assert "rolling_restart 3, crash 1" in last
    for candidate in system.candidates():
        assert f"| {candidate} |" in last, candidate
    assert "| sticky |" not in last, "sticky is not a candidate on RabbitMQ SAC"
    assert CONCLUSION.search(last), last


def test_a_bad_parameter_fails_with_the_command_lines_message(tmp_path: Path) -> None:
    completed = run(COMPARE, tmp_path / "bad.ipynb", *SMALL, "QUEUES=0")
    assert completed.returncode != 0
    assert "--queues: need 1 <= LOW <= HIGH, got '0'" in completed.stderr


def test_an_unknown_parameter_is_refused_naming_it_and_the_known_ones(tmp_path: Path) -> None:
    completed = run(COMPARE, tmp_path / "typo.ipynb", "QUEUE=64")
    assert completed.returncode == 2
    assert "'QUEUE'" in completed.stderr
    assert "QUEUES" in completed.stderr
    assert not (tmp_path / "typo.ipynb").exists()


def test_values_read_as_on_papermills_command_line() -> None:
    execute = load_execute()
    assert execute.parameter_value("None") is None
    assert execute.parameter_value("15") == 15
    assert execute.parameter_value("0.5") == 0.5
    assert execute.parameter_value("True") is True
    assert execute.parameter_value("1:512") == "1:512"
    assert execute.parameter_value("rolling_restart=3,crash=1") == "rolling_restart=3,crash=1"


def test_injected_cell_follows_the_parameters_cell_and_replaces_an_earlier_one() -> None:
    execute = load_execute()
    notebook = nbformat.read(COMPARE, as_version=4)
    parameters_at = next(
        index
        for index, cell in enumerate(notebook.cells)
        if "parameters" in cell.metadata.get("tags", [])
    )
    execute.inject(notebook, {"SCENARIOS": 15})
    execute.inject(notebook, {"SYSTEM": "kafka-eager", "MIX": None})
    injected = [
        index
        for index, cell in enumerate(notebook.cells)
        if "injected-parameters" in cell.metadata.get("tags", [])
    ]
    assert injected == [parameters_at + 1]
    source = notebook.cells[parameters_at + 1].source
    assert "SYSTEM = 'kafka-eager'" in source
    assert "MIX = None" in source
    assert "SCENARIOS" not in source
    execute.inject(notebook, {})
    assert not any(
        "injected-parameters" in cell.metadata.get("tags", []) for cell in notebook.cells
    ), "a run without --set runs the parameters cell's own values"


def test_sac_protocol_notebook_runs_and_draws(tmp_path: Path) -> None:
    output = tmp_path / "sac_protocol.ipynb"
    completed = run(NOTEBOOKS / "sac_protocol.ipynb", output, env={**os.environ, "RUNS": "8"})
    assert completed.returncode == 0, completed.stderr
    assert images(output), "the notebook draws its plots"


@pytest.mark.parametrize("pythonpath", [None, "src"], ids=["no PYTHONPATH", "relative PYTHONPATH"])
def test_the_kernel_imports_the_library_of_this_checkout(
    tmp_path: Path, pythonpath: str | None
) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.cells.append(
        nbformat.v4.new_code_cell("import rebalancing\nprint(rebalancing.__file__)")
    )
    nbformat.write(notebook, tmp_path / "where.ipynb")
    environment = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    if pythonpath is not None:
        environment["PYTHONPATH"] = pythonpath  # relative: not where the kernel starts
    completed = run(tmp_path / "where.ipynb", tmp_path / "out.ipynb", env=environment)
    assert completed.returncode == 0, completed.stderr
    imported = Path(output_text(code_cells(tmp_path / "out.ipynb")[0]).strip())
    assert imported.is_relative_to(NOTEBOOKS.parent / "src")


def test_the_kernel_listens_on_unix_sockets_not_tcp(tmp_path: Path) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.cells.append(
        nbformat.v4.new_code_cell(
            "import json, ipykernel.connect\n"
            "print(json.loads(ipykernel.connect.get_connection_info())['transport'])"
        )
    )
    nbformat.write(notebook, tmp_path / "transport.ipynb")
    completed = run(tmp_path / "transport.ipynb", tmp_path / "out.ipynb")
    assert completed.returncode == 0, completed.stderr
    assert output_text(code_cells(tmp_path / "out.ipynb")[0]).strip() == "ipc"
    assert "TCP" not in completed.stderr
