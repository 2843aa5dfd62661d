"""The parts of one file layer home that ``FileBackend``'s collaborators share."""

from __future__ import annotations

from typing import NamedTuple

from fallback.guard import WriteGuard
from fallback.held import HeldFolder
from fallback.index import FileIndex
from fallback.layout import Layout
from fallback.tombstones import TombstoneFolder


class Parts(NamedTuple):
    layout: Layout
    file_index: FileIndex  # not ``index``: a tuple has a method of that name
    guard: WriteGuard
    held: HeldFolder
    tombstones: TombstoneFolder
