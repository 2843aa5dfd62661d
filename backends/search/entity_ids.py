"""An entity's id: a uuid5 of its group, label and folded name, so the same file is one node
across every memory and every process. Apart from ``entities`` (which finds what a memory
names) so that a reader that only looks a file up (``fallback.file_links``, in the tool hook's
quick answer) needs SHA-1 alone, when it computes an id (as ``uuid.uuid5`` does): the
``uuid`` module imports ``platform``, which costs such a process a tenth of its time."""

from __future__ import annotations

# Fixed forever: every entity id stored is derived from it
# (uuid.UUID("b7a4f1d2-3c59-4e8a-9d0b-6e2f5a1c7d43").bytes).
NAMESPACE = bytes.fromhex("b7a4f1d23c594e8a9d0b6e2f5a1c7d43")


def entity_uuid(group_id: str, label: str, name: str) -> str:
    """``str(uuid.uuid5(NAMESPACE, ...))`` of the group, label and folded name (RFC 4122:
    the SHA-1 of namespace and name, with the version and variant bits set)."""
    folded = name if label == "File" else name.casefold()  # paths are case-sensitive
    digest = bytearray(_sha1(NAMESPACE + f"{group_id}\x1f{label}\x1f{folded}".encode())[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50
    digest[8] = (digest[8] & 0x3F) | 0x80
    text = digest.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def _sha1(data: bytes) -> bytes:
    """SHA-1 of ``data``: Python's own, whose import costs nothing, where hashlib's first
    import loads OpenSSL (11M instructions, a tenth of the tool hook's quick answer)."""
    try:
        from _sha1 import sha1  # type: ignore[import-not-found]  # CPython's own, no stubs
    except ImportError:  # a Python built without it
        from hashlib import sha1
    return bytes(sha1(data).digest())
