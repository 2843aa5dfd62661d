"""Taking in a person's version of a view page: a new hand bullet becomes an episode, a removed
one is forgotten, or held when many go at once (``fallback.held``)."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from backends.errors import InvalidEpisode
from backends.model import ensure_body_fits
from fallback import codec, disk, views
from fallback.file_record import signature
from fallback.index import Row
from fallback.layout import VIEW_FILES
from fallback.parts import Parts

MASS_CHANGE = 2
"""hand bullets taken out of a view in one save from which none is forgotten, but held"""


class PageEdits:
    def __init__(self, parts: Parts, max_body_bytes: int) -> None:
        self._layout, self._index, self._guard, self._held, self._tombstones = parts
        self._files, self._pages = self._index.files, self._index.pages
        self._max_body_bytes = max_body_bytes

    def take_in(self, group: str, kind: str, page: str, path: Path, text: str, *,
                 forgets: bool, drop: Collection[str]) -> tuple[str, set[str]]:
        """Take in ``text``, a person's version of page ``page``: a new hand bullet becomes an
        episode, a removed one is forgotten (a delete like any other, so the graph hears of
        it; its tombstone keeps the text). A save that takes out ``MASS_CHANGE`` or more at
        once forgets none: they are held (``fallback.held``), and an empty view is a missing
        one. Without ``forgets`` (a save met while a write renders), none is forgotten: they
        are held. Bullets of ``drop`` (being deleted) are not taken in. A generated bullet of
        another view (copied here) becomes a hand bullet. Returns
        the text to render from, and the hand bullets to move to the first page, where they
        live."""
        first = page == VIEW_FILES[kind]
        lines = views.parse(text)
        copied = {line.generated_id for line in lines if line.generated_id is not None
                  and (entry := self._pages.view_entry(line.generated_id)) is not None
                  and (entry.group_id, entry.kind) != (group, kind)
                  and entry.bullet == line.raw.rstrip()}  # as shown there now, not a stale line
        if copied:
            text = views.adopt(text, copied)
            lines = views.parse(text)
        bullets = views.hand_ids(lines, group, kind)
        rejected, added = [], []
        for episode_id, bullet in bullets.items():
            if self._index.located(episode_id) is None and episode_id not in drop:
                try:
                    episode = views.hand_episode(group, kind, bullet)
                    ensure_body_fits(episode, self._max_body_bytes)
                except InvalidEpisode as exc:
                    rejected.append(f"bullet {bullet[:40]!r} is not a memory: {exc}")
                    continue
                status = disk.write_atomic(self._layout.episode_path(group, episode_id),
                                           codec.encode(episode))
                added.append(Row.of(episode, signature(status)))
        held = self._held.ids(group, kind)
        missing = [episode_id for episode_id, _, hand in self._pages.bullets(group, kind)
                   if hand and episode_id not in bullets and episode_id not in held]
        removed: list[str] = []
        if first and missing and text.strip():
            if len(missing) >= MASS_CHANGE or not forgets:
                self._held.hold(group, kind, missing)
            else:
                removed = missing
        if held.keys() & bullets.keys():
            self._held.release(group, kind, held.keys() & bullets.keys())
        kept = [gone for i in removed if (gone := self._index.get(i)) is not None]
        self._tombstones.bury(removed, keep=kept)
        for episode_id in removed:
            disk.remove(self._layout.episode_path(group, episode_id))
        self._index.put(added)
        self._index.drop(removed)
        self._guard.record_folders({self._layout.group_folder(group)})
        if rejected:
            self._files.report(path, "; ".join(rejected))
        else:
            self._files.clear_problem(path)
        moved = set() if first else {i for i in bullets if self._index.located(i) is not None}
        return text, moved
