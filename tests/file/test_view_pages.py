"""A view in pages: a write rewrites the one page its bullet is on, the pages are those a whole
render gives (and those a rebuild from the journal gives), and a writer killed mid-render leaves
nothing torn that the next open does not mend."""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest
from contract.episodes import make
from hypothesis import given, settings
from hypothesis import strategies as st

from backends.model import natural_key, stable_id
from fallback import FileBackend, views
from fallback.index import FILE as INDEX_FILE
from file.helpers import WholeRenders, eventually

SMALL_PAGE = 3
"""a page starts at about one bullet in three: small views have many pages"""


@pytest.fixture(autouse=True)
def small_pages() -> Iterator[None]:
    with mock.patch.object(views, "PAGE", SMALL_PAGE):
        yield


def pages(root: Path, group: str = "project_a") -> dict[str, str]:
    """File name -> text of every page of every view of ``group``."""
    folder = root / "views" / group
    return {path.name: path.read_text() for path in sorted(folder.glob("*.md"))}


def generated_ids(text: str) -> list[str]:
    return [line.generated_id for line in views.parse(text) if line.generated_id is not None]


def not_starting(after: int) -> int:
    """The first episode number of ``make`` past ``after`` whose id starts no page."""
    return next(n for n in range(after + 1, 10_000) if not views.starts_page(f"ep-{n:04d}"))


def signatures(root: Path) -> dict[str, tuple[int, int]]:
    return {name: (os.stat(root / "views" / "project_a" / name).st_ino,
                   os.stat(root / "views" / "project_a" / name).st_mtime_ns)
            for name in pages(root)}


async def write_patterns(root: Path, files: FileBackend | None = None) -> None:
    """30 patterns (enough for a few pages at the tests' page size), through ``files`` or a
    store opened for the purpose."""
    store = files or await FileBackend.open(root, watch=False)
    try:
        for n in range(30):
            await store.upsert(make(n, kind="pattern"))
    finally:
        if files is None:
            await store.aclose()


async def test_a_view_is_cut_into_pages_in_order(home: Path) -> None:
    root = home / "files"
    await write_patterns(root)
    found = pages(root)
    assert len(found) > 2 and "patterns.md" in found
    first, *later = [generated_ids(text) for _, text in sorted(
        found.items(), key=lambda item: (item[0] != "patterns.md", item[0]))]
    assert [i for page in [first, *later] for i in page] == [f"ep-{n:04d}" for n in range(30)]
    assert all(views.starts_page(page[0]) for page in later)
    assert not any(views.starts_page(i) for page in [first, *later] for i in page[1:])


async def test_a_write_rewrites_only_the_page_its_bullet_is_on(home: Path) -> None:
    root = home / "files"
    files = await FileBackend.open(root, watch=False)
    try:
        older, newest = range(30), not_starting(30)
        for n in older:
            await files.upsert(make(n, kind="pattern"))
        before = signatures(root)
        await files.upsert(make(newest, kind="pattern"))
        after = signatures(root)
        changed = [name for name in after if before.get(name) != after[name]]
        assert len(before) > 2 and len(changed) == 1
        assert f"ep-{newest:04d}" in pages(root)[changed[0]]
        before = after
        await files.delete(f"ep-{older[0]:04d}")  # on the first page
        after = signatures(root)
        assert [name for name in after if before[name] != after[name]] == ["patterns.md"]
    finally:
        await files.aclose()


async def test_removing_the_memory_that_starts_a_page_joins_it_to_the_page_before(
    home: Path,
) -> None:
    root = home / "files"
    files = await FileBackend.open(root, watch=False)
    try:
        await write_patterns(root, files)
        starter = next(n for n in range(1, 30) if views.starts_page(f"ep-{n:04d}"))
        name = next(name for name, text in pages(root).items()
                    if generated_ids(text)[:1] == [f"ep-{starter:04d}"])
        await files.delete(f"ep-{starter:04d}")
        found = pages(root)
        assert name not in found
        holder = next(text for text in found.values() if f"ep-{starter + 1:04d}" in text)
        assert f"ep-{starter - 1:04d}" in holder
    finally:
        await files.aclose()


async def test_a_bullet_typed_on_a_later_page_becomes_a_memory_on_the_first(home: Path) -> None:
    root = home / "files"
    files = await FileBackend.open(root)
    try:
        await write_patterns(root, files)
        later = root / "views" / "project_a" / max(set(pages(root)) - {"patterns.md"})
        later.write_text(later.read_text() + "- Typed on a later page\n")
        memory = stable_id("project_a", "pattern", natural_key("Typed on a later page"))
        assert await eventually(lambda: files.get(memory), lambda got: got is not None)
        found = await eventually(lambda: pages(root),
                                 lambda now: "Typed on a later page" not in now[later.name])
        assert "- Typed on a later page" in found["patterns.md"]
        assert "Typed on a later page" not in found[later.name]
    finally:
        await files.aclose()


