"""Where the file layer keeps things under its folder, and which path means what.

    <root>/episodes/<group_id>/<file name of id>.json   one episode
    <root>/views/<group_id>/patterns.md | gotchas.md    Markdown views people read and edit
    <root>/views/<group_id>/patterns-<time>-<hex>.md     a later page of a view (fallback.views)
    <root>/.lock                                         serializes writers across processes
    <root>/history.jsonl                                 facts rewrites retired (store.kept_log)
    <root>/enriched.jsonl                                what an LLM's extraction found (ditto)

Every path is built from a validated group id and an id turned into a file name here, so no
input can name a place outside the root.
"""

from __future__ import annotations

import os
import re

from backends.errors import InvalidEpisode
from backends.kinds import GOTCHA, PATTERN
from backends.lean_typing import TYPE_CHECKING, NamedTuple
from backends.model import EPISODE_ID, GROUP_ID, check_group_id
from backends.patterns import lazy

if TYPE_CHECKING:
    from pathlib import Path

    from _typeshed import StrPath

EPISODES = "episodes"
LOCK = ".lock"
VIEW_FILES = {PATTERN: "patterns.md", GOTCHA: "gotchas.md"}
VIEW_KINDS = {name: kind for kind, name in VIEW_FILES.items()}
EPISODE_SUFFIX = ".json"
FILE_LIMIT = 1 << 30
"""the most of one episode file or view that is read: far over any memory a write takes or
view a person keeps"""
_PAGE_NAME = lazy(
    r"(?P<stem>patterns|gotchas)-(?P<day>\d{4}-\d\d-\d\d)T(?P<h>\d\d)(?P<m>\d\d)(?P<s>\d\d)"
    r"-[0-9a-f]{6}\.md")

# Safe on every file system, case-insensitive ones included; other ids get a digest suffix.
_PLAIN_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]*")


def file_name(episode_id: str) -> str:
    """The file name of an episode: the id itself when it is plain lower-case; otherwise the id
    with ':' and capitals folded, plus '~' and a digest of the id, so that no two ids share a
    name ('~' never occurs in an id)."""
    if not EPISODE_ID.fullmatch(episode_id):
        raise InvalidEpisode(f"invalid episode id {episode_id!r}")
    if _PLAIN_NAME.fullmatch(episode_id):
        return episode_id + EPISODE_SUFFIX
    import hashlib  # loads OpenSSL (~5 ms): only an id that is not plain needs it

    folded = episode_id.lower().replace(":", "_")
    digest = hashlib.sha256(episode_id.encode()).hexdigest()[:20]
    return f"{folded}~{digest}{EPISODE_SUFFIX}"


def group_place(group_id: str) -> str:
    """A group's folder of episodes, relative to the root (``Layout.group_folder``; as text for
    a process that imports no ``pathlib``, ``fallback.append``)."""
    return os.path.join(EPISODES, check_group_id(group_id))


def episode_place(group_id: str, episode_id: str) -> str:
    """An episode's file, relative to the root (``Layout.episode_path``; as text, as above)."""
    return os.path.join(group_place(group_id), file_name(episode_id))


def groups_in(root: StrPath) -> list[str]:
    """The group folders present on disk under ``root`` (names that are not group ids are
    ignored)."""
    episodes = os.path.join(root, EPISODES)
    if not os.path.isdir(episodes):
        return []
    with os.scandir(episodes) as entries:
        return sorted(entry.name for entry in entries
                      if GROUP_ID.fullmatch(entry.name) and entry.is_dir(follow_symlinks=False))


class Layout(NamedTuple):
    root: Path

    @property
    def episodes(self) -> Path:
        return self.root / EPISODES

    @property
    def views(self) -> Path:
        return self.root / "views"

    @property
    def lock(self) -> Path:
        return self.root / LOCK

    @property
    def history(self) -> Path:
        return self.root / "history.jsonl"

    @property
    def enriched(self) -> Path:
        return self.root / "enriched.jsonl"

    def group_folder(self, group_id: str) -> Path:
        return self.root / group_place(group_id)

    def episode_path(self, group_id: str, episode_id: str) -> Path:
        return self.root / episode_place(group_id, episode_id)

    def view_path(self, group_id: str, kind: str, page: str | None = None) -> Path:
        """The view's first page, or its page of file name ``page``."""
        return self.views / check_group_id(group_id) / (page or VIEW_FILES[kind])

    def groups(self) -> list[str]:
        """The group folders present on disk (``groups_in``)."""
        return groups_in(self.root)

    def view_paths(self) -> list[Path]:
        if not self.views.is_dir():
            return []
        return sorted(path for folder in self.views.iterdir() if is_group_folder(folder)
                      for path in self.pages_in(folder))

    def pages_in(self, folder: Path) -> list[Path]:
        """The view files (first and later pages) in a group's views folder."""
        try:
            with os.scandir(folder) as entries:
                return [folder / e.name for e in entries
                        if _view_kind(e.name) is not None and e.is_file()]
        except OSError:
            return []

    def group_folders(self) -> list[Path]:
        """Every group folder of episodes and of views (where writers leave temp files)."""
        return [
            folder
            for parent in (self.episodes, self.views)
            if parent.is_dir()
            for folder in parent.iterdir()
            if is_group_folder(folder)
        ]

    def episode_group(self, path: Path) -> str | None:
        """The group of an episode file path, or None when the path is not one."""
        if path.parent.parent != self.episodes or not is_episode_file(path):
            return None
        group = path.parent.name
        return group if GROUP_ID.fullmatch(group) else None

    def view_of(self, path: Path) -> tuple[str, str] | None:
        """(group, kind) of a view path, or None when the path is not one."""
        kind = _view_kind(path.name)
        group = path.parent.name
        if kind is None or path.parent.parent != self.views or not GROUP_ID.fullmatch(group):
            return None
        return group, kind


def page_name(kind: str, created_key: str, episode_id: str) -> str:
    """The file name of the later page of a view that the bullet of ``episode_id``, created at
    ``created_key`` (``index.time_key``), starts: its time first, so that pages list in order."""
    import hashlib  # as in file_name

    day, clock = created_key[:19].split("T")
    digest = hashlib.sha256(episode_id.encode()).hexdigest()[:6]
    return f"{VIEW_FILES[kind].removesuffix('.md')}-{day}T{clock.replace(':', '')}-{digest}.md"


def page_time(name: str) -> str:
    """When the first bullet of the later page ``name`` was created, as people read it."""
    found = _PAGE_NAME().fullmatch(name)
    return "" if found is None else f"{found['day']} {found['h']}:{found['m']}:{found['s']}"


def _view_kind(name: str) -> str | None:
    found = _PAGE_NAME().fullmatch(name)
    return VIEW_KINDS.get(name) if found is None else found["stem"][:-1]


def is_group_folder(path: Path) -> bool:
    return bool(GROUP_ID.fullmatch(path.name)) and path.is_dir() and not path.is_symlink()


def is_episode_file(path: Path) -> bool:
    return is_episode_name(path.name)


def is_episode_name(name: str) -> bool:
    # Temp files of writers in flight start with '.', so they are never taken for episodes.
    return name.endswith(EPISODE_SUFFIX) and not name.startswith(".")

