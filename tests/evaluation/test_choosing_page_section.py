"""benchmarks/choosing_a_strategy.py --system: one system's section of the page is made again
and the others are left as they were."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest


def script(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    path = Path(__file__).parents[2] / "benchmarks" / "choosing_a_strategy.py"
    monkeypatch.syspath_prepend(str(path.parent))  # as when run: its folder's shared.py
    spec = importlib.util.spec_from_file_location("choosing_a_strategy", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PAGE = """# Choosing a strategy

intro

## Kafka (`--system kafka-eager`) {#kafka-eager}

### A {#kafka-eager-a}

old kafka

## Azure (`--system azure-event-hubs`) {#azure-event-hubs}

### A {#azure-event-hubs-a}

old azure

### B {#azure-event-hubs-b}

old azure b

## KCL (`--system aws-kcl`) {#aws-kcl}

### A {#aws-kcl-a}

old kcl
"""


def test_only_the_named_systems_section_is_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    module = script(monkeypatch)
    section = [
        "## Azure (`--system azure-event-hubs`) {#azure-event-hubs}\n",
        "### A {#azure-event-hubs-a}\n\nnew azure\n",
        "### B {#azure-event-hubs-b}\n\nnew azure b\n",
    ]
    page = module._replace_section(PAGE, "azure-event-hubs", section, "made again")
    before, _, after = PAGE.partition("## Azure")
    assert page.startswith(before)
    assert page.endswith("## KCL" + after.partition("## KCL")[2])
    assert "old azure" not in page
    assert (
        "## Azure (`--system azure-event-hubs`) {#azure-event-hubs}\n\nmade again\n\n"
        "### A {#azure-event-hubs-a}\n\nnew azure\n\n### B {#azure-event-hubs-b}\n\nnew azure b\n"
        "\n## KCL"
    ) in page
    with pytest.raises(SystemExit, match="no section for rocketmq-client"):
        module._replace_section(PAGE, "rocketmq-client", section, "made again")
