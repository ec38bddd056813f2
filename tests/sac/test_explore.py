"""The explicit-state explorer over the spec-faithful model (what TLC does for the TLA+ spec)."""

from __future__ import annotations

import json

import pytest

from rebalancing.sac.explore import explore, main
from rebalancing.sac.model import TERMINAL_INVARIANTS

# Distinct states of Init + Next (the spec's variables only); the same for both variants, which
# differ only where two apps tie one queue over their ideal and there is a remainder (4 queues x
# 3 apps and up).
EXPECTED_STATES = {(2, 2): 181, (3, 2): 1513, (3, 3): 183_202}


@pytest.mark.parametrize("variant", ["spec", "id"])
@pytest.mark.parametrize(("queues", "apps"), sorted(EXPECTED_STATES))
def test_every_reachable_state_keeps_the_invariants_and_can_terminate(
    queues: int, apps: int, variant: str
) -> None:
    result = explore(queues, apps, variant)  # type: ignore[arg-type]
    assert result.distinct_states == EXPECTED_STATES[(queues, apps)]
    assert result.state_invariant_violations == {}
    assert result.terminal_states > 0
    assert result.terminal_violations == dict.fromkeys(TERMINAL_INVARIANTS, 0)
    assert result.all_can_terminate
    assert result.states_on_cycles > 0, "release, re-subscribe, re-activate loops exist"
    assert result.min_releases_to_terminal == 0


def test_the_command_prints_one_json_object(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--queues", "2", "--apps", "2", "--position", "id"]) == 0
    printed = json.loads(capsys.readouterr().out)
    for key in (
        "distinct_states",
        "terminal_states",
        "terminal_violations",
        "all_can_terminate",
        "states_on_cycles",
        "min_releases_to_terminal",
        "max_releases_to_terminal",
    ):
        assert key in printed
    assert printed["position"] == "id"


def test_a_group_without_queues_or_apps_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one queue and one app"):
        explore(0, 2, "spec")
