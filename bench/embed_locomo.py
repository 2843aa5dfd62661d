"""The vectors ``bench.locomo_embedding`` fuses: every LoCoMo dev item and question, embedded
by a sentence-transformers model read from a folder (no download), normalised. Run it with a
Python that has sentence-transformers (not a dualmem dependency); it needs nothing of dualmem.

    python -P bench/embed_locomo.py MODEL_DIR LOCOMO_DIR OUT
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np


def main() -> None:
    from sentence_transformers import SentenceTransformer

    model_dir, folder, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    rows = {name: [json.loads(line) for line in (folder / file).read_text().splitlines()]
            for name, file in (("items", "items.jsonl"), ("questions", "queries.jsonl"))}
    texts = {"items": ("body", "id"), "questions": ("query", "qid")}
    model = SentenceTransformer(model_dir, device="cpu")
    out.mkdir(parents=True, exist_ok=True)
    for name, (text, key) in texts.items():
        vectors = model.encode([row[text] for row in rows[name]], batch_size=64,
                               normalize_embeddings=True)
        np.save(out / f"{name}.npy", vectors)
        (out / f"{name}.json").write_text(json.dumps([row[key] for row in rows[name]]))


if __name__ == "__main__":
    main()
