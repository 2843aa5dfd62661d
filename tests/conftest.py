"""Test-wide settings: hypothesis profiles (``HYPOTHESIS_PROFILE=fast|ci``), no telemetry, the
random seed of randomized tests (``DUALMEM_TEST_SEED``, printed when such a test fails), and the
embedded engine of the run (``DUALMEM_TEST_GRAPH_ENGINE=ladybug``: every graph the suites open
by path is LadybugDB; Kùzu and LadybugDB cannot share a process, see backends/graph/kuzu/engines.py,
so ``make test`` runs the graph suites on LadybugDB in a pytest of their own)."""

from __future__ import annotations

import os
import random
from collections.abc import Generator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from backends.graph.address import check_engine
from backends.graph.kuzu import engines

# graphiti reads this at import; the tests must never phone home.
os.environ["GRAPHITI_TELEMETRY_ENABLED"] = "false"

ENGINE_VARIABLE = "DUALMEM_TEST_GRAPH_ENGINE"
engines.default = check_engine(os.environ.get(ENGINE_VARIABLE) or engines.default)
# Loaded now, before any test module's `import kuzu`, so that on LadybugDB it finds the bridge.
engines.load(engines.default)

# No deadline and no too-slow check anywhere: embedded databases and fsync make single examples
# slow at random on a loaded machine, which says nothing about the property under test.
_TIMING: dict[str, Any] = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("default", max_examples=40, **_TIMING)
settings.register_profile("fast", max_examples=10, **_TIMING)
settings.register_profile("ci", max_examples=100, print_blob=True, **_TIMING)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

SEED_VARIABLE = "DUALMEM_TEST_SEED"
_SEED = pytest.StashKey[int]()


@pytest.fixture
def seed(request: pytest.FixtureRequest) -> int:
    """The seed of this test's randomness: ``$DUALMEM_TEST_SEED`` when set, else a fresh one.
    A failing test names it, so that the run can be repeated exactly."""
    raw = os.environ.get(SEED_VARIABLE, "").strip()
    value = int(raw) if raw else random.SystemRandom().randrange(2**32)
    request.node.stash[_SEED] = value
    return value


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed and _SEED in item.stash:
        value = item.stash[_SEED]
        report.sections.append(
            ("random seed", f"seed {value}: rerun with {SEED_VARIABLE}={value}")
        )
    return report
