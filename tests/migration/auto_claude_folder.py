"""Auto-Claude memory folders as Auto-Claude writes them: the shared fixture spec (written by
Auto-Claude's own code, read where it lies), and specs built in a temp dir."""

from __future__ import annotations

import json
from pathlib import Path

# Beside the repository, as bench/locomo.py finds ../shared/bench.
FIXTURE = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "auto-claude"
FIXTURE_SPEC = "001-partial-refunds"

SESSION_1 = {
    "session_number": 1,
    "timestamp": "2025-03-01T10:00:00+00:00",
    "subtasks_completed": ["subtask-1-1", "subtask-1-2"],
    "discoveries": {
        "files_understood": {"src/api/auth.py": "JWT validation and refresh"},
        "patterns_found": ["Services take a repository in the constructor"],
        "gotchas_encountered": ["The test database is shared: use unique names"],
    },
    "what_worked": ["Running the focused test first"],
    "what_failed": ["Mocking the clock globally"],
    "recommendations_for_next_session": ["Start from the failing refresh test"],
}
SESSION_2 = {
    "session_number": 2,
    "timestamp": "2025-03-02T09:30:00Z",
    "subtasks_completed": [{"id": "subtask-2-1", "description": "Add refresh endpoint"}],
    "discoveries": {
        "files_understood": [{"path": "src/api/routes.py", "purpose": "route table"}],
        "patterns_found": [{"pattern": "Routes are registered in one table", "applies_to": "api"}],
        "gotchas_encountered": [],
    },
    "what_worked": [],
    "what_failed": [],
    "recommendations_for_next_session": [],
}
PATTERNS_MD = """# Patterns

- Services take a repository in the constructor
- Errors are translated at the edge,
  never inside services
* Config is read once at startup
"""
GOTCHAS_MD = """# Gotchas & Pitfalls

Things to watch out for in this codebase.

## [2025-03-01 11:00]
Migrations must run before the app starts

_Context: alembic upgrade head_

## [2025-03-02 12:15]
The cache key includes the tenant
"""
FLAT_MAP = {
    "src/api/auth.py": "JWT validation and refresh",
    "src/db/models.py": "SQLAlchemy models",
    "_metadata": {"last_updated": "2025-03-02T12:00:00Z", "total_files": 2},
}
NESTED_MAP = {
    "discovered_files": {
        "src/api/auth.py": {
            "description": "JWT validation and refresh",
            "category": "api",
            "discovered_at": "2025-03-01T10:05:00+00:00",
        },
        "src/db/models.py": {"description": "SQLAlchemy models", "category": "db"},
    },
    "last_updated": "2025-03-02T12:00:00+00:00",
}

# What the folder holds, whichever map shape it has: 2 sessions; 3 subtasks and what worked;
# the patterns (one met both in a session and in patterns.md), the gotchas, the files, what
# failed and the recommendation.
EXPECTED_KINDS = {
    "session_insight": 2,
    "task_outcome": 4,
    "pattern": 4,
    "gotcha": 3,
    "codebase_discovery": 3,
    "failed_approach": 1,
    "recommendation": 1,
}


def build(root: Path, *, nested_map: bool) -> Path:
    """Write the folder under ``root/memory`` and return that path."""
    memory = root / "memory"
    (memory / "session_insights").mkdir(parents=True)
    for number, session in ((1, SESSION_1), (2, SESSION_2)):
        path = memory / "session_insights" / f"session_{number:03d}.json"
        path.write_text(json.dumps(session, indent=2))
    (memory / "codebase_map.json").write_text(json.dumps(NESTED_MAP if nested_map else FLAT_MAP))
    (memory / "patterns.md").write_text(PATTERNS_MD)
    (memory / "gotchas.md").write_text(GOTCHAS_MD)
    return memory


