"""What a graph holds that the journal cannot give a rebuilt graph again, as plain values
(``KeptFact``, ``Enrichment``) read from one graph and written to another the same on every
database:

- its history: the facts a rewrite of their memory retired (``expired_at`` set); the journal
  holds each memory's latest version only. Moving a home to another graph carries them over
  (``dualmem migrate --to``), and a graph rebuilt from the journal gets them back;
- what graphiti's LLM extraction linked a free-text memory to (``enrich.py``): asking the LLM
  again would cost time and money, and need it to be configured."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from backends.errors import MigrationError
from backends.model import Episode
from backends.search.entities import PLAIN_LABEL, Entity


@dataclass(frozen=True, slots=True)
class KeptFact:
    """A fact as the graph holds it, with its ends."""

    uuid: str
    episode: str
    """the memory that stated it, whose ``entity_edges`` keep it"""
    group_id: str
    name: str
    fact: str
    created_at: datetime
    valid_at: datetime
    invalid_at: datetime | None
    expired_at: datetime | None
    """set when a rewrite retired it"""
    source: Entity = field(compare=False)
    target: Entity = field(compare=False)
    source_id: str = ""
    target_id: str = ""
    digest: str = field(default="", compare=False)
    """the content its memory was at when the fact was read retired (``digest``): a graph
    holding the memory at that content retires the fact again even where the memory states
    it (graphiti's extraction of another memory contradicted it). Not part of the fact."""

    def __post_init__(self) -> None:
        # The ends are compared by id: a target may hold the entity under another spelling.
        object.__setattr__(self, "source_id", self.source.uuid)
        object.__setattr__(self, "target_id", self.target.uuid)

    def to_json(self) -> dict[str, Any]:
        times = {key: None if value is None else value.isoformat()
                 for key, value in (("created_at", self.created_at), ("valid_at", self.valid_at),
                                    ("invalid_at", self.invalid_at),
                                    ("expired_at", self.expired_at))}
        found = {"uuid": self.uuid, "episode": self.episode, "group_id": self.group_id,
                 "name": self.name, "fact": self.fact, **times,
                 "source": _entity_json(self.source), "target": _entity_json(self.target)}
        return found | {"digest": self.digest} if self.digest else found

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> KeptFact:
        """``MigrationError`` for anything that is no fact ``to_json`` wrote."""
        try:
            invalid, expired = data["invalid_at"], data["expired_at"]
            return cls(
                uuid=str(data["uuid"]), episode=str(data["episode"]),
                group_id=str(data["group_id"]), name=str(data["name"]), fact=str(data["fact"]),
                created_at=datetime.fromisoformat(data["created_at"]),
                valid_at=datetime.fromisoformat(data["valid_at"]),
                invalid_at=None if invalid is None else datetime.fromisoformat(invalid),
                expired_at=None if expired is None else datetime.fromisoformat(expired),
                source=_entity(data["source"]), target=_entity(data["target"]),
                digest=str(data.get("digest", "")))
        except (KeyError, TypeError, ValueError) as exc:
            raise MigrationError(f"not a fact: {exc!r}") from exc


def dump_history(facts: Sequence[KeptFact]) -> bytes:
    return orjson.dumps([fact.to_json() for fact in facts])


def latest(facts: Iterable[KeptFact]) -> dict[str, KeptFact]:
    """The last of ``facts`` for each fact, by uuid: a history file's lines say what became of
    a fact in order (retired, then stated again by a rewrite)."""
    return {fact.uuid: fact for fact in facts}


def load_history(data: bytes) -> list[KeptFact]:
    """``MigrationError`` for anything ``dump_history`` did not write."""
    try:
        found = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise MigrationError(f"not a list of retired facts: {exc}") from exc
    if not isinstance(found, list) or not all(isinstance(item, dict) for item in found):
        raise MigrationError("not a list of retired facts")
    try:
        return [KeptFact.from_json(item) for item in found]
    except MigrationError as exc:
        raise MigrationError(f"not a retired fact: {exc}") from exc


def _entity_json(entity: Entity) -> dict[str, str]:
    found = {"uuid": entity.uuid, "label": entity.label, "name": entity.name}
    return found | {"summary": entity.summary} if entity.summary else found


def _entity(data: Any) -> Entity:
    if not isinstance(data, dict) or not all(isinstance(data.get(key), str)
                                             for key in ("uuid", "label", "name")):
        raise MigrationError(f"not an entity: {data!r:.80}")
    if not PLAIN_LABEL.fullmatch(data["label"]):
        raise MigrationError(f"not an entity label: {data['label']!r:.80}")
    summary = data.get("summary", "")
    if not isinstance(summary, str):
        raise MigrationError(f"not an entity summary: {summary!r:.80}")
    return Entity(data["uuid"], data["label"], data["name"], summary)


def digest(episode: Episode) -> str:
    """A memory's content (its name and body): what an enrichment was made from, and what a
    kept fact was retired at."""
    return hashlib.sha256(f"{episode.name}\x1f{episode.body}".encode()).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class Enrichment:
    """What graphiti's LLM extraction linked one memory to, at one content (``digest``),
    beyond what our own extraction links it to: its entities (mentioned, with the summary
    graphiti wrote) and its facts."""

    episode: str
    group_id: str
    digest: str
    mentions: tuple[Entity, ...]
    facts: tuple[KeptFact, ...]

    def to_json(self) -> dict[str, Any]:
        return {"episode": self.episode, "group_id": self.group_id, "digest": self.digest,
                "mentions": [_entity_json(entity) for entity in self.mentions],
                "facts": [fact.to_json() for fact in self.facts]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Enrichment:
        """``MigrationError`` for anything ``to_json`` did not write."""
        try:
            return cls(episode=str(data["episode"]), group_id=str(data["group_id"]),
                       digest=str(data["digest"]),
                       mentions=tuple(_entity(entity) for entity in data["mentions"]),
                       facts=tuple(KeptFact.from_json(fact) for fact in data["facts"]))
        except (KeyError, TypeError) as exc:
            raise MigrationError(f"not an enrichment: {exc!r}") from exc


@dataclass(frozen=True)
class HistoryReport:
    """What a move did with the source graph's retired facts."""

    retired: int
    """retired facts the source graph holds"""
    written: int
    """of them, written on the target by this run (the rest were there, or their memory is not)"""
    orphaned: int
    """of them, of a memory the target does not hold (deleted since): not carried"""
    missing: int
    """of the others, not found on the target as they are on the source after the write"""

    @property
    def ok(self) -> bool:
        return self.missing == 0

    def to_json(self) -> dict[str, Any]:
        return {"retired": self.retired, "written": self.written, "orphaned": self.orphaned,
                "missing": self.missing, "ok": self.ok}

    def summary(self) -> str:
        line = f"history: {self.retired} retired facts, {self.written} written"
        if self.orphaned:
            line += f", {self.orphaned} of memories gone"
        return line + ("" if self.ok else f", {self.missing} MISSING on the target")


def compare(source: Sequence[KeptFact], held: Iterable[str],
            target: Iterable[KeptFact], written: int) -> HistoryReport:
    """The report of a carry: ``source``'s facts against ``target``'s after the write, those of
    memories not ``held`` by the target left out."""
    episodes = set(held)
    found = set(target)
    carried = [fact for fact in source if fact.episode in episodes]
    return HistoryReport(retired=len(source), written=written,
                         orphaned=len(source) - len(carried),
                         missing=sum(fact not in found for fact in carried))
