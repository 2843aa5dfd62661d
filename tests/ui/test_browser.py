"""The memory browser in a real browser: ``dualmem ui`` in a process of its own over a home of
1k memories, driven by Playwright in Debian's Chromium (the system's, no browser download).
Screenshots go to ``.artifacts/ui/`` of the checkout. Without Chromium the tests skip, saying
so; ``.ci/run`` installs it."""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from backends.model import Episode
from backends.protocol import upsert_all
from memory.agent.decisions import Adr, record_adr, supersede_adr
from memory.cli import run
from memory.store.config import Config
from memory.store.project import project_id
from memory.store.selection import open_backend

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / ".artifacts" / "ui"
CHROMIUM = shutil.which("chromium")
# Flags for a closed network: without them Chromium keeps calling Google's hosts.
QUIET = ["--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
MEMORIES = 1000

pytestmark = pytest.mark.skipif(CHROMIUM is None,
                                reason="Debian's chromium is not installed (.ci/run installs it)")
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is a dev dependency")


def _fill(home: Path) -> str:
    async def fill() -> str:
        await run(["--home", str(home), "--backend", "file", "init"])
        store, _ = await open_backend(Config.from_env({}, home=home, backend="file"))
        project = project_id(home)
        topics = ["retry", "cache", "schema", "lock", "index", "webhook", "queue", "auth"]
        episodes = [Episode(id=f"mem-{n:04d}", group_id=project,
                            kind="gotcha" if n % 5 == 0 else "pattern",
                            name=f"{topics[n % 8].title()} note {n}",
                            body=f"Memory {n} about the {topics[n % 8]} of module m{n % 37}.",
                            created_at=datetime(2025, 1 + n % 11, 1 + n % 28, 9, tzinfo=UTC))
                    for n in range(MEMORIES - 1)]
        episodes.append(Episode(id="stripe-refunds", group_id=project, kind="gotcha",
                                name="Stripe refunds need an idempotency key",
                                body="Retry Stripe refunds only with the same idempotency key.",
                                created_at=datetime(2026, 11, 20, 12, tzinfo=UTC)))
        episodes += [Episode(id=f"dup-{n}", group_id=project, kind="pattern", name=f"Backoff {n}",
                             body=body, created_at=datetime(2024, 1, 1 + n, tzinfo=UTC))
                     for n, body in enumerate(["Retry flaky calls with exponential backoff.",
                                               "retry flaky calls, with exponential back-off"])]
        await upsert_all(store, episodes)
        await record_adr(store, project, Adr(adr_id="ADR-0001", title="Embedded Kùzu",
                                             decision="The graph is Kùzu, embedded."))
        await store.aclose()
        return project

    return asyncio.run(fill())


@contextmanager
def _serving(home: Path, backend: str) -> Iterator[str]:
    """``dualmem ui`` over ``home`` in a process of its own; the URL it printed."""
    log = home.parent / "ui.log"
    with log.open("w") as errors, subprocess.Popen(
        [sys.executable, "-m", "memory", "--home", str(home), "--backend", backend, "ui"],
        stdout=subprocess.PIPE, stderr=errors, text=True,
    ) as server:
        assert server.stdout is not None
        first = server.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:\d+/\?token=\S+", first)
        try:
            assert match, f"no URL on start: {first!r} {log.read_text()}"
            yield match.group(0)
        finally:
            server.terminate()
            server.wait(timeout=30)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    home = tmp_path_factory.mktemp("ui") / "proj" / ".dualmem"
    _fill(home)  # before the browser fixture, whose Playwright runs an event loop here
    with _serving(home, "file") as url:
        yield url, home


def _decided(home: Path) -> None:
    async def decide() -> None:
        await run(["--home", str(home), "--backend", "graph", "init"])
        store, _ = await open_backend(Config.from_env({}, home=home, backend="graph"))
        project = project_id(home)
        try:
            await record_adr(store, project, Adr(adr_id="ADR-0001", title="Cookies",
                                                 decision="Keep `SessionStore` in cookies"))
            await supersede_adr(store, project, "ADR-0001", Adr(
                adr_id="ADR-0002", title="Redis", decision="Move `SessionStore` to Redis"))
        finally:
            await store.aclose()

    with ThreadPoolExecutor(1) as pool:  # Playwright's event loop may run in this thread
        pool.submit(asyncio.run, decide()).result()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=QUIET)
        yield launched
        launched.close()


