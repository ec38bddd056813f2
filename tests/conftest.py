"""Hypothesis profiles: `default` for developers, `ci` (derandomised) when CI is set, and
`thorough` (HYPOTHESIS_PROFILE=thorough, `make thorough`) for ten times more examples. The same
profile runs the tests marked `thorough` (the heavier versions of checks that lighter ones make
in the default run, which `make test` keeps under ten minutes on two cores); without it they are
deselected, unless `-m` picks tests by mark itself (`pytest -m thorough` runs just them).

And the groups of pytest-xdist (`make pytest` runs `-n 2 --dist loadgroup`): a test that uses
one of SHARED_PROCESSES' fixtures, or a module-scoped fixture, runs on the same worker as the
other tests that share it, so that each daemon (an embedded Spark, a standalone cluster and a
Connect server, a RabbitMQ broker) and each expensive module fixture starts once, not once per
worker. The Spark tests are two groups: the embedded Spark's, and the standalone cluster's and
Connect's (which start an embedded Spark of their own for their reference runs), so that the
two run side by side on the two workers (one group held the whole run's length before: 12 min
of a 13 min 56 s make test on a fresh clone). The workers sort the daemons' groups first (in
SHARED_PROCESSES' order), then the other groups, then single tests, and xdist hands them out in
that order, so the Spark groups start at once and the single tests fill in around them.

xdist's own loadgroup tells the controller a test's group by appending `@group` to its node id,
which pytest 9.2 no longer lets a plugin change (pytest-xdist issue 1386): the groups would be
silently ignored. So each worker writes the groups it computed into a file, and the controller
schedules with GroupsFromWorkers, which reads them (and honours `xdist_group` marks too)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
# hypothesis's own 100 examples by default and in CI (300 before: make test on a fresh clone
# went from 12 min 29 s to 10 min 46 s of pytest); the thorough profile draws 3,000
settings.register_profile("ci", settings.get_profile("default"), derandomize=True)
settings.register_profile("thorough", settings.get_profile("default"), max_examples=3000)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "default")
settings.load_profile(PROFILE)

JIT_OPTIONS = "-XX:TieredStopAtLevel=1"
"""The JVMs the tests start compile with HotSpot's quick compiler only, not also its optimising
one, whose threads take most of the CPU of a short-lived JVM: a standalone cluster's master and
two workers start in 13.5 CPU-seconds instead of 27, and tests/harness/test_cluster.py and
test_connect.py take 179 instead of 289 (CPU of every process they start, from a cgroup). Spark
runs the same plans either way; only how its JVM compiles them differs. SPARK_SUBMIT_OPTS reaches
every spark-submit (the embedded Spark's, the jobs', the Connect server's),
SPARK_DAEMON_JAVA_OPTS the standalone master and workers, and spark_submit_command passes it to
the executors; a caller's own values win."""
for _variable in ("SPARK_SUBMIT_OPTS", "SPARK_DAEMON_JAVA_OPTS"):
    os.environ.setdefault(_variable, JIT_OPTIONS)

SHARED_PROCESSES = {
    # the cluster and Connect tests also need an embedded Spark (their reference run): their
    # own group starts one on the other worker, so that the two Spark groups run side by side
    "standalone_cluster": "cluster",
    "connect_server": "cluster",
    "spark": "spark",
    "rabbitmq_session_broker": "rabbitmq",
}
"""Fixture name -> group of the tests that use it (directly or through other fixtures); the
first one that applies."""

GROUPS_DIRECTORY = "rebalancing_groups_directory"
"""The key of the workers' input naming the directory where each worker writes its groups."""


def xdist_group(item: pytest.Item) -> str | None:
    """The group `item` runs in: its `xdist_group` mark, else SHARED_PROCESSES' first fixture
    it uses, else its module when it uses a module-scoped fixture, else none (any worker)."""
    for mark in item.iter_markers("xdist_group"):
        return str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
    fixtures = getattr(item, "fixturenames", ())
    for fixture, group in SHARED_PROCESSES.items():
        if fixture in fixtures:
            return group
    fixture_info = getattr(item, "_fixtureinfo", None)
    definitions = fixture_info.name2fixturedefs.values() if fixture_info is not None else ()
    if any(chain[-1].scope == "module" for chain in definitions if chain):
        return item.nodeid.split("::", 1)[0]
    return None


groups_directory_key = pytest.StashKey[Path]()


def groups_directory(config: pytest.Config) -> Path:
    """The directory, made on the controller at its first use, where the workers write their
    groups (removed at the end of the run)."""
    if groups_directory_key not in config.stash:
        config.stash[groups_directory_key] = Path(tempfile.mkdtemp(prefix="xdist-groups-"))
    return config.stash[groups_directory_key]


def pytest_unconfigure(config: pytest.Config) -> None:
    if groups_directory_key in config.stash:
        shutil.rmtree(config.stash[groups_directory_key], ignore_errors=True)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    node.workerinput[GROUPS_DIRECTORY] = str(groups_directory(node.config))


def deselect_thorough(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Leave out the tests marked `thorough` unless the thorough profile runs or `-m` chooses
    by mark (see the module's docstring)."""
    if PROFILE == "thorough" or config.getoption("markexpr", ""):
        return
    thorough = [item for item in items if item.get_closest_marker("thorough") is not None]
    if thorough:
        config.hook.pytest_deselected(items=thorough)
        items[:] = [item for item in items if item.get_closest_marker("thorough") is None]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Leave out the thorough tests (deselect_thorough); then, on an xdist worker, sort the
    tests (groups first, see the module's docstring) and write {node id: group} of the grouped
    tests for the controller."""
    deselect_thorough(config, items)
    worker_input = getattr(config, "workerinput", None)
    if worker_input is None or GROUPS_DIRECTORY not in worker_input:
        return
    groups = {item.nodeid: group for item in items if (group := xdist_group(item)) is not None}
    first = list(dict.fromkeys(SHARED_PROCESSES.values()))  # the daemons' groups
    items.sort(  # stable: within a group, and among single tests, the order stays as collected
        key=lambda item: (
            first.index(groups[item.nodeid]) if groups.get(item.nodeid) in first else len(first),
            item.nodeid not in groups,
        )
    )
    directory = Path(worker_input[GROUPS_DIRECTORY])
    written = directory / f"{worker_input['workerid']}.json.partial"
    written.write_text(json.dumps(groups))
    written.rename(directory / f"{worker_input['workerid']}.json")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """--dist loadgroup: xdist's scope scheduling over the groups the workers wrote."""
    if config.getoption("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupsFromWorkers(LoadScopeScheduling):  # type: ignore[misc]
        """A test's scope is its group, read from the workers' files once they have all
        finished collecting (xdist splits scopes only then), else the test itself."""

        groups: dict[str, str] | None = None

        def __init__(self, config: pytest.Config, log: Any) -> None:
            super().__init__(config, log)
            # scopes in the order the workers sorted the tests (the daemons' groups first),
            # not xdist's largest-first, which would start the long Spark group late
            config.option.loadscopereorder = False

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:
                self.groups = {}
                for written in sorted(groups_directory(config).glob("*.json")):
                    self.groups.update(json.loads(written.read_text()))
            return self.groups.get(nodeid, nodeid)

    return GroupsFromWorkers(config, log)
