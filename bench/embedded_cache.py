"""LoCoMo dev embedded by a model (``semantic.embedded``), kept on disk between bench runs: the
held-out comparisons then cost minutes, not the embedding of 2,760 memories each time. The key
is the model's files (path, size, time) and the data's, so a changed model or set embeds again.

The folder: ``$DUALMEM_BENCH_CACHE``, else ``dualmem-bench`` in the system's temporary folder.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path

from backends.graph import local_model
from bench import locomo, semantic


def folder() -> Path:
    return Path(os.environ.get("DUALMEM_BENCH_CACHE")
                or Path(tempfile.gettempdir()) / "dualmem-bench")


def _key(model: local_model.LocalEmbedder) -> str:
    files = [*sorted(model.folder.rglob("*")), *sorted(locomo.dataset_folder().glob("*"))]
    said = "\n".join(f"{f.resolve()} {f.stat().st_size} {f.stat().st_mtime_ns}"
                     for f in files if f.is_file())
    return hashlib.blake2b(said.encode(), digest_size=10).hexdigest()


def embedded(model: local_model.LocalEmbedder) -> semantic.Embedded:
    """``semantic.embedded(model)``, from the cache when it holds it."""
    path = folder() / f"locomo-{_key(model)}.pickle"
    if path.is_file():
        with path.open("rb") as kept:
            given: semantic.Embedded = pickle.load(kept)  # our own file
            return given
    given = semantic.embedded(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    with partial.open("wb") as out:
        pickle.dump(given, out)
    partial.replace(path)
    return given
