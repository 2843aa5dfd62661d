"""The graph is read: searches and context builds over a store follow its entities and facts,
so deleting them (the episodes left as they are) changes what comes back, for the worse."""

from __future__ import annotations

from pathlib import Path

import kuzu
from coding_corpus import GROUP, Question, project

from backends.graph import GraphBackend
from backends.graph.kuzu import engines
from memory.context import Task, build_context

DB_FILE = engines.FILES[engines.default]  # the run's engine (tests/conftest.py)

DATA = project()
TASKS = [Task(id="T-1", description=f"Make {q.text.split()[-1].rstrip('?')} faster")
         for q in DATA.questions if q.kind == "component"][:2]


def drop_entities(folder: Path) -> None:
    database = kuzu.Database(str(folder / DB_FILE))
    connection = kuzu.Connection(database)
    for query in ("MATCH (f:RelatesToNode_) DETACH DELETE f", "MATCH (n:Entity) DETACH DELETE n"):
        connection.execute(query)
    connection.close()
    database.close()


async def answers(folder: Path) -> tuple[list[list[str]], list[str]]:
    graph = await GraphBackend.open(folder)
    try:
        searches = [[hit.episode.id for hit in await graph.search(q.text, group_ids=[GROUP])]
                    for q in DATA.questions]
        contexts = [(await build_context(graph, task, project_id=GROUP)).markdown
                    for task in TASKS]
    finally:
        await graph.aclose()
    return searches, contexts


def recall(questions: list[Question], rankings: list[list[str]]) -> float:
    return sum(len(q.relevant.intersection(r)) / len(q.relevant)
               for q, r in zip(questions, rankings, strict=True)) / len(questions)


async def test_deleting_the_entities_changes_search_and_context(tmp_path: Path) -> None:
    folder = tmp_path / "graph"
    graph = await GraphBackend.open(folder)
    await graph.upsert_many(DATA.memories)
    await graph.aclose()
    searches, contexts = await answers(folder)
    drop_entities(folder)
    bare_searches, bare_contexts = await answers(folder)

    changed = [q.kind for q, a, b in zip(DATA.questions, searches, bare_searches, strict=True)
               if a != b]
    assert {"component", "file", "feature"} <= set(changed)
    assert recall(DATA.questions, searches) > recall(DATA.questions, bare_searches) + 0.3
    for task, linked, bare in zip(TASKS, contexts, bare_contexts, strict=True):
        assert linked != bare, task.description
