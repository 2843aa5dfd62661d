"""Taking in a person's version of a view page: a new hand bullet becomes an episode, a changed
generated bullet corrects its memory, a removed hand bullet forgets its memory; a removed
generated bullet, or many at once, are held (``fallback.held``)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from pathlib import Path

from backends.errors import InvalidEpisode, StoreCorrupt
from backends.model import ensure_body_fits
from fallback import codec, disk, views
from fallback.file_record import signature
from fallback.index import Row
from fallback.layout import VIEW_FILES
from fallback.parts import Parts
from fallback.versions import FOLDER, Versions

MASS_CHANGE = 2
"""bullets taken out of a view in one save from which none is forgotten, but held"""


class PageEdits:
    def __init__(self, parts: Parts, max_body_bytes: int) -> None:
        self._layout, self._index, self._guard, self._held, self._tombstones = parts
        self._files, self._pages = self._index.files, self._index.pages
        self._max_body_bytes = max_body_bytes
        self._versions = Versions(self._layout.root / FOLDER)

    def take_in(self, group: str, kind: str, page: str, path: Path, text: str, *,
                forgets: bool, drop: Collection[str],
                listed: Mapping[str, str]) -> tuple[str, set[str]]:
        """Take in ``text``, a person's version of page ``page``, on which the index places the
        generated bullets ``listed`` (id -> line): a new hand bullet becomes an episode, a
        generated one whose text they changed corrects its memory (same id, the earlier
        version kept), and a hand bullet removed forgets its memory (a delete like any other, so
        the graph hears of it; its tombstone keeps the text), a generated one is held. A save
        that takes out
        ``MASS_CHANGE`` or more at once, or ends mid-line (a file cut short), forgets none:
        they are held (``fallback.held``), and an empty view is a missing one. Without
        ``forgets`` (a save met while a write renders), none is forgotten: hand bullets are
        held, generated ones shown again, as they are on a page reported as a problem (not
        written since). Bullets of
        ``drop`` (being deleted) are not taken in. A generated bullet of another view (copied
        here) becomes a hand bullet; a last line cut short is none. A page with a merge's
        conflict markers is refused (``StoreCorrupt``): nothing in it is taken in. Returns the
        text to render from, and the hand bullets to move to the first page, where they
        live."""
        # A page dualmem could not write last time (reported) may lack bullets stored since:
        # none it lacks is forgotten.
        unsure = path.name in self._files.problems_in(path.parent)
        if views.conflicted(text):
            raise StoreCorrupt(path, "holds a merge's conflict markers (<<<<<<< ... >>>>>>>): "
                               "nothing in it is taken in, nor written over, until they are "
                               "resolved")
        first = page == VIEW_FILES[kind]
        cut = not text.endswith("\n")  # every page is written whole, ending in a newline
        text = _without_cut_line(text, listed.values())
        lines = views.parse(text)
        copied = {line.generated_id for line in lines if line.generated_id is not None
                  and (entry := self._pages.view_entry(line.generated_id)) is not None
                  and (entry.group_id, entry.kind) != (group, kind)
                  and entry.bullet == line.raw.rstrip()}  # as shown there now, not a stale line
        if copied:
            text = views.adopt(text, copied)
            lines = views.parse(text)
        rejected: list[str] = []
        corrected = self._corrections(group, kind, lines, drop, rejected)
        if corrected:  # rendered again from the memories they corrected
            text = "\n".join(line.raw for line in lines if line.edited_id not in corrected)
            lines = views.parse(text)
        bullets = views.hand_ids(lines, group, kind)
        added = [row for i, row in corrected.items() if row is not None]
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
        present = bullets.keys() | corrected.keys() | {
            line.generated_id for line in lines if line.generated_id is not None}
        missing = [] if not first else [
            episode_id for episode_id, _, hand in self._pages.bullets(group, kind)
            if hand and episode_id not in bullets and episode_id not in held]
        # A generated bullet missing from a page is held, never forgotten: a page that lacks
        # it may be one a failed render (a full disk) left behind, not a person's removal.
        generated = [] if not forgets or unsure else [
            episode_id for episode_id in listed if episode_id not in present
            and episode_id not in held and episode_id not in drop]
        removed: list[str] = []
        if (missing or generated) and text.strip():
            if len(missing) + len(generated) >= MASS_CHANGE or not forgets or cut:
                self._held.hold(group, kind, missing + generated)
            else:
                removed = missing
                if generated:
                    self._held.hold(group, kind, generated)
        if held.keys() & present:
            self._held.release(group, kind, held.keys() & present)
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

    def _corrections(self, group: str, kind: str, lines: list[views.Line],
                     drop: Collection[str], rejected: list[str]) -> dict[str, Row | None]:
        """Correct the memories of this view whose generated bullets a person changed in
        ``lines``, keeping each earlier version (``Versions.keep``). Returns id ->
        its new row (None: the text it already has, or one that cannot be it, reported in
        ``rejected``)."""
        corrected: dict[str, Row | None] = {}
        for line in lines:
            episode_id, text = line.edited_id, line.hand_text
            entry = None if episode_id is None else self._pages.view_entry(episode_id)
            if (episode_id is None or text is None or episode_id in drop or entry is None
                    or (entry.group_id, entry.kind) != (group, kind) or entry.hand):
                continue  # not a bullet of this view's memories: a hand bullet, as it reads
            earlier = self._index.get(episode_id)
            if earlier is None:
                continue
            try:
                episode = views.corrected(earlier, text)
                ensure_body_fits(episode, self._max_body_bytes)
            except InvalidEpisode as exc:
                rejected.append(f"bullet {text[:40]!r} cannot correct {episode_id}: {exc}")
                corrected[episode_id] = None
                continue
            if episode == earlier:
                corrected[episode_id] = None
                continue
            self._versions.keep("updated", earlier, reason="corrected in its view")
            status = disk.write_atomic(self._layout.episode_path(group, episode_id),
                                       codec.encode(episode))
            corrected[episode_id] = Row.of(episode, signature(status))
        return corrected


def _without_cut_line(text: str, listed: Iterable[str]) -> str:
    """``text`` less a last line cut short (a file truncated, a copy interrupted): one with no
    newline after it that is the start of a generated bullet the page shows."""
    head, _, last = text.rpartition("\n")
    if last.strip() and any(line.startswith(last) and line != last for line in listed):
        return head + "\n" if head else ""
    return text
