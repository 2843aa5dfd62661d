"""The memories and the scripted LLM's answers the enrichment tests share, on every database
(tests/graph/test_enrich.py embedded, tests/falkor/test_enrich.py on a server)."""

from __future__ import annotations

from backends.model import Episode

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
