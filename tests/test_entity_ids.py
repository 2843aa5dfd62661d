"""An entity's id is ``uuid.uuid5`` of its group, label and folded name, computed without the
``uuid`` module (``backends.search.entity_ids``): every id stored so far must stay the same."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from backends.search.entity_ids import entity_uuid

NAMESPACE = uuid.UUID("b7a4f1d2-3c59-4e8a-9d0b-6e2f5a1c7d43")


@given(st.text(min_size=1, max_size=40), st.sampled_from(["File", "Module", "Component"]),
       st.text(min_size=1, max_size=80))
def test_entity_ids_are_uuid5(group: str, label: str, name: str) -> None:
    folded = name if label == "File" else name.casefold()
    assert entity_uuid(group, label, name) == str(
        uuid.uuid5(NAMESPACE, f"{group}\x1f{label}\x1f{folded}"))
