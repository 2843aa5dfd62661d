"""From the files the work touches to what the project's memory says about them.

A file brings the memories that name it (its discovery, the gotchas, patterns, decisions,
outcomes and failed approaches that name the path: the search links them through the file's
entity, in every process alike), and the conventions of its area: the patterns and gotchas
that name a file of the same folder, or of a folder above it. An area is learned from where
memories point, never configured: ``tests/factories.py`` named by "Test data comes from
factory_boy factories" makes that pattern a convention of every file under ``tests/``.

Most of an area's memories name no file but speak its words: a working file's discovery says
what the file is for ("Currency conversion: exchange rates fixed at capture" for
``app/services/fx.py``), and the memories that best match those words are its area's too.

Each memory found is a ``Hit`` whose score says how it is tied to the work: ``NAMED`` for a
memory that names a working file, ``AREA`` for a convention of a working file's area, up to
``DESCRIBED`` for one that says what a working file's discovery says (by its score relative to
the best such memory).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from pathlib import PurePosixPath

from backends.model import Episode, Hit
from backends.protocol import MemoryBackend
from backends.search.entities import extract
from memory.agent.scopes import CODEBASE_DISCOVERY, GOTCHA, PATTERN

NAMED = 1.0
AREA = 0.5
DESCRIBED = 0.9
PER_FILE = 12
"""memories searched per file: a file's own come first (its entity is named outright)"""
CONVENTION_KINDS = frozenset({PATTERN, GOTCHA})
FILE_LABELS = frozenset({"File", "Module"})


@lru_cache(maxsize=4096)
def paths_named(episode: Episode) -> frozenset[str]:
    """The files a memory names: its entities, and a discovery's own path."""
    named = {e.name for e in extract(episode).entities if e.label in FILE_LABELS}
    data = episode.data
    if isinstance(data, dict):
        named.update(v.strip() for k in ("file", "path", "file_path")
                     if isinstance(v := data.get(k), str) and v.strip())
    return frozenset(named)


def names_file(named: frozenset[str], path: str) -> bool:
    """Whether ``named`` holds ``path``, or a file in it when ``path`` is a folder (``/``)."""
    if path.endswith("/"):
        return any(n.startswith(path) or f"{n}/" == path for n in named)
    return path in named


def folder_of(path: str) -> str:
    """A file's folder (``.`` at the top); a folder (ending in ``/``) is its own."""
    return path.rstrip("/") if path.endswith("/") else str(PurePosixPath(path).parent)


def in_area(named: frozenset[str], folder: str, *, above: bool) -> bool:
    """Whether a memory naming ``named`` speaks for the area ``folder``: it names a file in
    that folder, or (``above``) in a folder holding it (not the project's top folder, whose
    files every area shares)."""
    if not folder or folder == ".":
        return False
    for name in named:
        own = folder_of(name)
        if own in ("", ".") or "/" not in name:
            continue
        if own == folder or (above and folder.startswith(f"{own}/")):
            return True
    return False


def elsewhere(named: frozenset[str], files: Sequence[str], *, folders: bool) -> bool:
    """Whether a memory points elsewhere than the work: it names paths (``named``), none of
    them one of ``files`` (or a file in one of them, a folder) nor, with ``folders``, in one of
    their folders. Words it shares with the work do not make it the work's."""
    paths = [n for n in named if "/" in n]
    near = {folder_of(f) for f in files} - {"", "."} if folders else set()
    return bool(paths) and not any(
        folder_of(path) in near or any(names_file(frozenset({path}), f) for f in files)
        for path in paths)


async def file_memories(
    store: MemoryBackend,
    files: Sequence[str],
    groups: Sequence[str],
    kinds: Sequence[str] | None = None,
    *,
    areas: bool = True,
    above: bool = True,
    more_areas: Sequence[str] = (),
) -> list[Hit]:
    """The memories tied to ``files`` (see the module docstring), each once with its strongest
    tie, those naming a file first (in the files' order); ``more_areas``: folders whose
    conventions join as a working file's area's do."""
    if not files and not more_areas:
        return []
    folders = list(dict.fromkeys(f for f in [*map(folder_of, files), *more_areas]
                                 if f not in ("", ".")))
    texts = [*files, *(folders if areas else [])]
    # One after the other: a hook drives this without an event loop (memory.cli.driver).
    found = [await store.search(text, group_ids=list(groups),
                                kinds=list(kinds) if kinds else None, limit=PER_FILE)
             for text in texts]
    ties: dict[str, Hit] = {}
    for path, hits in zip(files, found, strict=False):
        for hit in hits:
            if hit.episode.id not in ties and names_file(paths_named(hit.episode), path):
                ties[hit.episode.id] = _tied(hit, NAMED)
    if areas:
        await _described(store, files, groups, kinds, ties)
        for hits in found:
            for hit in hits:
                episode = hit.episode
                if (episode.id not in ties and episode.kind in CONVENTION_KINDS
                        and any(in_area(paths_named(episode), folder, above=above)
                                for folder in folders)):
                    ties[episode.id] = _tied(hit, AREA)
    return list(ties.values())


async def _described(store: MemoryBackend, files: Sequence[str], groups: Sequence[str],
                     kinds: Sequence[str] | None, ties: dict[str, Hit]) -> None:
    """Add the memories that say what a working file's discovery says it is for ("Currency
    conversion with exchange rates fixed at capture" for ``app/services/fx.py``): most of
    an area's memories name no file, but speak its words. Each is tied by its score relative
    to the best such memory, times ``DESCRIBED``; not one that names only files outside the
    working files' folders (another file's discovery sharing a word: ``elsewhere``)."""
    for path in files:
        about = [hit.episode for hit in ties.values()
                 if hit.episode.kind == CODEBASE_DISCOVERY and path in paths_named(hit.episode)]
        data = about[0].data if about else None
        text = data.get("description") if isinstance(data, dict) else None
        if not isinstance(text, str) or not text.strip():
            continue
        hits = await store.search(text, group_ids=list(groups),
                                  kinds=list(kinds) if kinds else None, limit=PER_FILE)
        hits = [hit for hit in hits if hit.episode.id != about[0].id
                and not elsewhere(paths_named(hit.episode), files, folders=True)]
        best = max((hit.score for hit in hits), default=0.0)
        for hit in hits:
            if hit.episode.id not in ties and best > 0:
                ties[hit.episode.id] = _tied(hit, DESCRIBED * min(1.0, hit.score / best))


def _tied(hit: Hit, score: float) -> Hit:
    return Hit.model_construct(episode=hit.episode, score=score, layer=hit.layer)