# Every item Auto-Claude wrote into the fixture spec, as (kind, the name of its memory).
FIXTURE_ITEMS = [
    *(("session_insight", f"Session {n} insights") for n in (1, 2, 3, 4)),
    ("task_outcome", "subtask-1-1 succeeded"),
    ("task_outcome", "subtask-1-2 succeeded"),
    ("task_outcome", "subtask-2-1 succeeded"),
    ("task_outcome", "subtask-3-1 failed"),
    ("task_outcome", "Worked: Wrote the repository test first with a fake Stripe client"),
    ("task_outcome", "Worked: Implemented subtask: subtask-2-1"),
    ("task_outcome", "Approach worked: Single transaction for refund and ledger"),
    ("task_outcome", "Approach failed: Implemented subtask: subtask-3-1"),
    ("codebase_discovery", "app/api/refunds.py"),
    ("codebase_discovery", "app/repos/refunds.py"),
    ("codebase_discovery", "app/services/ledger.py"),
    ("codebase_discovery", "app/services/refunds.py"),
    ("codebase_discovery", "tests/services/test_refunds.py"),
    ("pattern", "Money amounts are integers in minor units (cents) at API boundaries"),
    ("pattern", "Repositories return domain dataclasses, never ORM rows"),
    ("pattern", "Use a unit of work (session.begin()) around every money movement"),
    ("pattern", "External payment calls go through app/clients/stripe_client.py so tests can "
                "stub them"),
    ("gotcha", "Stripe rejects a partial refund larger than the remaining captured amount; "
               "check charge.amount_refunded first"),
    ("gotcha", "The ledger test fixture truncates tables between tests; use the ledger_db "
               "fixture, not db"),
    ("gotcha", "SQLAlchemy expire_on_commit=True makes refund.amount lazy-load after commit in "
               "async code"),
    ("gotcha", "Stripe call must happen before commit, not inside a nested savepoint"),
    ("failed_approach", "Failed: Tried posting ledger entries outside the refund transaction - "
                        "left orphan entries on failure"),
    ("failed_approach", "Failed: Failed to complete subtask: subtask-3-1"),
    ("recommendation", "Add the refund webhook handler next"),
    ("recommendation", "Wrap refund + ledger posting in one transaction"),
    ("recommendation", "Add an idempotency key to the refund endpoint"),
]
FIXTURE_KINDS = {"codebase_discovery": 5, "failed_approach": 2, "gotcha": 4, "pattern": 4,
                 "recommendation": 3, "session_insight": 4, "task_outcome": 8}

