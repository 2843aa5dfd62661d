"""Kind names are spelled once, in ``backends.kinds``: no other product module defines a constant
with a kind's name as its value or compares a kind with one written out (the agent API, the
session splitter, seeding and the views had each spelled their own)."""

from __future__ import annotations

import ast
from pathlib import Path

from backends import kinds
from backends.kinds import KINDS
from memory.agent import scopes
from seeds import groups

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("backends", "fallback", "migrate", "seeds", "memory")


def spelled_again(path: Path) -> list[str]:
    """Where ``path`` writes a kind's name out as a constant or in a comparison with ``kind``."""
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for statement in tree.body:  # module-level constants (not enums of other names, in classes)
        if (isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Constant)
                and statement.value.value in KINDS
                and not any(isinstance(t, ast.Name) and t.id.endswith("_GROUP")
                            for t in statement.targets)):
            found.append(f"{path.name}:{statement.lineno}")
    for node in ast.walk(tree):
        if (isinstance(node, ast.Compare) and "kind" in ast.unparse(node.left)
                and any(isinstance(c, ast.Constant) and c.value in KINDS
                        for c in node.comparators)):
            found.append(f"{path.name}:{node.lineno}")
    return found


def test_kinds_are_one_list_of_distinct_names() -> None:
    assert len(set(KINDS)) == len(KINDS)
    assert set(kinds.AGENT_KINDS) | set(kinds.SYSTEM_KINDS) == set(KINDS)


def test_every_module_takes_its_kinds_from_the_list() -> None:
    assert scopes.GOTCHA is kinds.GOTCHA and groups.ROLE_CONSTRAINTS is kinds.ROLE_CONSTRAINTS
    again = [where for package in PACKAGES for path in sorted((REPO / package).rglob("*.py"))
             if path != REPO / "backends" / "kinds.py" for where in spelled_again(path)]
    assert again == []


def test_the_check_sees_a_kind_spelled_again(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text('GOTCHA = "gotcha"\nif episode.kind == "adr":\n    pass\n')
    assert spelled_again(probe) == ["probe.py:1", "probe.py:2"]
