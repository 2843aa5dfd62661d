"""Keeping the Markdown views (``fallback.views``) as the index has the episodes: each page
rendered, or spliced where a write changed a few bullets, and a page a person changed taken in
(``fallback.page_edits``) before it is written over. Called under the layer's lock."""

from __future__ import annotations

import bisect
import os
from collections.abc import Callable, Collection, Iterable, Mapping
from functools import partial
from pathlib import Path
from typing import TypeGuard

from backends.errors import FileRefused, StoreCorrupt
from backends.safe_files import read_regular_status
from fallback import disk, views
from fallback.file_record import Signature, signature, signature_of
from fallback.layout import FILE_LIMIT, VIEW_FILES, page_name
from fallback.page_edits import PageEdits
from fallback.parts import Parts
from fallback.view_order import ViewEntry

_ViewRead = tuple[str | None, Signature | None]  # a view's text and signature; None when missing
_Key = tuple[str, str]
"""(created_at key, id): a bullet's place in its view's order"""
_Bounds = tuple[_Key | None, _Key | None]
"""a page's first key (None: the first page) and the next page's (None: the last page)"""

_MAX_SPLICED = 8  # a larger batch renders each view it touches once instead
_MAX_ROUNDS = 16
"""renders of a page a person keeps saving meanwhile, before it is left as it is (reported)"""


