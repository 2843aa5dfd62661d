"""Test-wide settings: hypothesis profiles (``HYPOTHESIS_PROFILE=fast|ci``), and no telemetry."""

from __future__ import annotations

import os

from hypothesis import settings

# graphiti reads this at import; the tests must never phone home.
os.environ["GRAPHITI_TELEMETRY_ENABLED"] = "false"

# No deadline anywhere: embedded databases and fsync make single examples slow at random.
settings.register_profile("default", deadline=None, max_examples=40)
settings.register_profile("fast", deadline=None, max_examples=10)
settings.register_profile("ci", deadline=None, max_examples=100, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
