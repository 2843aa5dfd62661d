"""A labelled project memory for context assembly: an MCP server with user authentication,
written the way the agent API writes it, plus filler memories of unrelated work.

The labels (``RELEVANT``) say which memories a person would want in the context of each of
the design's scenario tasks; ``bench.context`` measures the score distributions behind the
relevance thresholds with them, and ``tests/context`` checks the scenarios against them.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from backends.model import Episode
from backends.protocol import MemoryBackend
from memory.agent.memories import TaskOutcome
from memory.agent.scopes import (
    ADR,
    ARCHITECTURE,
    DOMAIN_KNOWLEDGE,
    FAILED_APPROACH,
    FEATURE_SPEC,
    GOTCHA,
    PATTERN,
    TASK_OUTCOME,
)
from memory.context.retrieval import KINDS
from memory.context.task import topic

PROJECT = "mcp-auth"


def _episode(kind: str, key: str, name: str, body: str | dict[str, Any]) -> Episode:
    return Episode.create(group_id=PROJECT, kind=kind, name=name, body=body, key=key)


def _outcome(key: str, description: str, success: bool, outcome: str, turns: int) -> Episode:
    record = TaskOutcome(
        task_id=key, success=success, outcome=outcome, description=description,
        task_type="feature", turns=turns,
    )
    name = f"{key} {'succeeded' if success else 'failed'}: {description}"
    return _episode(TASK_OUTCOME, key, name, record.body())


MEMORIES: dict[str, Episode] = {
    "p-tools": _episode(PATTERN, "p-tools", "Register MCP tools at start-up",
        "Each MCP tool is a function registered on the server at start-up, with a JSON schema "
        "for its input; the server rejects calls that do not match it."),
    "p-inject": _episode(PATTERN, "p-inject", "Inject the session store into auth middleware",
        "Pass the session store into the authentication middleware instead of importing it, "
        "which keeps the auth and app modules free of import cycles."),
    "p-repo": _episode(PATTERN, "p-repo", "Repositories own database access",
        "Database access goes through repository classes; request handlers never run SQL."),
    "p-fixture": _episode(PATTERN, "p-fixture", "Test client fixture",
        "Tests build the app with create_app() and call it through the test client fixture."),
    "a-layout": _episode(ARCHITECTURE, "a-layout", "MCP server layout",
        "The MCP server starts in src/server.py; each tool lives in its own module in "
        "src/tools/."),
    "a-auth": _episode(ARCHITECTURE, "a-auth", "Authentication module",
        "Authentication lives in src/auth: middleware.py checks session tokens on every "
        "request, sessions.py keeps user sessions in Redis, login.py handles the login form."),
    "adr-stdio": _episode(ADR, "ADR-001", "ADR-001: MCP over stdio", {
        "adr_id": "ADR-001", "title": "MCP over stdio", "status": "accepted",
        "decision": "The MCP server speaks JSON-RPC over stdio, not HTTP.",
        "context": "Clients start the server as a subprocess."}),
    "w-stdout": _episode(GOTCHA, "w-stdout", "MCP server must not print to stdout",
        "Never print to stdout in the MCP server: stdout carries the protocol; log to stderr."),
    "w-cycle": _episode(FAILED_APPROACH, "w-cycle",
        "Importing the app from authentication middleware", {
        "approach": "Importing the app from authentication middleware",
        "symptom": "circular dependency: ImportError at start-up",
        "root_cause": "middleware imported app, which imports middleware",
        "prevention": "inject the session store into the middleware", "severity": "high",
        "occurrence_count": 1}),
    "w-cookie": _episode(GOTCHA, "w-cookie", "Session cookies need SameSite=Lax",
        "The login redirect drops session cookies unless they are SameSite=Lax."),
    "d-mcp": _episode(DOMAIN_KNOWLEDGE, "d-mcp", "MCP",
        "Model Context Protocol: clients call tools, read resources and fetch prompts from an "
        "MCP server over JSON-RPC."),
    "d-tenant": _episode(DOMAIN_KNOWLEDGE, "d-tenant", "Tenant",
        "A tenant is one customer organisation; every user belongs to exactly one tenant."),
    "f-skel": _episode(FEATURE_SPEC, "FEAT-SKEL-001", "FEAT-SKEL-001: MCP server skeleton",
        "A minimal MCP server with a ping tool, a health check and structured logging to "
        "stderr."),
    "f-auth": _episode(FEATURE_SPEC, "FEAT-AUTH-002", "FEAT-AUTH-002: user authentication",
        "Users log in with email and password; sessions expire after 30 minutes; logout clears "
        "the session; the middleware rejects requests without a valid session."),
    "o-echo": _outcome("TASK-010", "Implement echo tool for MCP server", True,
        "Registered the echo tool with its JSON schema; tests call it through the client.", 2),
    "o-login": _outcome("TASK-020", "Add login endpoint with session cookie", True,
        "Login form posts to /login; the session id goes into a SameSite=Lax cookie.", 3),
    "o-cycle": _outcome("TASK-021", "Fix authentication middleware import cycle", False,
        "Moving imports inside functions hid the cycle but broke the tests.", 4),
    "o-review": _outcome("TASK-022", "Review authentication implementation", True,
        "Found the missing logout test and a session expiry off by one minute.", 1),
}

RELEVANT: dict[str, frozenset[str]] = {
    "Implement ping tool for MCP server": frozenset(
        {"p-tools", "a-layout", "adr-stdio", "w-stdout", "d-mcp", "f-skel", "o-echo"}),
    "Fix authentication middleware": frozenset(
        {"p-inject", "a-auth", "w-cycle", "w-cookie", "f-auth", "o-cycle", "o-login"}),
    "Review authentication implementation": frozenset(
        {"p-inject", "a-auth", "w-cycle", "w-cookie", "f-auth", "o-login", "o-cycle", "o-review"}),
    "Implement user auth": frozenset(
        {"p-inject", "a-auth", "w-cycle", "w-cookie", "f-auth", "o-login", "o-cycle"}),
}

_VERBS = ("implement", "fix", "refactor", "add", "remove", "review", "document", "test",
          "speed up", "migrate")
_SUBJECTS = ("invoice", "billing", "report", "chart", "email", "export", "upload", "theme",
             "navbar", "webhook", "search index", "pdf", "csv import", "cron job", "audit log",
             "payment", "refund", "dashboard", "notification", "shipping", "tax", "coupon")
_PARTS = ("handler", "service", "view", "job", "template", "component", "schema", "migration",
          "query", "serializer", "queue", "worker")
_DETAILS = ("retries three times with backoff", "runs nightly", "is cached for an hour",
            "needs the tenant id", "writes to the reports bucket", "is paginated by 50",
            "must stay idempotent", "renders server-side", "validates amounts in cents",
            "uses the shared HTTP client", "logs a correlation id", "breaks on empty input")
_KINDS = (PATTERN, GOTCHA, ARCHITECTURE, DOMAIN_KNOWLEDGE, FEATURE_SPEC, FAILED_APPROACH,
          TASK_OUTCOME)


def filler(count: int, seed: int = 7) -> Iterator[Episode]:
    """``count`` memories of unrelated work in the same project, of every searched kind."""
    rng = random.Random(seed)
    for n in range(count):
        verb, subject, part = rng.choice(_VERBS), rng.choice(_SUBJECTS), rng.choice(_PARTS)
        detail = ", ".join(rng.sample(_DETAILS, 2))
        kind = _KINDS[n % len(_KINDS)]
        text = f"The {subject} {part} {detail}; {verb} it in src/{subject.replace(' ', '_')}/."
        if kind == TASK_OUTCOME:
            title = f"{verb.capitalize()} the {subject} {part}"
            yield _outcome(f"F-{n}", title, rng.random() < 0.8, text, rng.randint(1, 6))
        else:
            yield _episode(kind, f"F-{n}", f"{subject.capitalize()} {part} #{n}", text)


async def score_populations(store: MemoryBackend) -> dict[str, list[float]]:
    """The scores, over every category query of the labelled tasks, of the memories labelled
    relevant to the task, of the other labelled ones (topically close), and of unrelated work."""
    labels = {episode.id: key for key, episode in MEMORIES.items()}
    scores: dict[str, list[float]] = {"relevant": [], "labelled out": [], "unrelated": []}
    for description, wanted in RELEVANT.items():
        for kinds in [*KINDS.values(), (TASK_OUTCOME,)]:
            for hit in await store.search(topic(description), group_ids=[PROJECT], kinds=kinds,
                                          limit=20):
                label = labels.get(hit.episode.id)
                population = (
                    "unrelated" if label is None
                    else "relevant" if label in wanted
                    else "labelled out"
                )
                scores[population].append(hit.score)
    return scores
