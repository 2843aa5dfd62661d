"""A decision whose body says it was superseded or deprecated is history wherever decisions
are listed as in force, even when its validity was never ended (written by hand, imported)."""

from __future__ import annotations

from pathlib import Path

import orjson

from backends.model import Episode
from fallback import FileBackend
from memory.agent.scopes import ADR
from memory.agent.validity import in_force
from memory.context import Task, build_context
from memory.hooks import prompt_context, session_context

PROJECT = "proj-1"


def _adr(key: str, title: str, status: str) -> Episode:
    body = {"adr_id": key, "title": title, "status": status,
            "decision": f"{title}: sessions are kept there"}
    return Episode.create(group_id=PROJECT, kind=ADR, key=key, name=f"{key}: {title}",
                          body=orjson.dumps(body).decode())


async def test_a_superseded_decision_is_not_in_force_anywhere(tmp_path: Path) -> None:
    store = await FileBackend.open(tmp_path / "files")
    try:
        for episode in (_adr("ADR-001", "Sessions in Memcached", "Superseded"),
                        _adr("ADR-002", "Sessions in Postgres", "deprecated"),
                        _adr("ADR-003", "Sessions in Redis", "accepted")):
            await store.upsert(episode)
        brief = await session_context(store, PROJECT)
        prompt = await prompt_context(store, PROJECT, "Where are sessions kept? Memcached, "
                                      "Postgres or Redis sessions", threshold=0.0)
        context = await build_context(store, Task(description="Move sessions kept in Memcached "
                                                  "Postgres Redis"), project_id=PROJECT)
    finally:
        await store.aclose()
    decisions = brief.split("Decisions in force", 1)[1]
    assert "Sessions in Redis" in decisions
    for text in (decisions, prompt, context.markdown):
        assert "Sessions in Memcached" not in text
        assert "Sessions in Postgres" not in text
    assert "Sessions in Redis" in prompt


def test_ended_validity_and_a_status_in_the_body_both_end_a_memory() -> None:
    plain = Episode.create(group_id=PROJECT, kind="note", name="n", body="status: superseded")
    assert in_force(plain)  # plain text says nothing of its status
    assert not in_force(_adr("ADR-9", "t", "superseded"))
    assert in_force(_adr("ADR-9", "t", "proposed"))


async def test_a_long_prompt_is_searched_for_its_salient_terms(tmp_path: Path) -> None:
    store = await FileBackend.open(tmp_path / "files")
    try:
        await store.upsert(Episode.create(
            group_id=PROJECT, kind="gotcha", name="Stripe refunds must be retried with one key",
            body="Stripe refunds must be retried with the same idempotency key, or a retry "
                 "refunds twice"))
        for area in ("charges", "customers", "payouts", "invoices", "disputes", "balance"):
            await store.upsert(Episode.create(
                group_id=PROJECT, kind="pattern", name=f"Stripe {area} go through the client",
                body=f"Stripe {area} are read through app/clients/stripe_client.py"))
        prompt = ("Add a refund endpoint POST /orders/{id}/refund that calls Stripe refunds "
                  "with retries; respond with JSON, validate the amount in the request body "
                  "and log the outcome")
        found = await prompt_context(store, PROJECT, prompt)
    finally:
        await store.aclose()
    assert "same idempotency key" in found
    assert "Stripe payouts" not in found
