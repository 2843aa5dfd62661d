"""An entity's id is ``uuid.uuid5`` of its group, label and folded name, and a keyed memory's of
its group, kind and key, computed without the ``uuid`` module (``backends.builtin_hashes``):
every id stored so far must stay the same."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from backends.model import stable_id
from backends.search.entity_ids import entity_uuid

NAMESPACE = uuid.UUID("b7a4f1d2-3c59-4e8a-9d0b-6e2f5a1c7d43")


@given(st.text(min_size=1, max_size=40), st.sampled_from(["File", "Module", "Component"]),
       st.text(min_size=1, max_size=80))
def test_entity_ids_are_uuid5(group: str, label: str, name: str) -> None:
    folded = name if label == "File" else name.casefold()
    assert entity_uuid(group, label, name) == str(
        uuid.uuid5(NAMESPACE, f"{group}\x1f{label}\x1f{folded}"))


@given(st.text(min_size=1, max_size=40), st.text(min_size=1, max_size=80))
def test_a_memorys_stable_id_is_still_uuid5(kind: str, key: str) -> None:
    # every keyed memory stored so far was named so (with the ``uuid`` module)
    assert stable_id("g", kind, key) == str(uuid.uuid5(
        uuid.UUID("5f0c3a8e-6f43-4d0e-9a57-3c1d0c4d6a11"), f"g\x1f{kind}\x1f{key}"))
