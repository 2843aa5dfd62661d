"""graphiti's Kùzu schema is read from its source, not imported (graphiti_schema.py): the text
read is the one graphiti's module holds."""

from __future__ import annotations

from pathlib import Path

from backends.graph.graphiti_import import import_graphiti
from backends.graph.kuzu.graphiti_schema import _literal, graphiti_schema


def test_the_schema_read_is_graphitis_own() -> None:
    driver = import_graphiti("graphiti_core.driver.kuzu_driver", "")
    assert graphiti_schema("") == driver.SCHEMA_QUERIES
    assert "CREATE NODE TABLE IF NOT EXISTS Episodic" in graphiti_schema("")


def test_a_schema_that_is_no_plain_string_is_not_read(tmp_path: Path) -> None:
    built = tmp_path / "built.py"
    built.write_text('SCHEMA_QUERIES = "".join(["CREATE ", "NODE"])\n')
    assert _literal(built) is None
    plain = tmp_path / "plain.py"
    plain.write_text('OTHER = 1\nSCHEMA_QUERIES = """\\n    CREATE NODE TABLE T (a INT);\\n"""\n')
    assert _literal(plain) == "\n    CREATE NODE TABLE T (a INT);\n"
