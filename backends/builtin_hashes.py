"""SHA-1 and BLAKE2b from CPython's own modules (``_sha1``, ``_blake2``), whose import costs
nothing, where hashlib's first import loads OpenSSL (11M instructions, a tenth of a hook's quick
answer); and ``uuid.uuid5`` made with them, without the ``uuid`` module, which imports
``platform`` (another tenth)."""

from __future__ import annotations


def _sha1(data: bytes) -> bytes:
    try:
        from _sha1 import sha1  # type: ignore[import-not-found]  # CPython's own, no stubs
    except ImportError:  # a Python built without it
        from hashlib import sha1
    return bytes(sha1(data).digest())


def blake2b_hex(data: bytes, digest_size: int) -> str:
    try:
        from _blake2 import blake2b  # CPython's own
    except ImportError:  # a Python built without it
        from hashlib import blake2b
    return str(blake2b(data, digest_size=digest_size).hexdigest())


def uuid5(namespace: bytes, name: bytes) -> str:
    """``str(uuid.uuid5(UUID(bytes=namespace), name))`` (RFC 4122: the SHA-1 of namespace and
    name, with the version and variant bits set)."""
    digest = bytearray(_sha1(namespace + name)[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50
    digest[8] = (digest[8] & 0x3F) | 0x80
    text = digest.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"
