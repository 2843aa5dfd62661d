"""The file layer follows the facts its memories state, as the graph does: one hop from what a
query names while the fact holds, none through a fact whose memory is superseded; and what is
superseded ranks below what is current."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from backends.model import Episode
from backends.protocol import upsert_all
from fallback import FileBackend

GROUP = "p"
QUESTION = "What goes wrong with SignedCookieStore?"
WRITTEN = datetime(2026, 1, 5, tzinfo=UTC)
# The gotcha names only the file; the pattern ties the class to the file (a fact).
GOTCHA = Episode.create(group_id=GROUP, kind="gotcha", name="expiry", key="expiry",
                        body="src/auth/legacy.py drops the expiry of every second cookie")


def tie(invalid_at: datetime | None) -> Episode:
    return Episode.create(group_id=GROUP, kind="pattern", name="where it lives", key="tie",
                          body="`SignedCookieStore` is built in src/auth/legacy.py only",
                          created_at=WRITTEN, invalid_at=invalid_at)


async def found(tmp_path: Path, memories: list[Episode]) -> list[str]:
    store = await FileBackend.open(tmp_path / "files", watch=False)
    try:
        await upsert_all(store, memories)
        return [hit.episode.id for hit in await store.search(QUESTION, group_ids=[GROUP])]
    finally:
        await store.aclose()


async def test_a_valid_fact_is_followed_one_hop(tmp_path: Path) -> None:
    assert GOTCHA.id in await found(tmp_path, [GOTCHA, tie(None)])


async def test_a_fact_of_a_superseded_memory_is_not_followed(tmp_path: Path) -> None:
    ranked = await found(tmp_path, [GOTCHA, tie(datetime(2026, 2, 1, tzinfo=UTC))])
    assert ranked == [tie(None).id]  # the memory itself is still found (history), not the hop


async def test_what_is_superseded_ranks_below_what_is_current(tmp_path: Path) -> None:
    old = Episode.create(group_id=GROUP, kind="adr", name="ADR-001: sessions in cookies",
                         body="Keep sessions in signed cookies", key="ADR-001",
                         created_at=WRITTEN, invalid_at=datetime(2026, 3, 1, tzinfo=UTC))
    new = Episode.create(group_id=GROUP, kind="adr", name="ADR-002: sessions in Redis",
                         body="Keep sessions in Redis instead of signed cookies", key="ADR-002",
                         created_at=datetime(2026, 3, 1, tzinfo=UTC))
    store = await FileBackend.open(tmp_path / "files", watch=False)
    try:
        await upsert_all(store, [old, new])
        hits = await store.search("sessions in signed cookies", group_ids=[GROUP])
    finally:
        await store.aclose()
    assert [hit.episode.id for hit in hits] == [new.id, old.id]
