"""The views are a place to correct memories: a generated bullet whose text a person changes
corrects its memory (same id, the earlier version kept), one they remove forgets its memory
(``restore`` brings it back), and a change that takes out many at once (a file emptied, cut
short, checked out at an older version, a merge) forgets none: they are held and ``status``
names the command that would forget them. Conflict markers are reported, never taken in."""

from __future__ import annotations

import asyncio
import re
import tempfile
from pathlib import Path

import pytest
from contract.episodes import make
from hypothesis import example, given
from hypothesis import strategies as st

from backends.model import Episode
from fallback import FileBackend
from fallback.versions import FOLDER, Versions
from memory.store.status import Status


def view(home: Path, name: str = "patterns.md") -> Path:
    return home / "files" / "views" / "project_a" / name


def pattern(number: int, name: str, body: str) -> Episode:
    return make(number, kind="pattern", name=name, body=body)


def line_of(home: Path, episode_id: str) -> str:
    return next(line for line in view(home).read_text().splitlines()
                if f"<!-- dualmem {episode_id} " in line)


def generated_ids(home: Path) -> set[str]:
    return generated_in(view(home).read_text())


MARKER = re.compile(r" <!-- dualmem (\S+) [0-9a-f]{10} -->")
"""a generated bullet's whole marker (``fallback/views.py``): one cut short marks nothing"""


def marked(line: str) -> str | None:
    """The id a generated bullet ``line`` (corrected too) ends with; None for any other."""
    found = MARKER.search(line) if line.startswith("- ") else None
    return found and found[1]


def generated_in(text: str) -> set[str]:
    """The ids of the generated bullets in ``text`` (corrected ones too)."""
    return {key for line in text.splitlines() if (key := marked(line)) is not None}


async def reopened(files: FileBackend, home: Path) -> FileBackend:
    """The layer opened again: what changed in the views meanwhile is taken in."""
    await files.aclose()
    return await FileBackend.open(home / "files", watch=False)


async def stored(files: FileBackend) -> dict[str, Episode]:
    return {e.id: e async for e in files.scan()}


async def with_two_patterns(home: Path, first: Episode) -> FileBackend:
    """The layer, holding ``first`` and a second pattern, ``ep-0002``."""
    files = await FileBackend.open(home / "files", watch=False)
    await files.upsert(first)
    await files.upsert(pattern(2, "Locks", "one writer"))
    return files


async def test_correcting_a_generated_bullet_corrects_its_memory_and_keeps_the_earlier(
    home: Path
) -> None:
    earlier = pattern(1, "Timezones", "store local times\nconvert at the edge")
    files = await with_two_patterns(home, earlier)
    line = line_of(home, earlier.id)
    view(home).write_text(view(home).read_text().replace(
        line, line.replace("store local times", "store UTC only")))
    files = await reopened(files, home)
    try:
        now = await stored(files)
        assert set(now) == {earlier.id, make(2).id}  # the same memory: no second one
        assert now[earlier.id].body == "store UTC only\nconvert at the edge"
        assert now[earlier.id].name == "Timezones"
        assert [v.episode for v in Versions(home / "files" / FOLDER).of(earlier.id)] == [earlier]
        assert "- Timezones: store UTC only <!-- dualmem ep-0001 " in view(home).read_text()
        assert "store local times" not in view(home).read_text()
        assert generated_ids(home) == {earlier.id, make(2).id}
        assert files.problems == [] and files.set_aside() == []
    finally:
        await files.aclose()


def test_a_corrected_bullet_says_which_part_changed() -> None:
    from fallback.views import corrected

    both = pattern(1, "Timezones", "store local times\nconvert at the edge")
    assert corrected(both, "Time zones: store local times").name == "Time zones"
    assert corrected(both, "Time zones: store local times").body == both.body
    assert corrected(both, "Timezones: UTC").body == "UTC\nconvert at the edge"
    renamed = corrected(both, "Zones: UTC")
    assert (renamed.name, renamed.body) == ("Zones", "UTC\nconvert at the edge")
    assert corrected(both, "use UTC").body == "use UTC\nconvert at the edge"
    one_line = pattern(2, "use UTC", "use UTC")
    assert corrected(one_line, "use UTC always").body == "use UTC always"
    structured = pattern(3, "Repository", '{"steps": ["a"]}')
    assert corrected(structured, "Repositories").body == structured.body
    assert corrected(structured, "Repositories").id == structured.id