@pytest.fixture
def page(served: tuple[str, Path], browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    opened = context.new_page()
    opened.goto(served[0])
    yield opened
    context.close()


def _shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def test_the_timeline_shows_the_newest_memories(page: Any) -> None:
    page.wait_for_selector("#list[data-view='timeline'] .item")
    names = page.locator("#list .item .name").all_inner_texts()
    # The decision was recorded last, now; the newest of the rest is the Stripe gotcha.
    assert names[:2] == ["ADR-0001: Embedded Kùzu", "Stripe refunds need an idempotency key"]
    assert "300 newest of 1003" in page.locator("#list").inner_text()
    _shot(page, "timeline")


def test_search_as_you_type_with_typos_then_read_a_memory(page: Any) -> None:
    _search(page, "stirpe refnuds")
    assert page.locator("#list .item").first.get_attribute("data-id") == "stripe-refunds"
    page.click("#list .item[data-id='stripe-refunds']")
    page.wait_for_selector("#detail h2")
    assert page.inner_text("#detail h2") == "Stripe refunds need an idempotency key"
    assert "same idempotency key" in page.inner_text("#body")
    _shot(page, "memory")


def _stored(home: Path, memory_id: str) -> Episode | None:
    async def get() -> Episode | None:
        store, _ = await open_backend(Config.from_env({}, home=home, backend="file"))
        try:
            return await store.get(memory_id)
        finally:
            await store.aclose()

    # Another thread: Playwright's sync API runs an event loop in this one.
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, get()).result()


def _search(page: Any, query: str) -> None:
    page.fill("#search", query)
    page.wait_for_selector(f"#list[data-view='search:{query}'] .item")


def _open(page: Any, memory_id: str, query: str) -> None:
    _search(page, query)
    page.click(f"#list .item[data-id='{memory_id}']")
    page.wait_for_selector("#detail .actions button")


def test_edit_forget_and_restore_a_memory(page: Any, served: tuple[str, Path]) -> None:
    home = served[1]
    _open(page, "mem-0007", "cache note 7")
    page.click("#detail button:text('Edit')")
    page.fill("#detail textarea", "Memory 7, corrected in the browser.")
    page.click("#detail button:text('Save')")
    page.wait_for_selector("#detail .history li")
    assert page.inner_text("#body") == "Memory 7, corrected in the browser."
    assert "updated" in page.inner_text("#detail .history")
    _shot(page, "edited")
    stored = _stored(home, "mem-0007")
    assert stored is not None and stored.body == "Memory 7, corrected in the browser."

    page.click("#detail button:text('Forget')")
    page.fill("#detail input", "wrong module")
    page.click("#detail button:text('Save')")
    page.wait_for_selector("#forgotten")
    assert _stored(home, "mem-0007") is None
    page.click("#detail button:text('Restore')")
    page.wait_for_selector("#detail button:text('Forget')")
    restored = _stored(home, "mem-0007")
    assert restored is not None and restored.body == "Memory 7, corrected in the browser."


def test_supersede_a_decision(page: Any, served: tuple[str, Path]) -> None:
    _search(page, "Embedded Kùzu")
    page.click("#list .item:has(.kind.adr)")
    page.click("#detail button:text('Supersede')")
    page.fill("#detail input", "LadybugDB")
    page.fill("#detail textarea", "The graph is LadybugDB, Kùzu's maintained fork.")
    page.click("#detail button:text('Save')")
    page.wait_for_selector("#detail .fields :text('ADR-0002')")
    page.click("#tabs button[data-tab='decisions']")
    page.wait_for_selector("#list[data-view='decisions'] .name.retired")
    assert page.inner_text("#list .name.retired") == "Embedded Kùzu"
    _shot(page, "decisions")


def test_merge_near_duplicates(page: Any, served: tuple[str, Path]) -> None:
    page.click("#tabs button[data-tab='duplicates']")
    page.wait_for_selector("#list[data-view='duplicates'] button.merge[data-keep='dup-0']")
    _shot(page, "duplicates")
    page.click("button.merge[data-keep='dup-0']")
    page.wait_for_selector("button.merge[data-keep='dup-0']", state="detached")
    assert _stored(served[1], "dup-1") is None and _stored(served[1], "dup-0") is not None


def test_the_graph_around_an_entity_as_of_a_time(
    browser: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    home = tmp_path_factory.mktemp("ui-graph") / "proj" / ".dualmem"
    _decided(home)
    with _serving(home, "graph") as url:
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        page = context.new_page()
        page.goto(url)
        page.click("#tabs button[data-tab='graph']")
        page.fill("#around", "SessionStore")
        page.press("#around", "Enter")
        page.wait_for_selector("#list[data-view='graph'] .fact")
        facts = page.locator("#list .fact .text").all_inner_texts()
        assert any("Redis" in fact for fact in facts)
        retired = page.locator("#list .fact .text.retired").all_inner_texts()
        assert any("cookies" in fact for fact in retired)
        page.wait_for_selector("#graph-canvas canvas")
        _shot(page, "graph")
        context.close()


def test_status_says_which_layer_answers(page: Any) -> None:
    page.click("#tabs button[data-tab='status']")
    page.wait_for_selector("#list[data-view='status'] #status-text")
    assert "file" in page.inner_text("#status-text")
    _shot(page, "status")


def test_a_page_without_the_token_is_refused(served: tuple[str, Path], browser: Any) -> None:
    context = browser.new_context()
    opened = context.new_page()
    response = opened.goto(served[0].split("?")[0])
    assert response is not None and response.status == 403
    context.close()
