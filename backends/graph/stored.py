"""What both engines store alike: an episode's vector as text (``embedding_f16``), and which
``Episodic`` nodes are ours, with the filter of a scan or a count over them."""

from __future__ import annotations

# binascii, not base64: whose import (struct, its tables) costs a one-shot read over the wire
# 3 M instructions for nothing it uses.
import binascii
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy: not for a one-shot read over the wire, which needs only ``OURS``
    from backends.graph.embedder import Vectors

OURS = "e.kind IS NOT NULL"
"""an ``Episodic`` node dualmem wrote (graphiti's own, from its LLM extraction, have no kind)"""


def encode(vector: Vectors) -> str:
    """base64 of the little-endian float16 vector"""
    return binascii.b2a_base64(vector.astype("<f2").tobytes(), newline=False).decode("ascii")


def decode(text: str | None, dimension: int) -> Vectors | None:
    """The stored vector, or None when it is missing or not of this dimension."""
    if text is None:
        return None
    raw = binascii.a2b_base64(text)
    if len(raw) != 2 * dimension:
        return None
    import numpy as np  # loaded already wherever vectors are read

    return np.frombuffer(raw, dtype="<f2").astype(np.float32)


def filters(
    groups: Sequence[str] | None, kinds: Sequence[str] | None
) -> tuple[str | None, dict[str, Any]]:
    """The WHERE clause, or None when a filter is an empty list (nothing can match)."""
    clauses, params = [OURS], {}
    for column, values in (("group_id", groups), ("kind", kinds)):
        if values is None:
            continue
        if not values:
            return None, {}
        clauses.append(f"e.{column} IN ${column}")
        params[column] = list(values)
    return " AND ".join(clauses), params
