"""The search cache: served within its time-to-live, dropped by writes through it, never
holding a result that a concurrent write may have made stale."""

from __future__ import annotations

from pathlib import Path

from context_corpus import MEMORIES, PROJECT

from backends.model import Episode, Hit, Receipt
from backends.protocol import MemoryBackend
from memory.agent.scopes import GOTCHA
from memory.context import CachedStore, Task, build_context
from memory.context.cache import DEFAULT_TTL_SECONDS
from memory.context.journal import journal_of
from memory.mcp.tools import MemoryTools
from memory.store.project import ensure_project_id

from .conftest import fill


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def gotcha(text: str) -> Episode:
    return Episode.create(group_id=PROJECT, kind=GOTCHA, name=text, body=text)


async def test_served_within_ttl_and_refreshed_after(store: MemoryBackend) -> None:
    clock = Clock()
    cache = CachedStore(store, ttl=10, clock=clock)
    await cache.upsert(gotcha("Redis sessions expire silently"))
    first = await cache.search("redis sessions")
    assert await cache.search("redis sessions") == first and cache.hits == 1
    await store.upsert(gotcha("Redis sessions need a TTL"))  # behind the cache's back
    if journal_of(store) is None:  # a graph alone: stale until the time runs out
        assert await cache.search("redis sessions") == first
    else:  # the journal moved: never older than the last write
        assert len(await cache.search("redis sessions")) == 2 and cache.misses == 2
    clock.now = 10.5
    assert len(await cache.search("redis sessions")) == 2


async def test_writes_through_the_cache_invalidate_it(store: MemoryBackend) -> None:
    cache = CachedStore(store)
    saved = await cache.upsert(gotcha("Redis sessions expire silently"))
    assert len(await cache.search("redis sessions")) == 1
    await cache.upsert(gotcha("Redis sessions need a TTL"))
    assert len(await cache.search("redis sessions")) == 2
    assert await cache.delete(saved.id)
    assert [h.episode.name for h in await cache.search("redis sessions")] == [
        "Redis sessions need a TTL"
    ]
    assert cache.hits == 0 and cache.misses == 3


class WriteDuringSearch:
    """The real store; a write lands through ``cache`` while each search is under way."""

    def __init__(self, inner: MemoryBackend) -> None:
        self.inner = inner
        self.layer = inner.layer
        self.cache: CachedStore | None = None

    async def search(self, query: str, **filters: object) -> list[Hit]:
        hits = await self.inner.search(query, **filters)  # type: ignore[arg-type]
        assert self.cache is not None
        await self.cache.upsert(gotcha(f"written during the search for {query}"))
        return hits

    async def upsert(self, episode: Episode) -> Receipt:
        return await self.inner.upsert(episode)


async def test_a_search_overlapping_a_write_is_not_kept(store: MemoryBackend) -> None:
    racing = WriteDuringSearch(store)
    cache = racing.cache = CachedStore(racing)  # type: ignore[arg-type]
    await cache.search("written search")
    await cache.search("written search")
    assert cache.hits == 0 and cache.misses == 2


async def test_oldest_entries_are_evicted(store: MemoryBackend) -> None:
    cache = CachedStore(store, max_entries=2)
    for query in ("a", "b", "c", "a"):
        await cache.search(query)
    assert cache.misses == 4 and cache.hits == 0
    await cache.search("c")
    assert cache.hits == 1


async def test_context_through_the_cache_is_the_same(store: MemoryBackend) -> None:
    await fill(store, MEMORIES.values())
    cache = CachedStore(store)
    task = Task(description="Fix authentication middleware")
    direct = await build_context(store, task, project_id=PROJECT)
    cold = await build_context(cache, task, project_id=PROJECT)
    warm = await build_context(cache, task, project_id=PROJECT)
    assert direct.markdown == cold.markdown == warm.markdown != ""
    assert cache.hits == cache.misses > 0


async def test_the_mcp_tools_cache_contexts_for_five_minutes_and_searches_never(
    store: MemoryBackend, tmp_path: Path
) -> None:
    home = tmp_path / "project" / ".dualmem"
    ensure_project_id(home / "project.json", "project")
    tools = MemoryTools(store, home)
    assert isinstance(tools.store, CachedStore) and tools.store.ttl == DEFAULT_TTL_SECONDS == 300
    project = tools.project_id
    await tools.add_memory(kind="gotcha", text="Redis sessions expire silently")
    task = "Refresh redis sessions"
    first = await tools.get_task_context(task=task, complexity=3)
    assert "expire silently" in first.markdown
    # Another session's write, behind this server's back: its searches see it at once, and
    # so do its contexts where a journal says something was written (a graph alone: once the
    # cached entries expire).
    await tools.fresh.upsert(Episode.create(group_id=project, kind=GOTCHA,
                                            name="Redis sessions need a TTL",
                                            body="Redis sessions need a TTL"))
    async def uncached() -> str:  # what a fresh server assembles from the same store
        fresh = MemoryTools(tools.fresh, home)
        return (await fresh.get_task_context(task=task, complexity=3)).markdown

    assert "need a TTL" in await uncached()
    stale = journal_of(store) is None
    assert ((await tools.get_task_context(task=task, complexity=3)).markdown == first.markdown) \
        is stale
    found = await tools.search_memories(query="redis sessions TTL")
    assert "Redis sessions need a TTL" in [hit.name for hit in found]
    # A write through the tools drops the cache.
    await tools.add_memory(kind="pattern", text="Refresh redis sessions on every request")
    again = (await tools.get_task_context(task=task, complexity=3)).markdown
    assert again == await uncached() != first.markdown


WRITER = """
import asyncio, sys
from backends.model import Episode
from fallback import FileBackend

async def main() -> None:
    store = await FileBackend.open(sys.argv[1])
    try:
        await store.upsert(Episode.create(group_id=sys.argv[2], kind="gotcha",
                                          name=sys.argv[3], body=sys.argv[3]))
    finally:
        await store.aclose()

asyncio.run(main())
"""


async def test_a_write_from_another_process_is_in_the_next_context(tmp_path: Path) -> None:
    import asyncio
    import sys

    from memory import Config
    from memory.store.dual import open_dual

    home = tmp_path / "project" / ".dualmem"
    ensure_project_id(home / "project.json", "project")
    config = Config(home=home)
    store = await open_dual(config)
    try:
        tools = MemoryTools(store, home)
        await tools.add_memory(kind="gotcha", text="Stripe refunds are retried with backoff")
        task = "Retry Stripe refunds"
        first = await tools.get_task_context(task=task, complexity=3)
        assert "retried with backoff" in first.markdown
        text = "Stripe refunds need an idempotency key on every retry"
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-c", WRITER, str(config.files_dir), tools.project_id, text,
            stderr=asyncio.subprocess.PIPE)
        _, stderr = await child.communicate()
        assert child.returncode == 0, stderr
        assert text in (await tools.get_task_context(task=task, complexity=3)).markdown
    finally:
        await store.aclose()
