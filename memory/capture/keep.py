"""Writing what capture found, without ever making memory poorer:

- the agent's own lessons are written as the agent writes them (``AgentMemory``, source
  ``claude_code``); a lesson the store refuses is counted and the others are kept;
- a derived memory never replaces one somebody else wrote under the same id (the agent's
  ``Discovery:`` of a file wins over what capture derived of it);
- a derived memory already stored from another session (a file's discovery, a gotcha met again)
  is merged with it: their notes, files and sessions united, the richer description kept;
- only what changed since the last write is written (``written`` remembers each memory's
  digest), in one batch, so a Stop with nothing new writes nothing."""

from __future__ import annotations

from collections.abc import Sequence

from backends.builtin_hashes import blake2b_hex
from backends.errors import InvalidEpisode
from backends.lean_typing import TYPE_CHECKING
from backends.model import Episode, natural_key, now
from memory.agent.scopes import CODEBASE_DISCOVERY, GOTCHA, PATTERN
from memory.capture.derive import SOURCE
from memory.capture.kept import Kept
from memory.capture.lessons import Lessons
from memory.capture.united import united

if TYPE_CHECKING:  # the protocol's import costs a lean Stop (``later``), which writes none
    from backends.protocol import MemoryBackend

AGENT_SOURCE = "claude_code"
"""the source of the agent's labelled lessons (as the Stop hook always wrote them)"""


def digest(episode: Episode) -> str:
    return blake2b_hex(f"{episode.kind}\x1f{episode.name}\x1f{episode.body}".encode(), 12)


def lesson_digests(lessons: Lessons) -> dict[str, str]:
    """A digest per lesson, keyed as ``written`` keeps them."""
    items = [("gotcha", text) for text in lessons.gotchas]
    items += [("pattern", text) for text in lessons.patterns]
    items += [("discovery", f"{path}: {text}") for path, text in lessons.discoveries.items()]
    return {f"lesson:{label}:{text}": blake2b_hex(text.encode(), 8) for label, text in items}


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
    kept = Kept()
    if lessons:
        await _keep_lessons(store, project_id, lessons, written, kept)
    changed = [laid for episode in episodes
               if (laid := laid_over(await store.get(episode.id), episode)) is not None]
    await _write(store, changed, kept)
    written.update((episode.id, digest(episode)) for episode in episodes)
    return kept


def laid_over(stored: Episode | None, episode: Episode) -> Episode | None:
    """What to write of derived ``episode`` over what is ``stored`` under its id: None when
    that is somebody's own (it wins) or already says the same."""
    if stored is None:
        return episode
    if stored.source != SOURCE:
        return None
    merged = united(stored, episode)
    if (stored.name, stored.body) == (merged.name, merged.body):
        return None
    # An update keeps the memory's first time; its content took effect now.
    return merged.model_copy(update={"created_at": stored.created_at, "valid_at": now()})


async def _write(store: MemoryBackend, episodes: list[Episode], kept: Kept) -> None:
    """All of ``episodes`` in one batch (one lock, one sync); one by one when the store refuses
    one of them, so that the others are kept."""
    from backends.protocol import upsert_all

    try:
        await upsert_all(store, episodes)
    except InvalidEpisode:
        for episode in episodes:
            try:
                await store.upsert(episode)
            except InvalidEpisode as exc:
                kept.refused.append(f"{episode.kind} {episode.name}: {exc}")
            else:
                kept.add(episode.kind)
        return
    for episode in episodes:
        kept.add(episode.kind)


async def _keep_lessons(store: MemoryBackend, project_id: str, lessons: Lessons,
                        written: dict[str, str], kept: Kept) -> None:
    from memory.agent.memories import AgentMemory  # pydantic: only when there are lessons

    memory = AgentMemory(store, project_id, source=AGENT_SOURCE)
    digests = lesson_digests(lessons)
    for label, items in ((GOTCHA, lessons.gotchas), (PATTERN, lessons.patterns)):
        for text in items:
            try:
                before = await store.get(memory.scope.id(label, natural_key(text)))
                saved = await (memory.add_gotcha if label == GOTCHA else memory.add_pattern)(
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
