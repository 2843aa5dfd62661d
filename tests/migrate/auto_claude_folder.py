"""An Auto-Claude memory folder as Auto-Claude writes it, built in a temp dir."""

from __future__ import annotations

import json
from pathlib import Path

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

# What the folder holds, whichever map shape it has: 2 sessions, 3 subtasks, the patterns
# (one met both in a session and in patterns.md), the gotchas and the files.
EXPECTED_KINDS = {
    "session_insight": 2,
    "task_outcome": 3,
    "pattern": 4,
    "gotcha": 3,
    "codebase_discovery": 3,
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
