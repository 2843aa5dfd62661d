"""Writing what capture found, without ever making memory poorer:

- the agent's own lessons are written as the agent writes them (``AgentMemory``, source
  ``claude_code``); a lesson the store refuses is counted and the others are kept;
- a derived memory never replaces one somebody else wrote under the same id (the agent's
  ``Discovery:`` of a file wins over what capture derived of it);
- a derived memory already stored from another session (a file's discovery, a gotcha met again)
  is merged with it: their notes, files and sessions united, the richer description kept;
- only what changed since the last write is written (``Written`` remembers each memory's
  digest), so a Stop with nothing new writes nothing."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from backends.errors import InvalidEpisode
from backends.model import Episode, natural_key
from backends.protocol import MemoryBackend
from memory.agent.scopes import CODEBASE_DISCOVERY
from memory.capture.derive import SOURCE, described
from memory.capture.lessons import Lessons
from seeds import put_if_changed

AGENT_SOURCE = "claude_code"
"""the source of the agent's labelled lessons (as the Stop hook always wrote them)"""
_UNITED = ("notes", "files", "sessions")
_MAX_UNITED = 12
_NAMES: dict[str, str | tuple[str, str]] = {
    "codebase_discovery": ("file discovery", "file discoveries"), "session_insight":
    "session insight", "task_outcome": "task outcome", "lesson": "lesson"}
_ORDER = {"session_insight": 0, "task_outcome": 1, "codebase_discovery": 2, "gotcha": 3,
          "pattern": 4}


@dataclass
class Kept:
    """What one capture wrote, by kind, and what it could not."""

    kinds: dict[str, int] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)

    def add(self, kind: str) -> None:
        self.kinds[kind] = self.kinds.get(kind, 0) + 1

    def __bool__(self) -> bool:
        return bool(self.kinds)

    def merge(self, other: Kept) -> None:
        for kind, count in other.kinds.items():
            self.kinds[kind] = self.kinds.get(kind, 0) + count
        self.refused += other.refused

    def describe(self) -> str:
        """``session insight, 3 file discoveries, 1 gotcha`` (empty when nothing)."""
        parts = []
        for kind, count in sorted(self.kinds.items(), key=lambda item: _ORDER.get(item[0], 9)):
            name = _NAMES.get(kind, kind.replace("_", " "))
            parts.append(f"{count} {name[count > 1]}" if isinstance(name, tuple)
                         else f"{count} {name}{'s' if count > 1 else ''}")
        return ", ".join(parts)


def digest(episode: Episode) -> str:
    return hashlib.blake2b(f"{episode.kind}\x1f{episode.name}\x1f{episode.body}".encode(),
                           digest_size=12).hexdigest()


def lesson_digests(lessons: Lessons) -> dict[str, str]:
    """A digest per lesson, keyed as ``written`` keeps them."""
    items = [("gotcha", text) for text in lessons.gotchas]
    items += [("pattern", text) for text in lessons.patterns]
    items += [("discovery", f"{path}: {text}") for path, text in lessons.discoveries.items()]
    return {f"lesson:{label}:{text}": hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
            for label, text in items}


def unwritten(episodes: Sequence[Episode], lessons: Lessons, written: dict[str, str]
              ) -> tuple[list[Episode], Lessons]:
    """What of ``episodes`` and ``lessons`` differs from what was last written."""
    fresh = [episode for episode in episodes if written.get(episode.id) != digest(episode)]
    new = {key for key, value in lesson_digests(lessons).items() if written.get(key) != value}
    return fresh, Lessons(
        gotchas=[t for t in lessons.gotchas if f"lesson:gotcha:{t}" in new],
        patterns=[t for t in lessons.patterns if f"lesson:pattern:{t}" in new],
        discoveries={p: t for p, t in lessons.discoveries.items()
                     if f"lesson:discovery:{p}: {t}" in new})


async def keep(store: MemoryBackend, project_id: str, episodes: Sequence[Episode],
               lessons: Lessons, written: dict[str, str]) -> Kept:
    """Write ``lessons`` first, then ``episodes`` (see the module docstring); ``written`` is
    brought up to date with what was written or settled."""
    from memory.agent.memories import AgentMemory  # pydantic: only when there is something

    kept = Kept()
    memory = AgentMemory(store, project_id, source=AGENT_SOURCE)
    digests = lesson_digests(lessons)
    for label, items in (("gotcha", lessons.gotchas), ("pattern", lessons.patterns)):
        for text in items:
            try:
                before = await store.get(memory.scope.id(label, natural_key(text)))
                saved = await (memory.add_gotcha if label == "gotcha" else memory.add_pattern)(
                    text)
                if before is None or before.body != saved.body:
                    kept.add(label)
            except InvalidEpisode as exc:
                kept.refused.append(f"{label}: {exc}")
            written[f"lesson:{label}:{text}"] = digests[f"lesson:{label}:{text}"]
    for path, text in lessons.discoveries.items():
        try:
            before = await store.get(memory.scope.id(CODEBASE_DISCOVERY, path))
            [saved] = await memory.add_codebase_discoveries({path: text})
            if before is None or before.body != saved.body:
                kept.add(CODEBASE_DISCOVERY)
        except InvalidEpisode as exc:
            kept.refused.append(f"discovery: {exc}")
        written[f"lesson:discovery:{path}: {text}"] = digests[f"lesson:discovery:{path}: {text}"]
    for episode in episodes:
        stored = await store.get(episode.id)
        if stored is not None and stored.source != SOURCE:
            written[episode.id] = digest(episode)  # somebody's own: it wins
            continue
        merged = episode if stored is None else united(stored, episode)
        try:
            if (await put_if_changed(store, merged))[0] != "unchanged":
                kept.add(episode.kind)
        except InvalidEpisode as exc:
            kept.refused.append(f"{episode.kind} {episode.name}: {exc}")
        written[episode.id] = digest(episode)
    return kept


def united(stored: Episode, new: Episode) -> Episode:
    """``new`` laid over ``stored`` (the same derived memory): list fields united, the richer
    description kept, the earlier time kept."""
    old, fresh = stored.data, new.data
    if not isinstance(old, dict) or not isinstance(fresh, dict):
        return new
    body: dict[str, Any] = {**old, **fresh}
    for name in _UNITED:
        if isinstance(old.get(name), list) and isinstance(fresh.get(name), list):
            body[name] = _union(old[name], fresh[name], newest=name == "sessions")
    if isinstance(old.get("description"), str) and isinstance(fresh.get("description"), str):
        # What was said of a file is richer than a description made up without it, and the
        # union of what two sessions said is richer than either.
        notes = body.get("notes")
        said = [n for n in notes if isinstance(n, str)] if isinstance(notes, list) else []
        body["description"] = described(said) if said else max(
            fresh["description"], old["description"], key=len)
    if isinstance(old.get("changed"), bool):
        body["changed"] = old["changed"] or bool(fresh.get("changed"))
    return new.model_copy(update={"body": orjson.dumps(body).decode(),
                                  "created_at": min(stored.created_at, new.created_at)})


def _union(first: list[Any], second: list[Any], *, newest: bool) -> list[Any]:
    """Both lists' items once each, at most ``_MAX_UNITED``: the first ones (what was learned
    first is kept), or with ``newest`` the latest (the sessions that met it last)."""
    out = list(first)
    for item in second:
        if item not in out:
            out.append(item)
    return out[-_MAX_UNITED:] if newest else out[:_MAX_UNITED]
