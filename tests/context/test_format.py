"""How memories and system knowledge read in a context."""

from __future__ import annotations

from backends.model import Episode
from memory.agent.turns import TurnState
from memory.context.format import MAX_DETAIL_CHARS, episode_block, gate_block, turn_block
from seeds import builtin_knowledge


def test_a_memory_reads_as_one_line() -> None:
    named = Episode.create(group_id="p", kind="gotcha", name="Kuzu lock",
                           body="Only one process\n  may open the graph read-write")
    assert episode_block(named, 0).text == (
        "- **Kuzu lock**: Only one process may open the graph read-write\n"
    )
    # The agent API names a free-text memory by its text: it is said once.
    same = Episode.create(group_id="p", kind="gotcha", name="Only one writer",
                          body="Only one writer at a time")
    assert episode_block(same, 0).text == "- Only one writer at a time\n"
    structured = Episode.create(group_id="p", kind="failed_approach", name="Lazy imports", body={
        "approach": "Lazy imports", "symptom": "tests broke", "first_seen": "2026-01-01",
        "occurrence_count": 2,
    })
    assert episode_block(structured, 0).text == (
        "- **Lazy imports**: symptom: tests broke; occurrence count: 2\n"
    )
    long = Episode.create(group_id="p", kind="pattern", name="Long", body="word " * 1000)
    block = episode_block(long, 0)
    assert len(block.text) < MAX_DETAIL_CHARS + 20 and block.text.endswith("…\n")
    assert block.clipped(100).text == block.text[: len("- **Long**: ") + 100].rstrip() + "…\n"


def test_gate_and_turn_blocks() -> None:
    gate = builtin_knowledge().gate("feature", 5)
    assert gate_block(gate).text == (
        "**feature, complexity 4-6** (QG-feature-4-6):\n- Architecture review: required, "
        "score at least 60\n- Coverage: required, at least 80%\n- Tests: required, must pass\n"
    )
    turn = TurnState.model_validate({  # by the aliases, which only validation knows
        "feature_id": "F", "task_id": "T-1", "turn": 2, "coach_decision": "revise",
        "coach_feedback": "Add error-path tests.", "progress_summary": "login works",
        "blockers": ("flaky CI",), "acceptance_criteria": {"login": "met"}})
    assert turn_block(turn, 0).text == (
        "- **Turn 2 (T-1)**: Coach revise. Feedback: Add error-path tests. Progress: login "
        "works. Blockers: flaky CI. Criteria: login: met.\n"
    )
    approved = turn.model_copy(update={"coach_decision": "approve"})
    assert "Feedback" not in turn_block(approved, 0).text
