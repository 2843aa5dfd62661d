"""The file layer: episodes as JSON files, Markdown views people edit, one search index."""

from fallback.store import FileBackend

__all__ = ["FileBackend"]
