"""patterns.md and gotchas.md: kept current after writes; a person's bullets become memories and
are never overwritten or lost."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from contract.episodes import make
from hypothesis import given
from hypothesis import strategies as st

from backends.model import Episode, natural_key, stable_id
from fallback import FileBackend, views
from file.helpers import WholeRenders, eventually


def view(home: Path, name: str = "patterns.md", group: str = "project_a") -> Path:
    return home / "files" / "views" / group / name


def generated(text: str) -> bool:
    return "<!-- dualmem " in text


async def test_patterns_and_gotchas_have_their_own_views(files: FileBackend, home: Path) -> None:
    await files.upsert(make(1, kind="pattern", name="Repository pattern", body="wrap db access"))
    await files.upsert(make(2, kind="gotcha", name="Timezones", body="store UTC only"))
    await files.upsert(make(3, kind="adr", name="Not in any view"))
    patterns = view(home).read_text().splitlines()
    gotchas = view(home, "gotchas.md").read_text().splitlines()
    assert patterns[0] == "# Patterns: project_a" and gotchas[0] == "# Gotchas: project_a"
    assert [line for line in patterns if line.startswith("- ")] == [
        next(line for line in patterns if line.startswith("- Repository pattern: wrap db access"))
    ]
    timezones = "- Timezones: store UTC only <!-- dualmem ep-0002 "
    assert any(line.startswith(timezones) for line in gotchas)
    assert "Not in any view" not in view(home).read_text() + view(home, "gotchas.md").read_text()


async def test_views_follow_updates_and_deletes(files: FileBackend, home: Path) -> None:
    await files.upsert(make(1, kind="pattern", name="old name"))
    await files.upsert(make(2, kind="pattern", name="second"))
    await files.upsert(make(1, kind="pattern", name="new name"))
    text = view(home).read_text()
    assert "new name" in text and "old name" not in text
    await files.delete(make(2).id)
    assert "second" not in view(home).read_text()
    await files.upsert(make(1, kind="gotcha", name="new name"))
    assert "new name" not in view(home).read_text()
    assert "new name" in view(home, "gotchas.md").read_text()


async def test_a_hand_added_bullet_becomes_a_searchable_memory(
    files: FileBackend, home: Path
) -> None:
    await files.upsert(make(1, kind="pattern"))
    with view(home).open("a") as markdown:
        markdown.write("- Always pin kuzu to 0.11.3 in constraints\n")
    text = "Always pin kuzu to 0.11.3 in constraints"
    hits = await eventually(lambda: files.search("kuzu constrants"), bool)
    expected = stable_id("project_a", "pattern", natural_key(text))
    assert [hit.episode.id for hit in hits] == [expected]
    assert hits[0].episode.source == "manual"
    assert (hits[0].episode.name, hits[0].episode.body, hits[0].episode.kind) == (
        text, text, "pattern"
    )


async def test_a_hand_bullet_is_kept_verbatim_through_renders(
    files: FileBackend, home: Path
) -> None:
    await files.upsert(make(1, kind="pattern", name="generated one"))
    lines = view(home).read_text().splitlines()
    lines[1:1] = ["", "My own notes, in prose.", "*   Hand bullet,  kept as typed  "]
    view(home).write_text("\n".join(lines) + "\n")
    episode_id = stable_id("project_a", "pattern", natural_key("Hand bullet,  kept as typed"))
    assert await eventually(lambda: files.get(episode_id), lambda found: found is not None)
    await files.upsert(make(2, kind="pattern", name="generated two"))
    await files.upsert(make(1, kind="pattern", name="generated one renamed"))
    after = view(home).read_text().splitlines()
    assert after[:4] == ["# Patterns: project_a", "", "My own notes, in prose.", lines[3]]
    assert [line.split(" <!--")[0] for line in after if generated(line)] == [
        "- generated one renamed: body of episode 1", "- generated two: body of episode 2"
    ]


async def test_deleting_a_hand_bullets_memory_removes_the_bullet(
    files: FileBackend, home: Path
) -> None:
    await files.upsert(make(1, kind="gotcha"))
    with view(home, "gotchas.md").open("a") as markdown:
        markdown.write("- flaky test on CI\n- keep me\n")
    flaky = stable_id("project_a", "gotcha", natural_key("flaky test on CI"))
    assert await eventually(lambda: files.count(), lambda n: n == 3) == 3
    assert await files.delete(flaky) is True
    text = view(home, "gotchas.md").read_text()
    assert "flaky test on CI" not in text and "- keep me\n" in text
    reopened = await FileBackend.open(home / "files")  # the bullet must not come back
    try:
        assert await reopened.get(flaky) is None
        assert await reopened.count() == 2
    finally:
        await reopened.aclose()


async def test_removing_a_hand_bullet_removes_its_memory(files: FileBackend, home: Path) -> None:
    await files.upsert(make(1, kind="pattern"))
    original = view(home).read_text()
    view(home).write_text(original + "- short lived\n")
    assert await eventually(lambda: files.count(), lambda n: n == 2) == 2
    view(home).write_text(original)
    assert await eventually(lambda: files.count(), lambda n: n == 1) == 1
    assert await files.get(stable_id("project_a", "pattern", natural_key("short lived"))) is None


async def test_an_edited_generated_bullet_corrects_its_memory(
    files: FileBackend, home: Path
) -> None:
    await files.upsert(make(1, kind="pattern", name="use pathlib", body=""))
    text = view(home).read_text()
    view(home).write_text(text.replace("- use pathlib <!--", "- use pathlib, not os.path <!--"))
    corrected = make(1, kind="pattern", name="use pathlib, not os.path", body="")
    assert await eventually(lambda: files.get("ep-0001"), corrected.__eq__) == corrected
    assert await files.count() == 1  # the same memory, not a second one
    settled = await eventually(
        view(home).read_text, lambda now: "- use pathlib, not os.path <!-- dualmem ep-0001" in now
    )
    assert "- use pathlib, not os.path <!-- dualmem ep-0001" in settled
    assert "- use pathlib <!--" not in settled


async def test_bullets_added_while_closed_are_taken_in_at_open(home: Path) -> None:
    folder = view(home).parent
    folder.mkdir(parents=True)
    view(home).write_text("# my patterns\n\n- written before dualmem ever ran\n")
    backend = await FileBackend.open(home / "files")
    try:
        hits = await backend.search("written before")
        assert [hit.episode.body for hit in hits] == ["written before dualmem ever ran"]
        assert view(home).read_text() == "# my patterns\n\n- written before dualmem ever ran\n"
    finally:
        await backend.aclose()


async def test_a_hand_memory_written_through_the_api_shows_as_a_plain_bullet(
    files: FileBackend, home: Path
) -> None:
    text = "migrated from another layer"
    episode = Episode.parse(
        id=stable_id("project_a", "pattern", natural_key(text)),
        group_id="project_a", kind="pattern", name=text, body=text, source="manual",
    )
    await files.upsert(episode)
    assert f"\n- {text}\n" in view(home).read_text()
    await files.aclose()
    reopened = await FileBackend.open(home / "files")
    try:
        assert await reopened.get(episode.id) == episode
    finally:
        await reopened.aclose()


async def test_a_deleted_view_file_deletes_no_memory(files: FileBackend, home: Path) -> None:
    await files.upsert(make(1, kind="pattern"))
    with view(home).open("a") as markdown:
        markdown.write("- hand made\n")
    assert await eventually(lambda: files.count(), lambda n: n == 2) == 2
    await files.aclose()
    view(home).unlink()
    reopened = await FileBackend.open(home / "files")
    try:
        assert await reopened.count() == 2
        await reopened.upsert(make(2, kind="pattern"))
        text = view(home).read_text()
        assert "- hand made\n" in text and text.count("<!-- dualmem ep-") == 2
    finally:
        await reopened.aclose()


async def test_a_bullet_that_cannot_be_a_memory_is_reported_and_kept(home: Path) -> None:
    backend = await FileBackend.open(home / "files", max_body_bytes=20)
    try:
        await backend.upsert(make(1, kind="pattern", body="short"))
        long_line = "- " + "much too long for the limit " * 3 + "\n"
        with view(home).open("a") as markdown:
            markdown.write(long_line)
        problems = await eventually(lambda: backend.problems, bool)
        assert [path for path, _ in problems] == [view(home)]
        assert "over the limit" in problems[0][1]
        await backend.upsert(make(2, kind="pattern", body="short"))
        assert long_line in view(home).read_text()
        assert await backend.count() == 2
    finally:
        await backend.aclose()


async def test_a_view_that_is_not_utf8_is_left_untouched(files: FileBackend, home: Path) -> None:
    await files.upsert(make(1, kind="pattern"))
    latin1 = "# Patterns\n\n- caf\xe9 au lait\n".encode("latin-1")
    view(home).write_bytes(latin1)
    assert await eventually(lambda: files.problems, bool)
    await files.upsert(make(2, kind="pattern"))
    assert view(home).read_bytes() == latin1
    assert [path for path, _ in files.problems] == [view(home)]
    assert await files.count() == 2



async def test_a_hand_bullet_and_the_api_share_one_memory_for_one_text(
    files: FileBackend, home: Path
) -> None:
    text = "Retry a flaky fsync once"
    await files.upsert(Episode.create(
        group_id="project_a", kind="pattern", name=text, body=text, key=natural_key(text)
    ))
    with view(home).open("a") as markdown:
        markdown.write("- retry a FLAKY fsync, once!\n- sentinel bullet\n")
    assert await eventually(lambda: files.search("sentinel"), bool)
    assert await files.count(group_ids=["project_a"], kinds=["pattern"]) == 2


async def test_a_batch_renders_each_view_it_touches_once_and_right(
    files: FileBackend, home: Path
) -> None:
    await files.upsert(make(1, kind="pattern", name="leaves for gotchas"))
    await files.upsert_many([
        make(1, kind="gotcha", name="now a gotcha"),
        make(2, kind="pattern", name="second pattern"),
        make(3, kind="pattern", name="third pattern"),
        make(2, kind="pattern", name="second pattern, renamed"),
    ])
    patterns = [line for line in view(home).read_text().split("\n") if generated(line)]
    gotchas = [line for line in view(home, "gotchas.md").read_text().split("\n") if generated(line)]
    assert len(patterns) == 2 and len(gotchas) == 1
    assert "second pattern, renamed" in patterns[0] and "third pattern" in patterns[1]
    assert "now a gotcha" in gotchas[0]

one_line = st.text(st.characters(exclude_characters="\n", codec="utf-8"), max_size=30)


@given(
    person=st.lists(st.one_of(one_line, one_line.map(lambda s: "- " + s)), max_size=8),
    names=st.lists(st.text("abc xyz", min_size=1, max_size=8).map(str.strip).filter(bool)),
)
def test_render_keeps_every_persons_line_and_settles(person: list[str], names: list[str]) -> None:
    episodes = [
        (f"e{n}", views.bullet(Episode.parse(id=f"e{n}", group_id="g", kind="pattern", name=name,
                                             body="")))
        for n, name in enumerate(names)
    ]
    first = views.render("\n".join(["# mine", *person]) + "\n", "g", "pattern", episodes)
    kept = [line for line in first.split("\n") if not generated(line)]
    assert [line for line in ["# mine", *person] if line.strip()] == [
        line for line in kept if line.strip()
    ]
    assert sum(map(generated, first.split("\n"))) == len(episodes)
    assert views.render(first, "g", "pattern", episodes) == first



VIEW_STEP = st.tuples(
    st.sampled_from(["put", "put", "put", "hand", "delete"]),
    st.integers(0, 7),  # which memory
    st.integers(0, 5),  # its time: equal times are ordered by id
    st.sampled_from(["pattern", "gotcha"]),
    st.sampled_from(["project_a", "project_b"]),
)




@given(steps=st.lists(VIEW_STEP, min_size=1, max_size=20))
def test_views_spliced_write_by_write_read_as_views_rendered_whole(
    steps: list[tuple[str, int, int, str, str]],
) -> None:
    async def play(roots: list[Path]) -> None:
        stores = [await FileBackend.open(roots[0], watch=False),
                  await WholeRenders.open(roots[1], watch=False)]
        try:
            for action, n, minute, kind, group in steps:
                for store in stores:
                    if action == "delete":
                        await store.delete(f"ep-{n:04d}")
                        continue
                    fields = {"kind": kind, "group_id": group, "name": f"memory {n} at {minute}",
                              "created_at": make(minute).created_at}
                    if action == "hand":  # a memory that shows as a person's bullet
                        body = f"hand {n}"
                        fields |= {"id": stable_id(group, kind, natural_key(body)), "body": body,
                                   "name": body, "source": views.MANUAL}
                    await store.upsert(make(n, **fields))
                spliced, whole = ({path.relative_to(root): path.read_text()
                                   for path in (root / "views").rglob("*.md")} for root in roots)
                assert spliced == whole
        finally:
            for store in stores:
                await store.aclose()

    with tempfile.TemporaryDirectory() as scratch:
        asyncio.run(play([Path(scratch) / "spliced", Path(scratch) / "whole"]))
