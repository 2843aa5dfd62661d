"""Spec isolation (002's and 003's ``GroupIdMode.SPEC``), as a setting of the call.

A project's memories are one pool by default: a gotcha found in one spec reaches every other
spec's context (003 recommends it; 002 made it the default). A task given ``spec`` and
``isolation="spec"`` reads its own spec's memories and the project's own (those recorded in no
spec), and nothing another spec recorded. A memory's spec is the one ``AgentMemory(spec=)`` or
the Auto-Claude importer wrote into it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from backends.model import Hit
from memory.context.budget import Category
from memory.context.selection import Found, spec_of
from memory.context.task import Task


def _admitted(hits: Sequence[Hit], spec: str | None) -> list[Hit]:
    return [hit for hit in hits if spec_of(hit.episode) in (None, spec)]


def isolated(found: Mapping[Category, Found], task: Task) -> Mapping[Category, Found]:
    """``found`` without other specs' memories when the task asks for isolation."""
    if task.isolation != "spec":
        return found
    return {
        category: replace(
            hits, subject=_admitted(hits.subject, task.spec),
            known=_admitted(hits.known, task.spec), concern=_admitted(hits.concern, task.spec),
            work=_admitted(hits.work, task.spec),
        )
        for category, hits in found.items()
    }
