"""The notebooks still run: each is executed with small parameters (nbclient)."""

from __future__ import annotations

from pathlib import Path

import nbclient
import nbformat
import pytest

NOTEBOOKS = Path(__file__).parents[2] / "notebooks"
SMALL = {"SCENARIOS": "15", "RUNS": "8"}


@pytest.mark.parametrize("name", ["compare_strategies.ipynb", "sac_protocol.ipynb"])
def test_notebook_runs_without_errors(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in SMALL.items():
        monkeypatch.setenv(key, value)
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    client.execute()
    images = [
        output
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if "image/png" in output.get("data", {})
    ]
    assert images, "the notebook draws its plots"