async def test_a_page_removed_by_hand_is_written_again_at_the_next_open(home: Path) -> None:
    root = home / "files"
    await write_patterns(root)
    whole = pages(root)
    (root / "views" / "project_a" / max(whole)).unlink()
    files = await FileBackend.open(root, watch=False)
    await files.aclose()
    assert pages(root) == whole


VIEW_STEP = st.tuples(
    st.sampled_from(["put", "put", "put", "hand", "delete"]),
    st.integers(0, 11),  # which memory
    st.integers(0, 5),  # its time: equal times are ordered by id
    st.sampled_from(["pattern", "gotcha"]),
)




def lines(texts: dict[str, str]) -> dict[str, list[str]]:
    """The lines of each page that shows a bullet, blank lines aside (a view emptied by writes
    stays; a rebuild writes none)."""
    return {name: sorted(line for line in text.split("\n") if line.strip())
            for name, text in texts.items()
            if "\n- " in text}


# `make test` tries 20 sequences of steps, `make slow` the full 40: the same property.
@pytest.mark.parametrize("examples", [20, pytest.param(40, marks=pytest.mark.slow)])
def test_pages_changed_write_by_write_are_those_rendered_whole_and_rebuilt(examples: int) -> None:
    settings(deadline=None, max_examples=examples)(
        given(steps=st.lists(VIEW_STEP, min_size=1, max_size=20))(_pages_match))()


def _pages_match(steps: list[tuple[str, int, int, str]]) -> None:
    async def play(roots: list[Path]) -> None:
        stores = [await FileBackend.open(roots[0], watch=False),
                  await WholeRenders.open(roots[1], watch=False)]
        try:
            for action, n, minute, kind in steps:
                for store in stores:
                    if action == "delete":
                        await store.delete(f"ep-{n:04d}")
                        continue
                    fields = {"kind": kind, "name": f"memory {n} at {minute}",
                              "created_at": make(minute).created_at}
                    if action == "hand":
                        body = f"hand {n}"
                        fields |= {"id": stable_id("project_a", kind, natural_key(body)),
                                   "body": body, "name": body, "source": views.MANUAL}
                    await store.upsert(make(n, **fields))
                assert pages(roots[0]) == pages(roots[1])
        finally:
            for store in stores:
                await store.aclose()
        # Rebuilt from the journal alone: the same pages, each with the same lines (a person's
        # lines keep the place they had; a rebuild puts them in order).
        kept = pages(roots[0])
        shutil.rmtree(roots[0] / "views")
        (roots[0] / INDEX_FILE).unlink()
        rebuilt = await FileBackend.open(roots[0], watch=False)
        await rebuilt.aclose()
        assert lines(pages(roots[0])) == lines(kept)

    with tempfile.TemporaryDirectory() as scratch:
        roots = [Path(scratch) / "incremental", Path(scratch) / "whole"]
        for root in roots:
            (root / "views" / "project_a").mkdir(parents=True)
        asyncio.run(play(roots))


_KILLED_WRITER = """
import asyncio, sys
from unittest import mock
from backends.model import Episode
from fallback import FileBackend, views

async def main(root):
    files = await FileBackend.open(root, watch=False)
    print("ready", flush=True)
    n = 0
    while True:
        n += 1
        kind = ("pattern", "gotcha")[n % 2]
        await files.upsert(Episode.create(group_id="g", kind=kind, key=f"k{n % 40}",
                                          name=f"memory {n}", body=f"version {n}"))
        if n % 7 == 0:
            await files.delete(Episode.create(group_id="g", kind=kind, key=f"k{(n * 3) % 40}",
                                              name="x", body="x").id)

with mock.patch.object(views, "PAGE", int(sys.argv[2])):
    asyncio.run(main(sys.argv[1]))
"""


async def test_a_writer_killed_mid_render_leaves_views_the_next_open_mends(
    tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    root = tmp_path / "files"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for _ in range(4):
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-c", _KILLED_WRITER, str(root), str(SMALL_PAGE),
            stdout=asyncio.subprocess.PIPE, env=env)
        assert child.stdout is not None and await child.stdout.readline() == b"ready\n"
        await asyncio.sleep(rng.uniform(0.05, 0.5))
        child.send_signal(signal.SIGKILL)
        await child.wait()
        store = await FileBackend.open(root)  # a watching open also sweeps dead writers' files
        try:
            seen = pages(root, "g")
            for text in seen.values():
                assert text.endswith("\n")
                assert all(line.hand_text is None for line in views.parse(text)), text
            # What a whole render of every view gives: nothing more to mend. (A kind the killed
            # writer never stored has no view.)
            kinds = [kind for kind in ("pattern", "gotcha")
                     if await store.count(group_ids=["g"], kinds=[kind])]
            with store._guard.writing():  # under the lock, as a write renders
                store._keeper.render({("g", kind) for kind in kinds})
            assert pages(root, "g") == seen
            assert not [p for p in (root / "views" / "g").iterdir() if p.name.startswith(".")]
        finally:
            await store.aclose()
