"""The evaluation's module paths of 0.1.0 keep working for one version: each imports, with a
DeprecationWarning naming where it moved, as the module(s) now holding what it held."""

from __future__ import annotations

import importlib
import sys
import warnings

import pytest

from rebalancing.evaluation.decision import systems, verdict
from rebalancing.evaluation.moved import MOVED, REMOVED_IN
from rebalancing.evaluation.report import tables, verdict_text
from rebalancing.evaluation.scoring import definitions, replay


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_imports_with_a_warning_naming_where_it_moved(old: str) -> None:
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=rf"{old} moved to .*goes in {REMOVED_IN}"):
        module = importlib.import_module(old)
    for new in MOVED[old]:
        target = importlib.import_module(new)
        public = [name for name in vars(target) if not name.startswith("_")]
        assert public
        for name in public:
            assert getattr(module, name) is getattr(target, name), (old, name)


def test_the_old_verdict_path_still_gives_every_name_it_had() -> None:
    sys.modules.pop("rebalancing.evaluation.verdict", None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from rebalancing.evaluation import verdict as old_verdict  # type: ignore[attr-defined]
    assert old_verdict.decide is verdict.decide
    assert old_verdict.render_text is verdict_text.render_text
    assert old_verdict.SYSTEM_VERDICTS is systems.SYSTEM_VERDICTS
    assert old_verdict.how_to_run is systems.how_to_run


def test_a_single_target_is_the_very_module_and_the_glossary_is_both_halves() -> None:
    sys.modules.pop("rebalancing.evaluation.replay", None)
    sys.modules.pop("rebalancing.evaluation.glossary", None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        old_replay = importlib.import_module("rebalancing.evaluation.replay")
        old_glossary = importlib.import_module("rebalancing.evaluation.glossary")
    assert old_replay is replay
    assert old_glossary.SCORES is definitions.SCORES
    assert old_glossary.SUMMARY_COLUMNS is tables.SUMMARY_COLUMNS


def test_a_path_that_never_existed_is_still_an_import_error() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("rebalancing.evaluation.no_such_module")
