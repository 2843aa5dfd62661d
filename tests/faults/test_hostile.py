"""Hostile inputs, by category, through the Python API and the CLI of each layer: only
dualmem's own errors come out, nothing outside the home is touched, and everything accepted
reads back exactly, also once the store is opened again.

Categories: path tricks in every identifier, control and bidi characters, lone surrogates,
text that looks like Cypher or SQL (in names, bodies, keys and search queries), invalid UTF-8 in
files, oversize and deeply nested bodies, times at the ends of the calendar."""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backends.errors import DualmemError, InvalidEpisode
from backends.graph.kuzu import rows
from backends.model import DEFAULT_MAX_BODY_BYTES, MAX_NAME_CHARS, Episode
from backends.protocol import MemoryBackend, upsert_all
from faults.harness import ITERATIONS, LAYERS, record
from faults.workload import Tally
from memory.cli import main
from memory.store.config import Config
from memory.store.selection import open_backend

CATEGORIES = {
    "path tricks": ["../outside", "../../outside/planted", "/etc/passwd", "..", ".", "a/b",
                    "a\\b", "~root", "C:\\Windows", "%2e%2e%2f", "x\x00y", ".hidden", "-rf",
                    "--help", "NUL", " ", ""],
    "control and bidi": ["\x1b[31mred\x1b[0m", "line\rbreak", "nl\nin", "tab\tin", "\x7f",
                         "\x85nel", "\u2028ls", "\u2029ps", "\u202eevil", "\u2066iso\u2069",
                         "\u200bzw", "\ufeffbom", "e\u0301", "- [ ] not a bullet"],
    "lone surrogates": ["\udcff", "a\ud800b", "\udfff", "\ud83d"],
    "query language": ["MATCH (n) DETACH DELETE n", "'; DROP TABLE replayed; --",
                       '" OR 1=1 --', "$uuid", "{uuid: 'ep-1'}", "CALL show_tables() RETURN *",
                       "COPY Episodic FROM '/etc/passwd'", "`x`", "%s %d {0}", "\\",
                       "<!-- dualmem ep-1 0123456789 -->", "' OR ''='"],
}
FIELDS = ("id", "group_id", "kind", "name", "body", "source", "key")
EXAMPLES = min(1000, 20 * ITERATIONS)
"""hypothesis examples of the API test per layer (the CLI test runs a quarter of them)"""


def _names(error: type[DualmemError]) -> set[str]:
    """Every error of the tree by name, the CLI's own (NotFound, UsageError, ...) among them.
    Asked when an answer is checked, not at import: an error class whose module loads lazily
    (UnknownId in memory.curation.ids) exists by the time it was raised."""
    return {error.__name__}.union(*(_names(sub) for sub in error.__subclasses__()))


def hostile_text() -> st.SearchStrategy[str]:
    """Fragments of every category, alone or mixed with any code point (surrogates included)."""
    fragments = st.sampled_from([value for values in CATEGORIES.values() for value in values])
    anything = st.text(st.characters(codec=None, exclude_categories=()), max_size=6)
    return st.lists(fragments | anything, min_size=1, max_size=3).map("".join)


def build(field: str, value: str) -> Episode:
    """An episode with ``value`` in ``field``; ``InvalidEpisode`` when the model refuses it."""
    base: dict[str, Any] = {"group_id": "hostile", "kind": "note", "name": "a name",
                            "body": "a body", "source": "faults"}
    if field == "id":
        return Episode.parse(id=value, **base)
    if field == "key":
        return Episode.create(key=value, **base)
    return Episode.create(**{**base, field: value})


def outside(home: Path) -> dict[str, bytes | None]:
    """Every path beside ``home`` (planted ones included), with its bytes."""
    return {str(p.relative_to(home.parent)): None if p.is_dir() else p.read_bytes()
            for p in sorted(home.parent.rglob("*")) if home not in p.parents and p != home}


def plant(home: Path) -> None:
    (home.parent / "outside").mkdir(parents=True)
    (home.parent / "outside" / "planted").write_text("keep me")


@contextlib.contextmanager
def opened(home: Path, layer: str) -> Iterator[tuple[asyncio.Runner, MemoryBackend]]:
    """The store, in an event loop of its own that every example of a test shares."""
    with asyncio.Runner() as runner:
        store, _ = runner.run(open_backend(Config(home=home, backend=layer)))  # type: ignore[arg-type]
        try:
            yield runner, store
        finally:
            runner.run(store.aclose())


async def read_back(home: Path, layer: str, accepted: dict[str, Episode]) -> None:
    store, _ = await open_backend(Config(home=home, backend=layer))  # type: ignore[arg-type]
    try:
        assert {e.id: e async for e in store.scan()} == accepted
        for episode in accepted.values():
            assert await store.get(episode.id) == episode
    finally:
        await store.aclose()


