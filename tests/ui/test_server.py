"""The memory browser's server in this process, over a real file-layer home: who may drive it,
and what each API answer holds (the same as the CLI's)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from backends.model import Episode
from backends.protocol import MemoryBackend, upsert_all
from memory.agent.decisions import Adr, record_adr, supersede_adr
from memory.cli import run
from memory.cli.home import status_report
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
    browser = Browser(store, home, project, partial(status_report, store, selection, config))
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
    missing = await page.api("/api/memory/nope", status=404)
    assert missing == {"error": "no memory with id nope"}


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
