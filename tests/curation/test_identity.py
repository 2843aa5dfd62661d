"""One identity per memory: a task outcome captured again is its latest state, whole, with the
earlier captures kept (on every layer)."""

from __future__ import annotations

from backends.protocol import MemoryBackend
from curation.conftest import PROJECT
from memory.agent.memories import AgentMemory


async def test_a_recaptured_outcome_is_its_latest_state(store: MemoryBackend) -> None:
    memory = AgentMemory(store, PROJECT)
    first = await memory.capture_task_outcome(
        outcome_type="task_blocked", task_id="T-9", task_title="Login", success=False,
        summary="blocked on the OAuth sandbox", problems_encountered=["sandbox down"])
    again = await memory.capture_task_outcome(
        outcome_type="task_completed", task_id="T-9", task_title="Login", success=True,
        summary="login shipped")
    assert again == first  # the same OUT- id: one memory
    [episode] = [e async for e in store.scan(kinds=["task_outcome"])]
    data = episode.data
    assert data.get("outcome_type", "task_completed") == "task_completed"
    assert data["success"] is True and data["outcome"] == "login shipped"
    assert "problems_encountered" not in data and "blocked" not in episode.name
    assert "succeeded" in episode.name
    [earlier] = data["earlier"]
    assert earlier["outcome_type"] == "task_blocked" and earlier["success"] is False
    assert earlier["problems_encountered"] == ["sandbox down"]
    # The same capture once more changes nothing.
    await memory.capture_task_outcome(
        outcome_type="task_completed", task_id="T-9", task_title="Login", success=True,
        summary="login shipped")
    assert [e async for e in store.scan(kinds=["task_outcome"])] == [episode]
