"""A sentence-embedding model run on this machine: an ONNX export of a BERT-class model (such as
all-MiniLM-L6-v2 or bge-small-en-v1.5) on ONNX Runtime, its text cut into word pieces by the
Hugging Face ``tokenizers`` library (``pip install dualmem[semantic]`` brings both).

The model is read from a folder holding ``model.onnx`` (or ``onnx/model.onnx``) and
``tokenizer.json``: a folder of the user's, or a model of the user's model cache
(``MODELS``), found by name. Nothing is read or imported until the first texts are embedded,
so configuring it costs a process that never searches nothing. No download, ever.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from backends.errors import ProviderFailed
from backends.graph.embedder import Described, Vectors

MODEL_FILES = ("model.onnx", "onnx/model.onnx")
TOKENIZER = "tokenizer.json"
MAX_TOKENS = 256
"""all-MiniLM-L6-v2 was trained on texts this long; longer ones are cut"""
BATCH = 32
"""texts run together: bounds the (batch x tokens x width) activations"""
DEFAULT_DIMENSION = 384
"""all-MiniLM-L6-v2's and bge-small's, when a folder does not say"""
CACHES = ("HF_HUB_CACHE", "FASTEMBED_CACHE_PATH")
"""environment variables naming a user's model cache"""


def model_caches(environ: Mapping[str, str] | None = None) -> list[Path]:
    """Where a user's models are: Hugging Face's hub cache and fastembed's, as their own
    variables or defaults say."""
    env = os.environ if environ is None else environ
    home = Path(env.get("HF_HOME") or Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache")
                / "huggingface")
    places = [Path(env[name]) for name in CACHES if env.get(name)]
    return [*places, home / "hub", Path(env.get("TMPDIR") or "/tmp") / "fastembed_cache"]


def find_model(name: str, environ: Mapping[str, str] | None = None) -> Path:
    """The folder of model ``name``: a path to a folder, or a model's name as a cache keeps it
    (``sentence-transformers/all-MiniLM-L6-v2`` is ``models--sentence-transformers--all-MiniLM-
    L6-v2/snapshots/<revision>/``). ``ProviderFailed`` says where it looked."""
    given = Path(name).expanduser()
    if given.is_dir():
        if _model_file(given) is None or not (given / TOKENIZER).is_file():
            raise ProviderFailed(f"local model {given}: no {' or '.join(MODEL_FILES)} with "
                                 f"{TOKENIZER} in it")
        return given
    cached = "models--" + name.replace("/", "--")
    looked = model_caches(environ)
    for cache in looked:
        for folder in sorted((cache / cached / "snapshots").glob("*"), reverse=True):
            if _model_file(folder) is not None and (folder / TOKENIZER).is_file():
                return folder
    raise ProviderFailed(f"local model {name!r}: no such folder, and not in a model cache "
                         f"({', '.join(str(c) for c in looked)}); see the README, 'Search by "
                         "meaning'")


def embedder(name: str, *, dimension: int | None = None,
             environ: Mapping[str, str] | None = None) -> LocalEmbedder:
    """The model ``name`` (``find_model``); its vector size from its ``config.json``
    (``hidden_size``) unless given."""
    folder = find_model(name, environ)
    return LocalEmbedder(folder, dimension or _hidden_size(folder), name=name)


def _hidden_size(folder: Path) -> int:
    try:
        given = json.loads((folder / "config.json").read_text()).get("hidden_size")
    except (OSError, ValueError, AttributeError):  # no config, or not a BERT one
        given = None
    return given if isinstance(given, int) and given > 0 else DEFAULT_DIMENSION


def _model_file(folder: Path) -> Path | None:
    return next((folder / f for f in MODEL_FILES if (folder / f).is_file()), None)


class LocalEmbedder(Described):
    """Mean-pooled, L2-normalised token vectors of the model in ``folder`` (how
    sentence-transformers pools all-MiniLM-L6-v2 and what bge-small's CLS vector is close to).
    Loaded on first use, once per process, behind a lock: a server embeds from many tasks."""

    semantic = True
    """its vectors mean something: search fuses them with the words (``meaning``)"""

    def __init__(self, folder: Path, dimension: int, *, name: str | None = None) -> None:
        self.folder = folder
        self._dimension = dimension
        self._name = f"local:{name or folder.name}"
        self._loaded: tuple[Any, Any, set[str]] | None = None
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> Vectors:
        session, tokenizer, inputs = self._load()
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for start in range(0, len(texts), BATCH):
            pieces = tokenizer.encode_batch(list(texts[start : start + BATCH]))
            ids = np.asarray([p.ids for p in pieces], dtype=np.int64)
            mask = np.asarray([p.attention_mask for p in pieces], dtype=np.int64)
            feed = {"input_ids": ids, "attention_mask": mask,
                    "token_type_ids": np.zeros_like(ids)}
            tokens = session.run(None, {key: feed[key] for key in inputs})[0]
            if tokens.shape[-1] != self._dimension:
                raise ProviderFailed(f"{self._name}: vectors of size {tokens.shape[-1]}, "
                                     f"configured {self._dimension}")
            weights = mask[:, :, None].astype(np.float32)
            out[start : start + len(pieces)] = (tokens * weights).sum(1) / np.maximum(
                weights.sum(1), 1e-9)
        out[[not text.strip() for text in texts]] = 0.0  # the contract: nothing said, no vector
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def _load(self) -> tuple[Any, Any, set[str]]:
        with self._lock:
            if self._loaded is None:
                self._loaded = self._open()
            return self._loaded

    def _open(self) -> tuple[Any, Any, set[str]]:
        # ONNX Runtime 1.32 queues usage events in ~/.cache/Microsoft/DeveloperTools to send
        # them to Microsoft: nothing here phones home (graphiti's telemetry is off too).
        os.environ["ORT_DISABLE_TELEMETRY"] = "1"
        try:
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ProviderFailed(f"{self._name}: {exc.name} is not installed: "
                                 "pip install 'dualmem[semantic]'") from None
        model = _model_file(self.folder)
        if model is None or not (self.folder / TOKENIZER).is_file():
            raise ProviderFailed(f"{self._name}: {self.folder} holds no model "
                                 f"({' or '.join(MODEL_FILES)} and {TOKENIZER})")
        onnxruntime.disable_telemetry_events()
        try:
            tokenizer = Tokenizer.from_file(str(self.folder / TOKENIZER))
            tokenizer.enable_truncation(MAX_TOKENS)
            tokenizer.enable_padding(pad_id=tokenizer.token_to_id("[PAD]") or 0)
            options = onnxruntime.SessionOptions()
            # One thread: a hook or a CLI call shares the machine with the agent that runs it.
            options.intra_op_num_threads = 1
            options.inter_op_num_threads = 1
            session = onnxruntime.InferenceSession(str(model), options,
                                                   providers=["CPUExecutionProvider"])
        except Exception as exc:  # a damaged file: onnxruntime's and tokenizers' own errors
            raise ProviderFailed(f"{self._name}: cannot load {self.folder}: {exc}") from exc
        return session, tokenizer, {i.name for i in session.get_inputs()}