class ViewKeeper:
    def __init__(self, parts: Parts, edits: PageEdits) -> None:
        self._layout, index, self._guard, self._held, _ = parts
        self._files, self._pages = index.files, index.pages
        self._edits = edits

    def take_in_edited_pages(self, places: Mapping[tuple[str, str], Iterable[_Key]]) -> None:
        """Before a write changes the bullets of these places (view -> the (created_at key,
        id) of each, where it is or will be): take in each page it may render that a person
        changed since dualmem wrote it (the first, where hand bullets live, and those of the
        places and before them), so that the write's own change is never taken for theirs (a
        memory stored now is not one whose bullet they removed)."""
        for (group, kind), keys in places.items():
            if kind not in VIEW_FILES:
                continue
            pages = _Pages(kind, self._pages.page_starts(group, kind))
            held = [pages.holding(*key) for key in keys]
            for at in sorted({0, *held, *(at - 1 for at in held if at > 0)}):
                path = self._layout.view_path(group, kind, pages.name(at))
                sig = signature_of(path)
                if sig is not None and sig != self._files.view_signature(path):
                    self.reconcile(group, kind, pages.name(at))

    def reconcile(self, group: str, kind: str, page: str) -> None:
        """Take in what a person changed in page ``page`` of a view and render it again (under
        the lock). A page deleted meanwhile deletes nothing: it is rendered again later."""
        path = self._layout.view_path(group, kind, page)
        if not path.exists():
            self._files.record_view(path, None)
            return
        self._write_view(group, kind, page, forgets=True,
                         bounds=_Pages(kind, self._pages.page_starts(group, kind)).find(page))

    def write_first_page(self, group: str, kind: str) -> None:
        """Render the first page of the view, where hand bullets live."""
        self._write_view(group, kind, VIEW_FILES[kind],
                         bounds=_Pages(kind, self._pages.page_starts(group, kind)).bounds(0))

    def render(
        self,
        touched: Iterable[tuple[str, str]],
        drop: Collection[str] = (),
        changed: Collection[str] | None = None,
        before: Mapping[str, ViewEntry | None] | None = None,
    ) -> None:
        """Render the views of ``touched``: every page, or, when only the episodes ``changed``
        (none of them hand-shaped before; ``before`` gives where they showed) changed, the
        pages they were and are on, by splicing their bullets where the page allows it. A
        bullet that starts a page, or did, renders its page and the one before whole."""
        touched = sorted((group, kind) for group, kind in touched if kind in VIEW_FILES)
        if self._guard.read_only is not None or not touched:
            return
        if changed is not None and len(changed) > _MAX_SPLICED:
            changed = None
        now = {} if changed is None else {i: self._pages.view_entry(i) for i in changed}
        for group, kind in touched:
            pages = _Pages(kind, self._pages.page_starts(group, kind))
            if changed is None:
                self._write_pages(group, kind, pages, drop)
                continue
            is_here = _in_view(group, kind)
            mine = [(i, e) for i, e in [*now.items(), *(before or {}).items()] if is_here(e)]
            on = {0 if e.hand else pages.holding(e.created_at, i) for i, e in mine}
            # A bullet that starts a page takes the end of the page before it; one that no
            # longer does gives its page's bullets back to the page before it.
            on |= {pages.holding(e.created_at, i) - 1 for i, e in now.items()
                   if is_here(e) and e.starts}
            moving = any(e.starts for _, e in mine)
            for at in sorted(on):
                self._write_view(group, kind, pages.name(at), drop=drop,
                                 changed=None if moving else changed, bounds=pages.bounds(at))
            names = set(pages.names())
            gone = {page_name(kind, e.created_at, i) for i, e in (before or {}).items()
                    if is_here(e) and e.starts} - names
            for name in sorted(gone):
                self._write_view(group, kind, name, drop=drop, bounds=None)

    def _write_pages(self, group: str, kind: str, pages: _Pages, drop: Collection[str]) -> None:
        """Render every page of the view; a page file no longer in the view keeps only what
        people wrote in it, and goes when that is nothing but the title and rules we wrote."""
        names = pages.names()
        for at, name in enumerate(names):
            self._write_view(group, kind, name, drop=drop, bounds=pages.bounds(at))
        for path in self._layout.pages_in(self._layout.view_path(group, kind).parent):
            if path.name not in names and self._layout.view_of(path) == (group, kind):
                self._write_view(group, kind, path.name, drop=drop, bounds=None)

    def _write_view(
        self,
        group: str,
        kind: str,
        page: str,
        *,
        drop: Collection[str] = (),
        changed: Collection[str] | None = None,
        bounds: _Bounds | None,
        forgets: bool = False,
    ) -> None:
        """Render page ``page`` of the view from the index: the bullets within ``bounds``
        (None: a page no longer in the view, which shows none). A page a person changed since
        dualmem last wrote it is taken in first (``PageEdits.take_in``); one saved while this
        renders is never overwritten unread (``disk.replace_unless_changed``): it is taken in,
        and the page rendered again (``forgets``: a person's removals may forget, else they
        hold). With ``changed``, a page as we last wrote it is spliced instead
        (``views.splice``)."""
        path = self._layout.view_path(group, kind, page)
        drop, moved = set(drop), set[str]()
        try:
            existing, sig = on_disk, _ = self._read_view(path)
            unseen = existing is not None and sig != self._files.view_signature(path)
            met = False  # a save met while rendering: what it lacks is held, not forgotten
            for _ in range(_MAX_ROUNDS):
                if unseen and existing is not None:
                    existing, more = self._edits.take_in(group, kind, page, path, existing,
                                                         forgets=forgets and not met, drop=drop,
                                                         listed=self._listed(group, kind, bounds))
                    moved |= more
                    drop |= more
                    changed = None
                rendered = None
                if changed is not None and existing is not None and bounds is not None:
                    rendered = self._spliced(existing, group, kind, changed, bounds)
                if rendered is None:
                    shown = [] if bounds is None else self._shown(group, kind, bounds)
                    rendered = views.render(existing, group, kind, shown, drop, page)
                if bounds is None and rendered == views.render(None, group, kind, [], name=page):
                    if on_disk is not None:
                        disk.remove(path)
                        disk.sync_folder(path.parent)
                    sig = None
                    break
                if rendered == on_disk:
                    break
                swap = disk.replace_unless_changed(path, rendered.encode(),
                                                   partial(_is_file_of, sig))
                if swap.found is not None:  # a person's save that is here alone now
                    _, more = self._edits.take_in(group, kind, page, path, self._displaced(
                        path, swap.found), forgets=False, drop=drop,
                        listed=self._listed(group, kind, bounds))
                    moved |= more
                    drop |= more
                if swap.status is not None:
                    sig = signature(swap.status)
                    break
                # Someone's file stands there now: take that in, and render again.
                existing, sig = on_disk, _ = self._read_view(path)
                unseen, changed, met = existing is not None, None, True
            else:
                raise StoreCorrupt(path, "changed each time it was rendered; left as it is")
            self._files.record_view(path, sig)
        except StoreCorrupt as exc:
            self._files.report(path, exc.detail)  # a person's file we cannot read: leave it be
        if moved:
            self.write_first_page(group, kind)

    def _displaced(self, path: Path, found: bytes) -> str:
        """The text of a person's save that a render displaced and could not put back."""
        try:
            return found.decode()
        except UnicodeDecodeError:
            raise StoreCorrupt(path, "a save displaced while rendered is not UTF-8 text; "
                               "it is lost") from None

    def _shown(self, group: str, kind: str, bounds: _Bounds) -> list[tuple[str, str]]:
        """(id, bullet) of the page of ``bounds``, less the bullets held back."""
        shown = self._pages.page_bullets(group, kind, *bounds)
        held = self._held.ids(group, kind)
        return [(i, line) for i, line in shown if i not in held] if held else shown

    def _listed(self, group: str, kind: str, bounds: _Bounds | None) -> dict[str, str]:
        """id -> line of the generated bullets the page of ``bounds`` shows (None: none)."""
        shown = [] if bounds is None else self._shown(group, kind, bounds)
        return {i: line for i, line in shown if views.is_generated(line)}

    def _spliced(self, text: str, group: str, kind: str, changed: Collection[str],
                 bounds: _Bounds) -> str | None:
        """``text`` with the bullets of ``changed`` on the page of ``bounds`` as the index has
        them now, or None."""
        if bounds[0] is None and self._pages.has_hand(group, kind):
            return None  # hand bullets move between a view's parts as it is rendered: render
        spliced: str | None = text
        held = self._held.ids(group, kind)
        for episode_id in changed:
            entry = self._pages.view_entry(episode_id)
            line = before = after = None
            if (entry is not None and (entry.group_id, entry.kind) == (group, kind)
                    and episode_id not in held
                    and (_within(bounds, (entry.created_at, episode_id)) if not entry.hand
                         else bounds[0] is None)):
                line = entry.bullet
                after, before = self._pages.neighbours(group, kind, entry.created_at,
                                                       episode_id)
            spliced = views.splice(text, episode_id, line, before=before, after=after)
            if spliced is None:
                return None
            text = spliced
        return spliced

    def _read_view(self, path: Path) -> _ViewRead:
        try:
            # Never through a link, nor out of the home through a linked folder: a person's
            # view elsewhere would be copied in, and its bullets served as memories.
            data, status = read_regular_status(path, limit=FILE_LIMIT, follow=False,
                                               within=self._layout.root)
        except FileNotFoundError:
            return None, None
        except FileRefused as exc:
            raise StoreCorrupt(path, f"{exc.reason}; left as it is, not read") from None
        sig = signature(status)
        try:
            return data.decode(), sig
        except UnicodeDecodeError:
            raise StoreCorrupt(path, "not UTF-8 text; left as it is") from None


