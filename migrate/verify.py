"""Verification: does the target hold every source episode, with the same content?

Per group, source against target: counts always, and content hashes for the groups asked for
(all of them unless told otherwise). A group whose target count falls short is hashed anyway.
Counting is one query per group; hashing reads every episode of the group, which a run that
wrote nothing should not pay for at 10k. The target may hold more than the source (memory
written to it directly): that is reported as ``extra`` and is not a failure.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import AsyncIterator, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from backends.model import Episode
from backends.protocol import MemoryBackend

Index = dict[str, tuple[str, str]]
"""episode id -> (group_id, content hash)"""

MAX_EXAMPLES = 20


class Source(Protocol):
    """All a migration reads: ``MemoryBackend.scan`` (a backend, or an import such as an
    Auto-Claude folder)."""

    def scan(
        self, *, group_ids: Sequence[str] | None = None, kinds: Sequence[str] | None = None
    ) -> AsyncIterator[Episode]: ...


async def index(backend: Source, *, group_ids: Sequence[str] | None = None) -> Index:
    return {e.id: (e.group_id, e.content_hash()) async for e in backend.scan(group_ids=group_ids)}


@dataclass(frozen=True)
class GroupCheck:
    group_id: str
    source: int
    target: int
    hashed: bool
    """content hashes compared (else counts only)"""
    missing: int = 0
    """source episodes the target does not hold"""
    changed: int = 0
    """source episodes the target holds with other content"""
    extra: int = 0
    """target episodes the source does not hold (not a failure)"""
    source_digest: str | None = None
    target_digest: str | None = None

    @property
    def ok(self) -> bool:
        return self.missing == 0 and self.changed == 0 and self.target >= self.source


@dataclass(frozen=True)
class Verification:
    groups: tuple[GroupCheck, ...]
    problems: tuple[str, ...]
    """up to MAX_EXAMPLES ids of missing or changed episodes, to start looking"""

    @property
    def clean(self) -> bool:
        return all(g.ok for g in self.groups)

    @property
    def complete(self) -> bool:
        """Every group's content was compared, not only its count."""
        return all(g.hashed for g in self.groups)

    def to_json(self) -> dict[str, Any]:
        return {
            "clean": self.clean,
            "complete": self.complete,
            "groups": [asdict(g) | {"ok": g.ok} for g in self.groups],
            "problems": list(self.problems),
        }

    def summary(self) -> str:
        hashed = sum(g.hashed for g in self.groups)
        counted = len(self.groups) - hashed
        scope = f"{len(self.groups)} group(s), {hashed} by content and {counted} by count"
        if self.clean:
            return f"verified {scope}: clean"
        bad = [g for g in self.groups if not g.ok]
        missing = sum(g.missing or max(g.source - g.target, 0) for g in bad)
        changed = sum(g.changed for g in bad)
        return f"verification FAILED in {len(bad)} of {scope}: {missing} missing, {changed} changed"


async def verify(
    source: Source,
    target: MemoryBackend,
    *,
    source_index: Index | None = None,
    hash_groups: Collection[str] | None = None,
) -> Verification:
    """Compare every source group with the target's: by content for ``hash_groups`` (None:
    all) and for any group the target holds fewer of; by count otherwise. ``source_index``
    saves reading the source again."""
    mine = source_index if source_index is not None else await index(source)
    by_group: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for episode_id, (group, digest) in mine.items():
        by_group[group].append((episode_id, digest))
    counts = {g: await target.count(group_ids=[g]) for g in sorted(by_group)}
    deep = sorted(
        g
        for g in by_group
        if hash_groups is None or g in hash_groups or counts[g] < len(by_group[g])
    )
    theirs = await index(target, group_ids=deep) if deep else {}
    return compare(by_group, counts, deep, theirs)


def compare(
    source: Mapping[str, list[tuple[str, str]]],
    counts: Mapping[str, int],
    deep: Collection[str],
    target: Index,
) -> Verification:
    """``source``: group -> (id, hash) pairs; ``counts``: the target's count per group;
    ``target``: the target's index of the ``deep`` groups, compared by content."""
    theirs_by_group: dict[str, dict[str, str]] = defaultdict(dict)
    for episode_id, (group, digest) in target.items():
        theirs_by_group[group][episode_id] = digest
    problems: list[str] = []
    checks = []
    for group in sorted(source):
        pairs = source[group]
        if group not in deep:
            checks.append(GroupCheck(group, len(pairs), counts[group], hashed=False))
            continue
        theirs = theirs_by_group[group]
        missing = [i for i, _ in pairs if i not in theirs]
        changed = [i for i, d in pairs if i in theirs and theirs[i] != d]
        problems.extend((missing + changed)[: MAX_EXAMPLES - len(problems)])
        checks.append(
            GroupCheck(
                group,
                len(pairs),
                len(theirs),
                hashed=True,
                missing=len(missing),
                changed=len(changed),
                extra=len(theirs) - (len(pairs) - len(missing)),
                source_digest=_digest(pairs),
                target_digest=_digest(list(theirs.items())),
            )
        )
    return Verification(tuple(checks), tuple(problems))


def _digest(pairs: list[tuple[str, str]]) -> str:
    h = hashlib.sha256()
    for episode_id, digest in sorted(pairs):
        h.update(f"{episode_id}:{digest}\n".encode())
    return h.hexdigest()
