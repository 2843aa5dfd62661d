"""The fault suite's figures, printed at the end of every run that included it."""

from __future__ import annotations

import pytest

from faults.harness import ITERATIONS, summary


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    lines = summary()
    if lines:
        terminalreporter.section(f"fault suite figures ({ITERATIONS} rounds per family and layer)")
        for line in lines:
            terminalreporter.write_line(line)
