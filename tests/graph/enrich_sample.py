"""The memories and the scripted LLM's answers the enrichment tests share, on every database
(tests/graph/test_enrich.py embedded, tests/falkor/test_enrich.py on a server)."""

from __future__ import annotations

import json

import pytest

from backends.model import Episode
from memory.cli import main

GROUP = "shop"
# "Redis" is nowhere in the text: only the LLM's extraction can link the memory to it.
NOTE = Episode.create(group_id=GROUP, kind="session_insight", name="sessions",
                      body="Moving `SessionStore` to the shared cache server fixed the cookie "
                           "size limit for good.")
OUTCOME = Episode.create(group_id=GROUP, kind="task_outcome", name="T-1 ok", key="T-1",
                         body={"task_id": "T-1", "success": True,
                               "metadata": {"files_modified": ["src/auth/session.py"]}})
ANSWERS = {
    "ExtractedEntities": {"extracted_entities": [
        {"name": "SessionStore", "entity_type_id": 0}, {"name": "Redis", "entity_type_id": 0}]},
    "ExtractedEdges": {"edges": [
        {"source_entity_name": "SessionStore", "target_entity_name": "Redis",
         "relation_type": "STORED_IN", "fact": "SessionStore keeps sessions in Redis"}]},
}


def enrich_twice(where: list[str], llm: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """``dualmem enrich`` twice on ``where`` (a home, or a server) with ``llm``: the first
    enriches the note, or finds the writer's background enrichment began it; the second finds
    nothing new; then the graph's search reaches the note through "Redis", which only the LLM
    named (the journal's index keeps our own extraction only)."""
    capsys.readouterr()
    assert main([*where, *llm, "--json", "enrich", "--all-groups"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["enriched"] + first["already"] == 1
    assert main([*where, *llm, "--json", "enrich", "--all-groups"]) == 0
    assert json.loads(capsys.readouterr().out) == {"enriched": 0, "already": 1, "entities": 0,
                                                   "facts": 0, "sessions": 0}
    assert main([*where, "--backend", "graph", "search", "--all-groups", "Redis"]) == 0
    assert NOTE.name in capsys.readouterr().out