async def test_removing_a_generated_bullet_holds_its_memory_and_restore_shows_it_again(
    home: Path
) -> None:
    """Held, not forgotten: a page missing a generated bullet may be one a failed render (a
    full disk) left behind; ``status`` names the delete that would forget it."""
    gone = pattern(1, "Timezones", "store UTC only")
    files = await with_two_patterns(home, gone)
    view(home).write_text(view(home).read_text().replace(line_of(home, gone.id) + "\n", ""))
    files = await reopened(files, home)
    try:
        assert set(await stored(files)) == {gone.id, make(2).id}
        assert [(a.episode, a.held) for a in files.set_aside()] == [(gone, True)]
        assert gone.id not in generated_ids(home)  # hidden from the view meanwhile
        assert await files.restore(gone.id) == gone
        assert gone.id in generated_ids(home) and await files.get(gone.id) == gone
        assert files.set_aside() == []
    finally:
        await files.aclose()


@pytest.mark.parametrize("change", [
    pytest.param(lambda now, older: older, id="an older version checked out"),
    pytest.param(lambda now, older: now[: now.index("<!-- dualmem ep-0003") - 9],
                 id="a file cut short"),
    pytest.param(lambda now, older: "\n".join(now.splitlines()[:4]) + "\n",
                 id="every generated bullet taken out"),
])
async def test_a_change_taking_out_many_generated_bullets_forgets_none(
    home: Path, change: object
) -> None:
    files = await FileBackend.open(home / "files", watch=False)
    await files.upsert(pattern(1, "Timezones", "store UTC only"))
    older = view(home).read_text()
    for number in (2, 3, 4):
        await files.upsert(pattern(number, f"pattern {number}", f"body {number}"))
    view(home).write_text(change(view(home).read_text(), older))  # type: ignore[operator]
    written = view(home).read_text()
    files = await reopened(files, home)
    try:
        assert len(await stored(files)) == 4  # nothing forgotten
        held = [a.episode.id for a in files.set_aside() if a.held]
        assert held and all(a.held for a in files.set_aside())
        left = written.rstrip()  # as the person (or git) left it, less a line cut short
        assert view(home).read_text().rstrip() in (left, left.rpartition("\n")[0].rstrip())
        assert "ep-" not in " ".join(line for line in written.splitlines()
                                     if "dualmem" not in line)  # a cut line is no memory
        report = Status(home, "file", "test", {}, (), set_aside=tuple(files.set_aside()))
        assert f"dualmem delete {' '.join(sorted(held))}" in report.describe()
        for episode_id in held:
            assert await files.restore(episode_id) is not None
        assert generated_ids(home) == {f"ep-000{n}" for n in (1, 2, 3, 4)}
    finally:
        await files.aclose()


async def test_a_deleted_view_forgets_nothing_and_is_rendered_again(home: Path) -> None:
    files = await FileBackend.open(home / "files", watch=False)
    for number in (1, 2, 3):
        await files.upsert(pattern(number, f"pattern {number}", f"body {number}"))
    view(home).unlink()
    files = await reopened(files, home)
    try:
        assert len(await stored(files)) == 3 and files.set_aside() == []
        assert generated_ids(home) == {"ep-0001", "ep-0002", "ep-0003"}
    finally:
        await files.aclose()


