"""The error tree drawn in ``backends.errors`` names every class dualmem raises on purpose,
each under its parent. Read from the source, so no heavy import is needed."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import backends.errors

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("backends", "fallback", "migrate", "seeds", "memory")


def _parents_of_every_error() -> dict[str, str]:
    """class name -> the name of its base in the tree, for every subclass of DualmemError."""
    bases: dict[str, list[str]] = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.ClassDef):
                    names = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "")
                             for b in node.bases]
                    bases[node.name] = names
    parents: dict[str, str] = {}
    grew = True
    while grew:
        grew = False
        for name, names in bases.items():
            tree_bases = [b for b in names if b == "DualmemError" or b in parents]
            if name not in parents and tree_bases:
                parents[name] = tree_bases[0]
                grew = True
    return parents


def test_the_drawing_names_every_error_class_under_its_parent() -> None:
    drawing = backends.errors.__doc__ or ""
    depth = {name: len(prefix)
             for prefix, name in re.findall(r"^ *([│├└─ ]*?)(\w+)(?: |$)", drawing, re.MULTILINE)}
    parents = _parents_of_every_error()
    assert len(parents) >= 20
    missing = set(parents) - set(depth)
    assert not missing, f"not drawn in backends/errors.py: {sorted(missing)}"
    for name, parent in parents.items():
        assert depth[name] > depth[parent], f"{name} is not drawn under {parent}"
