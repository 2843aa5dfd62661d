"""Entities and facts without an LLM, the same in every layer: what an episode names (files,
modules, components, commands, tasks, features, decisions) and the facts with time it states
between them. Pure and deterministic: the same episode always yields the same ids, so re-writing
creates no duplicates and every process derives the same structure.

- Entities come from the keys agents write in JSON bodies (``file``, ``files_modified``,
  ``task_id``, ``feature``, ...) and, conservatively, from text: file paths, dotted module
  names, identifiers in backticks, CamelCase names and shell commands. An entity's id is a
  uuid5 of its group, label and folded name: the same file is one node across every memory.
- Facts (graphiti's ``RELATES_TO`` edges) follow from the kind of memory: a task outcome links
  task -> feature and task -> files with success or failure, a turn state feature -> task, an
  ADR its decision -> what it governs and -> the decision it supersedes, a discovery the file
  -> what its purpose names, a gotcha or pattern its first entity -> the others it names. A fact
  holds while its episode does (``valid_at``/``invalid_at``), and its id is a uuid5 of the
  episode and the edge, so a rewrite that drops it can invalidate it instead of erasing it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any, NamedTuple

from backends.kinds import (
    ADR,
    CODEBASE_DISCOVERY,
    FAILED_APPROACH,
    GOTCHA,
    PATTERN,
    TASK_OUTCOME,
    TURN_STATE,
)
from backends.model import Episode
from backends.search.entity_ids import entity_uuid as entity_uuid  # where others read it
from backends.search.ranking import terms
from backends.search.text_names import text_entities

# Keys as Auto-Claude and our agent API write them, mapped to an entity label.
LABELS = {
    "file": "File", "files": "File", "files_understood": "File", "discovered_files": "File",
    "files_modified": "File", "files_changed": "File", "files_created": "File",
    "pattern": "Pattern", "patterns": "Pattern", "patterns_found": "Pattern",
    "component": "Component", "components": "Component",
    "task": "Task", "task_id": "Task", "feature": "Feature", "feature_id": "Feature",
}
TYING_KINDS = frozenset({GOTCHA, PATTERN, FAILED_APPROACH})
MAX_NAME_CHARS = 200
MAX_ENTITIES = 256  # per episode: a huge body must not turn one write into thousands of rows
MAX_TEXT_ENTITIES = 32  # from free text, which is noisier
MAX_FACTS = 64
MAX_DEPTH = 8
# Fixed forever: fact uuids are derived from it (entity uuids: ``entity_ids``).
_FACT_NAMESPACE = "0d6f2e7a-91c4-4b8e-a3f5-2c7b9e1d4a60"

PLAIN_LABEL = re.compile(r"[A-Z][A-Za-z]{0,63}")
"""what an entity label may be: a plain word (a FalkorDB query carries it in its text)"""


class Entity(NamedTuple):
    uuid: str
    label: str
    name: str
    summary: str = ""


class Fact(NamedTuple):
    """graphiti's ``EntityEdge``: ``source`` -[``name``]-> ``target``, stated by ``episode``."""

    uuid: str
    source: str
    target: str
    name: str
    fact: str
    episode: str
    valid_at: datetime
    invalid_at: datetime | None


class Extraction(NamedTuple):
    entities: list[Entity]
    facts: list[Fact]


def fact_uuid(episode_id: str, source: str, name: str, target: str) -> str:
    import uuid  # loads platform: only a write finds facts

    key = f"{episode_id}\x1f{source}\x1f{name}\x1f{target}"
    return str(uuid.uuid5(uuid.UUID(_FACT_NAMESPACE), key))


def name_terms(entity: Entity) -> frozenset[str]:
    """The terms a query must hold to name ``entity``: a file by its stem ("billing/invoice.py"
    by "invoice"), a module by its last part, anything else by every word of its name, with
    CamelCase and snake_case split ("PaymentService" by "payment service")."""
    name = entity.name
    if entity.label == "File":
        stem = name.rstrip("/").rsplit("/", 1)[-1].split(".", 1)[0] or name
        name = stem
    elif entity.label == "Module":
        name = name.rsplit(".", 1)[-1]
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ")
    return frozenset(terms(spaced))


class _Found:
    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.entities: dict[str, Entity] = {}
        self.from_text = 0

    def add(self, label: str, value: Any, summary: str = "") -> Entity | None:
        if len(self.entities) >= MAX_ENTITIES or isinstance(value, bool):
            return None
        if not isinstance(value, str | int):
            return None
        name = " ".join(str(value).split())[:MAX_NAME_CHARS]
        if not name:
            return None
        if label == "File":
            name = name.removeprefix("./")
        entity = Entity(entity_uuid(self.group_id, label, name), label, name, summary)
        known = self.entities.get(entity.uuid)
        if known is None or (summary and not known.summary):
            self.entities[entity.uuid] = entity
        return self.entities[entity.uuid]

    def add_text(self, text: str) -> None:
        for label, name in text_entities(text):
            if self.from_text >= MAX_TEXT_ENTITIES:
                return
            if self.add(label, name) is not None:
                self.from_text += 1


