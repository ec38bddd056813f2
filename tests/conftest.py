"""Hypothesis profiles: `default` for developers, `ci` (derandomised) when CI is set, and
`thorough` (HYPOTHESIS_PROFILE=thorough, `make thorough`) for ten times more examples."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("ci", settings.get_profile("default"), derandomize=True)
settings.register_profile("thorough", settings.get_profile("default"), max_examples=3000)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "default")
)
