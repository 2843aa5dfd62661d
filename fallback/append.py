"""Appending episodes to the journal from a process that opens no index (a capturing hook's
later Stop, ``memory.capture.later``: the index's imports and open cost it more than the rest of
its work).

Each file is written as ``EpisodeWriter`` writes it: the same codec, staged and synced beside its
place, renamed under the layer's lock, its folder synced. The index takes it in as it takes in
any file another process wrote: keyed on each group folder's mtime, the next open's catch-up
re-reads a folder whose mtime moved (``Intake``), and a watching process reads the new files at
once; either gives them their journal position, from which the graph replays.

One risk is closed here. A writer records the mtime of each folder it wrote as agreeing with the
index (``WriteGuard.record_folders``): recorded after an append and before a catch-up, it would
mark the appended files as seen, and no open would ever read them. So an append first leaves a
mark, ``<root>/unindexed/<group>``; while the mark is there no writer records that folder as
agreeing, and the catch-up that reads the folder removes the mark once the index has committed.

A kind with a view is appended too: the catch-up that takes in the marked folder renders the
views of the kinds it took in, each page taking in first what a person changed on it since
dualmem last wrote it (``ViewKeeper._write_view``), as the writer does; a generated bullet
missing from a person's page is held, not forgotten. A memory stored in another group (moved
there), or anything unusual on disk raises ``NotAppendable``: the whole writer
(``FileBackend``) takes it."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from backends.errors import DualmemError, FileRefused
from backends.lean_typing import TYPE_CHECKING
from backends.model import Episode, Receipt, ensure_body_fits
from backends.safe_files import open_for_write, read_regular, refuse_links_in
from fallback import codec, disk
from fallback.layout import FILE_LIMIT, LOCK, episode_place, group_place, groups_in
from fallback.lock import LOCK_POLL, LOCK_TIMEOUT, FolderLock

if TYPE_CHECKING:
    from pathlib import Path

    from _typeshed import StrPath

UNINDEXED = "unindexed"
"""``<root>/unindexed/<group>``: the group's folder holds files appended without the index"""


class NotAppendable(DualmemError):
    """What was to be appended needs the whole writer (the message says why)."""


def validated(episode: Episode, max_body_bytes: int) -> Episode:
    """``episode`` checked again: one built with ``model_construct`` skipped the model's rules,
    and file paths are made from its fields."""
    checked = Episode.parse(**{name: getattr(episode, name, None) for name in Episode.model_fields})
    ensure_body_fits(checked, max_body_bytes)
    return checked


def stored(root: StrPath, group_id: str, episode_id: str) -> Episode | None:
    """The episode of ``episode_id`` stored in ``group_id`` of the journal at ``root``, read from
    its file; None when there is none in any group."""
    path = os.path.join(root, episode_place(group_id, episode_id))
    try:
        episode = codec.decode(read_regular(path, limit=FILE_LIMIT, follow=False))
    except FileNotFoundError:
        if any(os.path.exists(os.path.join(root, episode_place(group, episode_id)))
               for group in groups_in(root) if group != group_id):
            raise NotAppendable(f"episode {episode_id} is stored in another group") from None
        return None
    except (FileRefused, codec.UnreadableEpisode, OSError) as exc:
        raise NotAppendable(f"{path}: {exc}") from exc
    if (episode.id, episode.group_id) != (episode_id, group_id):
        raise NotAppendable(f"{path} holds another episode")
    return episode


def append(root: StrPath, episodes: Sequence[Episode], max_body_bytes: int) -> list[Receipt]:
    """Write ``episodes`` into the journal at ``root``, durably, leaving their groups marked
    unindexed (module docstring); the receipts name their files. ``InvalidEpisode`` for one the
    layer refuses, before anything is written; ``WriteFailed`` when the files cannot be
    written."""
    checked = [validated(episode, max_body_bytes) for episode in episodes]
    if not checked:
        return []
    try:
        refuse_links_in(root)  # as an open does: nothing is written through a link
    except FileRefused as exc:
        raise NotAppendable(str(exc)) from exc
    groups = sorted({e.group_id for e in checked})
    staged: list[disk.Staged] = []
    lock = FolderLock(os.path.join(root, LOCK), timeout=LOCK_TIMEOUT, poll=LOCK_POLL)
    try:
        for episode in checked:
            staged.append(disk.stage(os.path.join(root, episode_place(episode.group_id,
                                                                      episode.id)),
                                     codec.encode(episode)))
        with disk.held(lock):
            _mark(root, groups)  # first: a crash after it leaves a mark, never a masked file
            for new in staged:
                new.put()
            for group in groups:
                disk.sync_folder(os.path.join(root, group_place(group)))
    finally:
        for new in staged:
            new.discard()
        lock.close()
    return [Receipt(id=e.id, layer="file", location=str(new.path))
            for e, new in zip(checked, staged, strict=True)]


def is_marked(folder: Path) -> bool:
    """Does the group folder ``folder`` hold files appended without the index?"""
    return _mark_of(folder).exists()


def marks(folders: Iterable[Path]) -> list[Path]:
    """The marks of those group folders that have one."""
    return [mark for folder in folders if (mark := _mark_of(folder)).exists()]


def _mark_of(folder: Path) -> Path:
    return folder.parent.parent / UNINDEXED / folder.name


def _mark(root: StrPath, groups: Iterable[str]) -> None:
    folder = os.path.join(root, UNINDEXED)
    disk.make_folder(folder)
    for group in groups:
        mark = os.path.join(folder, group)
        try:
            os.close(open_for_write(mark, os.O_WRONLY | os.O_CREAT))
        except (OSError, FileRefused) as exc:
            raise NotAppendable(f"cannot mark {mark}: {exc}") from exc
    disk.sync_folder(folder)