async def test_conflict_markers_are_reported_and_never_made_memories(home: Path) -> None:
    files = await with_two_patterns(home, pattern(1, "Timezones", "store UTC only"))
    text = view(home).read_text()
    merged = text.replace(line_of(home, "ep-0002"), "<<<<<<< HEAD\n- ours\n=======\n"
                          "- theirs\n>>>>>>> branch")
    view(home).write_text(merged)
    files = await reopened(files, home)
    try:
        await files.upsert(pattern(3, "More", "a write renders the view"))
        assert set(await stored(files)) == {"ep-0001", "ep-0002", "ep-0003"}
        assert view(home).read_text() == merged  # not written over: the person resolves it
        assert [(p, "conflict markers" in why) for p, why in files.problems] == [
            (view(home), True)]
        view(home).write_text(merged.replace("<<<<<<< HEAD\n- ours\n=======\n", "")
                              .replace(">>>>>>> branch\n", ""))
        files = await reopened(files, home)
        assert files.problems == []
        assert {e.body for e in (await stored(files)).values()} >= {"theirs"}
        assert len(await stored(files)) == 4 and files.set_aside() == []
        # ep-0003, stored while the page was left, was never on it: shown, not forgotten
        assert generated_ids(home) == {"ep-0001", "ep-0002", "ep-0003"}
    finally:
        await files.aclose()


EDITS = st.one_of(
    st.tuples(st.just("write"), st.integers(1, 3)),
    st.tuples(st.just("correct"), st.integers(0, 20)),
    st.tuples(st.just("remove one"), st.integers(0, 20)),
    st.tuples(st.just("remove many"), st.integers(2, 5)),
    st.tuples(st.just("truncate"), st.integers(0, 400)),
    st.tuples(st.just("revert"), st.integers(0, 50)),
    st.tuples(st.just("delete file")),
    st.tuples(st.just("restore")),
)


@given(st.lists(EDITS, max_size=8))
@example([("truncate", 55), ("write", 1), ("truncate", 318)])  # a bullet cut inside its marker
def test_no_edit_sequence_forgets_by_a_mass_change_and_a_correction_keeps_the_id(
    edits: list[tuple[object, ...]]
) -> None:
    """Agent writes, corrections, removals of one or many generated bullets, truncations,
    reverts to any earlier version, the file deleted, restores: no change forgets a memory
    (what a page lacks is held), and a corrected bullet's memory keeps its id and takes the
    text."""
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(_edit(Path(folder), edits))


async def _edit(home: Path, edits: list[tuple[object, ...]]) -> None:
    files = await FileBackend.open(home / "files", watch=False)
    versions: list[str] = []
    written = 0
    try:
        for edit, *args in [("write", 3), *edits]:
            text = view(home).read_text() if view(home).exists() else ""
            versions.append(text)
            lines = text.splitlines(keepends=True)
            ours = [at for at, line in enumerate(lines) if marked(line) is not None]
            before = await stored(files)
            corrected: tuple[str, str] | None = None
            number = int(args[0]) if args else 0  # type: ignore[call-overload]
            if edit == "write":
                for _ in range(number):
                    written += 1
                    await files.upsert(pattern(written, f"pattern {written}", f"body {written}"))
                continue
            if edit == "correct" and ours:
                at = ours[number % len(ours)]
                episode_id = marked(lines[at])
                assert episode_id is not None
                body = f"corrected {len(versions)}"
                corrected = episode_id, body
                lines[at] = f"- {before[episode_id].name}: {body}" + lines[at][
                    lines[at].index(" <!-- dualmem"):]
                view(home).write_text("".join(lines))
            elif edit in ("remove one", "remove many") and ours:
                count = 1 if edit == "remove one" else number
                gone = {ours[(number + k) % len(ours)] for k in range(count)}
                view(home).write_text("".join(x for at, x in enumerate(lines) if at not in gone))
            elif edit == "truncate":
                view(home).write_text(text[: number % (len(text) + 1)])
            elif edit == "revert":
                view(home).write_text(versions[number % len(versions)])
            elif edit == "delete file":
                view(home).unlink(missing_ok=True)
            elif edit == "restore":
                for item in files.set_aside():
                    await files.restore(item.episode.id)
            saved = view(home).read_text() if view(home).exists() else ""
            removed = len(generated_in(text) - generated_in(saved))
            files = await reopened(files, home)
            now = await stored(files)
            forgotten = before.keys() - now.keys()
            assert not forgotten, f"{edit} ({removed} taken out) forgot {sorted(forgotten)}"
            if corrected is not None:
                episode_id, body = corrected
                assert now[episode_id].body == body, "corrected under its own id"
                assert not any(e.body.endswith(body) for i, e in now.items() if i != episode_id)
    finally:
        await files.aclose()
