"""Memories named by a unique prefix of their id, as git names commits: ``3f2a`` is enough
when no other memory's id starts so."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from backends.errors import DualmemError
from backends.protocol import FindsIds, MemoryBackend

SHOWN = 5
"""how many of the memories an ambiguous prefix names the message lists"""


class UnknownId(DualmemError, LookupError):
    """No memory's id is, or starts with, the id given."""


class AmbiguousId(DualmemError, LookupError):
    """Several memories' ids start with the prefix given."""


async def resolve(store: MemoryBackend, given: str, *, group_ids: Sequence[str] | None = None,
                  also: Iterable[str] = ()) -> str:
    """The one id of ``store`` (of ``group_ids``; None: every group), or of ``also`` (ids no
    longer stored, such as forgotten ones), that is ``given`` or starts with it."""
    prefix = given.strip()
    if not prefix:
        raise UnknownId("an id is needed (a unique prefix of one is enough)")
    if await store.get(prefix) is not None:
        return prefix
    if isinstance(store, FindsIds):  # a range of its index, not every memory read
        found = set(await store.ids_starting(prefix, group_ids=group_ids))
    else:
        found = {episode.id async for episode in store.scan(group_ids=group_ids)
                 if episode.id.startswith(prefix)}
    found.update(key for key in also if key.startswith(prefix))
    if not found:
        raise UnknownId(f"no memory with id {prefix!r} (nor one starting so)")
    if len(found) > 1:
        shown = ", ".join(sorted(found)[:SHOWN]) + (", ..." if len(found) > SHOWN else "")
        raise AmbiguousId(f"id prefix {prefix!r} is ambiguous: {len(found)} memories start "
                          f"so ({shown}); give more of it")
    return found.pop()
