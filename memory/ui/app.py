"""The browser's server: the page, and a JSON API over one open store.

Every answer comes from the operations the CLI and the MCP server use (the store's search,
the curation room's get/update/forget/restore/history/supersede, the status the CLI prints),
never a second implementation. Errors are our one-line messages: 404 for an unknown id, 400
for anything else refused."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from importlib.resources import files
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from backends.errors import DualmemError, InvalidEpisode
from backends.model import Episode, problems
from backends.protocol import Journal, MemoryBackend, Position
from memory.agent.decisions import Adr, list_adrs, next_adr_id
from memory.curation.dedupe import merge
from memory.curation.ids import UnknownId
from memory.curation.operations import Curator
from memory.output import Output, one_line
from memory.tool_hook import told_sessions
from memory.ui.guard import TokenGuard

STATIC = Path(str(files("memory.ui") / "static"))
PREVIEW_CHARS = 280
SEARCH_LIMIT = 50
TIMELINE_LIMIT = 300
GRAPH_FACTS = 80
HEADERS = {
    # The token is in the page's URL: no other site may learn it from a Referer.
    "referrer-policy": "no-referrer",
    "content-security-policy": "default-src 'self'; style-src 'self' 'unsafe-inline'; "
                               "img-src 'self' data:; frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    "cache-control": "no-store",
}

StatusReport = Callable[[], Awaitable[Output]]


def _json(data: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(data), status, HEADERS, "application/json")


def _preview(episode: Episode) -> dict[str, Any]:
    text = " ".join(episode.body.split())
    return {"id": episode.id, "group_id": episode.group_id, "kind": episode.kind,
            "name": episode.name, "created_at": episode.created_at.isoformat(),
            "text": text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "…"}


def _limit(request: Request, default: int) -> int:
    try:
        return max(1, min(int(request.query_params.get("limit", default)), 1000))
    except ValueError:
        return default


class Browser:
    """What the page reads and changes, over ``store`` (opened and closed by the caller)."""

    def __init__(self, store: MemoryBackend, home: Path, curator: Curator,
                 status: StatusReport) -> None:
        self.store, self.home, self.curator, self.status_report = store, home, curator, status
        self.project = curator.project_id
        self._timeline: tuple[Position, list[Episode]] | None = None

    @property
    def groups(self) -> list[str]:
        return [self.curator.group]  # the project's group, as curation names it

    async def search(self, request: Request) -> Response:
        query = request.query_params.get("q", "").strip()
        if not query:
            return _json({"query": "", "hits": []})
        hits = await self.store.search(query, limit=_limit(request, SEARCH_LIMIT),
                                       group_ids=self.groups)
        return _json({"query": query, "hits": [
            _preview(hit.episode) | {"score": round(hit.score, 3)} for hit in hits]})

    async def timeline(self, request: Request) -> Response:
        episodes = await self._newest_first()
        limit = _limit(request, TIMELINE_LIMIT)
        return _json({"total": len(episodes),
                      "items": [_preview(episode) for episode in episodes[:limit]]})

    async def _newest_first(self) -> list[Episode]:
        # A scan of 10k memories costs more than the page's budget: keep it until the journal
        # moves (every layer's writes in auto go through the journal first).
        position = _position(self.store)
        if position is not None and self._timeline and self._timeline[0] == position:
            return self._timeline[1]
        episodes = [e async for e in self.store.scan(group_ids=self.groups)]
        episodes.sort(key=lambda episode: episode.created_at, reverse=True)
        if position is not None:
            self._timeline = (position, episodes)
        return episodes

    async def memory(self, request: Request) -> Response:
        """A memory (an id or its unique start) with its history; a forgotten one too."""
        history = await self.curator.history(request.path_params["id"])
        current = history.current
        return _json({"memory": None if current is None else current.model_dump(mode="json"),
                      "history": history.to_json()})

    async def edit(self, request: Request) -> Response:
        given = await _body(request)
        episode = await self.curator.update(request.path_params["id"], body=given.get("body"),
                                            name=given.get("name"), reason="edited in dualmem ui")
        return _json({"memory": episode.model_dump(mode="json")})

    async def forget(self, request: Request) -> Response:
        given = await _body(request)
        episode = await self.curator.forget(request.path_params["id"],
                                            reason=str(given.get("reason") or ""))
        return _json({"forgotten": episode.id})

    async def restore(self, request: Request) -> Response:
        episode = await self.curator.restore(request.path_params["id"])
        return _json({"memory": episode.model_dump(mode="json")})

    async def supersede(self, request: Request) -> Response:
        """A new decision in place of the one the path names, with the next ``ADR-NNNN``."""
        given = await _body(request)
        new = Adr(adr_id=await next_adr_id(self.store, self.project),
                  title=str(given.get("title") or ""),
                  decision=str(given.get("decision") or ""))
        adr = await self.curator.supersede_decision(request.path_params["id"], new)
        return _json({"decision": adr.model_dump(mode="json")})

    async def decisions(self, request: Request) -> Response:
        adrs = await list_adrs(self.store, self.project)
        shown = [adr.model_dump(mode="json") | {"in_force": adr.in_force} for adr in adrs]
        return _json({"in_force": [a for a in shown if a["in_force"]],
                      "retired": [a for a in shown if not a["in_force"]]})

    async def graph(self, request: Request) -> Response:
        """The facts (in force and retired) about what ``around`` names, and their ends."""
        around = request.query_params.get("around", "").strip()
        found = await self.curator.facts(around, GRAPH_FACTS, retired=True)
        facts = [{"id": f.uuid, "name": f.name, "fact": f.fact, "source": f.source,
                  "target": f.target, "valid_at": _iso(f.valid_at),
                  "invalid_at": _iso(f.invalid_at or f.expired_at)} for f in found.items]
        ends = dict.fromkeys(name for f in found.items for name in (f.source, f.target))
        return _json({"around": around, "reason": found.reason, "facts": facts,
                      "entities": [{"id": name, "name": name} for name in ends]})

    async def duplicates(self, request: Request) -> Response:
        found = await self.curator.dedupe()
        return _json({"sets": [{"keep": _preview(d.keep), "others": [_preview(e) for e in d.others]}
                               for d in found]})

    async def merge_duplicates(self, request: Request) -> Response:
        """Merge the near-duplicates of the memory the path names into it (the oldest)."""
        keep = request.path_params["id"]
        found = [d for d in await self.curator.dedupe() if d.keep.id == keep]
        if not found:
            raise UnknownId(f"memory {keep} has no near-duplicates to merge")
        await merge(self.store, self.curator.versions, found[0])
        return _json({"kept": keep, "merged": [e.id for e in found[0].others]})

    async def status(self, request: Request) -> Response:
        report = await self.status_report()
        return _json({"text": report.text, "data": report.data})

    async def workset(self, request: Request) -> Response:
        return _json({"sessions": [{"session": session, "files": files_}
                                   for session, files_ in told_sessions(self.home)]})


def _iso(when: datetime | None) -> str | None:
    return None if when is None else when.isoformat()


def _position(store: MemoryBackend) -> Position | None:
    journal = getattr(store, "journal", store)
    return journal.position() if isinstance(journal, Journal) else None


async def _body(request: Request) -> dict[str, Any]:
    try:
        given = orjson.loads(await request.body())
    except orjson.JSONDecodeError:
        raise InvalidEpisode("the request's body is not JSON") from None
    if not isinstance(given, dict):
        raise InvalidEpisode("the request's body is not a JSON object")
    return given


def _answering(handler: Callable[[Request], Awaitable[Response]]) -> Callable[..., Any]:
    async def answer(request: Request) -> Response:
        try:
            return await handler(request)
        except DualmemError as exc:  # an unknown id is a LookupError too
            return _json({"error": one_line(exc)}, 404 if isinstance(exc, LookupError) else 400)
        except ValidationError as exc:
            return _json({"error": problems(exc)}, 400)

    return answer


async def _page(request: Request) -> Response:
    return Response((STATIC / "index.html").read_bytes(), 200, HEADERS, "text/html")


def build_app(browser: Browser, token: str) -> TokenGuard:
    """The server's ASGI app: the page, its static files and the API, behind the token."""
    api = [Route("/api/search", _answering(browser.search)),
           Route("/api/timeline", _answering(browser.timeline)),
           Route("/api/memory/{id}", _answering(browser.memory)),
           Route("/api/memory/{id}/edit", _answering(browser.edit), methods=["POST"]),
           Route("/api/memory/{id}/forget", _answering(browser.forget), methods=["POST"]),
           Route("/api/memory/{id}/restore", _answering(browser.restore), methods=["POST"]),
           Route("/api/decisions/{id}/supersede", _answering(browser.supersede),
                 methods=["POST"]),
           Route("/api/decisions", _answering(browser.decisions)),
           Route("/api/status", _answering(browser.status)),
           Route("/api/workset", _answering(browser.workset)),
           Route("/api/graph", _answering(browser.graph)),
           Route("/api/duplicates", _answering(browser.duplicates)),
           Route("/api/duplicates/{id}/merge", _answering(browser.merge_duplicates),
                 methods=["POST"])]
    app = Starlette(routes=[Route("/", _page), *api,
                            Mount("/static", StaticFiles(directory=STATIC), name="static")])
    return TokenGuard(app, token)
