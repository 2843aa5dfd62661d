"""A payments service's memory beyond the Auto-Claude fixture spec (``001-partial-refunds``):
two more specs written as Auto-Claude sessions (refund webhooks, merchant payouts) and the
project's own memories of its other areas (ledger, accounts, notifications, reporting, admin
dashboard, infrastructure, testing, invoicing, disputes, search, subscriptions), written through
the agent API the way an agent writes them. ``bench.context_tasks`` labels which of them each
task needs.

Every memory has an *area*; a memory shown in a task's context from an area the task does not
touch counts as a distractor. Memories of the specs take their spec's area.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from backends.model import Episode, natural_key, stable_id
from backends.protocol import MemoryBackend
from memory.agent.decisions import Adr, record_adr, record_failed_approach
from memory.agent.memories import AgentMemory
from memory.agent.scopes import (
    ADR,
    ARCHITECTURE,
    DOMAIN_KNOWLEDGE,
    FAILED_APPROACH,
    project_group,
)

FIXTURE_SPEC = "001-partial-refunds"
SPEC_AREAS = {FIXTURE_SPEC: "refunds", "002-refund-webhooks": "webhooks", "003-payouts": "payouts"}

WEBHOOK_SESSIONS: list[dict[str, Any]] = [
    {
        "session_number": 1, "timestamp": "2026-11-24T09:00:00+00:00",
        "subtasks_completed": ["subtask-1-1"],
        "discoveries": {
            "files_understood": {
                "app/api/webhooks.py":
                    "Stripe webhook endpoint: verifies the signature and enqueues the event",
                "app/workers/stripe_events.py":
                    "Celery tasks that apply Stripe events to refunds and charges",
            },
            "patterns_found": [
                "Webhook handlers only verify, record and enqueue; the work happens in a Celery "
                "task",
                "Pass ids to Celery tasks, not ORM objects: the worker loads fresh rows in its "
                "own session",
            ],
            "gotchas_encountered": [
                "Stripe signature verification needs the raw request body; reading "
                "request.json() first breaks it",
            ],
        },
        "what_worked": [
            "Replayed recorded Stripe events from tests/fixtures/stripe_events/ in the handler "
            "tests",
        ],
        "what_failed": [
            "Processing refund events synchronously inside the webhook request: Stripe timed "
            "out after 10 s and retried, causing retry storms",
        ],
        "recommendations_for_next_session": [
            "Record processed Stripe event ids so handlers are idempotent",
        ],
    },
    {
        "session_number": 2, "timestamp": "2026-11-24T14:00:00+00:00",
        "subtasks_completed": [],
        "discoveries": {
            "file_insights": [{
                "path": "app/models/stripe_event.py",
                "purpose": "ProcessedEvent table: one row per handled Stripe event id (unique)",
                "changes_made": "Added the processed_events model",
                "patterns_used": ["unique constraint as idempotency guard"],
                "gotchas": [],
            }],
            "patterns_discovered": [{
                "pattern": "Idempotent event handling: insert the Stripe event id into "
                           "processed_events in the same transaction as the event's effect",
                "applies_to": "webhook and queue consumers",
                "example": "app/workers/stripe_events.py",
            }],
            "gotchas_discovered": [{
                "gotcha": "Stripe delivers events out of order; refund.updated can arrive "
                          "before charge.refunded",
                "trigger": "applying event payloads as deltas",
                "solution": "fetch the object from Stripe and apply its current state",
            }],
            "approach_outcome": {
                "success": True,
                "approach_used": "Apply the current Stripe object state instead of the event "
                                 "payload",
                "why_it_worked": "ordering no longer matters; replays are harmless",
                "why_it_failed": None, "alternatives_tried": ["sequence numbers per charge"],
            },
            "recommendations": [],
            "subtask_id": "subtask-1-2", "success": True,
            "changed_files": ["app/models/stripe_event.py", "app/workers/stripe_events.py"],
        },
        "what_worked": [], "what_failed": [], "recommendations_for_next_session": [],
    },
    {
        "session_number": 3, "timestamp": "2026-11-25T10:00:00+00:00",
        "subtasks_completed": ["subtask-2-1"],
        "discoveries": {
            "files_understood": {},
            "patterns_found": [
                "Celery tasks retry only on StripeConnectionError and OperationalError, with "
                "exponential backoff and max_retries=8",
            ],
            "gotchas_encountered": [
                "Celery tasks need acks_late=True, or a worker crash drops the Stripe event",
            ],
        },
        "what_worked": [],
        "what_failed": [
            "autoretry_for=(Exception,) on the event task retried non-transient errors "
            "(bad payloads) forever",
        ],
        "recommendations_for_next_session": [
            "Alert when the Stripe events dead-letter queue grows",
        ],
    },
    {
        "session_number": 4, "timestamp": "2026-11-26T09:30:00+00:00",
        "subtasks_completed": ["subtask-3-1"],
        "discoveries": {
            "files_understood": {
                "tests/api/test_webhooks.py":
                    "Webhook endpoint tests with payloads signed by the stripe_signature() "
                    "helper",
                "tests/conftest.py": "Shared fixtures: StripeStub, ledger_db, celery_eager",
            },
            "patterns_found": [
                "Run Celery tasks eagerly in tests with the celery_eager fixture",
            ],
            "gotchas_encountered": [
                "The webhook secret in tests is whsec_test from .env.test; without that file "
                "every signed request gets 400",
            ],
        },
        "what_worked": [
            "Built signed webhook payloads with the stripe_signature() helper instead of "
            "mocking signature verification",
        ],
        "what_failed": [
            "Mocking stripe.Webhook.construct_event in tests hid a signature bug that reached "
            "staging",
        ],
        "recommendations_for_next_session": [],
    },
    {
        "session_number": 5, "timestamp": "2026-11-27T11:00:00+00:00",
        "subtasks_completed": [],
        "discoveries": {
            "file_insights": [{
                "path": "app/workers/dead_letter.py",
                "purpose": "Dead-letter queue for Stripe events that exhausted their retries",
                "changes_made": "Added the dead-letter task and its admin listing",
                "patterns_used": [],
                "gotchas": ["Dead-lettered events must keep the raw payload to be replayable"],
            }],
            "patterns_discovered": [], "gotchas_discovered": [],
            "approach_outcome": {
                "success": True, "approach_used": "Dead-letter queue after max retries",
                "why_it_worked": "bad events stop retrying and stay inspectable",
                "why_it_failed": None, "alternatives_tried": [],
            },
            "recommendations": ["Expose a replay button for dead-lettered events"],
            "subtask_id": "subtask-3-2", "success": True,
            "changed_files": ["app/workers/dead_letter.py"],
        },
        "what_worked": [], "what_failed": [], "recommendations_for_next_session": [],
    },
]

PAYOUT_SESSIONS: list[dict[str, Any]] = [
    {
        "session_number": 1, "timestamp": "2026-12-01T09:00:00+00:00",
        "subtasks_completed": ["subtask-1-1"],
        "discoveries": {
            "files_understood": {
                "app/services/payouts.py":
                    "Payout service: computes what each Connect merchant is owed and creates "
                    "Stripe transfers",
                "app/repos/payouts.py": "Payout and payout-batch repository",
            },
            "patterns_found": [
                "Payout amounts come from ledger balances, never from charge totals",
            ],
            "gotchas_encountered": [
                "Stripe Connect transfers fail for accounts with pending verification; check "
                "account.payouts_enabled first",
            ],
        },
        "what_worked": [],
        "what_failed": [
            "Computing payouts from the charges table double-counted partially refunded "
            "charges",
        ],
        "recommendations_for_next_session": ["Post a payout ledger entry for every transfer"],
    },
    {
        "session_number": 2, "timestamp": "2026-12-02T09:00:00+00:00",
        "subtasks_completed": ["subtask-2-1"],
        "discoveries": {
            "files_understood": {
                "app/workers/payout_batch.py":
                    "Weekly Celery beat job that builds and sends the payout batch",
            },
            "patterns_found": [
                "The payout batch job holds the Postgres advisory lock payouts:batch so two "
                "workers never pay twice",
            ],
            "gotchas_encountered": [
                "Stripe transfers need an idempotency key per merchant and batch, or a retried "
                "batch pays twice",
            ],
        },
        "what_worked": ["Dry-run mode that prints the batch without transferring"],
        "what_failed": [],
        "recommendations_for_next_session": [],
    },
    {
        "session_number": 3, "timestamp": "2026-12-03T09:00:00+00:00",
        "subtasks_completed": [],
        "discoveries": {
            "file_insights": [{
                "path": "tests/services/test_payouts.py",
                "purpose": "Payout service tests with ledger_db and a StripeStub transfer log",
                "changes_made": "Added batch tests for refunded charges",
                "patterns_used": ["StripeStub"],
                "gotchas": ["Payout tests must freeze time with time_machine; the batch week "
                            "boundary is computed from now()"],
            }],
            "patterns_discovered": [], "gotchas_discovered": [],
            "approach_outcome": {
                "success": True, "approach_used": "Seeded the ledger through LedgerService in "
                                                  "payout tests",
                "why_it_worked": "balances match production posting rules",
                "why_it_failed": None, "alternatives_tried": ["raw ledger rows"],
            },
            "recommendations": [],
            "subtask_id": "subtask-3-1", "success": True, "changed_files": [],
        },
        "what_worked": [], "what_failed": [], "recommendations_for_next_session": [],
    },
]


@dataclass(frozen=True)
class Note:
    """A project memory of ``area``: ``kind`` is pattern, gotcha, file (codebase discovery),
    outcome, failed (approach), adr, architecture or domain; ``extra`` its other fields."""

    area: str
    kind: str
    text: str
    extra: Mapping[str, Any] | None = None


N = Note
PROJECT_NOTES: Sequence[Note] = (
    # ledger: core bookkeeping, shared by refunds and payouts
    N("ledger", "pattern", "Every money movement posts balanced ledger entries (a debit and a "
      "credit) through LedgerService.post(); never insert ledger rows directly"),
    N("ledger", "gotcha", "Ledger balances are cached in account_balances; call "
      "LedgerService.rebuild_balance() after a manual ledger fix"),
    N("ledger", "file", "app/repos/ledger.py", {"description": "Ledger repository: entries, "
      "balances per account, an advisory lock per account"}),
    N("ledger", "adr", "Ledger is append-only", {"adr_id": "ADR-004", "decision": "Ledger "
      "entries are never updated or deleted; a correction is a reversing entry"}),
    N("ledger", "domain", "Minor units", {"definition": "Amounts are integers in the "
      "currency's smallest unit; JPY has no minor unit, KWD has three decimals"}),
    N("ledger", "gotcha", "Currency exponents differ (JPY 0, KWD 3): use "
      "money.exponent(currency), never divide by 100"),
    N("ledger", "outcome", "LED-9", {"description": "Reversing entries for refunded charges",
      "outcome": "refund reversal posts mirror entries; balances reconcile nightly",
      "success": True, "turns": 2}),
    # accounts: authentication, API keys, merchant users
    N("accounts", "pattern", "API keys are stored hashed (sha256) with an 8-character prefix "
      "kept in clear for lookup"),
    N("accounts", "gotcha", "API keys pasted from emails often end in a newline; strip them "
      "before hashing"),
    N("accounts", "file", "app/api/auth.py", {"description": "API-key and session "
      "authentication dependencies for the routers"}),
    N("accounts", "file", "app/services/accounts.py", {"description": "Merchant accounts, "
      "roles and invitations"}),
    N("accounts", "failed", "Comparing API key hashes with ==", {"symptom": "timing leak "
      "flagged by the security review", "prevention": "use hmac.compare_digest"}),
    N("accounts", "pattern", "Role checks use the require_role() dependency on the router, "
      "never checks inside handlers"),
    N("accounts", "outcome", "ACC-12", {"description": "API key rotation with a 24 h grace "
      "period", "outcome": "old and new keys both valid during the grace window",
      "success": True, "turns": 3}),
    N("accounts", "gotcha", "Session cookies need SameSite=Lax or the admin dashboard login "
      "loops"),
    N("accounts", "outcome", "ACC-15", {"description": "Merchant invitations by email",
      "outcome": "invitation tokens expire after 72 h", "success": True, "turns": 2}),
    # notifications: email and SMS
    N("notifications", "pattern", "Emails are sent by a Celery task enqueued after the "
      "database commit (session after_commit hook), so a rolled-back change sends nothing"),
    N("notifications", "file", "app/services/notifications.py", {"description": "Email and "
      "SMS sending through the Postmark and Twilio clients"}),
    N("notifications", "file", "app/templates/email/", {"description": "Jinja email "
      "templates, each with a plain-text .txt twin"}),
    N("notifications", "gotcha", "Postmark rejects emails over 10 MB; link receipts instead "
      "of attaching them"),
    N("notifications", "pattern", "Every email template has a plain-text twin; tests render "
      "both"),
    N("notifications", "outcome", "NOTIF-3", {"description": "SMS receipts through Twilio "
      "behind the sms_receipts flag", "outcome": "shipped to 5% of merchants first",
      "success": True, "turns": 2}),
    N("notifications", "failed", "Sending emails inside the request handler", {"symptom":
      "checkout slowed by 800 ms", "prevention": "enqueue after commit"}),
    # reporting: exports and scheduled jobs
    N("reporting", "pattern", "CSV exports stream rows with a server-side cursor "
      "(yield_per(1000)); never load a whole report into memory"),
    N("reporting", "file", "app/reports/exports.py", {"description": "CSV exports of "
      "charges, refunds and payouts for merchants"}),
    N("reporting", "file", "app/workers/nightly.py", {"description": "Celery beat jobs: "
      "nightly merchant reports and balance snapshots"}),
    N("reporting", "gotcha", "Celery beat schedules run in UTC; merchant reports must "
      "convert to the merchant's timezone"),
    N("reporting", "gotcha", "Excel reads CSV as UTF-8 only with a BOM; write exports with "
      "utf-8-sig"),
    N("reporting", "failed", "Building the monthly merchant report in one SQL query",
      {"symptom": "timed out for the largest merchants", "prevention": "aggregate per day "
       "into report_daily first"}),
    N("reporting", "outcome", "REP-7", {"description": "Nightly balance snapshot job",
      "outcome": "snapshots written per account at 02:00 UTC", "success": True, "turns": 1}),
    # admin dashboard (React)
    N("admin-ui", "pattern", "Admin dashboard pages call the API through the generated "
      "OpenAPI client in admin/src/api, never raw fetch"),
    N("admin-ui", "file", "admin/src/pages/Refunds.tsx", {"description": "Admin refund list "
      "page with filters and CSV download"}),
    N("admin-ui", "gotcha", "The admin app proxies /api to localhost:8000 only in "
      "development; production reads API_BASE_URL"),
    N("admin-ui", "pattern", "Admin tables use the DataTable component with server-side "
      "pagination"),
    N("admin-ui", "failed", "Client-side pagination of the disputes table", {"symptom":
      "the browser froze above 20,000 rows", "prevention": "server-side pagination"}),
    N("admin-ui", "outcome", "ADM-5", {"description": "Dark mode for the admin dashboard",
      "outcome": "theme tokens in admin/src/theme.ts", "success": True, "turns": 1}),
    # infrastructure: migrations, settings, CI, containers
    N("infra", "gotcha", "Alembic autogenerate misses server_default changes and new enum "
      "values; write those by hand"),
    N("infra", "pattern", "Every Alembic migration is reversible: write downgrade() and CI "
      "runs alembic downgrade -1 after upgrade"),
    N("infra", "gotcha", "Tests run on Postgres in docker (make test-db); SQLite hides JSONB "
      "and advisory-lock bugs"),
    N("infra", "file", "alembic/versions/", {"description": "Database migrations, one per "
      "change, named YYYYMMDD_description"}),
    N("infra", "file", "app/settings.py", {"description": "Pydantic settings: "
      "STRIPE_API_KEY, STRIPE_WEBHOOK_SECRET, DATABASE_URL, REDIS_URL"}),
    N("infra", "file", "docker-compose.yml", {"description": "Postgres, Redis and a Celery "
      "worker for local development"}),
    N("infra", "pattern", "Configuration comes from app/settings.py; modules never read "
      "os.environ"),
    N("infra", "gotcha", "The CI Redis service starts after the tests unless the job waits "
      "on its health check"),
    N("infra", "adr", "Celery with Redis for background jobs", {"adr_id": "ADR-002",
      "decision": "Background work runs in Celery workers with Redis as broker"}),
    N("infra", "architecture", "Service layout", {"description": "FastAPI app in app/ "
      "(api, services, repos, models, workers); Celery workers share the services; Postgres "
      "is the only database"}),
    # testing conventions (cross-cutting)
    N("testing", "pattern", "Test data comes from factory_boy factories in "
      "tests/factories.py, not JSON fixtures"),
    N("testing", "gotcha", "freezegun breaks asyncio timeouts in tests; freeze time with "
      "time_machine"),
    N("testing", "pattern", "Service tests use the real Postgres test database; only "
      "external clients (Stripe, Postmark, Twilio) are stubbed"),
    N("testing", "outcome", "TEST-2", {"description": "Raise service test coverage to 85%",
      "outcome": "testing error paths first found two real bugs", "success": True,
      "turns": 2}),
    N("testing", "gotcha", "pytest-asyncio runs in strict mode: an async test without "
      "@pytest.mark.asyncio never runs"),
    # invoicing
    N("invoicing", "pattern", "Invoices are immutable once finalised; a correction is a "
      "credit note"),
    N("invoicing", "file", "app/services/invoices.py", {"description": "Invoice generation "
      "and PDF rendering with WeasyPrint"}),
    N("invoicing", "gotcha", "Tax rates are looked up by the customer's billing country at "
      "finalisation, not at creation"),
    N("invoicing", "failed", "Rendering invoice PDFs in the web process", {"symptom":
      "workers ran out of memory on large invoices", "prevention": "render in a Celery task"}),
    N("invoicing", "domain", "Credit note", {"definition": "A document that reverses part "
      "or all of a finalised invoice"}),
    N("invoicing", "outcome", "INV-8", {"description": "Invoice numbering per merchant "
      "without gaps", "outcome": "a per-merchant sequence row locked with SELECT FOR UPDATE",
      "success": True, "turns": 3}),
    # disputes (chargebacks): close to refunds in words, a different area
    N("disputes", "file", "app/services/disputes.py", {"description": "Chargeback handling: "
      "evidence submission and dispute status"}),
    N("disputes", "gotcha", "A dispute freezes the disputed amount; refunding a disputed "
      "charge fails with charge_disputed"),
    N("disputes", "pattern", "Dispute evidence is uploaded to Stripe Files first, then "
      "attached to the dispute by file id"),
    N("disputes", "outcome", "DSP-4", {"description": "Automatic evidence submission for "
      "fraud disputes", "outcome": "evidence assembled from the order and delivery records",
      "success": True, "turns": 2}),
    N("disputes", "domain", "Chargeback", {"definition": "The card issuer reverses a payment; "
      "the merchant may contest it with evidence"}),
    N("webhooks", "gotcha", "Dispute events (charge.dispute.*) arrive at the same webhook "
      "endpoint as refunds; route by the event type's prefix"),
    # the Stripe client, used by refunds, webhooks and payouts alike
    N("stripe-client", "file", "app/clients/stripe_client.py", {"description": "Thin wrapper "
      "around the Stripe SDK: API key, timeouts, idempotency keys"}),
    N("stripe-client", "gotcha", "Stripe answers bursts of requests with 429 rate_limit "
      "errors; the SDK's max_network_retries does not retry them"),
    # more of the project's other areas
    N("ledger", "pattern", "Nightly reconciliation compares daily ledger totals with Stripe "
      "balance transactions and flags any difference"),
    N("reporting", "gotcha", "Stripe balance transactions are listed with auto-pagination; "
      "a page holds at most 100"),
    N("reporting", "pattern", "Report downloads are signed S3 URLs valid for 15 minutes"),
    N("accounts", "gotcha", "Password reset tokens are single-use and expire after 30 "
      "minutes"),
    N("notifications", "gotcha", "Twilio rejects SMS bodies over 1,600 characters"),
    N("admin-ui", "file", "admin/src/pages/Payouts.tsx", {"description": "Admin page listing "
      "payout batches with their status"}),
    N("infra", "pattern", "Structured logging with structlog: every log line carries "
      "request_id and merchant_id"),
    N("testing", "file", "tests/factories.py", {"description": "factory_boy factories for "
      "merchants, charges, refunds and payouts"}),
    N("invoicing", "pattern", "Invoice PDFs are cached in S3 by invoice number and version"),
    N("disputes", "gotcha", "Dispute evidence is due by dispute.evidence_details.due_by; "
      "merchants are reminded three days before"),
    N("search", "pattern", "Merchant search uses Postgres trigram indexes on name and email"),
    N("search", "gotcha", "pg_trgm must be enabled in the migration that adds a trigram "
      "index"),
    N("search", "file", "app/api/search.py", {"description": "Merchant and charge search "
      "for the admin dashboard"}),
    # written with the fresh held-out tasks (bench.context_tasks.FRESH), before any tuning on them
    N("subscriptions", "pattern", "Subscription renewals follow Stripe's invoice.paid events; "
      "our own scheduler never charges a renewal"),
    N("subscriptions", "pattern", "Upgrades take effect at once with proration; downgrades "
      "wait for the end of the billing period"),
    N("subscriptions", "gotcha", "Proration on a mid-cycle plan change adds a separate Stripe "
      "invoice item; never bill the difference again ourselves"),
    N("subscriptions", "file", "app/services/subscriptions.py", {"description": "Merchant "
      "plans, trials and plan changes"}),
    N("subscriptions", "failed", "Cancelling a subscription on the first failed renewal "
      "payment", {"symptom": "merchants lost access while updating an expired card",
                  "prevention": "let Stripe's dunning retry and cancel at period end"}),
    N("subscriptions", "domain", "Dunning", {"definition": "Retrying a failed recurring "
      "payment and reminding the customer before a subscription is cancelled"}),
    N("subscriptions", "outcome", "SUB-3", {"description": "Trial expiry reminders three days "
      "before a trial ends", "outcome": "sent by the nightly Celery beat job",
      "success": True, "turns": 1}),
    N("accounts", "pattern", "Rate limits are sliding windows kept in Redis by "
      "app/core/ratelimit.py, keyed by what is limited"),
    N("accounts", "file", "app/core/ratelimit.py", {"description": "Redis sliding-window "
      "rate limiter used by the login form and the public API"}),
    N("accounts", "gotcha", "Count failed logins per email address, not per IP: merchants "
      "behind one office NAT share an IP"),
    N("accounts", "outcome", "ACC-18", {"description": "Two-factor login with TOTP",
      "outcome": "recovery codes are hashed like API keys", "success": True, "turns": 3}),
    N("ledger", "pattern", "Exchange rates are fixed when a charge is captured and stored on "
      "the charge; never convert again with today's rate"),
    N("ledger", "file", "app/services/fx.py", {"description": "Exchange rates from the ECB "
      "daily feed, cached per day"}),
    N("ledger", "gotcha", "The ECB publishes no exchange rates on weekends and TARGET "
      "holidays; use the last business day's rate"),
    N("notifications", "file", "app/api/postmark.py", {"description": "Postmark bounce and "
      "delivery webhooks"}),
    N("notifications", "gotcha", "A hard bounce reported by Postmark disables the address; "
      "later emails to it are dropped without an error"),
    N("admin-ui", "pattern", "Admin forms validate with zod schemas generated from the "
      "OpenAPI spec"),
    N("reporting", "gotcha", "Report timestamps are stored in UTC and shown in the "
      "merchant's timezone only when rendered"),
)


async def write_history(store: MemoryBackend, project_id: str) -> dict[str, str]:
    """Write the two specs' sessions and the project's notes; returns each memory's area by
    id (the sessions' memories get their spec's area)."""
    areas: dict[str, str] = {}
    for spec, sessions in (("002-refund-webhooks", WEBHOOK_SESSIONS),
                           ("003-payouts", PAYOUT_SESSIONS)):
        agent = AgentMemory(store, project_id, spec, source="auto-claude")
        for session in sessions:
            saved = await agent.save_session_insights(session["session_number"], session)
            areas.update((e.id, SPEC_AREAS[spec]) for e in saved)
    agent = AgentMemory(store, project_id)
    for note in PROJECT_NOTES:
        for episode in await _write(store, agent, project_id, note):
            areas[episode.id] = note.area
    return areas


async def _write(
    store: MemoryBackend, agent: AgentMemory, project_id: str, note: Note
) -> list[Episode]:
    extra = dict(note.extra or {})
    group = project_group(project_id)
    if note.kind == "pattern":
        return [await agent.add_pattern(note.text)]
    if note.kind == "gotcha":
        return [await agent.add_gotcha(note.text)]
    if note.kind == "file":
        return await agent.add_codebase_discoveries({note.text: extra["description"]})
    if note.kind == "outcome":
        return [await agent.add_task_outcome(note.text, **extra)]
    if note.kind == "failed":
        await record_failed_approach(store, project_id, note.text, **extra)
        written = await store.get(stable_id(group, FAILED_APPROACH, natural_key(note.text)))
    elif note.kind == "adr":
        await record_adr(store, project_id, Adr(title=note.text, **extra))
        written = await store.get(stable_id(group, ADR, extra["adr_id"]))
    else:
        kind = {"architecture": ARCHITECTURE, "domain": DOMAIN_KNOWLEDGE}[note.kind]
        written = Episode.create(group_id=group, kind=kind, name=note.text, body=extra,
                                 key=note.text)
        await store.upsert(written)
    assert written is not None
    return [written]
