"""The per-context search memo: a narrower search is answered from a wider one only when that
is exact, and otherwise reaches the store; writes through it forget what it holds."""

from __future__ import annotations

from context_corpus import PROJECT

from backends.model import Episode
from backends.protocol import MemoryBackend
from memory.agent.scopes import GOTCHA, PATTERN
from memory.context.memo import SearchMemo

from .conftest import fill


def note(kind: str, text: str) -> Episode:
    return Episode.create(group_id=PROJECT, kind=kind, name=text, body=text)


async def test_a_narrower_search_is_answered_from_a_complete_wider_one(
    store: MemoryBackend,
) -> None:
    await fill(store, [note(GOTCHA, "redis sessions expire"), note(PATTERN, "redis sessions")])
    memo = SearchMemo(store)
    wide = await memo.search("redis sessions", group_ids=[PROJECT], limit=10)
    assert len(wide) == 2 and memo.searched == 1
    narrow = await memo.search("redis sessions", group_ids=[PROJECT], kinds=[GOTCHA], limit=5)
    assert [h.episode.kind for h in narrow] == [GOTCHA] and memo.searched == 1
    assert narrow == await store.search("redis sessions", group_ids=[PROJECT], kinds=[GOTCHA],
                                        limit=5)


async def test_a_wider_search_cut_short_does_not_answer_a_kind_it_lacks(
    store: MemoryBackend,
) -> None:
    await fill(store, [note(PATTERN, f"redis sessions pattern {n}") for n in range(3)])
    await fill(store, [note(GOTCHA, "redis")])
    memo = SearchMemo(store)
    await memo.search("redis sessions", group_ids=[PROJECT], limit=2)  # patterns only, cut
    gotchas = await memo.search("redis sessions", group_ids=[PROJECT], kinds=[GOTCHA], limit=2)
    assert [h.episode.kind for h in gotchas] == [GOTCHA] and memo.searched == 2
    # another group or another text is another search
    await memo.search("redis", group_ids=[PROJECT], kinds=[GOTCHA], limit=1)
    await memo.search("redis sessions", group_ids=["elsewhere"], kinds=[GOTCHA], limit=1)
    assert memo.searched == 4


async def test_writes_through_the_memo_forget_it(store: MemoryBackend) -> None:
    memo = SearchMemo(store)
    assert await memo.search("redis", group_ids=[PROJECT]) == []
    await memo.upsert(note(GOTCHA, "redis sessions expire"))
    assert len(await memo.search("redis", group_ids=[PROJECT])) == 1
    await memo.delete((await memo.search("redis", group_ids=[PROJECT]))[0].episode.id)
    assert await memo.search("redis", group_ids=[PROJECT]) == []
    assert memo.searched == 3  # the id was read from the memo