# A second spec of the same project in the shapes of Auto-Claude's other writers: its agent tools
# (record_discovery's discovered_files beside a flat entry, record_gotcha's dated sections) and
# its insight extractor's sessions. Its sessions and subtasks are numbered like the fixture's.
TOOL_SPEC = "002-refund-webhooks"
TOOL_SESSIONS = {
    1: {
        "session_number": 1,
        "timestamp": "2026-12-01T09:00:00+00:00",
        "subtasks_completed": ["subtask-1-1"],
        "discoveries": {
            "file_insights": [{
                "path": "app/services/refunds.py",
                "purpose": "Refund service",
                "changes_made": "Added replay_event()",
                "patterns_used": ["idempotency key"],
                "gotchas": ["replay_event must not post ledger entries twice"],
            }],
            "patterns_discovered": [{
                "pattern": "Webhook handlers are idempotent: store the event id before acting",
                "applies_to": "app/api/webhooks.py",
                "example": "WebhookEvent table",
            }],
            "gotchas_discovered": [{
                "gotcha": "Stripe retries a webhook for up to three days",
                "trigger": "a handler that returns 500",
                "solution": "return 200 once the event is stored",
            }],
            "approach_outcome": {
                "success": True, "approach_used": "Store then process",
                "why_it_worked": "Retries became no-ops", "why_it_failed": None,
                "alternatives_tried": ["process inline"],
            },
            "recommendations": ["Add a replay command for stored events"],
            "subtask_id": "subtask-1-1", "session_num": 1, "success": True,
            "changed_files": ["app/services/refunds.py"],
        },
        "what_worked": ["Implemented subtask: subtask-1-1"],
        "what_failed": [],
        "recommendations_for_next_session": [],
    },
    2: {
        "session_number": 2,
        "timestamp": "2026-12-01T11:00:00+00:00",
        "subtasks_completed": [],
        "discoveries": {
            "file_insights": [{"path": "app/webhooks/ordering.py",
                               "purpose": "Reorders events by their created timestamp"}],
            "patterns_discovered": [],
            "gotchas_discovered": [],
            "approach_outcome": {
                "success": False, "approach_used": "Sort events in memory",
                "why_it_worked": None, "why_it_failed": "Events arrive across processes",
                "alternatives_tried": [],
            },
            "recommendations": [],
            "subtask_id": "subtask-2-1", "success": False, "changed_files": [],
        },
        "what_worked": [],
        "what_failed": ["Failed to complete subtask: subtask-2-1"],
        "recommendations_for_next_session": ["Order events with a database sequence instead"],
    },
}
TOOL_MAP = {
    "_metadata": {"last_updated": "2026-12-01T08:00:00+00:00", "total_files": 1},
    "app/api/webhooks.py": "Webhook endpoint: verifies the signature, stores the event",
    "discovered_files": {
        "app/services/refunds.py": {
            "description": "Refund service; also replays stored webhook events",
            "category": "service",
            "discovered_at": "2026-12-01T10:30:00+00:00",
        },
    },
    "last_updated": "2026-12-01T10:30:00+00:00",
}
TOOL_GOTCHAS_MD = """# Gotchas & Pitfalls

Things to watch out for in this codebase.

## [2026-12-01 09:40]
Stripe sends events out of order; never assume refund.created precedes charge.refunded

_Context: webhook ordering_

## [2026-12-01 11:05]
Webhook signatures are computed over the raw body; parse JSON only after verifying
"""
TOOL_PATTERNS_MD = """# Code Patterns

Established patterns to follow in this codebase:

- Webhook handlers are idempotent: store the event id before acting
"""
TOOL_ITEMS = [
    ("session_insight", "Session 1 insights"),
    ("session_insight", "Session 2 insights"),
    ("task_outcome", "subtask-1-1 succeeded"),
    ("task_outcome", "subtask-2-1 failed"),
    ("task_outcome", "Worked: Implemented subtask: subtask-1-1"),
    ("task_outcome", "Approach worked: Store then process"),
    ("task_outcome", "Approach failed: Sort events in memory"),
    ("codebase_discovery", "app/api/webhooks.py"),
    ("codebase_discovery", "app/services/refunds.py"),
    ("codebase_discovery", "app/webhooks/ordering.py"),
    ("pattern", "Webhook handlers are idempotent: store the event id before acting"),
    ("gotcha", "Stripe sends events out of order; never assume refund.created precedes "
               "charge.refunded"),
    ("gotcha", "Webhook signatures are computed over the raw body; parse JSON only after "
               "verifying"),
    ("gotcha", "replay_event must not post ledger entries twice"),
    ("gotcha", "Stripe retries a webhook for up to three days"),
    ("failed_approach", "Failed: Failed to complete subtask: subtask-2-1"),
    ("recommendation", "Add a replay command for stored events"),
    ("recommendation", "Order events with a database sequence instead"),
]


def build_tool_spec(specs: Path) -> Path:
    """Write the second spec under ``specs/`` and return its memory folder."""
    memory = specs / TOOL_SPEC / "memory"
    (memory / "session_insights").mkdir(parents=True)
    for number, session in TOOL_SESSIONS.items():
        path = memory / "session_insights" / f"session_{number:03d}.json"
        path.write_text(json.dumps(session, indent=2))
    (memory / "codebase_map.json").write_text(json.dumps(TOOL_MAP, indent=2))
    (memory / "gotchas.md").write_text(TOOL_GOTCHAS_MD)
    (memory / "patterns.md").write_text(TOOL_PATTERNS_MD)
    return memory
