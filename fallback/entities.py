"""The entities each journal memory names and the facts it states (``search.entities``), kept
in the journal's SQLite index beside its text index, so that every process (not only the one
holding the graph) expands a query as the graph does: to the memories that name its files,
modules and components, and one fact further.

Only what follows from each memory as it now stands is kept: its entities, mentions and facts
with their validity. The history of a rewritten memory's facts (invalidated, not erased) is the
graph's alone, as the journal keeps only the latest version of a memory.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Iterable
from datetime import datetime

from backends.model import Episode
from backends.search.entities import extract
from backends.search.expansion import holds, matchable

SCHEMA = """
CREATE TABLE IF NOT EXISTS ent_entities (
    uuid TEXT PRIMARY KEY, grp TEXT NOT NULL, terms TEXT) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS ent_terms (term TEXT NOT NULL, uuid TEXT NOT NULL,
    PRIMARY KEY (term, uuid)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS ent_mentions (uuid TEXT NOT NULL, episode TEXT NOT NULL,
    grp TEXT NOT NULL, kind TEXT NOT NULL, PRIMARY KEY (uuid, episode)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS ent_mentions_episode ON ent_mentions (episode);
CREATE TABLE IF NOT EXISTS ent_facts (entity TEXT NOT NULL, fact TEXT NOT NULL,
    other TEXT NOT NULL, episode TEXT NOT NULL, valid_at TEXT NOT NULL, invalid_at TEXT,
    PRIMARY KEY (entity, fact)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS ent_facts_episode ON ent_facts (episode);
"""
# ent_facts holds each fact twice, once from each end, so a hop is one indexed read.


def create(db: sqlite3.Connection) -> None:
    for statement in SCHEMA.split(";"):
        if statement.strip():
            db.execute(statement)


def put(db: sqlite3.Connection, episodes: Collection[Episode]) -> None:
    """Record what each episode names, replacing what it named before."""
    drop(db, [episode.id for episode in episodes])
    for episode in episodes:
        found = extract(episode)
        for entity in found.entities:
            terms = matchable(entity)
            created = db.execute("INSERT OR IGNORE INTO ent_entities VALUES (?, ?, ?)", (
                entity.uuid, episode.group_id, None if terms is None else " ".join(sorted(terms))))
            if created.rowcount and terms is not None:
                db.executemany("INSERT OR IGNORE INTO ent_terms VALUES (?, ?)",
                               ((term, entity.uuid) for term in terms))
            db.execute("INSERT OR IGNORE INTO ent_mentions VALUES (?, ?, ?, ?)",
                       (entity.uuid, episode.id, episode.group_id, episode.kind))
        for fact in found.facts:
            ends = (fact.valid_at.isoformat(),
                    None if fact.invalid_at is None else fact.invalid_at.isoformat())
            db.executemany("INSERT OR IGNORE INTO ent_facts VALUES (?, ?, ?, ?, ?, ?)", [
                (fact.source, fact.uuid, fact.target, episode.id, *ends),
                (fact.target, fact.uuid, fact.source, episode.id, *ends)])


def drop(db: sqlite3.Connection, episode_ids: Collection[str]) -> None:
    # A fact's ends are entities its own episode mentions: the mentions decide what stays.
    for episode_id in episode_ids:
        db.execute("DELETE FROM ent_facts WHERE episode = ?", (episode_id,))
        named = [row[0] for row in db.execute(
            "DELETE FROM ent_mentions WHERE episode = ? RETURNING uuid", (episode_id,))]
        for uuid in named:
            if db.execute("SELECT 1 FROM ent_mentions WHERE uuid = ? LIMIT 1",
                          (uuid,)).fetchone() is None:
                db.execute("DELETE FROM ent_entities WHERE uuid = ?", (uuid,))
                db.execute("DELETE FROM ent_terms WHERE uuid = ?", (uuid,))


class JournalLinks:
    """``expansion.Links`` over the journal's index."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def named(self, query_terms: frozenset[str], exact: Collection[str],
              groups: Collection[str] | None) -> list[tuple[str, str, int, frozenset[str]]]:
        terms = list(query_terms)
        rows = self._db.execute(
            f"SELECT DISTINCT e.uuid, e.grp, e.terms FROM ent_terms t JOIN ent_entities e"
            f" ON e.uuid = t.uuid WHERE t.term IN ({','.join('?' * len(terms))})", terms
        ).fetchall() if terms else []
        found = {uuid: (grp, frozenset(text.split())) for uuid, grp, text in rows
                 if set(text.split()) <= query_terms}
        if exact:
            listed = list(exact)
            found.update((uuid, (grp, frozenset((text or "").split()))) for uuid, grp, text
                         in self._db.execute(
                f"SELECT uuid, grp, terms FROM ent_entities WHERE uuid IN"
                f" ({','.join('?' * len(listed))})", listed).fetchall())
        return [(uuid, grp, self._df(uuid), words) for uuid, (grp, words) in sorted(found.items())
                if groups is None or grp in groups]

    def _df(self, uuid: str) -> int:
        return int(self._db.execute("SELECT count(*) FROM ent_mentions WHERE uuid = ?",
                                    (uuid,)).fetchone()[0])

    def mentioning(self, entities: Collection[str], groups: Collection[str] | None,
                   kinds: Collection[str] | None) -> Iterable[tuple[str, str]]:
        listed = list(entities)
        rows = self._db.execute(
            f"SELECT episode, uuid, grp, kind FROM ent_mentions"
            f" WHERE uuid IN ({','.join('?' * len(listed))})", listed).fetchall()
        return [(episode, uuid) for episode, uuid, grp, kind in rows
                if (groups is None or grp in groups) and (kinds is None or kind in kinds)]

    def neighbours(self, entities: Collection[str], at: datetime | None
                   ) -> Iterable[tuple[str, str]]:
        listed = list(entities)
        rows = self._db.execute(
            f"SELECT entity, other, valid_at, invalid_at FROM ent_facts"
            f" WHERE entity IN ({','.join('?' * len(listed))})", listed).fetchall()
        return [(entity, other) for entity, other, valid_at, invalid_at in rows
                if holds(datetime.fromisoformat(valid_at),
                         None if invalid_at is None else datetime.fromisoformat(invalid_at), at)]

    def size(self, group: str) -> int:
        return int(self._db.execute("SELECT count(*) FROM episodes WHERE group_id = ?",
                                    (group,)).fetchone()[0])
