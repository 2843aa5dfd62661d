"""Structure without an LLM: the files, patterns, components, tasks and features a JSON body
names become graphiti ``Entity`` rows with stable uuids, so re-writing creates no duplicates."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

# Keys as Auto-Claude and our agent API write them, mapped to an entity label.
LABELS = {
    "file": "File",
    "files": "File",
    "files_understood": "File",
    "discovered_files": "File",
    "files_modified": "File",
    "files_changed": "File",
    "files_created": "File",
    "pattern": "Pattern",
    "patterns": "Pattern",
    "patterns_found": "Pattern",
    "component": "Component",
    "components": "Component",
    "task": "Task",
    "task_id": "Task",
    "feature": "Feature",
    "feature_id": "Feature",
}
MAX_NAME_CHARS = 200
MAX_ENTITIES = 256  # per episode: a huge body must not turn one write into thousands of rows
MAX_DEPTH = 8
# Fixed forever: entity uuids are derived from it.
_NAMESPACE = uuid.UUID("b7a4f1d2-3c59-4e8a-9d0b-6e2f5a1c7d43")


@dataclass(frozen=True, slots=True)
class Entity:
    uuid: str
    label: str
    name: str


def entity_uuid(group_id: str, label: str, name: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, f"{group_id}\x1f{label}\x1f{name}"))


def extract(group_id: str, data: Any) -> list[Entity]:
    """The entities named in a parsed JSON body, each once, in order of appearance."""
    found: dict[str, Entity] = {}

    def add(label: str, value: Any) -> None:
        if len(found) >= MAX_ENTITIES:
            return
        if isinstance(value, str | int) and not isinstance(value, bool):
            name = " ".join(str(value).split())[:MAX_NAME_CHARS]
            if name:
                entity = Entity(entity_uuid(group_id, label, name), label, name)
                found.setdefault(entity.uuid, entity)
        elif isinstance(value, list):
            for item in value:
                add(label, item)
        elif isinstance(value, dict):
            # {"path": {...}} maps (codebase maps) or {"name": ...} records (pattern objects).
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
