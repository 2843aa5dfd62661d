"""Critical context (GuardKit's ``load_critical_context``): one call that always gives the
role's constraints, the task's gates, the decisions in force, the relevant failures and the
feature's overview, as data and as Markdown; and the command line over it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from backends.model import Episode
from backends.protocol import MemoryBackend
from memory.agent.decisions import Adr, record_adr, record_failed_approach, supersede_adr
from memory.agent.scopes import FEATURE_SPEC, GOTCHA
from memory.cli import main
from memory.context import load_critical_context
from seeds import Overrides, builtin_knowledge

from .conftest import fill

PROJECT = "proj-1"


async def _project(store: MemoryBackend) -> None:
    await record_adr(store, PROJECT, Adr(adr_id="ADR-FB-001", title="task-work through the SDK",
                                         decision="Invoke task-work with SDK query()"))
    await record_adr(store, PROJECT, Adr(adr_id="ADR-010", title="Sessions in memory",
                                         decision="Keep sessions in a dict"))
    await supersede_adr(store, PROJECT, "ADR-010", Adr(
        adr_id="ADR-011", title="Sessions in Redis", decision="Keep sessions in Redis"))
    await record_failed_approach(
        store, PROJECT, "Using subprocess.run() to invoke task-work",
        symptom="Command 'guardkit task-work' not found", prevention="use SDK query()",
        severity="critical", related_adrs=["ADR-FB-001"])
    await record_failed_approach(store, PROJECT, "Caching tokens in cookies",
                                 symptom="tokens leak", severity="high")
    await fill(store, [
        Episode.create(group_id=PROJECT, kind=GOTCHA, name="Redis sessions expire silently",
                       body="Redis sessions expire silently; refresh them on each request"),
        Episode.create(group_id=PROJECT, kind=FEATURE_SPEC, key="FEAT-AUTH",
                       name="FEAT-AUTH: user authentication",
                       body="Users log in with email and password; sessions expire in 30 min."),
    ])


async def test_critical_context_for_feature_work(store: MemoryBackend) -> None:
    await _project(store)
    overrides = Overrides.model_validate({"role_constraints": {"coach": {
        "must_do_additions": ["Verify OPG registration compliance"]}}})
    found = await load_critical_context(
        store, PROJECT, task="Refresh Redis sessions in task-work subprocess", task_type="bugfix",
        complexity=8, role="coach", feature_id="FEAT-AUTH", overrides=overrides)
    assert found.role.must_do[-1] == "Verify OPG registration compliance"
    assert found.quality_gates.key == "QG-feature-7-10"
    assert {adr.adr_id for adr in found.decisions} == {"ADR-FB-001", "ADR-011"}  # in force only
    assert found.failed_approaches[0].related_adrs == ("ADR-FB-001",)
    assert [e.name for e in found.failure_patterns] == ["Redis sessions expire silently"]
    assert found.feature_overview is not None
    assert found.feature_overview.name == "FEAT-AUTH: user authentication"

    markdown = found.markdown()
    for heading in ("### Your role: coach", "### Quality gates for this task",
                    "### Architecture decisions (MUST FOLLOW)",
                    "### Known failures (DO NOT REPEAT)",
                    "### Feature overview: FEAT-AUTH: user authentication"):
        assert heading in markdown
    assert "- Coverage: required, at least 85%" in markdown
    assert "**ADR-011: Sessions in Redis**: Keep sessions in Redis" in markdown
    assert "Sessions in memory" not in markdown
    assert ("**FAIL-001** Using subprocess.run() to invoke task-work (critical): Command "
            "'guardkit task-work' not found. Prevent: use SDK query() (see ADR-FB-001)") in markdown
    data = found.to_json()
    assert data["markdown"] == markdown
    assert [d["adr_id"] for d in data["decisions"]] == [a.adr_id for a in found.decisions]
    assert data["feature_overview"]["text"].startswith("Users log in")


async def test_critical_context_is_always_whole(store: MemoryBackend) -> None:
    # An empty store still gives the role and the gates; a task with no matching words still
    # gets every decision in force and the most repeated failures.
    empty = await load_critical_context(store, PROJECT)
    assert empty.role == builtin_knowledge().role("player")
    assert empty.quality_gates.key == "QG-feature-4-6"
    assert (empty.decisions, empty.failed_approaches, empty.feature_overview) == ([], [], None)
    await _project(store)
    unrelated = await load_critical_context(store, PROJECT, task="zebra quokka")
    assert {adr.adr_id for adr in unrelated.decisions} == {"ADR-FB-001", "ADR-011"}
    general = await load_critical_context(store, PROJECT, failures=1)
    assert len(general.failed_approaches) == 1
    assert [e.name for e in general.failure_patterns] == ["Redis sessions expire silently"]
    assert (await load_critical_context(store, PROJECT, feature_id="FEAT-NONE")).feature_overview \
        is None


def run(home: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code = main(["--home", str(home), "--backend", "file", *argv, "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    document: dict[str, Any] = orjson.loads(captured.out)  # the command's JSON document
    return document


def test_critical_and_context_on_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"
    (project / ".guardkit" / "config").mkdir(parents=True)
    (project / ".guardkit" / "config" / "entity-overrides.yaml").write_text(
        "quality_gate_configs: {feature: {overrides: [{complexity_range: [4, 6], "
        "coverage_threshold: 0.85}]}}\n")
    home = project / ".dualmem"
    run(home, capsys, "init")
    run(home, capsys, "add", "--kind", "gotcha", "--name", "Notes need fsync",
        "--body", "Notes written without fsync vanish on power loss")
    doc = run(home, capsys, "critical", "--task", "save notes with fsync", "--type", "feature")
    assert doc["quality_gates"]["coverage_threshold"] == 0.85
    assert "at least 85%" in str(doc["markdown"])
    assert [p["name"] for p in doc["failure_patterns"]] == ["Notes need fsync"]
    code = main(["--home", str(home), "--backend", "file", "critical", "--role", "coach"])
    assert code == 0 and "### Your role: coach" in capsys.readouterr().out

    context = run(home, capsys, "context", "--task", "save notes with fsync", "--complexity", "3")
    quality = context["quality"]
    assert isinstance(quality, dict)
    assert quality["budget_utilization"] == round(
        int(context["tokens_used"]) / int(context["budget"]), 4)
    # the store holds one memory, which the context shows: one kept, none dropped
    assert (quality["items_kept"], quality["items_dropped"]) == (1, 0)
    assert [m["name"] for m in context["memories"]["warnings"]] == ["Notes need fsync"]
    assert set(quality["category_coverage"]) == set(context["categories"])


async def test_a_gotcha_written_as_json_is_shown_with_its_text(store: MemoryBackend) -> None:
    from memory.agent.memories import AgentMemory

    await AgentMemory(store, PROJECT).add_gotcha(
        {"gotcha": "Stripe delivers events out of order", "context": "webhook ordering"})
    for task in ("", "webhook events ordering"):
        found = await load_critical_context(store, PROJECT, task=task)
        markdown = found.markdown()
        assert "- **Stripe delivers events out of order**: context: webhook ordering" in markdown
        assert found.to_json()["failure_patterns"][0]["text"].startswith(
            "Stripe delivers events out of order")
