"""What a person typed in a view is never lost: an emptied, reverted or older view forgets
nothing (the bullets it lost are held and reported), one bullet removed is forgotten with its
text kept for ``restore``, a bullet copied from another view stays, and a save that lands while
dualmem renders the view is taken in, never overwritten unread."""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path

from contract.episodes import make
from hypothesis import given
from hypothesis import strategies as st

from backends.model import natural_key, stable_id
from fallback import FileBackend, disk
from fallback.index import signature
from file.helpers import eventually


def view(home: Path, name: str = "patterns.md") -> Path:
    return home / "files" / "views" / "project_a" / name


def hand_id(text: str, kind: str = "pattern") -> str:
    return stable_id("project_a", kind, natural_key(text))


def aside(files: FileBackend) -> list[tuple[str, bool]]:
    return sorted((a.episode.body, a.held) for a in files.set_aside())


async def typed(files: FileBackend, home: Path, *texts: str) -> str:
    """Append bullets of ``texts`` to the patterns view as a person does; once they are
    memories, the view's text."""
    with view(home).open("a") as markdown:
        markdown.writelines(f"- {text}\n" for text in texts)
    ids = [hand_id(text) for text in texts]

    async def stored() -> bool:
        return all([await files.get(i) is not None for i in ids])

    assert await eventually(stored, bool)
    return view(home).read_text()


BULLETS = ("pin kuzu in constraints", "never mock the graph", "UTC times only")


async def test_an_emptied_view_forgets_nothing_and_shows_every_bullet_again(
    files: FileBackend, home: Path
) -> None:
    await files.upsert(make(1, kind="pattern"))
    await typed(files, home, *BULLETS)
    view(home).write_bytes(b"")  # `: > patterns.md`, or an editor's failed save on a full disk
    text = await eventually(view(home).read_text,
                            lambda now: all(f"- {b}\n" in now for b in BULLETS))
    assert all(f"- {b}\n" in text for b in BULLETS)
    assert await files.count() == 4
    assert files.set_aside() == []


async def test_an_older_view_forgets_nothing_and_holds_what_it_lost(
    files: FileBackend, home: Path
) -> None:
    await files.upsert(make(1, kind="pattern"))
    older = view(home).read_text()
    await typed(files, home, *BULLETS)
    view(home).write_text(older)  # `git checkout -- patterns.md`, `git stash`
    assert await eventually(lambda: aside(files), bool) == sorted((b, True) for b in BULLETS)
    assert await files.count() == 4
    assert [hit.episode.body for hit in await files.search("kuzu constraints")] == [BULLETS[0]]
    await files.upsert(make(2, kind="pattern"))  # a render keeps them out of the view
    assert not any(b in view(home).read_text() for b in BULLETS)

    assert await files.restore(hand_id(BULLETS[0])) is not None  # "I did not mean it"
    assert f"- {BULLETS[0]}\n" in view(home).read_text()
    assert await files.delete(hand_id(BULLETS[1])) is True  # "I did": forgotten, text kept
    assert aside(files) == [(BULLETS[2], True), (BULLETS[1], False)]
    await typed(files, home, BULLETS[2])  # `git stash pop`: back in the view, held no more
    expected = [(BULLETS[1], False)]
    assert await eventually(lambda: aside(files), lambda now: now == expected) == expected
    assert await files.count() == 4


async def test_one_bullet_removed_is_forgotten_and_its_tombstone_keeps_the_text(
    files: FileBackend, home: Path
) -> None:
    await files.upsert(make(1, kind="pattern"))
    await typed(files, home, BULLETS[0])
    both = await typed(files, home, BULLETS[1])
    view(home).write_text(both.replace(f"- {BULLETS[0]}\n", ""))
    assert await eventually(lambda: files.count(), lambda n: n == 2) == 2
    await files.forget_tombstones([hand_id(BULLETS[0])])  # replayed into a graph: text kept
    assert [tomb async for tomb in files.tombstones()] == []
    assert aside(files) == [(BULLETS[0], False)]
    restored = await files.restore(hand_id(BULLETS[0]))
    assert restored is not None and restored.body == BULLETS[0]
    assert f"- {BULLETS[0]}\n" in view(home).read_text()
    assert aside(files) == [] and await files.count() == 3
    assert await files.restore(hand_id(BULLETS[0])) is None  # nothing set aside any more


async def test_a_generated_bullet_copied_into_another_view_becomes_a_hand_bullet(
    files: FileBackend, home: Path
) -> None:
    await files.upsert(make(1, kind="gotcha", name="Timezones", body="store UTC only"))
    await files.upsert(make(2, kind="pattern"))
    line = next(line for line in view(home, "gotchas.md").read_text().splitlines()
                if "<!-- dualmem ep-0001 " in line)
    with view(home).open("a") as markdown:
        markdown.write(line + "\n")
    copied = hand_id("Timezones: store UTC only")
    assert await eventually(lambda: files.get(copied), bool) is not None
    text = await eventually(view(home).read_text,
                            lambda now: "- Timezones: store UTC only\n" in now)
    assert "- Timezones: store UTC only\n" in text
    assert line in view(home, "gotchas.md").read_text()


async def test_a_view_rendered_before_its_edit_was_heard_takes_the_edit_in(home: Path) -> None:
    files = await FileBackend.open(home / "files", watch=False)
    try:
        await files.upsert(make(1, kind="pattern"))
        with view(home).open("a") as markdown:
            markdown.write("- typed just before the agent wrote\n")
        await files.upsert(make(2, kind="pattern"))  # renders the page the person changed
        assert await files.get(hand_id("typed just before the agent wrote")) is not None
    finally:
        await files.aclose()


