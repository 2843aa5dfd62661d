"""Test-wide settings: hypothesis profiles (``HYPOTHESIS_PROFILE=fast|ci``), and no telemetry."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

# graphiti reads this at import; the tests must never phone home.
os.environ["GRAPHITI_TELEMETRY_ENABLED"] = "false"

# No deadline and no too-slow check anywhere: embedded databases and fsync make single examples
# slow at random on a loaded machine, which says nothing about the property under test.
_TIMING = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("default", max_examples=40, **_TIMING)
settings.register_profile("fast", max_examples=10, **_TIMING)
settings.register_profile("ci", max_examples=100, print_blob=True, **_TIMING)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
