"""A graph written the way dualmem wrote it at schema version 1 (before facts): episodes as
today, entities only from the keys of JSON bodies under ids of their unfolded names, no
summaries, no name embeddings, no facts. The writer is version 1's, kept here as it was
(``backends/graph/structure.py`` before the shared extraction replaced it)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import kuzu

from backends.graph.embedder import HashingEmbedder
from backends.graph.kuzu import engines
from backends.graph.kuzu.database import GraphDatabase
from backends.graph.kuzu.queries import CREATE_EPISODE, CREATE_MENTION, PUT_META
from backends.graph.stored import encode
from backends.model import Episode
from backends.search.entities import LABELS, MAX_DEPTH, MAX_ENTITIES, MAX_NAME_CHARS
from backends.search.ranking import search_text

DB_FILE = engines.FILES[engines.default]  # the run's engine (tests/conftest.py)

_NAMESPACE = uuid.UUID("b7a4f1d2-3c59-4e8a-9d0b-6e2f5a1c7d43")
_MERGE_ENTITY = (
    "MERGE (n:Entity {uuid: $uuid}) ON CREATE SET n.name = $name, n.group_id = $group_id,"
    " n.labels = $labels, n.created_at = $created_at, n.summary = '', n.attributes = '{}'"
)


def version_1_entities(group_id: str, data: Any) -> list[tuple[str, str, str]]:
    """(uuid, label, name) as version 1 extracted them."""
    found: dict[str, tuple[str, str, str]] = {}

    def add(label: str, value: Any) -> None:
        if len(found) >= MAX_ENTITIES:
            return
        if isinstance(value, str | int) and not isinstance(value, bool):
            name = " ".join(str(value).split())[:MAX_NAME_CHARS]
            if name:
                key = str(uuid.uuid5(_NAMESPACE, f"{group_id}\x1f{label}\x1f{name}"))
                found.setdefault(key, (key, label, name))
        elif isinstance(value, list):
            for item in value:
                add(label, item)
        elif isinstance(value, dict):
            named = next((value[k] for k in ("name", "path", "pattern", "id") if k in value), None)
            if isinstance(named, str):
                add(label, named)
            else:
                for key in value:
                    add(label, key)

    def walk(node: Any, depth: int) -> None:
        if depth > MAX_DEPTH:
            return
        if isinstance(node, dict):
            for key, value in node.items():
                label = LABELS.get(key) if isinstance(key, str) else None
                if label is not None:
                    add(label, value)
                else:
                    walk(value, depth + 1)
        elif isinstance(node, list):
            for item in node:
                walk(item, depth + 1)

    walk(data, 0)
    return list(found.values())


async def write_version_1(folder: Path, episodes: Sequence[Episode],
                          meta: dict[str, str] | None = None) -> None:
    """Write ``episodes`` into a new graph under ``folder`` as version 1 did, with ``meta``."""
    database = await GraphDatabase.connect(folder)
    vectors = HashingEmbedder().embed([search_text(e) for e in episodes])
    embedder = HashingEmbedder()

    def write(session: Any) -> None:
        with session.transaction():
            for episode, vector in zip(episodes, vectors, strict=True):
                created_at = episode.created_at.replace(tzinfo=None)
                session.rows(
                    CREATE_EPISODE, uuid=episode.id, name=episode.name,
                    group_id=episode.group_id, created_at=created_at,
                    source="json" if episode.data is not None else "text",
                    source_description=episode.source, content=episode.body,
                    valid_at=(episode.valid_at or episode.created_at).replace(tzinfo=None),
                    kind=episode.kind,
                    invalid_at=episode.invalid_at.replace(tzinfo=None)
                    if episode.invalid_at else None,
                    valid_at_set=episode.valid_at is not None, embedding=encode(vector),
                    edges=[])
                for key, label, name in version_1_entities(episode.group_id, episode.data):
                    session.rows(_MERGE_ENTITY, uuid=key, name=name, group_id=episode.group_id,
                                 labels=["Entity", label], created_at=created_at)
                    session.rows(CREATE_MENTION, episode=episode.id, entity=key,
                                 uuid=f"{episode.id}:{key}", group_id=episode.group_id,
                                 created_at=created_at)
            for key, value in {"schema_version": "1", "embedder": embedder.name,
                               "dimension": str(embedder.dimension), **(meta or {})}.items():
                session.rows(PUT_META, key=key, value=value)

    await database.run(write)
    await database.close()


@contextmanager
def reading(folder: Path) -> Iterator[Callable[[str], list[list[Any]]]]:
    """A function running read queries straight on Kùzu (the store closed)."""
    database = kuzu.Database(str(folder / DB_FILE), read_only=True)
    connection = kuzu.Connection(database)

    def rows(query: str) -> list[list[Any]]:
        result = connection.execute(query)
        assert isinstance(result, kuzu.QueryResult)
        try:
            return [list(row) for row in result.get_all()]
        finally:
            result.close()

    try:
        yield rows
    finally:
        connection.close()
        database.close()


def snapshot(folder: Path) -> dict[str, Any]:
    """What the graph holds beside its episodes, read straight from Kùzu (the store closed)."""
    with reading(folder) as rows:

        def found(query: str) -> set[tuple[Any, ...]]:
            return {tuple(tuple(v) if isinstance(v, list) else v for v in row)
                    for row in rows(query)}

        return {
            "entities": found("MATCH (n:Entity) RETURN n.uuid, n.name, n.labels, n.summary, "
                              "n.name_embedding IS NOT NULL"),
            "mentions": found("MATCH (e:Episodic)-[:MENTIONS]->(n:Entity) RETURN e.uuid, "
                              "n.uuid"),
            "facts": found("MATCH (a:Entity)-[:RELATES_TO]->(f:RelatesToNode_)-[:RELATES_TO]->"
                           "(b:Entity) RETURN f.uuid, a.uuid, b.uuid, f.fact, f.valid_at, "
                           "f.invalid_at, f.episodes"),
            "edges": found("MATCH (e:Episodic) RETURN e.uuid, e.entity_edges"),
            "meta": found("MATCH (m:DualmemMeta) RETURN m.key, m.value"),
        }
