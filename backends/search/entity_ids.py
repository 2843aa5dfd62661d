"""An entity's id: a uuid5 of its group, label and folded name, so the same file is one node
across every memory and every process. Apart from ``entities`` (which finds what a memory
names) so that a reader that only looks a file up (``fallback.file_links``, in the tool hook's
quick answer) needs SHA-1 alone, when it computes an id (as ``uuid.uuid5`` does): the
``uuid`` module imports ``platform``, which costs such a process a tenth of its time."""

from __future__ import annotations

from backends.builtin_hashes import uuid5

# Fixed forever: every entity id stored is derived from it
# (uuid.UUID("b7a4f1d2-3c59-4e8a-9d0b-6e2f5a1c7d43").bytes).
NAMESPACE = bytes.fromhex("b7a4f1d23c594e8a9d0b6e2f5a1c7d43")


def entity_uuid(group_id: str, label: str, name: str) -> str:
    """``str(uuid.uuid5(NAMESPACE, ...))`` of the group, label and folded name (RFC 4122:
    the SHA-1 of namespace and name, with the version and variant bits set)."""
    folded = name if label == "File" else name.casefold()  # paths are case-sensitive
    return uuid5(NAMESPACE, f"{group_id}\x1f{label}\x1f{folded}".encode())