def extract(episode: Episode) -> Extraction:
    """The entities ``episode`` names, each once in order of appearance, and its facts."""
    found = _Found(episode.group_id)
    data = episode.data
    keyed = _walk_keys(found, data)
    found.add_text(episode.name)
    for text in _texts(data if data is not None else episode.body, 0):
        found.add_text(text)
    facts = _facts(episode, found, data, keyed)
    return Extraction(list(found.entities.values()), facts[:MAX_FACTS])


def _walk_keys(found: _Found, data: Any) -> dict[str, list[Entity]]:
    """Entities named by the keys of a JSON body, by label."""
    keyed: dict[str, list[Entity]] = {}

    def add(label: str, value: Any, depth: int) -> None:
        if depth > MAX_DEPTH:
            return
        if isinstance(value, list):
            for item in value:
                add(label, item, depth + 1)
        elif isinstance(value, dict):
            # {"path": {...}} maps (codebase maps) or {"name": ...} records (pattern objects).
            named = next((value[k] for k in ("name", "path", "pattern", "id") if k in value), None)
            if isinstance(named, str):
                add(label, named, depth + 1)
            else:
                for key in value:
                    add(label, key, depth + 1)
        else:
            entity = found.add(label, value)
            if entity is not None and entity not in keyed.setdefault(label, []):
                keyed[label].append(entity)

    def walk(node: Any, depth: int) -> None:
        if depth > MAX_DEPTH:
            return
        if isinstance(node, dict):
            for key, value in node.items():
                label = LABELS.get(key) if isinstance(key, str) else None
                if label is not None:
                    add(label, value, depth + 1)
                else:
                    walk(value, depth + 1)
        elif isinstance(node, list):
            for item in node:
                walk(item, depth + 1)

    walk(data, 0)
    return keyed


def _texts(node: Any, depth: int) -> Iterator[str]:
    """The string leaves of a JSON value (or the text itself)."""
    if depth > MAX_DEPTH:
        return
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from _texts(value, depth + 1)
    elif isinstance(node, list):
        for item in node:
            yield from _texts(item, depth + 1)


def _facts(
    episode: Episode, found: _Found, data: Any, keyed: dict[str, list[Entity]]
) -> list[Fact]:
    valid_at = episode.valid_at or episode.created_at
    facts: dict[str, Fact] = {}

    def link(source: Entity, name: str, target: Entity, fact: str) -> None:
        if source.uuid == target.uuid:
            return
        key = fact_uuid(episode.id, source.uuid, name, target.uuid)
        facts.setdefault(key, Fact(key, source.uuid, target.uuid, name, fact[:1000], episode.id,
                                   valid_at, episode.invalid_at))

    body = data if isinstance(data, dict) else {}
    others = list(found.entities.values())
    kind = episode.kind
    if kind == TASK_OUTCOME and keyed.get("Task"):
        task = keyed["Task"][0]
        verdict = "succeeded" if body.get("success") else "failed"
        for feature in keyed.get("Feature", []):
            link(task, "PART_OF", feature, f"task {task.name} is part of feature {feature.name}")
        for other in others:
            if other.label in ("File", "Module", "Component", "Command"):
                link(task, "SUCCEEDED_ON" if verdict == "succeeded" else "FAILED_ON", other,
                     f"task {task.name} {verdict} on {other.name}: {episode.name}")
    elif kind == TURN_STATE and keyed.get("Feature") and keyed.get("Task"):
        feature, task = keyed["Feature"][0], keyed["Task"][0]
        link(feature, "HAS_TASK", task, f"feature {feature.name} has task {task.name}")
    elif kind == ADR and isinstance(body.get("adr_id"), str) and (
            decision := found.add("Decision", body["adr_id"], str(body.get("title", "")))):
        # (an id that names nothing, e.g. blank, makes no entity and so no facts)
        superseded = body.get("supersedes")
        if isinstance(superseded, str) and (old := found.add("Decision", superseded)):
            link(decision, "SUPERSEDES", old, f"decision {decision.name} supersedes {old.name}")
        for other in others:
            link(decision, "GOVERNS", other, f"{episode.name}: {body.get('decision', '')}")
    elif kind == CODEBASE_DISCOVERY and keyed.get("File"):
        file = keyed["File"][0]
        purpose = str(body.get("description", "")) if body else ""
        if purpose:
            found.entities[file.uuid] = Entity(file.uuid, file.label, file.name, purpose[:500])
        for other in others[1:]:
            link(file, "RELATES_TO", other, f"{file.name}: {purpose or episode.name}")
    elif kind in TYING_KINDS and others:
        # A gotcha or a pattern is about what it names together; a session's notes name many
        # unrelated things and tie nothing.
        first = others[0]
        for other in others[1:8]:
            link(first, "RELATES_TO", other, episode.name)
    return list(facts.values())