def test_a_save_landing_just_after_the_check_is_put_back_not_overwritten(
    tmp_path: Path
) -> None:
    path = tmp_path / "patterns.md"
    path.write_text("what dualmem read\n")
    read = signature(path.stat())
    checks = []

    def checked_then_saved(status: os.stat_result | None) -> bool:
        checks.append(status)
        if len(checks) == 1:  # an editor's save, in the instant after the check
            saved = tmp_path / ".patterns.md.swp"
            saved.write_text("what dualmem read\n- the person's bullet\n")
            os.replace(saved, path)
        return status is not None and signature(status) == read

    swap = disk.replace_unless_changed(path, b"the render\n", checked_then_saved)
    assert swap == (None, None)  # not replaced: the caller reads the save and renders again
    assert path.read_bytes() == b"what dualmem read\n- the person's bullet\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["patterns.md"]


TEXTS = st.sampled_from([f"note {n}" for n in range(12)])
EDITS = st.one_of(
    st.tuples(st.just("type"), st.lists(TEXTS, min_size=1, max_size=3)),
    st.tuples(st.just("remove"), st.integers(1, 4)),
    st.tuples(st.just("truncate")),
    st.tuples(st.just("revert"), st.integers(0, 50)),
    st.tuples(st.just("delete file")),
    st.tuples(st.just("restore")),
)


@given(st.lists(EDITS, max_size=12))
def test_no_edit_sequence_loses_a_hand_bullet(edits: list[tuple[object, ...]]) -> None:
    """Typing, removing one or many, emptying, reverting to any earlier version, deleting the
    file and restoring, with the agent writing between edits: every text ever typed is in
    the view, a memory, or set aside with its text, and no removal of two or more bullets at
    once (nor an emptied file) forgets one."""
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(_edit(Path(folder), edits))


async def _edit(home: Path, edits: list[tuple[object, ...]]) -> None:
    files = await FileBackend.open(home / "files", watch=False)
    typed_texts: set[str] = set()
    versions: list[str] = []
    try:
        await files.upsert(make(0, kind="pattern"))
        for number, (edit, *args) in enumerate(edits, start=1):
            text = view(home).read_text() if view(home).exists() else ""
            versions.append(text)
            lines = text.splitlines(keepends=True)
            hands = [at for at, line in enumerate(lines)
                     if line.startswith("- ") and "<!-- dualmem" not in line]
            before = {e.id async for e in files.scan()}
            if edit == "type":
                new = [str(t) for t in args[0]]  # type: ignore[attr-defined]
                typed_texts.update(new)
                view(home).write_text(text + "".join(f"- {t}\n" for t in new))
            elif edit == "remove":
                gone = set(hands[: int(args[0])])  # type: ignore[call-overload]
                view(home).write_text("".join(x for at, x in enumerate(lines) if at not in gone))
            elif edit == "truncate":
                view(home).write_bytes(b"")
            elif edit == "revert":
                view(home).write_text(versions[int(args[0]) % len(versions)])  # type: ignore[call-overload]
            elif edit == "delete file":
                view(home).unlink(missing_ok=True)
            else:
                for item in files.set_aside():
                    await files.restore(item.episode.id)
            await files.upsert(make(number, kind="pattern"))  # the agent writes: takes it in
            now = view(home).read_text()
            stored = {e.id: e.body async for e in files.scan()}
            kept = {item.episode.body for item in files.set_aside()}
            for typed_text in typed_texts:
                assert (f"- {typed_text}\n" in now or typed_text in stored.values()
                        or typed_text in kept), f"{typed_text!r} lost after {edit}"
            forgotten = {i for i in before - stored.keys() if not i.startswith("ep-")}
            assert len(forgotten) <= 1, f"{edit} forgot {len(forgotten)} at once"
    finally:
        await files.aclose()


async def test_a_write_takes_in_a_persons_unseen_edit_before_its_own_change(home: Path) -> None:
    """An edit the watcher has yet to hear of is the person's; what the write then stores or
    deletes is not: a hand memory stored now is not one they removed, one deleted now does
    not come back from their text."""
    files = await FileBackend.open(home / "files", watch=False)
    try:
        await files.upsert(make(1, kind="pattern"))
        with view(home).open("a") as markdown:
            markdown.write("- typed first\n- typed second\n")
        text = "stored by an import"
        imported = make(2, kind="pattern", id=hand_id(text), name=text, body=text,
                        source="manual")
        await files.upsert(imported)
        assert files.set_aside() == [] and await files.get(imported.id) == imported
        assert f"- {text}\n" in view(home).read_text()
        assert await files.get(hand_id("typed first")) is not None
        with view(home).open("a") as markdown:
            markdown.write("- typed third\n")
        assert await files.delete(hand_id("typed first")) is True
        assert await files.get(hand_id("typed first")) is None
        assert await files.get(hand_id("typed third")) is not None
        assert "typed first" not in view(home).read_text()
    finally:
        await files.aclose()


async def test_a_view_that_never_reads_as_it_stands_is_left_and_reported(home: Path) -> None:
    """A view whose read never matches the file in its place (here a link, read through, to a
    file outside) cannot be rendered safely: the write returns, the view is reported, and
    nothing is written through it."""
    files = await FileBackend.open(home / "files", watch=False)
    try:
        await files.upsert(make(1, kind="pattern"))
        outside = home / "outside.md"
        outside.write_text(view(home).read_text())
        before = outside.read_bytes()
        view(home).unlink()
        view(home).symlink_to(outside)
        await files.upsert(make(2, kind="pattern"))
        assert outside.read_bytes() == before
        assert [path for path, _ in files.problems] == [view(home)]
        assert await files.get(make(2).id) is not None
    finally:
        await files.aclose()