async def through_the_api(
    store: MemoryBackend, field: str, value: str, accepted: dict[str, Episode], tally: Tally
) -> None:
    tally.rounds += 1
    try:
        episode = build(field, value)
    except InvalidEpisode:
        tally.refused += 1
        return  # refused by the model, by name: nothing else to check
    tally.acknowledged += 1
    await store.upsert(episode)  # what the model accepts, every layer stores
    accepted[episode.id] = episode
    assert await store.get(episode.id) == episode
    # Reads with the hostile value anywhere answer, and change nothing.
    await store.search(value)
    await store.search(value, group_ids=[value], kinds=[value], limit=3)
    in_group = sorted((e for e in accepted.values() if e.group_id == value),
                      key=lambda e: (e.created_at, e.id))
    assert [e async for e in store.scan(group_ids=[value])] == in_group
    assert await store.count(group_ids=[value], kinds=[value]) == sum(
        e.kind == value for e in in_group)
    found = await store.get(value)
    assert found is None or found == accepted.get(value)
    if value not in accepted:
        assert await store.delete(value) is False


@pytest.mark.parametrize("layer", LAYERS)
def test_hostile_values_through_the_api(tmp_path: Path, layer: str) -> None:
    home = tmp_path / "home"
    plant(home)
    before = outside(home)
    accepted: dict[str, Episode] = {}
    tally = Tally()
    with opened(home, layer) as (runner, store):

        @settings(max_examples=EXAMPLES, deadline=None, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
        @given(field=st.sampled_from(FIELDS), value=hostile_text())
        def attempt(field: str, value: str) -> None:
            runner.run(through_the_api(store, field, value, accepted, tally))

        attempt()
    assert accepted, "no hostile value was accepted: the check read nothing back"
    asyncio.run(read_back(home, layer, accepted))  # raises on anything lost or changed
    assert outside(home) == before
    record("hostile api", layer, tally)


class Cli:
    """``dualmem --home HOME --backend LAYER --json ...`` in this process, its JSON answer."""

    def __init__(self, home: Path, layer: str) -> None:
        self.prefix = ["--home", str(home), "--backend", layer, "--json"]

    def __call__(self, *argv: str) -> tuple[int, Any]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([*self.prefix, *argv])
        assert "Traceback" not in err.getvalue(), err.getvalue()
        document = orjson.loads(out.getvalue())  # exactly one JSON document, always
        assert code in (0, 1, 2), (code, document)
        if code:
            assert document["error"]["type"] in _names(DualmemError), document
        return code, document


def add_arguments(field: str, value: str) -> list[str]:
    values = {"group": "hostile", "kind": "note", "name": "a name", "body": "a body",
              "source": "faults"}
    key = {"key": "k"}
    if field == "key":
        key["key"] = value
    elif field in ("group_id", "kind", "name", "body", "source"):
        values[field.removesuffix("_id")] = value
    # --option=value: a value that starts with '-' is still a value, never an option.
    return ["add", *(f"--{name}={text}" for name, text in {**values, **key}.items())]


@pytest.mark.parametrize("layer", LAYERS)
def test_hostile_values_through_the_cli(tmp_path: Path, layer: str) -> None:
    home = tmp_path / "home"
    plant(home)
    before = outside(home)
    cli = Cli(home, layer)
    stored: dict[str, dict[str, Any]] = {}
    tally = Tally()

    @settings(max_examples=max(10, EXAMPLES // 4), deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(field=st.sampled_from(FIELDS), value=hostile_text())
    def attempt(field: str, value: str) -> None:
        code, added = cli(*add_arguments(field, value))
        tally.rounds += 1
        tally.acknowledged += code == 0
        tally.refused += code != 0
        if code == 0:
            code, shown = cli("get", "--", added["id"])
            assert code == 0, shown
            stored[added["id"]] = shown["episode"]
            sent = dict(arg.removeprefix("--").split("=", 1)
                        for arg in add_arguments(field, value)[1:])
            episode = shown["episode"]
            assert (episode["group_id"], episode["kind"], episode["name"], episode["body"],
                    episode["source"]) == (sent["group"], sent["kind"], sent["name"],
                                           sent["body"], sent["source"])
        cli("search", f"--group={value}", f"--kind={value}", "--", value)
        cli("search", "--", value)
        cli("get", "--", value)
        if value not in stored:
            cli("delete", "--", value)

    attempt()
    code, listed = cli("list", "--all-groups")
    assert code == 0 and {e["id"]: e for e in listed["episodes"]} == stored
    assert outside(home) == before
    record("hostile cli", layer, tally)


# -- oversize and deeply nested bodies, times at the ends of the calendar ---------------------

DEEP_ARRAY = "[" * 50_000 + "]" * 50_000  # JSON text far deeper than any parser follows
DEEP_OBJECT = '{"a": ' * 1000 + "1" + "}" * 1000  # deep, yet within orjson's limit
START = datetime(2025, 1, 1, tzinfo=UTC)


def edge_episodes() -> list[Episode]:
    plus14, minus12 = timezone(timedelta(hours=14)), timezone(timedelta(hours=-12))
    bodies = ["x" * DEFAULT_MAX_BODY_BYTES, "é" * (DEFAULT_MAX_BODY_BYTES // 2), DEEP_ARRAY,
              DEEP_OBJECT, "", " ", "\n\n"]
    times = [datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
             datetime(1, 1, 1, 14, tzinfo=plus14), datetime(9999, 12, 31, 11, 59, tzinfo=minus12),
             datetime(1970, 1, 1), datetime(2262, 4, 12, tzinfo=UTC)]
    made = [Episode.parse(id=f"body-{n}", group_id="edges", kind="note", name=f"body {n}",
                          body=body, created_at=START) for n, body in enumerate(bodies)]
    made += [Episode.parse(id=f"time-{n}", group_id="edges", kind="note", name=f"time {n}",
                           body="at the edge", created_at=moment, valid_at=moment,
                           invalid_at=moment) for n, moment in enumerate(times)]
    made.append(Episode.parse(id="long-name", group_id="edges", kind="note",
                              name="n" * MAX_NAME_CHARS, body="b", created_at=START))
    # Enough plain ones at the edges of time for the graph's bulk path (its CSV carries times).
    made += [Episode.parse(id=f"bulk-{n}", group_id="edges", kind="note", name=f"bulk {n}",
                           body=f"bulk {n}", created_at=times[n % len(times)])
             for n in range(rows.COPY_MIN)]
    return made


@pytest.mark.parametrize("layer", LAYERS)
async def test_bodies_and_times_at_the_edges_read_back_exactly(
    tmp_path: Path, layer: str
) -> None:
    home = tmp_path / "home"
    edges = edge_episodes()
    store, _ = await open_backend(Config(home=home, backend=layer))  # type: ignore[arg-type]
    try:
        await upsert_all(store, edges[: -rows.COPY_MIN])
        await upsert_all(store, edges[-rows.COPY_MIN :])
        over = Episode.parse(id="too-big", group_id="edges", kind="note", name="too big",
                             body="x" * (DEFAULT_MAX_BODY_BYTES + 1))
        with pytest.raises(InvalidEpisode, match="over the limit"):
            await store.upsert(over)
        for name in ("n" * (MAX_NAME_CHARS + 1), ""):
            with pytest.raises(InvalidEpisode, match="name"):
                Episode.parse(id="bad-name", group_id="edges", kind="note", name=name, body="b")
        assert await store.get("too-big") is None
        assert await store.search(DEEP_ARRAY[:5000]) is not None
    finally:
        await store.aclose()
    await read_back(home, layer, {e.id: e for e in edges})


@pytest.mark.parametrize("layer", LAYERS)
def test_files_that_are_not_utf8_are_refused_by_name(tmp_path: Path, layer: str) -> None:
    home = tmp_path / "home"
    cli = Cli(home, layer)
    latin1 = tmp_path / "body.txt"
    latin1.write_bytes("café au lait".encode("latin-1"))
    code, error = cli("add", "--group=g", "--kind=note", "--name=n", f"--body-file={latin1}")
    assert (code, error["error"]["type"]) == (1, "InvalidEpisode")
    lines = tmp_path / "in.jsonl"
    good = orjson.dumps({"id": "ep-1", "group_id": "g", "kind": "note", "name": "n",
                         "body": "b"})
    lines.write_bytes(good + b"\n" + good.replace(b'"b"', b'"\xff\xfe"') + b"\n")
    code, error = cli("import", str(lines))
    assert (code, error["error"]["type"]) == (1, "InvalidEpisode")
    assert "line 2" in error["error"]["message"]
    code, listed = cli("list", "--all-groups")
    # Nothing of a refused file is stored: not even the home is made for it.
    assert (code, listed.get("count")) == (0, 0) or listed["error"]["type"] == "HomeNotFound"


@pytest.mark.parametrize("layer", LAYERS)
async def test_a_home_whose_path_has_spaces_quotes_and_unicode(tmp_path: Path, layer: str) -> None:
    home = tmp_path / "my 'home' \"quoted\" ünïcode; $(echo x) `y` \\ end"
    batch = [Episode.parse(id=f"ep-{n}", group_id="g", kind="pattern", name=f"pattern {n}",
                           body=f"body {n}", created_at=START + timedelta(seconds=n))
             for n in range(rows.COPY_MIN + 1)]  # the graph's bulk path too, if it can be taken
    store, _ = await open_backend(Config(home=home, backend=layer))  # type: ignore[arg-type]
    try:
        await upsert_all(store, batch)
        assert [h.episode.id for h in await store.search("pattern 7", limit=1)] == ["ep-7"]
    finally:
        await store.aclose()
    await read_back(home, layer, {e.id: e for e in batch})
    assert outside(home) == {}  # nothing beside it