class _Pages:
    """The pages of one view: the first, then one per bullet that starts a page."""

    def __init__(self, kind: str, starts: list[_Key]) -> None:
        self._kind = kind
        self._starts = starts

    def __len__(self) -> int:
        return len(self._starts) + 1

    def holding(self, created_at: str, episode_id: str) -> int:
        """The page the bullet of this place in the order is on."""
        return bisect.bisect_right(self._starts, (created_at, episode_id))

    def name(self, at: int) -> str:
        return VIEW_FILES[self._kind] if at == 0 else page_name(self._kind, *self._starts[at - 1])

    def names(self) -> list[str]:
        """The file names of the pages, in order."""
        return [self.name(at) for at in range(len(self))]

    def find(self, name: str) -> _Bounds | None:
        """The bounds of the page of file name ``name``; None when it is none of this view's."""
        names = self.names()
        return self.bounds(names.index(name)) if name in names else None

    def bounds(self, at: int) -> _Bounds:
        return (None if at == 0 else self._starts[at - 1],
                self._starts[at] if at < len(self._starts) else None)


def _in_view(group: str, kind: str) -> Callable[[ViewEntry | None], TypeGuard[ViewEntry]]:
    def is_here(entry: ViewEntry | None) -> TypeGuard[ViewEntry]:
        return entry is not None and (entry.group_id, entry.kind) == (group, kind)

    return is_here


def _within(bounds: _Bounds, key: _Key) -> bool:
    start, end = bounds
    return (start is None or start <= key) and (end is None or key < end)


def _is_file_of(sig: Signature | None, status: os.stat_result | None) -> bool:
    """Whether ``status`` is of the file whose signature is ``sig`` (None: no file)."""
    return (None if status is None else signature(status)) == sig
