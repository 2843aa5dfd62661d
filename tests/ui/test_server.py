"""The memory browser's server in this process, over a real file-layer home: who may drive it,
and what each API answer holds (the same as the CLI's)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from every_layer import open_layer

from backends.model import Episode
from backends.protocol import MemoryBackend, upsert_all
from memory.agent.decisions import Adr, record_adr, supersede_adr
from memory.cli import run
from memory.cli.home import status_report
from memory.cli.ui import _listen
from memory.curation.operations import Curator
from memory.output import Output
from memory.store.config import Config
from memory.store.project import project_id
from memory.store.selection import open_backend
from memory.tool_hook import tool_context
from memory.ui.app import Browser, build_app

TOKEN = "a-token-of-this-launch"


@dataclass
class Page:
    client: httpx.AsyncClient
    store: MemoryBackend
    project: str
    home: Path

    async def api(self, path: str, status: int = 200) -> Any:
        response = await self.client.get(path, headers={"X-Dualmem-Token": TOKEN})
        assert response.status_code == status, response.text
        return orjson.loads(response.content)

    async def post(self, path: str, body: dict[str, object]) -> Any:
        response = await self.client.post(path, json=body, headers={"X-Dualmem-Token": TOKEN})
        assert response.status_code == 200, response.text
        return orjson.loads(response.content)


def _memory(project: str, n: int, name: str, body: str, kind: str = "pattern") -> Episode:
    return Episode(id=f"m{n}", group_id=project, kind=kind, name=name, body=body,
                   created_at=datetime(2026, 11, n, 10, tzinfo=UTC))


@pytest.fixture
async def page(tmp_path: Path) -> AsyncIterator[Page]:
    home = tmp_path / "proj" / ".dualmem"
    await run(["--home", str(home), "--backend", "file", "init"])
    config = Config.from_env({}, home=home, backend="file")
    store, selection = await open_backend(config)
    project = project_id(home)
    await upsert_all(store, [
        _memory(project, 1, "Stripe refunds", "Retry Stripe refunds with an idempotency key."),
        _memory(project, 2, "Kùzu lock", "Only one process may open the graph read-write.",
                "gotcha"),
        _memory(project, 3, "Hostile", "<img src=x onerror=alert(1)> stays text")])
    browser = Browser(store, home, Curator(store, project, config.files_dir),
                      partial(status_report, store, selection, config))
    transport = httpx.ASGITransport(app=build_app(browser, TOKEN))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as client:
        yield Page(client, store, project, home)
    await store.aclose()


async def test_only_this_launchs_page_is_let_in(page: Page) -> None:
    client = page.client
    assert (await client.get("/")).status_code == 403
    assert (await client.get("/?token=guess")).status_code == 403
    assert (await client.get(f"/?token={TOKEN}")).status_code == 200
    assert (await client.get(f"/api/search?q=stripe&token={TOKEN}")).status_code == 403
    assert (await client.get("/api/search?q=stripe",
                             headers={"X-Dualmem-Token": "guess"})).status_code == 403
    # A DNS-rebound name reaching loopback carries its own Host: refused with the token too.
    rebound = await client.get("/api/search?q=stripe", headers={
        "X-Dualmem-Token": TOKEN, "Host": "evil.example:8765"})
    assert rebound.status_code == 403
    assert (await client.get("/static/app.js")).status_code == 200


async def test_the_page_keeps_its_token_from_other_sites(page: Page) -> None:
    response = await page.client.get(f"/?token={TOKEN}")
    assert response.headers["referrer-policy"] == "no-referrer"
    assert "default-src 'self'" in response.headers["content-security-policy"]
    assert b"cytoscape.min.js" in response.content  # drawn by the bundled copy, no CDN
    assert b"http" not in response.content.replace(b"http-equiv", b"")


async def test_search_ranks_as_the_store_does_typos_included(page: Page) -> None:
    found = await page.api("/api/search?q=stirpe%20refnuds")
    hits = found["hits"]
    assert isinstance(hits, list) and hits[0]["id"] == "m1"
    direct = await page.store.search("stirpe refnuds", limit=50, group_ids=[page.project])
    assert [hit["id"] for hit in hits] == [hit.episode.id for hit in direct]
    assert (await page.api("/api/search?q="))["hits"] == []


async def test_the_timeline_is_newest_first_and_follows_writes(page: Page) -> None:
    before = await page.api("/api/timeline")
    assert [m["id"] for m in before["items"]] == ["m3", "m2", "m1"]
    await page.store.upsert(_memory(page.project, 4, "Later", "Written after the first look."))
    after = await page.api("/api/timeline?limit=2")
    assert after["total"] == 4
    assert [m["id"] for m in after["items"]] == ["m4", "m3"]


async def test_a_memory_is_shown_whole_and_an_unknown_id_is_404(page: Page) -> None:
    shown = await page.api("/api/memory/m3")
    assert shown["memory"]["body"] == "<img src=x onerror=alert(1)> stays text"
    assert shown["history"]["versions"] == []
    missing = await page.api("/api/memory/nope", status=404)
    assert "nope" in missing["error"]


async def test_decisions_in_force_apart_from_superseded(page: Page) -> None:
    await record_adr(page.store, page.project, Adr(adr_id="ADR-0001", title="Kùzu embedded",
                                                   decision="Use embedded Kùzu."))
    await supersede_adr(page.store, page.project, "ADR-0001",
                        Adr(adr_id="ADR-0002", title="LadybugDB", decision="Use LadybugDB."))
    shown = await page.api("/api/decisions")
    assert [a["adr_id"] for a in shown["in_force"]] == ["ADR-0002"]
    assert [a["adr_id"] for a in shown["retired"]] == ["ADR-0001"]
    assert shown["retired"][0]["superseded_by"] == "ADR-0002"


async def test_status_is_what_the_cli_prints(page: Page) -> None:
    shown = await page.api("/api/status")
    printed = await run(["--home", str(page.home), "--backend", "file", "status"])
    assert (shown["text"], shown["data"]) == (printed.text, printed.data)


async def test_the_working_set_the_hooks_recorded(page: Page) -> None:
    await tool_context(page.store, page.project, page.home, "session-1", ["fallback/store.py"])
    shown = await page.api("/api/workset")
    assert shown["sessions"] == [{"session": "session-1", "files": ["fallback/store.py"]}]


async def test_edit_forget_and_restore_go_through_the_curation_room(page: Page) -> None:
    edited = await page.post("/api/memory/m1/edit", {"body": "Refunds: one idempotency key."})
    assert edited["memory"]["id"] == "m1"
    stored = await page.store.get("m1")
    assert stored is not None and stored.body == "Refunds: one idempotency key."
    assert (await page.post("/api/memory/m1/forget", {"reason": "stale"})) == {"forgotten": "m1"}
    assert await page.store.get("m1") is None
    shown = await page.api("/api/memory/m1")
    assert shown["memory"] is None
    assert [v["change"] for v in shown["history"]["versions"]] == ["updated", "forgotten"]
    await page.post("/api/memory/m1/restore", {})
    back = await page.store.get("m1")
    assert back is not None and back.body == "Refunds: one idempotency key."


async def test_superseding_a_decision_mints_the_next_adr(page: Page) -> None:
    await record_adr(page.store, page.project, Adr(adr_id="ADR-0001", title="Kùzu embedded",
                                                   decision="Use embedded Kùzu."))
    made = await page.post("/api/decisions/ADR-0001/supersede",
                           {"title": "LadybugDB", "decision": "Use LadybugDB, Kùzu's fork."})
    assert made["decision"]["adr_id"] == "ADR-0002"
    assert made["decision"]["supersedes"] == "ADR-0001"
    shown = await page.api("/api/decisions")
    assert [a["adr_id"] for a in shown["retired"]] == ["ADR-0001"]


async def test_bad_requests_get_one_line_and_change_nothing(page: Page) -> None:
    headers = {"X-Dualmem-Token": TOKEN}
    response = await page.client.post("/api/memory/m2/edit", content=b"{not json",
                                      headers=headers)
    assert response.status_code == 400 and "not JSON" in response.json()["error"]
    response = await page.client.post("/api/memory/m2/edit", json={"name": "x" * 400},
                                      headers=headers)
    assert response.status_code == 400
    stored = await page.store.get("m2")
    assert stored is not None and stored.body.startswith("Only one process")
    response = await page.client.post("/api/memory/nope/forget", json={}, headers=headers)
    assert response.status_code == 404
    # Without the token, a cross-site form post changes nothing.
    response = await page.client.post("/api/memory/m2/forget", json={})
    assert response.status_code == 403 and await page.store.get("m2") is not None


async def test_near_duplicates_are_listed_and_merged_on_request(page: Page) -> None:
    await upsert_all(page.store, [
        _memory(page.project, 5, "Backoff", "Retry flaky calls with exponential backoff."),
        _memory(page.project, 6, "Back-off", "retry flaky calls, with exponential back-off")])
    listed = await page.api("/api/duplicates")
    assert [(s["keep"]["id"], [o["id"] for o in s["others"]]) for s in listed["sets"]] == [
        ("m5", ["m6"])]
    assert await page.post("/api/duplicates/m5/merge", {}) == {"kept": "m5", "merged": ["m6"]}
    assert await page.store.get("m6") is None
    assert (await page.api("/api/memory/m6"))["history"]["versions"][0]["into"] == "m5"
    assert (await page.api("/api/duplicates"))["sets"] == []


async def test_the_file_layer_says_why_it_draws_no_graph(page: Page) -> None:
    shown = await page.api("/api/graph?around=fallback/store.py")
    assert shown["facts"] == [] and "no knowledge graph" in shown["reason"]


async def test_the_graph_around_an_entity_with_its_retired_facts(tmp_path: Path) -> None:
    async with open_layer("graph", tmp_path / "graph") as store:
        await record_adr(store, "shop", Adr(adr_id="ADR-0001", title="Cookies",
                                            decision="Keep `SessionStore` in cookies"))
        await supersede_adr(store, "shop", "ADR-0001", Adr(
            adr_id="ADR-0002", title="Redis", decision="Move `SessionStore` to Redis"))
        browser = Browser(store, tmp_path, Curator(store, "shop", tmp_path / "files"),
                          _no_status)
        transport = httpx.ASGITransport(app=build_app(browser, TOKEN))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:1") as client:
            page = Page(client, store, "shop", tmp_path)
            shown = await page.api("/api/graph?around=SessionStore")
    governs = {(f["source"], f["target"], f["invalid_at"] is None)
               for f in shown["facts"] if f["name"] == "GOVERNS"}
    assert governs == {("ADR-0001", "SessionStore", False), ("ADR-0002", "SessionStore", True)}
    assert {"ADR-0001", "ADR-0002", "SessionStore"} <= {e["id"] for e in shown["entities"]}


async def _no_status() -> Output:
    return Output({}, "")


def test_the_port_listens_before_its_url_is_printed() -> None:
    # `dualmem ui --open` (or a test) may load the URL the moment it is printed, before the
    # server runs: the connection waits in the backlog, it is not refused.
    sock = _listen(0)
    try:
        with socket.create_connection(sock.getsockname(), timeout=30):
            pass
    finally:
        sock.close()
