"""graphiti's Kùzu schema (``kuzu_driver.SCHEMA_QUERIES``), read from graphiti's source rather
than imported: importing graphiti (openai, neo4j, its pydantic models) costs a process ~2 s of
CPU, four fifths of creating a home, and creating the schema needs only this string."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

from backends.errors import BackendUnavailable
from backends.graph.graphiti_import import import_graphiti

_MODULE = "graphiti_core.driver.kuzu_driver"
_NAME = "SCHEMA_QUERIES"


def graphiti_schema(hint: str) -> str:
    """The DDL of graphiti's Kùzu tables; ``BackendUnavailable`` ("not installed", with
    ``hint``) without graphiti."""
    try:
        spec = importlib.util.find_spec(_MODULE.partition(".")[0])  # imports nothing
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise BackendUnavailable("graph", "not installed", hint)
    source = Path(next(iter(spec.submodule_search_locations)), "driver", "kuzu_driver.py")
    found = _literal(source)
    if found is not None:
        return found
    # Not a plain string in this graphiti's source: its module says what it is.
    return str(import_graphiti(_MODULE, hint).SCHEMA_QUERIES)


def _literal(source: Path) -> str | None:
    """The string literal assigned to ``SCHEMA_QUERIES`` at the top of ``source``, if it is
    one."""
    try:
        tree = ast.parse(source.read_bytes(), str(source))
    except (OSError, SyntaxError, ValueError):
        return None
    for statement in tree.body:
        if (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)
                and statement.targets[0].id == _NAME
                and isinstance(statement.value, ast.Constant)
                and isinstance(statement.value.value, str)):
            return statement.value.value
    return None
