"""The file layer: episodes as JSON files, Markdown views people edit, one search index."""

import backends.lean_typing as _typing
from backends.lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from fallback.store import FileBackend

__all__ = ["FileBackend"]

# Lazily: a user of one of the layer's tools (fallback.disk) does not pay for the store.
if not _typing.TYPE_CHECKING:
    __getattr__, __dir__ = _lazy_exports(__name__, {"fallback.store": ("FileBackend",)})
