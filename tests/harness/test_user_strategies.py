"""A user's own strategy, `package.module:function` from a module outside the installed package,
is scored by the harness on the embedded Spark: the module goes to the executors with the job
(without it they cannot find it), and what is shipped is exactly what the executors need."""

from __future__ import annotations

import json
import math
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from rebalancing.evaluation.scenarios.changes import generate_scenarios
from rebalancing.evaluation.scoring.aggregates import summarise
from rebalancing.evaluation.scoring.replay import score_scenarios
from rebalancing.harness.job import run, score_rows
from rebalancing.harness.options import ParameterError, parse_options
from rebalancing.harness.reports import to_summary
from rebalancing.harness.shipping import is_this_package, plan_shipping
from rebalancing.strategies import resolve
from tests.harness.spark_runs import SMALL, USER_STRATEGY_SOURCE


@pytest.fixture
def module_outside_the_package(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """A one-file module with the README's `by_crc`, importable on the driver only, under a name
    of its own per test (the embedded Spark's Python workers outlive a test)."""
    name = f"crc_strategy_{request.node.name.replace('[', '_').replace(']', '_')}"
    directory = tmp_path / "user"
    directory.mkdir()
    (directory / f"{name}.py").write_text(USER_STRATEGY_SOURCE)
    monkeypatch.syspath_prepend(str(directory))
    yield name
    sys.modules.pop(name, None)


def test_a_strategy_from_a_module_outside_the_package_is_scored_on_local_spark(
    spark: SparkSession, module_outside_the_package: str, tmp_path: Path
) -> None:
    spec = f"{module_outside_the_package}:by_crc"
    arguments = ["--scenarios", "30", "--seed", "4", "--strategies", f"sticky,{spec}", *SMALL]
    options = parse_options([*arguments, "--out", str(tmp_path / "out")])
    assert options.strategies == ("sticky", spec)
    run(options, spark)
    info = json.loads((tmp_path / "out" / "run.json").read_text())
    # the local workers import the package from the driver's own files: only the module goes
    assert info["shipped_to_executors"] == [f"{module_outside_the_package}.py"]
    assert "driver's own copy" in info["not_shipped"]["rebalancing"]
    from_spark = to_summary(pq.read_table(tmp_path / "out" / "aggregates.parquet").to_pylist())
    rows = score_scenarios(
        generate_scenarios(4, range(30), options.settings), {spec: resolve(spec)}
    )
    for (strategy, change), metrics in summarise(rows).items():
        for metric in ("balance_degree", "stickiness", "moves", "orphans"):
            expected, actual = metrics[metric], from_spark[(strategy, change)][metric]
            assert actual.count == expected.count
            assert (actual.mean is None) == (expected.mean is None)
            if expected.mean is not None and actual.mean is not None:
                assert math.isclose(actual.mean, expected.mean, rel_tol=1e-9, abs_tol=1e-12)
    assert from_spark[(spec, "all")]["orphans"].max == 0


def test_without_the_shipped_module_the_executors_cannot_find_the_strategy(
    spark: SparkSession, module_outside_the_package: str, tmp_path: Path
) -> None:
    spec = f"{module_outside_the_package}:by_crc"
    options = parse_options(
        ["--scenarios", "4", "--strategies", spec, "--out", str(tmp_path / "out"), *SMALL]
    )
    unshipped = score_rows(spark, options, partitions=1)  # the job's stage, before any shipping
    with pytest.raises(Exception, match=f"could not import module '{module_outside_the_package}'"):
        unshipped.collect()


def test_a_user_strategy_object_keeps_its_own_name_and_may_not_take_anothers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "named_strategies.py").write_text(
        "from rebalancing.strategies import STRATEGIES, Strategy\n"
        "CRC = Strategy('crc', STRATEGIES['sticky'].assign, 'a user strategy object')\n"
        "STICKY_AGAIN = Strategy('sticky', STRATEGIES['sticky'].assign, 'same name')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "named_strategies", raising=False)
    options = parse_options(
        ["--strategies", "sticky,named_strategies:CRC", "--out", str(tmp_path / "out")]
    )
    assert options.strategies == ("sticky", "named_strategies:CRC")
    with pytest.raises(ParameterError, match="'sticky' and 'named_strategies:STICKY_AGAIN'"):
        parse_options(["--strategies", "sticky,named_strategies:STICKY_AGAIN"])
    sys.modules.pop("named_strategies", None)


def test_the_package_archive_holds_every_module_and_is_the_same_every_time(
    tmp_path: Path,
) -> None:
    first = plan_shipping(["sticky"], tmp_path / "one")
    second = plan_shipping(["sticky"], tmp_path / "two")
    (archive,) = first.files
    assert archive.name == "rebalancing.zip"
    assert archive.read_bytes() == second.files[0].read_bytes()
    names = zipfile.ZipFile(archive).namelist()
    source = Path(__file__).parents[2] / "src" / "rebalancing"
    expected = sorted(
        f"rebalancing/{path.relative_to(source).as_posix()}"
        for path in source.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    )
    assert names == expected
    assert "rebalancing/harness/job.py" in names


def test_a_user_package_goes_as_a_zip_and_compiled_or_standard_modules_stay_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for package, files in {
        "pure_user_pkg": {"__init__.py": "", "sub/__init__.py": "", "sub/mod.py": "def f(): ..."},
        "compiled_user_pkg": {"__init__.py": "", "fast.cpython-311-x86_64-linux-gnu.so": ""},
    }.items():
        for relative, text in files.items():
            (tmp_path / package / relative).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / package / relative).write_text(text)
        monkeypatch.delitem(sys.modules, package, raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    plan = plan_shipping(
        ["averagely", "pure_user_pkg.sub.mod:f", "compiled_user_pkg:f", "json:dumps"],
        tmp_path / "ship",
    )
    assert [path.name for path in plan.files] == ["rebalancing.zip", "pure_user_pkg.zip"]
    assert zipfile.ZipFile(plan.files[1]).namelist() == [
        "pure_user_pkg/__init__.py",
        "pure_user_pkg/sub/__init__.py",
        "pure_user_pkg/sub/mod.py",
    ]
    assert set(plan.not_shipped) == {"compiled_user_pkg", "json"}
    assert "install it on the executors" in plan.not_shipped["compiled_user_pkg"]
    assert "standard library" in plan.not_shipped["json"]
    for package in ("pure_user_pkg", "pure_user_pkg.sub", "pure_user_pkg.sub.mod"):
        sys.modules.pop(package, None)
    sys.modules.pop("compiled_user_pkg", None)


def test_the_package_stays_behind_only_for_workers_that_import_the_drivers_own_copy(
    spark: SparkSession, tmp_path: Path
) -> None:
    import rebalancing
    from rebalancing.harness.job import _worker_package_origin

    # the embedded session's workers find the driver's own files
    assert is_this_package(_worker_package_origin(spark))
    assert is_this_package(rebalancing.__file__)
    elsewhere = tmp_path / "rebalancing" / "__init__.py"
    elsewhere.parent.mkdir()
    elsewhere.write_text(Path(rebalancing.__file__).read_text())
    assert not is_this_package(str(elsewhere))  # the same text, another copy
    assert not is_this_package(None)
    plan = plan_shipping(["sticky"], tmp_path / "ship", ship_package=False)
    assert plan.files == ()
    assert set(plan.not_shipped) == {"rebalancing"}
