"""What changed on disk without the index: the group folders whose mtime moved, the views whose
signature did, and the views of which a page the index records is gone. ``Intake`` takes these
in at open; a reader of the index alone asks first whether there are any (a look at the
folders and views, no file read)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from backends.model import GROUP_ID
from fallback.file_record import FileRecord, mtime, signature_of
from fallback.layout import Layout


class Unseen(NamedTuple):
    stale: list[str]
    """groups whose folder to read again (sorted)"""
    edited: list[Path]
    """views a person may have changed"""
    lost: set[tuple[str, str]]
    """(group, kind) of views to render again: a page of theirs is gone"""


def unseen(layout: Layout, files: FileRecord, *, everything: bool = False) -> Unseen:
    """What the index has not seen (``everything``: every group and view, for an empty
    index)."""
    # The records in two queries, compared by path text: every read of a team's server asks.
    stale = _stale_groups(layout, files, everything)
    on_disk = layout.view_paths()
    recorded = files.view_signatures()
    edited = [view for view in on_disk
              if everything or recorded.get(str(view)) != signature_of(view)]
    lost = {group_kind for path in recorded.keys() - {str(view) for view in on_disk}
            if (group_kind := layout.view_of(Path(path))) is not None}
    return Unseen(stale, edited, lost)


def _stale_groups(layout: Layout, files: FileRecord, everything: bool) -> list[str]:
    on_disk = set(layout.groups())
    recorded = files.folder_mtimes()
    stale = {group for group in {os.path.basename(path) for path in recorded} - on_disk
             if GROUP_ID.fullmatch(group)}
    for group in on_disk:
        folder = layout.group_folder(group)
        if everything or recorded.get(str(folder)) != mtime(folder):
            stale.add(group)
    return sorted(stale)
